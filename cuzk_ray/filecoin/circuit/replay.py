"""The fast witness: a partition's witness tape (circuit/tape.py) replayed by numba, the prefix once,
then every challenge block in parallel (``prange`` over blocks), each at its offsets; the result is
the project's CompactWitness (cuzk_ray/witness.py) in wire order: inputs, then aux.

Working state, in *global ids* (the prefix's local ids, then block b's local ids + b * block size):
``bits`` (uint8, one per wire; the bit wires' values) and ``fr`` (the field-element wires, numbered
by *slot* the same way: prefix slots, then block b's slots + b * block slots), Montgomery form while
the ops run (a product is one ``mont_mul``), standard form for the final gather. Which local ids hold
field elements (and their slots) follows from the ops that write them.

``check_block`` evaluates the tape's constraints (when it kept them) over a witness, one block at a
time: the prefix and block b's columns gathered into the tape's local order, each row checked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from ...fast.fr_kernels import mod_add, mont_mul
from ...field import FR_LIMBS, FR_R, FR_R2, R_MOD, fr_to_limbs, limbs_to_ints
from ...witness import CompactWitness, bitmap_bytes, read_wires
from .tape import (
    AND,
    AND_NOT,
    CH,
    FR_OPS,
    FREE,
    FREE_BITS,
    LINEAR,
    MAJ,
    MUL_ADD,
    NOR,
    NUM_BITS,
    PACK,
    SELECT,
    SUM_BITS,
    XOR,
    TapeLayout,
    WitnessTape,
)

_KW = dict(nogil=True, cache=True, boundscheck=False)
_U1 = np.uint64(1)
_CHUNK = 1 << 13  # bytes of the bitmaps per gather task (65,536 wires)


@dataclass(frozen=True, eq=False)
class ReplayPlan:
    """A tape's ops with operands in the replay's spaces (bit operands: local ids; field operands:
    local slots), and the local slot of every local id (-1: a bit wire). ``tape``: the tape it was
    made from when made in this process (check_block reads its constraints); None when read from a
    partition cache (partition_cache.cached_plan: the arrays mapped from disk, shared by the
    synthesis workers of a machine)."""

    layout: TapeLayout
    ops: tuple  # op, out, a, b, c, flags, n, k, term start, term count, t_ref, t_flag, t_coeff (int64 arrays)
    slot: np.ndarray  # int64[P + B]
    p_fr: int  # field slots of the prefix
    b_fr: int  # field slots of one block
    consts_mont: np.ndarray  # uint64[q, 4], Montgomery form
    tape: WitnessTape | None = None


def _coverage(tape: WitnessTape) -> np.ndarray:
    """Which local ids hold field elements; ValueError unless every variable but ONE is written once."""
    a, lay = tape.arrays, tape.layout
    n_local = lay.p + lay.b
    n = a["n"]
    ids = np.repeat(a["out"] - np.cumsum(n) + n, n) + np.arange(int(n.sum()))
    written = np.bincount(ids, minlength=n_local)
    one = lay.prefix.aux  # local id of ONE (input 0)
    expected = np.ones(n_local, dtype=np.int64)
    expected[one] = 0
    bad = np.flatnonzero(written != expected)
    if len(bad):
        raise ValueError(f"witness tape: local variable {bad[0]} is written by {written[bad[0]]} ops, need "
                         f"{expected[bad[0]]} (an allocation site without a tape op?)")
    is_fr = np.zeros(n_local, dtype=bool)
    is_fr[a["out"][np.isin(a["op"], FR_OPS)]] = True
    return is_fr


def _operands(tape: WitnessTape, slot: np.ndarray, is_fr: np.ndarray) -> tuple:
    """The op columns with field operands turned into slots, each operand's kind checked."""
    a = tape.arrays
    op = a["op"]
    fr_out, fr_a = np.isin(op, FR_OPS), np.isin(op, (NUM_BITS, MUL_ADD, SELECT))
    fr_b = np.isin(op, (MUL_ADD, SELECT))
    owner = np.repeat(op, a["nt"])
    fr_t = owner == LINEAR
    bit_t = np.isin(owner, (PACK, SUM_BITS)) & (a["t_flag"] < 2)
    bit_a = (op >= XOR) & (op <= MAJ) & ((a["flags"] & 3) < 2)
    bit_b = (op >= XOR) & (op <= MAJ) & ((a["flags"] >> 2 & 3) < 2)
    bit_c = (((op == CH) | (op == MAJ)) & ((a["flags"] >> 4 & 3) < 2)) | ((op == SELECT) & ((a["flags"] >> 4 & 3) < 2))
    checks = (("a", True, fr_a), ("b", True, fr_b), ("t_ref", True, fr_t), ("a", False, bit_a), ("b", False, bit_b),
              ("c", False, bit_c), ("t_ref", False, bit_t))
    for name, need_fr, mask in checks:
        refs = a[name]
        wrong = np.flatnonzero(mask & (is_fr[refs] != need_fr))
        if len(wrong):
            kind = "a field element" if need_fr else "a bit"
            raise ValueError(f"witness tape: {name} row {wrong[0]} reads local variable {refs[wrong[0]]} as {kind}")
    conv = lambda refs, m: np.where(m, slot[refs], refs)  # noqa: E731
    start = np.concatenate([[0], np.cumsum(a["nt"])[:-1]]).astype(np.int64)
    return (op.astype(np.int64), conv(a["out"], fr_out), conv(a["a"], fr_a), conv(a["b"], fr_b), a["c"], a["flags"],
            a["n"], a["k"], start, a["nt"], conv(a["t_ref"], fr_t), a["t_flag"], a["t_coeff"])


