"""Readers for circom/snarkjs files: ``.wtns``, ``.r1cs`` and Groth16 ``.zkey`` over BLS12-381 or BN254.

Layouts are in DESIGN.md section 4. Every count and length is checked against the file size and
against the other fields before anything is allocated; problems raise ``FormatError`` (a
ValueError) whose one-line message names the file and the field, what was expected and found.

The curve is the one whose prime the header carries (cuzk_ray.curves.curve_of_prime); the
zkey's key records it in ``meta["curve"]``, the r1cs's system in its ``modulus``; a caller that
knows the curve already (a witness for a key) passes ``curve`` and another curve is refused,
naming both. Outputs use the project's layouts (cuzk_ray.field / cuzk_ray.curve), all in
standard form: witnesses ``uint64[n, 4]``, G1 ``uint64[n, 2, k]``, G2 ``uint64[n, 2, 2, k]``
(k = 6 Fp limbs for BLS12-381, 4 for BN254), infinity all zero.
The zkey's key is stored by density (groth16.keys): the points at infinity of sections 5 (A),
6 (B1) and 7 (B2) are skipped and their wires left out of ``a_wires`` / ``b_wires``.
"""

from __future__ import annotations

import array
import os
import struct
import time
from dataclasses import dataclass

import numpy as np

from ..curve_groups import groups_for
from ..curves import Curve, curve_of_prime
from ..domain import domain_size
from ..field import FR_LIMBS, FrVector, limbs_below, limbs_to_ints
from ..groth16.keys import WIRE_INDEX_DTYPE, ProvingKey, VerifyingKey
from ..r1cs import ConstraintSystem, CsrMatrix
from .binfile import BinFile, FormatError, describe_prime
from .montgomery import redc_limbs

__all__ = ["CircuitSizes", "FormatError", "ZkeySizes", "read_wtns", "read_r1cs", "read_zkey", "read_zkey_sizes",
           "check_zkey_against_r1cs"]

N8R = 8 * FR_LIMBS  # both curves' scalars are 4 limbs
ZKEY_PROTOCOLS = {1: "groth16", 2: "plonk", 10: "fflonk"}


def g1_raw(curve: Curve) -> int:
    """Bytes of one G1 point in a zkey (x, y)."""
    return 2 * curve.fp_bytes


def g2_raw(curve: Curve) -> int:
    return 4 * curve.fp_bytes


def _prime_field(f: BinFile, pos: int, end: int, what: str, which: str,
                 want: Curve | None = None, want_source: str = "") -> tuple[int, Curve]:
    """Read ``u32 n8`` then an n8-byte prime at pos: the ``which`` ("p" or "r") prime of a supported
    curve, and of ``want`` when given (another curve is refused naming both, ``want_source`` says
    where ``want`` comes from); returns (next offset, curve)."""
    n8 = f.u32(pos, f"{what} size n8", end)
    if n8 == 0 or n8 > 64:
        f.fail(f"{what} size n8", "32 or 48", n8)
    prime = f.uint(pos + 4, n8, what, end)
    curve = curve_of_prime(prime)
    if want is not None and getattr(want, which) != prime:
        f.fail(what, f"{describe_prime(getattr(want, which))} (the curve of {want_source})",
               f"{describe_prime(prime)} (a file of another curve)")
    if curve is None or getattr(curve, which) != prime:
        f.fail(what, f"the {which} of a supported curve (BLS12-381 or BN254)", describe_prime(prime))
    n8_want = curve.fp_bytes if which == "p" else curve.fr_bytes
    if n8 != n8_want:
        f.fail(f"{what} size n8", n8_want, n8)
    return pos + 4 + n8, curve


def _fr_limbs(f: BinFile, offset: int, count: int, field: str, end: int, r: int) -> np.ndarray:
    """``count`` standard-form Fr values at offset, checked reduced; a writable copy."""
    vals = f.array(offset, "<u8", count * FR_LIMBS, field, end).reshape(count, FR_LIMBS)
    _check_reduced(f, vals, r, field)
    return vals.copy()


def _check_reduced(f: BinFile, limbs: np.ndarray, modulus: int, field: str) -> None:
    bad = np.flatnonzero(~limbs_below(limbs, modulus))
    if len(bad):
        f.fail(f"{field}[{bad[0]}]", f"a value below the modulus 0x{modulus:x}",
               f"{limbs_to_ints(limbs[bad[:1]])[0]:#x} ({len(bad)} such values)")


