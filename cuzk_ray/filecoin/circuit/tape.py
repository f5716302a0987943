"""The witness tape: how every variable of a Filecoin circuit gets its value, recorded once per
circuit shape from the reference synthesis, then replayed per proof (circuit/replay.py).

A constraint system with a ``tape`` attribute (``TapeCS``) is told by each allocating gadget what
the new variable is, as one op over earlier variables (the gadget passes the operands it already
has; with no tape attached the cost is one attribute check per allocation site):

    FREE       a value from the proof's data (data leaf, path sibling, column row, a root ...), the
               k-th such value in synthesis order (``free_values`` gives them from a C1)
    FREE_BITS  n bits, little-endian, of the k-th free value (a path index, the challenge)
    XOR AND AND_NOT NOR CH MAJ    a bit of one to three Booleans (flags: Is / Not / false / true)
    SUM_BITS   n bits of the integer sum(coeff * bit) + k (UInt32.addmany: the sum's bits, carries too)
    NUM_BITS   n bits, from bit k, of a field element (``to_bits_le``)
    PACK       sum 2^i bit_i as a field element (multipack)
    LINEAR     sum coeff_i * x_i + K[k] (Poseidon's Num allocations, add, sub, inputize)
    MUL_ADD    (x + K1) * (y + K2) + K3 (squares, products, Poseidon's squared sum and mul_sum)
    SELECT     x if the condition bit else y (insertion picks, conditional reversal)

Field constants are indices into a side table (``consts``). Optionally the recorder also keeps
every constraint (A, B, C terms with constant indices), so a witness can be checked block by block.

A partition is a prefix (replica_id, comm_d, comm_r, comm_r_last, comm_c, the comm_r check) and
identical challenge blocks. ``fold`` turns a recording of the prefix and any number of challenges
into the prefix and one block, after checking that every block is block 0 shifted (its aux,
inputs and free values moved by one block's counts, prefix variables shared). Variables are then
*local ids*: prefix aux, prefix inputs, block aux, block inputs, in that order (``TapeLayout``).
"""

from __future__ import annotations

import dataclasses
import gc
import io
import json
from array import array
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...field import R_MOD, fr_to_limbs
from ...formats.snarkjs_json import write_bytes_atomic
from .boolean import AllocatedBit, Constant, Is, Not
from .cs import ONE
from .cs import ConstraintSystem as RecordingCS

FORMAT = "cuzk-ray filecoin witness tape"
VERSION = 1

FREE, FREE_BITS, XOR, AND, AND_NOT, NOR, CH, MAJ, SUM_BITS, NUM_BITS, PACK, LINEAR, MUL_ADD, SELECT = range(14)
OP_NAMES = ("FREE", "FREE_BITS", "XOR", "AND", "AND_NOT", "NOR", "CH", "MAJ", "SUM_BITS", "NUM_BITS", "PACK",
            "LINEAR", "MUL_ADD", "SELECT")
BIT_OPS = {"xor": XOR, "and": AND, "and_not": AND_NOT, "nor": NOR, "ch": CH, "maj": MAJ}
FR_OPS = (FREE, PACK, LINEAR, MUL_ADD, SELECT)  # ops whose output is a field element; the rest write bits
IS, NOT, FALSE, TRUE = range(4)  # a Boolean operand's flag (2 bits per operand in ``flags``)

OP_COLUMNS = ("op", "out", "a", "b", "c", "flags", "n", "k", "nt")
TERM_COLUMNS = ("t_ref", "t_flag", "t_coeff")
CONSTRAINT_COLUMNS = ("c_n", "c_ref", "c_coeff")


def _boolean(b) -> tuple[int, int]:
    """(variable, flag) of a Boolean or an AllocatedBit; a constant's variable is 0 (unused)."""
    if isinstance(b, AllocatedBit):
        return b.variable, IS
    if isinstance(b, Is):
        return b.bit.variable, IS
    if isinstance(b, Not):
        return b.bit.variable, NOT
    if isinstance(b, Constant):
        return 0, TRUE if b.value else FALSE
    raise TypeError(f"not a Boolean: {b!r}")


def _signed(c: int) -> int:
    """A coefficient mod r as a small signed integer (addmany's are within +-2^40)."""
    v = c if c <= R_MOD // 2 else c - R_MOD
    if not -(1 << 62) < v < 1 << 62:
        raise ValueError(f"witness tape: an addmany coefficient {c} is not a small integer")
    return v