def plan(tape: WitnessTape) -> ReplayPlan:
    """The replay form of a tape (checked: every variable written once, operands of the right kind)."""
    is_fr = _coverage(tape)
    slot = np.where(is_fr, np.cumsum(is_fr) - 1, -1).astype(np.int64)
    p = tape.layout.p
    mont = fr_to_limbs([int(v) * FR_R % R_MOD for v in limbs_to_ints(tape.consts)])
    ops = tuple(np.ascontiguousarray(x, dtype=np.int64) for x in _operands(tape, slot, is_fr))
    return ReplayPlan(tape.layout, ops, slot, int(is_fr[:p].sum()), int(is_fr[p:].sum()), mont, tape)


# --- the kernels ---------------------------------------------------------------------------------------------
# Operands arrive unshifted; x if x < p else x + shift is the global id (slots and free values alike).


@njit(**_KW)
def _get(x, i):
    return x[i, 0], x[i, 1], x[i, 2], x[i, 3]


@njit(**_KW)
def _put(x, i, v):
    x[i, 0], x[i, 1], x[i, 2], x[i, 3] = v


@njit(**_KW)
def _at(x, p, shift):
    return x if x < p else x + shift


@njit(**_KW)
def _bit(bits, ref, flag, p, shift):
    """A Boolean operand: flag 0 the bit, 1 its negation, 2 false, 3 true."""
    if flag >= 2:
        return np.int64(flag - 2)
    return np.int64(bits[_at(ref, p, shift)]) ^ flag


@njit(**_KW)
def _bit_op(code, x, y, z):
    if code == XOR:
        return x ^ y
    if code == AND:
        return x & y
    if code == AND_NOT:
        return x & (1 - y)
    if code == NOR:
        return (1 - x) & (1 - y)
    if code == CH:
        return (x & y) ^ ((1 - x) & z)
    return (x & y) ^ (x & z) ^ (y & z)  # MAJ


@njit(**_KW)
def _write_bits(bits, g, n, limbs, start):
    """bits[g + i] = bit (start + i) of a standard-form value."""
    for i in range(n):
        j = start + i
        bits[g + i] = np.uint8((limbs[j >> 6] >> np.uint64(j & 63)) & _U1)


