"""a, b, c = A.w, B.w, C.w on the GPU from constraint matrices resident in VRAM (kernels/spmv.cu).

A ``CsrMatrix`` is uploaded once into the kernel's layout (``DeviceCsr``):
  indptr   int64[rows + 1]
  entries  uint32[nnz, 2]   (column, coefficient code)
  table    uint64[k, 4]     coefficient of code t, Montgomery form
Codes 0 and 1 are +1 and -1 (the kernel adds or subtracts without a multiplication); other
coefficients in (-2^32, 2^32) (2, 2^k, ...) share one table row per distinct value; the rest get
a row each. PoRep-like circuits thus need 8 bytes per non-zero instead of 40.

``evaluate_abc(dcs, w)`` writes a, b, c straight into the ``uint64[3, n, 4]`` buffer that
``cuda.ntt.compute_h_device`` consumes: rows m..n-1 zero except a[m + s] = w_s (s = 0..n_public),
the QAP's public-input rows (ref.qap.extend_to_domain); with ``qap="bellperson"`` the domain is
bellperson's (ref.bellperson_qap) and nothing is appended. ``h_from_witness`` chains the two, so
only the witness crosses the bus. The witness is an FrVector (trusted) or a raw array (checked once,
device.check_fr).

The layout is built with numpy or cupy alike (``xp``): the CPU tests check it without a GPU.

Curves: a constraint system's ``modulus`` (its r) names its curve (cuzk_ray.curves); the matrices
go up with that r's codes and checks and the kernels are spmv.cu compiled for it, and H is taken
on that curve's domain (BN254: snarkjs's convention only; bellperson's H is BLS12-381's).
"""

from __future__ import annotations

import numpy as np

from ..curves import BLS12_381, curve_named, curve_of_prime
from ..domain import Domain, domain_size
from ..field import FR_LIMBS, R_MOD, FrVector
from ..kernels.loader import DEFAULT_CURVE, get_kernel, require_cupy
from ..r1cs import CODE_ONE, CodedCsr, ConstraintSystem, Matrix, coefficient_codes
from ..ref.bellperson_qap import bellperson_domain
from .device import check_fr, check_fr_array
from .device import launch as launch_kernel
from .ntt import h_device_function

MODULE = "spmv.cu"
THREADS = 256  # a multiple of 32: spmv_csr_long's warps each take one row
FAST = True  # add/sub for codes 0/1 (False: multiply by the table entry; for measurements)
# Rows of more terms than this are summed a warp each (spmv_csr_long), the rest a thread each:
# at 32 GiB the real PoRep circuit's A has 313 K rows of 17-929 terms among 130 M of 1-3, which
# held the thread-per-row kernel's warps (8.4 % of its lanes busy). None: every row a thread
# (the kernel as it was; jobs/bench_spmv_filecoin.py times both on the real matrices).
LONG_ROW: int | None = 16
LONG_ROWS_CHUNK = 1 << 24  # rows measured at once when the long ones are listed (a 128 MiB temporary)


# ---------------------------------------------------------------------------------------------
# Layout (numpy or cupy)


def csr_layout(m: Matrix, xp=np, data=None, modulus: int = R_MOD):
    """(indptr int64[rows + 1], entries uint32[nnz, 2], table standard uint64[k, 4]) of m
    (``data``: m.data already on the device, if the caller uploaded it; ``modulus``: the
    circuit's r, for the codes of -1 and the small negatives). A CodedCsr is in this layout
    already: its arrays as they are (moved to ``xp``)."""
    if isinstance(m, CodedCsr):
        return xp.asarray(m.indptr, dtype=xp.int64), xp.asarray(m.entries), xp.asarray(m.table)
    if m.nnz >= 2**32 - 2 or m.n_cols >= 2**32:
        raise ValueError(f"spmv: {m.nnz} non-zeros over {m.n_cols} columns; the kernel indexes with 32 bits")
    if data is None:
        data = xp.asarray(np.ascontiguousarray(m.data).reshape(-1, FR_LIMBS))
    codes, table = coefficient_codes(data, xp, modulus)
    cols = xp.asarray(m.indices).astype(xp.uint32)
    entries = xp.ascontiguousarray(xp.stack([cols, codes], axis=1))
    return xp.asarray(m.indptr, dtype=xp.int64), entries, table