class TapeRecorder:
    """Collects ops (and optionally constraints) in synthesis order, variables as the CS numbers
    them (aux j >= 0, input i as -1 - i). Attach it as a constraint system's ``tape``."""

    def __init__(self, constraints: bool = False):
        # rows interleaved in one array per table: one extend() per op is the cheapest append
        self.ops, self.terms = array("q"), array("q")
        self.cols = {name: array("q") for name in CONSTRAINT_COLUMNS}
        self.keep_constraints = constraints
        self.consts: dict[int, int] = {}
        self.n_free = 0

    def const(self, value: int) -> int:
        """The side-table index of a field constant."""
        value %= R_MOD
        return self.consts.setdefault(value, len(self.consts))

    def _op(self, op: int, out: int, a=0, b=0, c=0, flags=0, n=1, k=0, nt=0) -> None:
        self.ops.extend((op, out, a, b, c, flags, n, k, nt))

    def _term(self, ref: int, flag: int, coeff: int) -> None:
        self.terms.extend((ref, flag, coeff))

    @property
    def n_ops(self) -> int:
        return len(self.ops) // len(OP_COLUMNS)

    def _next_free(self) -> int:
        self.n_free += 1
        return self.n_free - 1

    # --- what the gadgets call ----------------------------------------------------------------------

    def free(self, out: int) -> None:
        self._op(FREE, out, k=self._next_free())

    def free_bits(self, first: int, n: int) -> None:
        self._op(FREE_BITS, first, n=n, k=self._next_free())

    def bit_op(self, name: str, out: int, *operands) -> None:
        refs, flags = [0, 0, 0], 0
        for i, x in enumerate(operands):
            refs[i], f = _boolean(x)
            flags |= f << (2 * i)
        self._op(BIT_OPS[name], out, *refs, flags=flags)

    def sum_bits(self, first: int, n: int, lc) -> None:
        """n bits of the integer value of ``lc`` (a LinearCombination over bits and ONE)."""
        const, nt = 0, 0
        for var, coeff in lc.terms.items():
            if var == ONE:
                const += _signed(coeff)
            elif coeff:
                self._term(var, IS, _signed(coeff))
                nt += 1
        self._op(SUM_BITS, first, n=n, k=const, nt=nt)

    def num_bits(self, first: int, n: int, src: int, start: int = 0) -> None:
        self._op(NUM_BITS, first, a=src, n=n, k=start)

    def pack(self, out: int, bits) -> None:
        for b in bits:
            self._term(*_boolean(b), 0)
        self._op(PACK, out, nt=len(bits))

    def linear(self, out: int, terms) -> None:
        const, nt = 0, 0
        for var, coeff in terms:
            if var == ONE:
                const += coeff
            else:
                self._term(var, IS, self.const(coeff))
                nt += 1
        self._op(LINEAR, out, k=self.const(const), nt=nt)

    def mul_add(self, out: int, x: int, k1: int, y: int, k2: int, k3: int) -> None:
        self._op(MUL_ADD, out, a=x, b=y, nt=3)
        for coeff in (k1, k2, k3):
            self._term(0, IS, self.const(coeff))

    def select(self, out: int, condition, x: int, y: int) -> None:
        var, flag = _boolean(condition)
        self._op(SELECT, out, a=x, b=y, c=var, flags=flag << 4)

    def constraint(self, a, b, c) -> None:
        for lc in (a, b, c):
            row = lc.row()
            self.cols["c_n"].append(len(row))
            consts, refs, coeffs = self.consts, self.cols["c_ref"], self.cols["c_coeff"]
            for var, coeff in row:  # coefficients of a row are already reduced
                refs.append(var)
                coeffs.append(consts.setdefault(coeff, len(consts)))

    def arrays(self) -> dict[str, np.ndarray]:
        """Every column as an int64 array (views of the recorder's buffers)."""
        out = {name: np.frombuffer(col, dtype=np.int64) for name, col in self.cols.items()}
        for names, rows in ((OP_COLUMNS, self.ops), (TERM_COLUMNS, self.terms)):
            table = np.frombuffer(rows, dtype=np.int64).reshape(-1, len(names))
            out.update((name, table[:, i]) for i, name in enumerate(names))
        return out


class TapeCS(RecordingCS):
    """Allocates as the recording CS does (values kept, or None for a blank circuit) and tells the
    tape every op and, when it keeps them, every constraint; keeps no constraint itself."""

    def __init__(self, tape: TapeRecorder):
        super().__init__()
        self.tape = tape

    def enforce(self, name, a, b, c) -> None:
        if self.tape.keep_constraints:
            self.tape.constraint(a, b, c)

    def finish(self):
        raise TypeError("TapeCS keeps no constraints; read the tape (fold) instead")


@dataclass(frozen=True)
class Counts:
    """What a synthesis allocated: aux, inputs (ONE included), ops, free values, constraints."""

    aux: int
    inputs: int
    ops: int
    free: int
    constraints: int