@njit(**_KW)
def _run(lo, hi, ops, consts, r2, free, bits, fr, p, shift, p_fr, shift_fr, p_free, shift_free):
    """Ops lo..hi-1 for one block (shift, shift_fr, shift_free: that block's offsets)."""
    op, out, a, b, c, flags, n, k, ts, nt, t_ref, t_flag, t_coeff = ops
    one = (_U1, np.uint64(0), np.uint64(0), np.uint64(0))
    for r in range(lo, hi):
        code, o, f = op[r], out[r], flags[r]
        if XOR <= code <= MAJ:
            z = _bit(bits, c[r], (f >> 4) & 3, p, shift) if code >= CH else np.int64(0)
            v = _bit_op(code, _bit(bits, a[r], f & 3, p, shift), _bit(bits, b[r], (f >> 2) & 3, p, shift), z)
            bits[_at(o, p, shift)] = np.uint8(v)
        elif code == SUM_BITS:
            s = k[r]  # addmany: at most 10 words, the sum fits 36 bits
            for t in range(ts[r], ts[r] + nt[r]):
                s += t_coeff[t] * _bit(bits, t_ref[t], t_flag[t], p, shift)
            g = _at(o, p, shift)
            for i in range(n[r]):
                bits[g + i] = np.uint8((s >> i) & 1)
        elif code == FREE_BITS:
            _write_bits(bits, _at(o, p, shift), n[r], free[_at(k[r], p_free, shift_free)], 0)
        elif code == FREE:
            _put(fr, _at(o, p_fr, shift_fr), mont_mul(*_get(free, _at(k[r], p_free, shift_free)), *r2))
        elif code == NUM_BITS:
            std = np.array(mont_mul(*_get(fr, _at(a[r], p_fr, shift_fr)), *one))
            _write_bits(bits, _at(o, p, shift), n[r], std, k[r])
        else:
            _put(fr, _at(o, p_fr, shift_fr), _field_op(r, code, ops, consts, r2, bits, fr, p, shift, p_fr, shift_fr))


@njit(**_KW)
def _field_op(r, code, ops, consts, r2, bits, fr, p, shift, p_fr, shift_fr):
    """PACK, LINEAR, MUL_ADD, SELECT: the new field element (Montgomery form)."""
    op, out, a, b, c, flags, n, k, ts, nt, t_ref, t_flag, t_coeff = ops
    lo, hi = ts[r], ts[r] + nt[r]
    if code == PACK:  # at most 254 bits: the integer is below r
        limbs = np.zeros(4, dtype=np.uint64)
        for t in range(lo, hi):
            i = t - lo
            limbs[i >> 6] |= np.uint64(_bit(bits, t_ref[t], t_flag[t], p, shift)) << np.uint64(i & 63)
        return mont_mul(limbs[0], limbs[1], limbs[2], limbs[3], *r2)
    if code == LINEAR:
        acc = _get(consts, k[r])
        for t in range(lo, hi):
            acc = mod_add(*acc, *mont_mul(*_get(consts, t_coeff[t]), *_get(fr, _at(t_ref[t], p_fr, shift_fr))))
        return acc
    if code == MUL_ADD:
        x = mod_add(*_get(fr, _at(a[r], p_fr, shift_fr)), *_get(consts, t_coeff[lo]))
        y = mod_add(*_get(fr, _at(b[r], p_fr, shift_fr)), *_get(consts, t_coeff[lo + 1]))
        return mod_add(*mont_mul(*x, *y), *_get(consts, t_coeff[lo + 2]))
    cond = _bit(bits, c[r], (flags[r] >> 4) & 3, p, shift)  # SELECT
    return _get(fr, _at(a[r] if cond else b[r], p_fr, shift_fr))


@njit(parallel=True, cache=True, boundscheck=False)
def _run_blocks(lo, hi, blocks, ops, consts, r2, free, bits, fr, p, b, p_fr, b_fr, p_free, b_free):
    for blk in prange(blocks):
        _run(lo, hi, ops, consts, r2, free, bits, fr, p, blk * b, p_fr, blk * b_fr, p_free, blk * b_free)


@njit(parallel=True, cache=True, boundscheck=False)
def _to_standard(fr):
    one = (_U1, np.uint64(0), np.uint64(0), np.uint64(0))
    for i in prange(fr.shape[0]):
        _put(fr, i, mont_mul(*_get(fr, i), *one))