# ---------------------------------------------------------------------------------------------
# .wtns


def read_wtns(path, n_wires: int | None = None, curve: Curve | None = None, curve_source: str = "the key") -> FrVector:
    """Witness values as an FrVector of ``uint64[n, 4]`` (standard form, every value checked < r
    here, once: the prover and the kernels take it as it is). If ``n_wires`` is given, the witness
    must have exactly that many values (a witness of another circuit is rejected here); if
    ``curve`` is, its prime must be that curve's r (``curve_source`` names the key it is for)."""
    with BinFile(path, b"wtns", (2,)) as f:
        hdr = f.section(1, "header")
        end = hdr.offset + hdr.length
        pos, cur = _prime_field(f, hdr.offset, end, "prime", "r", curve, curve_source)
        n = f.u32(pos, "nWitness", end)
        if pos + 4 != end:
            f.fail("section 1 (header) length", pos + 4 - hdr.offset, hdr.length)
        if n_wires is not None and n != n_wires:
            f.fail("nWitness", f"{n_wires} values (the wires of the circuit it is proved with)",
                   f"{n} (a witness of another circuit?)")
        sec = f.expect_length(2, "witness values", n * N8R, f"nWitness={n} values of {N8R} bytes")
        w = _fr_limbs(f, sec.offset, n, "witness", sec.offset + sec.length, cur.r)
        if n == 0 or tuple(w[0]) != (1, 0, 0, 0):
            f.fail("witness[0]", "1 (the constant wire)", limbs_to_ints(w[:1])[0] if n else "no values")
        return FrVector(w)


# ---------------------------------------------------------------------------------------------
# .r1cs


@dataclass(frozen=True)
class CircuitSizes:
    """What an .r1cs must match to be the circuit of a key (read_r1cs's ``expect``)."""

    n_wires: int
    n_public: int
    n_constraints: int
    source: str  # what the sizes come from, for the message (e.g. the zkey's file name)


def read_r1cs(path, expect: CircuitSizes | None = None) -> ConstraintSystem:
    """The constraint system of a circom ``.r1cs`` (A, B and C; n_public = outputs + public inputs).

    ``expect``: the header's counts must be these (a key's), checked before section 2 is walked,
    so an r1cs of another circuit is refused at once: its constraints cost ~1.5 us each to walk
    (a header claiming 2^24 empty constraints over a sparse file took 26 s)."""
    with BinFile(path, b"r1cs", (1,)) as f:
        hdr = f.section(1, "header")
        end = hdr.offset + hdr.length
        pos, curve = _prime_field(f, hdr.offset, end, "prime", "r")
        n_wires, n_out, n_pub_in, n_prv_in = (f.u32(pos + 4 * i, name, end) for i, name in
                                              enumerate(("nWires", "nPubOut", "nPubIn", "nPrvIn")))
        f.u64(pos + 16, "nLabels", end)
        n_constraints = f.u32(pos + 24, "nConstraints", end)
        if pos + 28 != end:
            f.fail("section 1 (header) length", pos + 28 - hdr.offset, hdr.length)
        if 1 + n_out + n_pub_in + n_prv_in > n_wires:
            f.fail("nWires", f"at least 1 + nPubOut + nPubIn + nPrvIn = {1 + n_out + n_pub_in + n_prv_in}", n_wires)
        if expect is not None:
            for name, have, want in (("nWires", n_wires, expect.n_wires),
                                     ("nPubOut + nPubIn", n_out + n_pub_in, expect.n_public),
                                     ("nConstraints", n_constraints, expect.n_constraints)):
                if have != want:
                    f.fail(f"section 1 (header) {name}", f"{want} (from {expect.source})",
                           f"{have} (the r1cs of another circuit?)")
        sec = f.section(2, "constraints")
        if sec.length < 12 * n_constraints:
            f.fail("section 2 (constraints) length", f"at least {12 * n_constraints} bytes for "
                   f"nConstraints={n_constraints}", sec.length)
        matrices = _read_constraints(f, sec, n_constraints, n_wires, curve.r)
        return ConstraintSystem(n_wires, n_out + n_pub_in, *matrices, name=f.name, modulus=curve.r)