def counts(cs: TapeCS) -> Counts:
    t = cs.tape
    return Counts(cs.num_aux, cs.num_inputs, t.n_ops, t.n_free, len(t.cols["c_n"]) // 3)


@dataclass(frozen=True)
class TapeLayout:
    """The prefix's and one block's counts; local ids are prefix aux, prefix inputs, block aux, block inputs."""

    prefix: Counts
    block: Counts

    @property
    def p(self) -> int:
        """Local ids of the prefix."""
        return self.prefix.aux + self.prefix.inputs

    @property
    def b(self) -> int:
        """Local ids of one block."""
        return self.block.aux + self.block.inputs

    def partition(self, blocks: int) -> tuple[int, int]:
        """(inputs, aux) of a partition with ``blocks`` challenges."""
        return self.prefix.inputs + blocks * self.block.inputs, self.prefix.aux + blocks * self.block.aux


@dataclass(frozen=True, eq=False)
class WitnessTape:
    """A folded tape: ops, their terms and (optionally) the constraints of the prefix and one block,
    variables as local ids; ``consts`` are the field constants, standard form ``uint64[q, 4]``."""

    layout: TapeLayout
    arrays: dict  # name -> int64 array (OP_COLUMNS, TERM_COLUMNS, CONSTRAINT_COLUMNS)
    consts: np.ndarray

    @property
    def has_constraints(self) -> bool:
        return len(self.arrays["c_n"]) > 0

    def op_counts(self) -> dict[str, int]:
        """Ops per kind, and the variables each kind writes (``n`` summed)."""
        op, n = self.arrays["op"], self.arrays["n"]
        return {OP_NAMES[i]: (int((op == i).sum()), int(n[op == i].sum())) for i in range(len(OP_NAMES))}


# --- fold: prefix + many blocks -> prefix + one block ------------------------------------------------------


def _local(refs: np.ndarray, prefix: Counts, block: Counts) -> tuple[np.ndarray, np.ndarray]:
    """(local id, block index or -1 for the prefix) of CS variables."""
    refs = np.asarray(refs, dtype=np.int64)
    is_in = refs < 0
    idx = np.where(is_in, -1 - refs, refs)
    p_count = np.where(is_in, prefix.inputs, prefix.aux)
    b_count = np.maximum(np.where(is_in, block.inputs, block.aux), 1)
    t = idx - p_count
    in_prefix = t < 0
    blk = np.where(in_prefix, -1, t // b_count)
    block_base = prefix.aux + prefix.inputs + np.where(is_in, block.aux, 0)
    base = np.where(in_prefix, np.where(is_in, prefix.aux, 0), block_base)
    local = base + np.where(in_prefix, idx, t % b_count)
    return local, blk


def _split(n_prefix: int, total: int, blocks: int, what: str) -> int:
    per, rest = divmod(total - n_prefix, blocks)
    if rest or per < 0:
        raise ValueError(f"witness tape: {total - n_prefix} {what} after the prefix do not split into {blocks} blocks")
    return per


def fold(tape: TapeRecorder, prefix: Counts, total: Counts, blocks: int) -> WitnessTape:
    """The prefix and block 0 of a recording of ``blocks`` challenges, after checking that every
    block is block 0 shifted (ValueError naming the first difference). ``prefix`` are the counts
    of the same synthesis with no challenge."""
    if blocks < 1:
        raise ValueError(f"witness tape: a partition needs at least one challenge block, has {blocks}")
    block = Counts(*(_split(getattr(prefix, f), getattr(total, f), blocks, f) for f in asdict(prefix)))
    raw = tape.arrays()
    nt_prefix = int(raw["nt"][: prefix.ops].sum())
    nt_block = _split(nt_prefix, len(raw["t_ref"]), blocks, "op terms")
    nc_prefix = int(raw["c_n"][: 3 * prefix.constraints].sum())
    nc_block = _split(nc_prefix, len(raw["c_ref"]), blocks, "constraint terms")
    tables = {  # name: (rows of the prefix, rows per block, which columns hold variables)
        "op": (prefix.ops, block.ops, OP_COLUMNS, ("out", "a", "b", "c")),
        "term": (nt_prefix, nt_block, TERM_COLUMNS, ("t_ref",)),
        "constraint": (3 * prefix.constraints, 3 * block.constraints, ("c_n",), ()),
        "c_term": (nc_prefix, nc_block, ("c_ref", "c_coeff"), ("c_ref",)),
    }
    out = {}
    for table, (n_pre, n_blk, columns, refs) in tables.items():
        row_block = np.concatenate([np.full(n_pre, -1), np.repeat(np.arange(blocks), n_blk)])
        for name in columns:
            col = raw[name]
            if name in refs:
                col, blk = _local(col, prefix, block)
                bad = np.flatnonzero((blk != -1) & (blk != row_block))
                if len(bad):
                    raise ValueError(f"witness tape: {table} row {bad[0]} ({name}) reads block {blk[bad[0]]} from "
                                     f"block {row_block[bad[0]]}")
            elif name == "k":  # a free value's index moves with its block
                free = (raw["op"] == FREE) | (raw["op"] == FREE_BITS)
                col = np.where(free & (col >= prefix.free), col - np.maximum(row_block, 0) * block.free, col)
            _check_blocks_equal(col, n_pre, n_blk, blocks, f"{table} column {name}")
            out[name] = np.ascontiguousarray(col[: n_pre + n_blk])
    consts = fr_to_limbs(sorted(tape.consts, key=tape.consts.get))
    return WitnessTape(TapeLayout(prefix, block), out, consts)


def _check_blocks_equal(col: np.ndarray, n_pre: int, n_blk: int, blocks: int, what: str) -> None:
    if blocks < 2 or not n_blk:
        return
    body = col[n_pre:].reshape(blocks, n_blk)
    diff = np.argwhere(body != body[0])
    if len(diff):
        b, i = diff[0]
        raise ValueError(f"witness tape: block {b} differs from block 0 at {what} row {i}: "
                         f"{body[b, i]} vs {body[0, i]}")


# --- recording a partition's tape ------------------------------------------------------------------------


def record_tape(synthesize, circuit, blocks: int, constraints: bool = False) -> tuple[WitnessTape, TapeCS]:
    """Synthesize ``circuit`` (``synthesize(cs, circuit)``, e.g. stacked.synthesize_stacked) with a
    tape, and fold it. The prefix's counts come from the same circuit with no challenge. Returns
    the tape and the constraint system (its values are the reference witness when the circuit had
    values). Python's garbage collector is paused meanwhile: a synthesis makes millions of objects."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        head = TapeCS(TapeRecorder(constraints))
        synthesize(head, dataclasses.replace(circuit, proofs=()))
        cs = TapeCS(TapeRecorder(constraints))
        synthesize(cs, circuit)
    finally:
        if enabled:
            gc.enable()
    return fold(cs.tape, counts(head), counts(cs), blocks), cs


# --- on disk ------------------------------------------------------------------------------------------------


def tape_path(cache_dir, circuit: str, sector_size: int) -> Path:
    """Where the tape of ``circuit`` for ``sector_size`` bytes lives (beside its recording)."""
    if not circuit or any(ch in circuit for ch in "/\\\0"):
        raise ValueError(f"tape cache: circuit name {circuit!r} is not a plain file name")
    return Path(cache_dir) / f"{circuit}-{int(sector_size)}.tape.npz"


def save_tape(path, tape: WitnessTape) -> Path:
    """Write ``tape`` as an .npz through a temporary file renamed into place."""
    meta = {"format": FORMAT, "version": VERSION, "prefix": asdict(tape.layout.prefix),
            "block": asdict(tape.layout.block)}
    buf = io.BytesIO()
    np.savez(buf, consts=tape.consts, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
             **{name: _narrow(col) for name, col in tape.arrays.items()})
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, buf.getvalue())
    return Path(path)


def _narrow(col: np.ndarray) -> np.ndarray:
    """The column in the smallest integer type that holds it (op codes fit int8, ids int32)."""
    lo, hi = (int(col.min()), int(col.max())) if len(col) else (0, 0)
    dtype = next(t for t in (np.int8, np.int16, np.int32, np.int64) if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)
    return col.astype(dtype)


def load_tape(path) -> WitnessTape:
    """A tape saved by ``save_tape`` (ValueError naming the file and field when it is not one)."""
    path = Path(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable .npz tape ({e})") from None
    with z:
        try:
            meta = json.loads(bytes(z["meta"]).decode())
        except (KeyError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: field 'meta' is missing or not JSON ({e})") from None
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ValueError(f"{path}: format {meta.get('format')!r} version {meta.get('version')!r}, "
                             f"expected {FORMAT!r} version {VERSION}")
        missing = [n for n in OP_COLUMNS + TERM_COLUMNS + CONSTRAINT_COLUMNS + ("consts",) if n not in z.files]
        if missing:
            raise ValueError(f"{path}: field {missing[0]!r} is missing")
        arrays = {n: z[n].astype(np.int64) for n in OP_COLUMNS + TERM_COLUMNS + CONSTRAINT_COLUMNS}
        consts = z["consts"]
    layout = TapeLayout(Counts(**meta["prefix"]), Counts(**meta["block"]))
    n_ops = layout.prefix.ops + layout.block.ops
    if len(arrays["op"]) != n_ops:
        raise ValueError(f"{path}: field 'op' has {len(arrays['op'])} rows, the meta says {n_ops}")
    return WitnessTape(layout, arrays, consts)