def transpose_layout(indptr, entries, n_rows: int, n_cols: int, extra_rows: int = 0, xp=np):
    """(indptr, entries) of M'^T where M' is M (n_rows x n_cols) with ``extra_rows`` rows appended,
    row n_rows + s holding +1 at column s (the QAP's public-input rows of A). Codes are kept."""
    nnz = int(entries.shape[0])
    rows = xp.searchsorted(indptr, xp.arange(nnz, dtype=xp.int64), side="right") - 1
    cols = entries[:, 0].astype(xp.int64)
    codes = entries[:, 1]
    if extra_rows:
        rows = xp.concatenate([rows, n_rows + xp.arange(extra_rows, dtype=xp.int64)])
        cols = xp.concatenate([cols, xp.arange(extra_rows, dtype=xp.int64)])
        codes = xp.concatenate([codes, xp.full(extra_rows, CODE_ONE, dtype=xp.uint32)])
    t_indptr = xp.zeros(n_cols + 1, dtype=xp.int64)
    if cols.shape[0] == 0:
        return t_indptr, xp.zeros((0, 2), dtype=xp.uint32)
    order = xp.argsort(cols)
    t_indptr[1:] = xp.cumsum(xp.bincount(cols, minlength=n_cols))
    t_entries = xp.ascontiguousarray(xp.stack([rows[order].astype(xp.uint32), codes[order]], axis=1))
    return t_indptr, t_entries


# ---------------------------------------------------------------------------------------------
# Device side


def launch(name: str, n: int, args, curve: str = DEFAULT_CURVE) -> None:
    """Kernel ``name`` of spmv.cu compiled for ``curve`` on n threads (none for n = 0)."""
    launch_kernel(get_kernel(MODULE, name, curve=curve), n, args, THREADS)


def curve_of_system(cs: ConstraintSystem) -> str:
    """The curve name (cuzk_ray.curves) whose r is cs.modulus; ValueError naming it otherwise."""
    curve = curve_of_prime(cs.modulus)
    if curve is None or curve.r != cs.modulus:
        raise ValueError(f"spmv: {cs.name} is over a field of modulus {cs.modulus:#x}, no supported curve's r")
    return curve.name


def layout_bytes(m: Matrix) -> tuple[int, int]:
    """(resident bytes without the general-coefficient table, peak temporary bytes while uploading;
    none for a CodedCsr, uploaded as it is)."""
    # (+ the long rows' list: 4 bytes a row of more than LONG_ROW terms, 1.25 MB for the 32 GiB A,
    # within the preflight's margin; listing them takes one chunk's lengths and mask at a time)
    chunk = min(m.n_rows, LONG_ROWS_CHUNK) * (8 + 1 + 8) if LONG_ROW is not None else 0
    return (m.n_rows + 1) * 8 + m.nnz * 8, max(chunk, 0 if isinstance(m, CodedCsr) else m.nnz * (32 + 8 + 8 + 8))


def long_rows(indptr, n_rows: int, long_row: int | None, xp=None):
    """The rows of more than ``long_row`` terms (uint32, ascending) of a CSR ``indptr`` (numpy or
    cupy: ``xp``, default cupy), measured LONG_ROWS_CHUNK rows at a time; none for long_row None."""
    xp = require_cupy() if xp is None else xp
    if long_row is None or n_rows == 0:
        return xp.zeros(0, dtype=xp.uint32)
    if n_rows >= 2**32:
        raise ValueError(f"spmv: {n_rows} rows; the long-row list indexes with 32 bits")
    found = []
    for start in range(0, n_rows, LONG_ROWS_CHUNK):
        end = min(start + LONG_ROWS_CHUNK, n_rows)
        lengths = indptr[start + 1 : end + 1] - indptr[start:end]
        found.append((xp.flatnonzero(lengths > long_row) + start).astype(xp.uint32))
    return xp.concatenate(found)