@njit(**_KW)
def _locate(col, geo):
    """(local id, block) of a wire: inputs (prefix, then each block's), then aux likewise."""
    n_in, p_in, p_aux, b_in, b_aux, p = geo
    if col < n_in:
        if col < p_in:
            return p_aux + col, 0
        t = col - p_in
        return p + b_aux + t % b_in, t // b_in
    j = col - n_in
    if j < p_aux:
        return j, 0
    t = j - p_aux
    return p + t % b_aux, t // b_aux


@njit(**_KW)
def _slot_of(col, geo, slot, p_fr, b_fr):
    lid, blk = _locate(col, geo)
    s = slot[lid]
    return lid, blk, (s if s < p_fr else s + blk * b_fr) if s >= 0 else -1


@njit(parallel=True, cache=True, boundscheck=False)
def _gather_bitmaps(n_wires, geo, slot, bits, fr, p_fr, b_fr, b, full_bm, bit_bm, counts):
    """Both bitmaps, and the full wires per chunk: a field wire holding 0 or 1 goes to the bitmap."""
    p = geo[5]
    nbytes = full_bm.shape[0]
    for ch in prange(counts.shape[0]):
        cnt = 0
        for byte in range(ch * _CHUNK, min((ch + 1) * _CHUNK, nbytes)):
            fb, bb = 0, 0
            for i in range(min(8, n_wires - 8 * byte)):
                lid, blk, s = _slot_of(8 * byte + i, geo, slot, p_fr, b_fr)
                if s < 0:
                    bb |= np.int64(bits[lid if lid < p else lid + blk * b]) << i
                elif (fr[s, 1] | fr[s, 2] | fr[s, 3]) == 0 and fr[s, 0] <= _U1:
                    bb |= np.int64(fr[s, 0]) << i
                else:
                    fb |= 1 << i
                    cnt += 1
            full_bm[byte], bit_bm[byte] = np.uint8(fb), np.uint8(bb)
        counts[ch] = cnt


@njit(parallel=True, cache=True, boundscheck=False)
def _gather_values(geo, slot, fr, p_fr, b_fr, full_bm, starts, values):
    nbytes = full_bm.shape[0]
    for ch in prange(starts.shape[0]):
        w = starts[ch]
        for byte in range(ch * _CHUNK, min((ch + 1) * _CHUNK, nbytes)):
            fb = full_bm[byte]
            for i in range(8):
                if (fb >> i) & 1:
                    _, _, s = _slot_of(8 * byte + i, geo, slot, p_fr, b_fr)
                    _put(values, w, _get(fr, s))
                    w += 1