def _read_constraints(f: BinFile, sec, m: int, n_wires: int, r: int) -> list[CsrMatrix]:
    """Walk the 3m linear combinations (A, B, C of each constraint), then gather terms with numpy."""
    end = sec.offset + sec.length
    term = 4 + N8R
    # int64 arrays, not lists: 16 bytes per combination instead of ~70 (3.4 GB for 2^24 constraints)
    counts = array.array("q", [0]) * (3 * m)
    first = array.array("q", [0]) * (3 * m)  # offset of the first term of each combination
    unpack, buf, pos = struct.Struct("<I").unpack_from, f.buf, sec.offset
    for j in range(3 * m):  # the one Python loop: 3m iterations, bounds checked inline
        if pos + 4 > end:
            f.fail("section 2 (constraints)", f"nConstraints={m} constraints",
                   f"the section ends inside constraint {j // 3} (truncated, or nConstraints is wrong)")
        (n,) = unpack(buf, pos)
        if n * term > end - pos - 4:
            f.fail(f"constraint {j // 3} {'ABC'[j % 3]}", f"at most {(end - pos - 4) // term} terms "
                   f"(the rest of section 2)", f"{n} terms (truncated or corrupt)")
        counts[j] = n
        first[j] = pos + 4
        pos += 4 + n * term
    counts, first = np.frombuffer(counts, dtype=np.int64), np.frombuffer(first, dtype=np.int64)
    if pos != end:
        f.fail("section 2 (constraints) length", f"{pos - sec.offset} bytes for {m} constraints", sec.length)
    total = int(counts.sum())
    lc = np.repeat(np.arange(3 * m), counts)
    k = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    offsets = np.repeat(first, counts) + term * k
    raw = f.array(0, np.uint8, f.size, "file")
    wires = _gather(raw, offsets, 4).view("<u4").ravel().astype(np.int64)
    coeffs = _gather(raw, offsets + 4, N8R).view("<u8").reshape(total, FR_LIMBS)
    bad = np.flatnonzero(wires >= n_wires)
    if len(bad):
        j = lc[bad[0]]
        f.fail(f"constraint {j // 3} {'ABC'[j % 3]} wire", f"below nWires={n_wires}", int(wires[bad[0]]))
    _check_reduced(f, coeffs, r, "constraint coefficients")
    out = []
    for which in range(3):
        sel = lc % 3 == which
        out.append(CsrMatrix.from_coo(lc[sel] // 3, wires[sel], coeffs[sel], m, n_wires))
    return out


def _gather(raw: np.ndarray, offsets: np.ndarray, width: int) -> np.ndarray:
    """uint8[len(offsets), width]: ``width`` bytes at each offset (one fancy index per byte column)."""
    out = np.empty((len(offsets), width), dtype=np.uint8)
    for i in range(width):
        out[:, i] = raw[offsets + i]
    return out


# ---------------------------------------------------------------------------------------------
# .zkey (Groth16)


def read_zkey(path, check_points: bool = True) -> tuple[ProvingKey, ConstraintSystem]:
    """Proving key (with its verifying key) and the A/B matrices (C=None) of a Groth16 zkey.

    Every point (sections 2, 3, 5-9) is checked on its curve and in the subgroup of order r
    (``_check_points``; ``meta["points_checked"]`` says so) unless ``check_points`` is False
    (tests that read the fixtures many times; nothing that proves)."""
    with BinFile(path, b"zkey", (1,)) as f:
        hdr, secs = _groth16_sections(f)
        n_vars, n_public, n, curve = hdr["nVars"], hdr["nPublic"], hdr["domainSize"], hdr["curve"]
        cs, n_constraints = _read_coefficients(f, n_vars, n_public, n, curve.r)
        # A, B1, B2 by density: only the points other than infinity are converted and kept
        a_wires = _present_wires(f, secs["A"], "A", curve)
        b_wires = _present_wires(f, secs["B1"], "B1", curve)
        b2_wires = _present_wires(f, secs["B2"], "B2", curve)
        if not np.array_equal(b_wires, b2_wires):
            diff = np.setxor1d(b_wires, b2_wires)
            f.fail("sections 6 (B1) and 7 (B2)", "the same wires at infinity (v_i(tau) = 0 in both groups)",
                   f"wire {int(diff[0])} at infinity in {'B2' if diff[0] in b_wires else 'B1'} only "
                   f"({len(diff)} wires differ; corrupt or not one setup)")
        kept = {"A": a_wires, "B1": b_wires, "B2": b_wires}
        pts = {what: _points(f, sec, what, curve, kept.get(what)) for what, sec in secs.items()}
        t0 = time.perf_counter()
        if check_points:
            _check_points(f, hdr, pts, kept)
        checked = time.perf_counter() - t0
        vk = VerifyingKey(alpha_g1=hdr["alpha1"], beta_g2=hdr["beta2"], gamma_g2=hdr["gamma2"],
                          delta_g2=hdr["delta2"], ic=pts["IC"])
        meta = {"source": os.path.abspath(f.path), "format": "snarkjs-zkey", "protocol": "groth16",
                "curve": curve.name, "n_constraints": n_constraints, "n_vars": n_vars,
                "n_public": n_public, "domain_size": n,
                "points_checked": POINTS_CHECKED if check_points else "no",
                "points_check_seconds": round(checked, 3)}
        pk = ProvingKey(vk=vk, beta_g1=hdr["beta1"], delta_g1=hdr["delta1"], a_query=pts["A"],
                        b_g1_query=pts["B1"], b_g2_query=pts["B2"], l_query=pts["C"],
                        h_query=pts["H"], meta=meta, a_wires=_index_or_none(a_wires, n_vars),
                        b_wires=_index_or_none(b_wires, n_vars))
        pk.validate()
        return pk, cs


@dataclass(frozen=True)
class ZkeySizes:
    """A Groth16 zkey's sizes from its headers (read_zkey_sizes): wires, public inputs, the QAP
    domain and section 4's coefficient records (A and B, with the nPublic+1 binding rows)."""

    n_vars: int
    n_public: int
    domain: int
    n_coefficients: int


def read_zkey_sizes(path) -> ZkeySizes:
    """The sizes of a Groth16 zkey, read from its headers only (sections 1 and 2, section 4's count)
    after every section's length is checked against them; no point or coefficient is read. For
    the preflight: what the conversion will need is known before it allocates anything."""
    with BinFile(path, b"zkey", (1,)) as f:
        hdr, _ = _groth16_sections(f)
        return ZkeySizes(hdr["nVars"], hdr["nPublic"], hdr["domainSize"], _coefficient_count(f)[1])


def _groth16_sections(f: BinFile) -> tuple[dict, dict]:
    """(header, point sections by name) of a Groth16 zkey, each point section's length checked."""
    proto_sec = f.expect_length(1, "protocol", 4, "one u32")
    proto = f.u32(proto_sec.offset, "protocol")
    if proto != 1:
        f.fail("protocol", "1 (groth16)", f"{proto} ({ZKEY_PROTOCOLS.get(proto, 'unknown')})")
    hdr = _read_zkey_header(f)
    n_vars, n_public, n = hdr["nVars"], hdr["nPublic"], hdr["domainSize"]
    n_private = n_vars - n_public - 1
    g1, g2 = g1_raw(hdr["curve"]), g2_raw(hdr["curve"])
    secs = {}
    for what, count, size in (("IC", n_public + 1, g1), ("A", n_vars, g1), ("B1", n_vars, g1),
                              ("B2", n_vars, g2), ("C", n_private, g1), ("H", n, g1)):
        secs[what] = f.expect_length(SECTION_IDS[what], what, count * size, f"{count} points of {size} bytes")
    return hdr, secs


SECTION_IDS = {"IC": 3, "A": 5, "B1": 6, "B2": 7, "C": 8, "H": 9}
HEADER_POINTS = ("alpha1", "beta1", "beta2", "gamma2", "delta1", "delta2")
POINTS_CHECKED = "on the curve and in the subgroup of order r"


def _check_points(f: BinFile, hdr: dict, pts: dict, kept: dict) -> None:
    """Refuse the first point of the key (header, then sections 3, 5-9) that is off its curve or
    outside the subgroup of order r, naming its section and its index there (``kept``: the file
    indices of the points read by density). Without it such a key failed late: off the curve when
    the provers built their points (after Ray started), outside the subgroup as a proof that does
    not verify, blamed on the witness.

    Cost: ~65 us per G1 point, ~125 us per G2 point, one core (curve.first_invalid_point): ~0.2 s
    at 2^10, ~26 s at 2^16, ~7 min at 2^20 (A, B1, C, H of ~2^20 G1 points each and B2 in G2).
    Paid once per zkey: the conversion is cached (formats.zkey_cache), later runs load it."""
    for name in HEADER_POINTS:
        _refuse_invalid(f, hdr["curve"], hdr[name], f"section 2 (groth16 header) {name}")
    for what, arr in pts.items():
        keep = kept.get(what)
        _refuse_invalid(f, hdr["curve"], arr, f"section {SECTION_IDS[what]} ({what}) point", keep)


def _refuse_invalid(f: BinFile, curve: Curve, arr: np.ndarray, field: str, keep: np.ndarray | None = None) -> None:
    bad = groups_for(curve).first_invalid_point(arr)
    if bad is None:
        return
    index, reason = bad
    group = "G2" if arr.ndim == 4 else "G1"
    if field.endswith(" point"):
        field += f" {index if keep is None else int(keep[index])}"
    found = reason[len("point "):] if reason.startswith("point ") else reason
    f.fail(field, f"a point on the {group} curve in its subgroup of order r", f"one that {found}")


def _read_zkey_header(f: BinFile) -> dict:
    sec = f.section(2, "groth16 header")
    end = sec.offset + sec.length
    pos, curve = _prime_field(f, sec.offset, end, "q (base field prime)", "p")
    pos, _ = _prime_field(f, pos, end, "r (scalar field prime)", "r", curve, "its q (base field prime)")
    g1, g2 = g1_raw(curve), g2_raw(curve)
    n_vars, n_public, n = (f.u32(pos + 4 * i, name, end) for i, name in
                           enumerate(("nVars", "nPublic", "domainSize")))
    pos += 12
    expected = pos - sec.offset + 3 * g1 + 3 * g2
    if sec.length != expected:
        f.fail("section 2 (groth16 header) length", expected, sec.length)
    if n_public + 1 > n_vars:
        f.fail("nPublic", f"below nVars={n_vars}", n_public)
    if n < 2 or n & (n - 1) or n < n_public + 1:
        f.fail("domainSize", f"a power of two above nPublic={n_public}", n)
    hdr = {"nVars": n_vars, "nPublic": n_public, "domainSize": n, "curve": curve}
    for name, size in (("alpha1", g1), ("beta1", g1), ("beta2", g2), ("gamma2", g2),
                       ("delta1", g1), ("delta2", g2)):
        hdr[name] = _points_at(f, pos, 1, size, name, curve)
        pos += size
    return hdr


COEF_DTYPE = np.dtype([("matrix", "<u4"), ("row", "<u4"), ("wire", "<u4"), ("value", "<u8", (FR_LIMBS,))])


def _coefficient_count(f: BinFile):
    """(section 4, its record count), the count checked against the section's length."""
    sec = f.section(4, "coefficients")
    count = f.u32(sec.offset, "coefficient count", sec.offset + sec.length)
    if sec.length != 4 + count * COEF_DTYPE.itemsize:
        f.fail("section 4 (coefficients) length", f"{4 + count * COEF_DTYPE.itemsize} bytes for "
               f"{count} records of {COEF_DTYPE.itemsize}", sec.length)
    return sec, count


def _read_coefficients(f: BinFile, n_vars: int, n_public: int, n: int, r: int) -> tuple[ConstraintSystem, int]:
    """A and B from section 4; strips and verifies the nPublic+1 extra rows; returns (cs, m)."""
    sec, count = _coefficient_count(f)
    rec = f.array(sec.offset + 4, COEF_DTYPE, count, "coefficients")
    matrix, rows, wires = rec["matrix"], rec["row"].astype(np.int64), rec["wire"].astype(np.int64)
    if count and matrix.max() > 1:
        f.fail("coefficient matrix", "0 (A) or 1 (B)", int(matrix.max()))
    if count and wires.max() >= n_vars:
        f.fail("coefficient wire", f"below nVars={n_vars}", int(wires.max()))
    values = np.ascontiguousarray(rec["value"])
    _check_reduced(f, values, r, "coefficient values")
    values = redc_limbs(redc_limbs(values, r), r)  # stored c*R^2 mod r: two REDCs
    is_a = matrix == 0
    m = int(rows[is_a].max()) - n_public if is_a.any() else -1  # extra row s is A row m + s
    if m < 0:
        f.fail("coefficients", f"the {n_public + 1} extra A rows binding the public inputs", "none")
    extra = is_a & (rows >= m)
    s = np.arange(n_public + 1)
    order = np.argsort(rows[extra], kind="stable")
    ok = (extra.sum() == n_public + 1 and np.array_equal(rows[extra][order], m + s)
          and np.array_equal(wires[extra][order], s)
          and np.all(values[extra][order] == np.array([1, 0, 0, 0], dtype=np.uint64)))
    if not ok:
        f.fail("coefficients", f"A rows {m}..{m + n_public} = wire s with coefficient 1 (public input binding)",
               "something else (corrupt coefficient section)")
    if (~is_a).any() and rows[~is_a].max() >= m:
        f.fail("coefficient row of B", f"below nConstraints={m}", int(rows[~is_a].max()))
    if domain_size(m, n_public) != n:
        f.fail("domainSize", f"{domain_size(m, n_public)} for {m} constraints and {n_public} public inputs", n)
    keep = ~extra
    mats = [CsrMatrix.from_coo(rows[keep & sel], wires[keep & sel], values[keep & sel], m, n_vars)
            for sel in (is_a, ~is_a)]
    return ConstraintSystem(n_vars, n_public, mats[0], mats[1], None, name=f.name, modulus=r), m


def _points(f: BinFile, sec, what: str, curve: Curve, keep: np.ndarray | None = None) -> np.ndarray:
    size = g2_raw(curve) if what == "B2" else g1_raw(curve)
    return _points_at(f, sec.offset, sec.length // size, size, what, curve, keep)


def _present_wires(f: BinFile, sec, what: str, curve: Curve, chunk: int = 1 << 20) -> np.ndarray:
    """uint32 indices of the points of a section that are not infinity (all zero bytes: the same in
    Montgomery and standard form), a chunk of points at a time over the mapped file."""
    size = g2_raw(curve) if what == "B2" else g1_raw(curve)
    count = sec.length // size
    words = f.array(sec.offset, "<u8", count * size // 8, what).reshape(count, size // 8)
    present = np.empty(count, dtype=bool)
    for lo in range(0, count, chunk):
        present[lo : lo + chunk] = words[lo : lo + chunk].any(axis=1)
    return np.flatnonzero(present).astype(WIRE_INDEX_DTYPE)


def _index_or_none(wires: np.ndarray, n_vars: int) -> np.ndarray | None:
    """The density index, or None when every wire has a point (a dense query needs no gather)."""
    return None if len(wires) == n_vars else wires


def _points_at(f: BinFile, offset: int, count: int, size: int, what: str, curve: Curve,
               keep: np.ndarray | None = None) -> np.ndarray:
    """``count`` affine points (Montgomery Fp coordinates) -> standard-form G1/G2 array; with
    ``keep`` (point indices) only those points, converted and in that order."""
    coords = f.array(offset, "<u8", count * size // 8, what).reshape(count, -1)
    k = curve.fp_limbs
    _check_reduced(f, coords.reshape(-1, k), curve.p, f"{what} coordinates")
    if keep is not None and len(keep) < count:
        coords, count = coords[keep], len(keep)
    out = redc_limbs(coords.reshape(-1, k), curve.p)  # zero stays zero: infinity is all zero in both forms
    return out.reshape((count, 2, k) if size == g1_raw(curve) else (count, 2, 2, k))


# ---------------------------------------------------------------------------------------------
# Cross-checks


def check_zkey_against_r1cs(zkey_cs: ConstraintSystem, r1cs: ConstraintSystem, zkey_path="zkey") -> None:
    """Raise FormatError unless the zkey's A and B are the r1cs's (same sizes and coefficients)."""
    def fail(field, expected, found):
        raise FormatError(f"{zkey_path}: {field}: expected {expected} (from {r1cs.name}), found {found}")

    for name in ("n_wires", "n_public", "n_constraints"):
        if getattr(zkey_cs, name) != getattr(r1cs, name):
            fail(name, getattr(r1cs, name), getattr(zkey_cs, name))
    for name in ("A", "B"):
        z, r = _canonical(getattr(zkey_cs, name)), _canonical(getattr(r1cs, name))
        if not all(np.array_equal(x, y) for x, y in zip(z, r)):
            fail(f"matrix {name}", "the same rows and coefficients", "a different matrix (another circuit?)")


def _canonical(mat: CsrMatrix):
    """(rows, cols, limbs) of the non-zero entries, sorted: equal matrices compare equal."""
    rows = np.repeat(np.arange(mat.n_rows), np.diff(mat.indptr))
    nz = mat.data.any(axis=1)
    order = np.lexsort((mat.indices[nz], rows[nz]))
    return rows[nz][order], mat.indices[nz][order], mat.data[nz][order]