class DeviceCsr:
    """A CsrMatrix in VRAM in the kernel's layout (see the module docstring), over ``curve``'s Fr."""

    def __init__(self, indptr, entries, table_mont, n_rows: int, n_cols: int, curve: str = DEFAULT_CURVE):
        self.indptr, self.entries, self.table = indptr, entries, table_mont
        self.n_rows, self.n_cols = n_rows, n_cols
        self.curve = curve
        self.long_row = LONG_ROW
        self.long_rows = long_rows(indptr, n_rows, LONG_ROW)  # uint32: the rows spmv_csr_long sums

    @classmethod
    def upload(cls, m: Matrix, curve: str = DEFAULT_CURVE) -> DeviceCsr:
        """m in VRAM, its coefficients checked below the r of ``curve`` (a cuzk_ray.curves name)."""
        cp = require_cupy()
        r = curve_named(curve).r
        if isinstance(m, CodedCsr):  # the stored layout: only its (small) table is checked
            indptr, entries, table = csr_layout(m, cp)
            table = check_fr_array(cp.ascontiguousarray(table), "constraint coefficients", modulus=r)
            if m.nnz and int(entries[:, 1].max()) >= table.shape[0]:
                raise ValueError(f"constraint matrix: a coefficient code >= the table's {table.shape[0]} rows")
        else:
            data = check_fr_array(cp.asarray(np.ascontiguousarray(m.data).reshape(-1, FR_LIMBS)),
                                  "constraint coefficients", modulus=r)
            indptr, entries, table = csr_layout(m, cp, data, r)
            del data
        launch("fr_to_mont", table.shape[0], (table, np.uint64(table.shape[0])), curve)
        return cls(indptr, entries, table, m.n_rows, m.n_cols, curve)

    @property
    def nbytes(self) -> int:
        return self.indptr.nbytes + self.entries.nbytes + self.table.nbytes + self.long_rows.nbytes

    def transposed(self, extra_rows: int = 0) -> DeviceCsr:
        """M'^T (see transpose_layout) sharing this matrix's table."""
        cp = require_cupy()
        indptr, entries = transpose_layout(self.indptr, self.entries, self.n_rows, self.n_cols, extra_rows, cp)
        return DeviceCsr(indptr, entries, self.table, self.n_cols, self.n_rows + extra_rows, self.curve)

    def matvec_into(self, out, x, copy_rows: int = 0, fast: bool | None = None) -> None:
        """out[i] = (M x)_i for i < n_rows, x[i - n_rows] for the next copy_rows, 0 up to len(out).

        out: cupy uint64[n, 4] (C-contiguous, n >= n_rows + copy_rows); x: cupy uint64[>= n_cols, 4],
        both standard form."""
        n = out.shape[0]
        if n < self.n_rows + copy_rows or x.shape[0] < max(self.n_cols, copy_rows):
            raise ValueError(f"spmv: output {n} rows / input {x.shape[0]} rows too short for a "
                             f"{self.n_rows} x {self.n_cols} matrix (+{copy_rows} copied rows)")
        fast = np.int32(1 if (FAST if fast is None else fast) else 0)
        every = np.uint64(2**64 - 1)  # no row is too long for a thread
        launch("spmv_csr", n, (out, self.indptr, self.entries, self.table, x, np.uint64(self.n_rows),
                                np.uint64(n), np.uint64(copy_rows), fast,
                                every if self.long_row is None else np.uint64(self.long_row)), self.curve)
        count = int(self.long_rows.shape[0])
        if count:
            launch("spmv_csr_long", count * 32, (out, self.indptr, self.entries, self.table, x, self.long_rows,
                                                  np.uint64(count), fast), self.curve)


# c = a * b on the device for every circuit, a stored C neither uploaded nor multiplied: for a
# witness that satisfies the constraints (A.w)_i (B.w)_i = (C.w)_i on each constraint row, and
# above row m both are 0 (b is 0 on the public-input rows; tests/test_h_from_witness_cpu.py
# checks this premise). At 2^27 (porep32g) that is one sparse product fewer per partition (a
# Montgomery product per row instead: c / R, compute_h_device(c_over_r=True)) and ~3 GiB less
# VRAM (C's 2.26 GB of entries and 1.04 GB of indptr). A witness that does not satisfy them gives
# a proof that fails verification either way (the L query holds the real C). False: C.w as stored.
C_FROM_AB = True


class DeviceConstraintSystem:
    """A, B (and C when stored and c_from_ab is False) of a constraint system resident in VRAM,
    over the curve whose r is cs.modulus (``curve``, ``r``)."""

    def __init__(self, cs: ConstraintSystem, c_from_ab: bool | None = None):
        self.cs = cs
        self.n_wires, self.n_public, self.m = cs.n_wires, cs.n_public, cs.n_constraints
        self.domain = domain_size(self.m, self.n_public)
        self.curve, self.r = curve_of_system(cs), cs.modulus
        self.A = DeviceCsr.upload(cs.A, self.curve)
        self.B = DeviceCsr.upload(cs.B, self.curve)
        self.C = None if cs.C is None or _c_from_ab(c_from_ab) else DeviceCsr.upload(cs.C, self.curve)

    @staticmethod
    def estimate_bytes(cs: ConstraintSystem, c_from_ab: bool | None = None) -> tuple[int, int]:
        """(resident bytes, upper bound; peak extra bytes during the upload)."""
        mats = [m for m in (cs.A, cs.B, None if _c_from_ab(c_from_ab) else cs.C) if m is not None]
        res = [layout_bytes(m) for m in mats]
        tables = [m.table.nbytes if isinstance(m, CodedCsr) else m.nnz * 32 for m in mats]
        return sum(r + t for (r, _), t in zip(res, tables)), max(t for _, t in res)

    @staticmethod
    def working_bytes(cs: ConstraintSystem) -> int:
        """VRAM one proof needs beside the matrices: witness, a|b|c, h."""
        return (cs.n_wires + 4 * domain_size(cs.n_constraints, cs.n_public)) * 32

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in (self.A, self.B, self.C) if m is not None)