@njit(**_KW)
def _lc(n, lo, c_ref, c_coeff, consts, vec):
    acc = (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
    for t in range(lo, lo + n):
        acc = mod_add(*acc, *mont_mul(*_get(consts, c_coeff[t]), *_get(vec, c_ref[t])))
    return acc


@njit(**_KW)
def _first_unsatisfied(lo, hi, c_n, c_start, c_ref, c_coeff, consts, vec):
    """The first constraint in lo..hi-1 with A * B != C over ``vec`` (standard form; local ids), or -1."""
    one = (_U1, np.uint64(0), np.uint64(0), np.uint64(0))
    for q in range(lo, hi):
        a = _lc(c_n[3 * q], c_start[3 * q], c_ref, c_coeff, consts, vec)
        b = _lc(c_n[3 * q + 1], c_start[3 * q + 1], c_ref, c_coeff, consts, vec)
        c = _lc(c_n[3 * q + 2], c_start[3 * q + 2], c_ref, c_coeff, consts, vec)
        if mont_mul(*a, *b) != mont_mul(*c, *one):
            return q
    return -1


# --- the public entry points --------------------------------------------------------------------------------


def _geometry(lay: TapeLayout, blocks: int) -> tuple:
    n_in, _ = lay.partition(blocks)
    return (n_in, lay.prefix.inputs, lay.prefix.aux, max(lay.block.inputs, 1), max(lay.block.aux, 1), lay.p)


def replay_circuit(pl: ReplayPlan, free: np.ndarray, blocks: int) -> CompactWitness:
    """The witness of a partition of ``blocks`` challenges from its free values (standard-form
    ``uint64[n, 4]``, ``free_values``' order); ValueError when their number is not the tape's."""
    lay = pl.layout
    need = lay.prefix.free + blocks * lay.block.free
    if free.shape != (need, FR_LIMBS):
        raise ValueError(f"fast witness: {free.shape[0]} free values for {blocks} challenges, the tape needs {need}")
    bits = np.zeros(lay.p + blocks * lay.b, dtype=np.uint8)
    bits[lay.prefix.aux] = 1  # ONE
    fr = np.zeros((pl.p_fr + blocks * pl.b_fr, FR_LIMBS), dtype=np.uint64)
    r2 = tuple(np.uint64(x) for x in fr_to_limbs([FR_R2])[0])
    free = np.ascontiguousarray(free, dtype=np.uint64)
    common = (pl.ops, pl.consts_mont, r2, free, bits, fr)
    _run(0, lay.prefix.ops, *common, lay.p, 0, pl.p_fr, 0, lay.prefix.free, 0)
    _run_blocks(lay.prefix.ops, lay.prefix.ops + lay.block.ops, blocks, *common, lay.p, lay.b, pl.p_fr, pl.b_fr,
                lay.prefix.free, lay.block.free)
    _to_standard(fr)
    return _gather(pl, blocks, bits, fr)


def _gather(pl: ReplayPlan, blocks: int, bits: np.ndarray, fr: np.ndarray) -> CompactWitness:
    n_in, n_aux = pl.layout.partition(blocks)
    n = n_in + n_aux
    geo = _geometry(pl.layout, blocks)
    full_bm = np.zeros(bitmap_bytes(n), dtype=np.uint8)
    bit_bm = np.zeros_like(full_bm)
    counts = np.zeros(-(-len(full_bm) // _CHUNK), dtype=np.int64)
    _gather_bitmaps(n, geo, pl.slot, bits, fr, pl.p_fr, pl.b_fr, pl.layout.b, full_bm, bit_bm, counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    values = np.empty((int(counts.sum()), FR_LIMBS), dtype=np.uint64)
    _gather_values(geo, pl.slot, fr, pl.p_fr, pl.b_fr, full_bm, starts, values)
    return CompactWitness(n, full_bm, bit_bm, values)


def check_block(pl: ReplayPlan, witness, blk: int) -> int:
    """The index (in the tape's constraint order: prefix, then one block) of the first constraint
    of the prefix or of block ``blk`` that ``witness`` does not satisfy, or -1 when all hold."""
    tape, lay = pl.tape, pl.layout
    if tape is None or not tape.has_constraints:
        raise ValueError("check_block: the plan's tape was recorded without its constraints (record_tape(constraints="
                         "True) and replay.plan)")
    blocks, rest = divmod(len(witness) - lay.p, lay.b)
    if rest or not 0 <= blk < blocks:
        raise ValueError(f"check_block: block {blk} of a {len(witness)}-wire witness ({blocks} blocks, rest {rest})")
    n_in, _ = lay.partition(blocks)
    pi, pa, bi, ba = lay.prefix.inputs, lay.prefix.aux, lay.block.inputs, lay.block.aux
    ranges = ((n_in, n_in + pa), (0, pi), (n_in + pa + blk * ba, n_in + pa + (blk + 1) * ba),
              (pi + blk * bi, pi + (blk + 1) * bi))
    vec = np.concatenate([read_wires(witness, lo, hi) for lo, hi in ranges])
    a = tape.arrays
    c_start = np.concatenate([[0], np.cumsum(a["c_n"])[:-1]]).astype(np.int64)
    total = lay.prefix.constraints + lay.block.constraints
    return int(_first_unsatisfied(0, total, a["c_n"], c_start, a["c_ref"], a["c_coeff"], pl.consts_mont, vec))