def _c_from_ab(c_from_ab: bool | None) -> bool:
    return C_FROM_AB if c_from_ab is None else c_from_ab



def device_witness(dcs: DeviceConstraintSystem, witness) -> FrVector:
    """The witness as an FrVector on the device: an FrVector as it is (uploaded if on the host), a
    raw numpy or cupy uint64[n_wires, 4] range-checked below the circuit's r (a cupy input is
    used in place)."""
    if isinstance(witness, np.ndarray):
        witness = np.ascontiguousarray(witness)
    w = check_fr(witness, "witness", dcs.r)
    if len(w) != dcs.n_wires:
        raise ValueError(f"witness has {len(w)} values, the circuit has {dcs.n_wires} wires")
    return w


def evaluate_abc(dcs: DeviceConstraintSystem, witness, fast: bool | None = None, c_over_r: bool = False,
                 qap: str = "snarkjs"):
    """a | b | c on the domain as a new cupy ``uint64[3, n, 4]`` (standard form, the layout of
    ntt.compute_h_device), c = a * b without C on the device (C_FROM_AB). ``qap`` "snarkjs":
    the domain of domain_size(m, p) with the public-input rows a[m + s] = w_s; "bellperson": the
    domain of bellperson_domain(m) (m rounded up to a power of two), nothing appended (a recorded
    Filecoin circuit holds its input rows itself).
    c_over_r: c / R instead (one Montgomery product, not two), for compute_h_device(c_over_r=True);
    only without C on the device (C.w gives c itself: ValueError)."""
    if c_over_r and dcs.C is not None:
        raise ValueError("evaluate_abc: c_over_r needs c = a * b, but C is on the device (c_from_ab=False)")
    h_device_function(qap)  # an unknown convention is named before any work
    check_qap_curve(qap, dcs.curve)
    cp = require_cupy()
    w = device_witness(dcs, witness).limbs
    n = dcs.domain if qap == "snarkjs" else bellperson_domain(dcs.m).n
    abc = cp.empty((3, n, FR_LIMBS), dtype=cp.uint64)
    dcs.A.matvec_into(abc[0], w, copy_rows=dcs.n_public + 1 if qap == "snarkjs" else 0, fast=fast)
    dcs.B.matvec_into(abc[1], w, fast=fast)
    if dcs.C is not None:
        dcs.C.matvec_into(abc[2], w, fast=fast)
    else:
        launch("fr_mul_mont" if c_over_r else "fr_mul_std", n, (abc[2], abc[0], abc[1], np.uint64(n)),
               dcs.curve)
    return abc


def check_qap_curve(qap: str, curve: str) -> None:
    """ValueError in one line for bellperson's H over another curve than BLS12-381 (Filecoin's)."""
    if qap == "bellperson" and curve != BLS12_381.name:
        raise ValueError(f"backend=cuda: bellperson's H (Filecoin's QAP) is BLS12-381's only; this circuit is "
                         f"over {curve}")


def h_from_witness(dcs: DeviceConstraintSystem, witness, domain: Domain | str | None = None, qap: str = "snarkjs"):
    """h (cupy, standard form, every value < r by construction) from the witness: spmv, then the
    H of the key's convention ``qap`` (ntt.compute_h_device: ``uint64[n, 4]``; "bellperson":
    ntt.compute_h_bellperson_device, ``uint64[m - 1, 4]``); c as c / R when C is not on the device
    (one product fewer per row, the R folded into c's scaling)."""
    c_over_r = dcs.C is None
    abc = evaluate_abc(dcs, witness, c_over_r=c_over_r, qap=qap)
    if domain is None and dcs.curve != DEFAULT_CURVE:  # None is BLS12-381's domain of that size
        domain = Domain.of(abc.shape[1], "snarkjs", dcs.curve)
    # without C on the device c is a b (C_FROM_AB): bellperson's H may then take six transforms
    extra = {"c_is_ab": c_over_r} if qap == "bellperson" else {}
    return h_device_function(qap)(abc, domain, c_over_r=c_over_r, **extra)
