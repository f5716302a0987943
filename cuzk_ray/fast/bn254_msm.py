"""BN254 G1 and G2 multi-scalar multiplication on the CPU (numba; fast/ec_kernels.py's templates
over BN254's Fp and Fp2), bit for bit the sums of ref/bn254.py.

    bases = MsmBases.g1(points)          # affine standard-form uint64[n, 2, 4] (G2: [n, 2, 2, 4]),
    bases.msm(scalars, start=None)        # converted to Montgomery rows once; -> ref.bn254 affine
                                          # point (None: infinity) of sum_i s_i bases[start + i]

Scalars: an FrVector, standard-form ``uint64[m, 4]`` limbs or ints (reduced mod r here). The
window width follows the size (``window_bits``); the kernels release the GIL, so MSMs run in
parallel on threads (the CPU backend's pool). Kernels compile on first use in a process that has
no cached copy (numba's on-disk cache, ~30 s once) and load in well under a second after that.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass, field

import numpy as np

from ..curves import BN254
from ..field import FrVector, ints_to_limbs, limbs_to_ints
from ..ref import bn254 as ref_bn254
from ..ref import bn254_xyzz
from . import ec_kernels as E
from .limb_arith import field_namespace, instantiate, module_name
from .ntt_kernels import kernels_for

FP_NL = 4
SCALAR_BITS = BN254.r.bit_length()  # 254
log = logging.getLogger(__name__)
# From this many terms the buckets are affine, added in batches of AFFINE_BATCH sharing one
# inversion (6 products an addition against XYZZ's 10); below it XYZZ buckets (no batches to fill).
AFFINE_MIN_SIZE = 1 << 10
AFFINE_BATCH = 512
# Fixed-base tables (a key's queries, from this many bases up): 2^(c j) P_i for every window j,
# made once and kept on disk (TABLE_DIR, by the bases' hash), so that an MSM is one pass of
# n * 17 additions into 2^14 buckets and one bucket sum (no per-window sums, no doublings):
# ~1.3x faster at 2^16 than per-window Pippenger; costs 17 copies of the bases (a 2^16 key's
# queries: ~330 MB) and ~20 s to make. Up to TABLE_MAX_BASES bases a query.
TABLE_MIN_SIZE = 1 << 13
TABLE_MAX_BASES = 1 << 20
TABLE_C = 15
TABLE_DIR = os.environ.get("CUZK_MSM_TABLES", os.path.join(os.path.expanduser("~"), ".cache", "cuzk-ray", "msm-tables"))


@functools.cache
def fp_kernels():
    """BN254 Fp's namespace with the Fp helpers and the to_mont / from_mont kernels."""
    ns = field_namespace(BN254.p, FP_NL)
    names = tuple(f.__name__ for f in E.FP_KERNELS)
    return instantiate(E.FP_HELPERS + E.FP_KERNELS, ns, module_name(__name__ + ".fp", BN254.p), cached=names)


@functools.cache
def group_kernels(group: str):
    """The MSM kernels of "g1" (over Fp) or "g2" (over Fp2)."""
    fp = fp_kernels().ns
    zero = (np.uint64(0),) * FP_NL
    templates = E.FP_HELPERS + E.GROUP_HELPERS + E.GROUP_KERNELS
    if group == "g2":
        templates = E.FP2_HELPERS + templates
    names = tuple(f.__name__ for f in E.GROUP_KERNELS)
    inst = instantiate(templates, {k: v for k, v in fp.items() if not k.startswith("__")},
                       module_name(f"{__name__}.{group}", BN254.p), cached=names)
    ns = inst.ns
    ns["INV_BITS"] = tuple(int(b) for b in bin(BN254.p - 2)[2:])
    ns["PSI_BITS"] = tuple(int(b) for b in bin(6 * ref_bn254.U * ref_bn254.U)[2:])
    if group == "g1":
        ns.update(f_mul=ns["mul"], f_sqr=ns["fp_sqr"], f_add=ns["add"], f_sub=ns["sub"], f_neg=ns["neg"],
                  f_is_zero=ns["is_zero"], f_eq=ns["eq"], f_inv=ns["fp_inv"], f_load=ns["fp_load"],
                  f_store=ns["fp_store"], f_conj=ns["fp_conj"], F_ZERO=zero, F_ONE=ns["MONT_ONE"],
                  F_B=mont_tuple(BN254.b), PSI_X=zero, PSI_Y=zero)
    else:
        ns.update(f_mul=ns["fp2_mul"], f_sqr=ns["fp2_sqr"], f_add=ns["fp2_add"], f_sub=ns["fp2_sub"],
                  f_neg=ns["fp2_neg"], f_is_zero=ns["fp2_is_zero"], f_eq=ns["fp2_eq"], f_inv=ns["fp2_inv"],
                  f_load=ns["fp2_load"], f_store=ns["fp2_store"], f_conj=ns["fp2_conj"], F_ZERO=(zero, zero),
                  F_ONE=(ns["MONT_ONE"], zero), F_B=mont_pair(BN254.b2), PSI_X=mont_pair(ref_bn254.G12),
                  PSI_Y=mont_pair(ref_bn254.G13))
    return inst


def mont_tuple(v: int) -> tuple:
    """An Fp value in Montgomery form as a tuple of 4 uint64 limbs (a kernel constant)."""
    m = v * pow(2, 256, BN254.p) % BN254.p
    return tuple(np.uint64((m >> (64 * i)) & ((1 << 64) - 1)) for i in range(FP_NL))


def mont_pair(v) -> tuple:
    return mont_tuple(v[0]), mont_tuple(v[1])


def first_invalid(points: np.ndarray) -> tuple[int, str] | None:
    """(index, reason) of the first point of a standard-form G1 ``uint64[n, 2, 4]`` or G2
    ``uint64[n, 2, 2, 4]`` array off the curve or (G2) outside the subgroup of order r, None when
    all are valid: curve_bn254.first_invalid_point's answer, ~200 us a G2 point instead of ~2 ms."""
    g2 = points.ndim == 4
    bad = np.zeros(2, dtype=np.int64)
    group_kernels("g2" if g2 else "g1").first_invalid(to_mont_rows(points, 4 if g2 else 2), g2, bad)
    if bad[0] < 0:
        return None
    return int(bad[0]), "point is not on the curve" if bad[1] == 1 else "point is not in the subgroup of order r"


def window_bits(n: int) -> int:
    """Pippenger's window for n terms: about log2(n) - 4 (n * 254 / c bucket additions against
    2^c per window for the bucket sums; measured best at 2^16: c = 13), between 4 and 16."""
    return max(4, min(16, n.bit_length() - 4))


def to_mont_rows(points: np.ndarray, coords: int) -> np.ndarray:
    """Affine standard-form points (``uint64[n, 2, 4]`` or ``[n, 2, 2, 4]``) -> Montgomery rows
    ``uint64[n, 4 coords]`` (infinity, all zero, stays zero)."""
    rows = np.array(points, dtype=np.uint64, order="C").reshape(-1, FP_NL * coords)
    fp_kernels().to_mont(rows.reshape(-1, FP_NL))
    return rows


def scalar_limbs(scalars) -> np.ndarray:
    """Scalars as standard-form ``uint64[m, 4]`` below r (a fresh array, reduced)."""
    if isinstance(scalars, FrVector):
        scalars = np.asarray(scalars.limbs)
    if isinstance(scalars, np.ndarray) and scalars.dtype == np.uint64:
        x = np.array(scalars.reshape(-1, 4), dtype=np.uint64, order="C")
    else:
        x = ints_to_limbs([int(v) % BN254.r for v in scalars], 4)
    kernels_for(BN254.r).reduce_in_place(x)
    return x


def xyzz_row_to_affine(row: np.ndarray, group: str):
    """One Montgomery XYZZ row -> a ref.bn254 affine point (None: infinity)."""
    std = np.array(row, dtype=np.uint64).reshape(-1, FP_NL)
    fp_kernels().from_mont(std)
    v = [int(x) for x in limbs_to_ints(std)]
    if group == "g1":
        return bn254_xyzz.G1.xyzz_to_affine(tuple(v))
    return bn254_xyzz.G2.xyzz_to_affine(tuple((v[2 * k], v[2 * k + 1]) for k in range(4)))


def msm_rows(rows: np.ndarray, scalars: np.ndarray, group: str):
    """sum_i scalars[i] rows[i] (Montgomery rows, reduced scalar limbs) -> affine point or None."""
    n = len(scalars)
    if n == 0:
        return None
    k = group_kernels(group)
    c = window_bits(n)
    nw = SCALAR_BITS // c + 1  # c nw > 254: the top window holds the last carry
    digits = np.empty((nw, n), dtype=np.int32)
    E.signed_digits(scalars, c, digits)
    width = rows.shape[1] * 2  # an XYZZ row holds 4 coordinates, an affine one 2
    nb = 1 << (c - 1)
    windows = np.empty((nw, width), dtype=np.uint64)
    out = np.empty((1, width), dtype=np.uint64)
    if n >= AFFINE_MIN_SIZE:
        batch = max(1, min(AFFINE_BATCH, nb // 4))
        k.msm_affine(rows, digits, c, np.empty((nb, rows.shape[1]), dtype=np.uint64), np.empty(nb, dtype=np.uint8),
                     np.empty(nb, dtype=np.int64), np.empty((nb, width), dtype=np.uint64),
                     np.empty(batch, dtype=np.int32), np.empty(batch, dtype=np.int32), np.empty(batch, dtype=np.uint8),
                     np.empty((batch, rows.shape[1] // 2), dtype=np.uint64), windows, out)
    else:
        k.msm(rows, digits, c, np.empty((nb, width), dtype=np.uint64), windows, out)
    return xyzz_row_to_affine(out[0], group)


def table_windows(c: int) -> int:
    return SCALAR_BITS // c + 1


def build_table(rows: np.ndarray, group: str, c: int = TABLE_C) -> np.ndarray:
    """The fixed-base table of Montgomery rows: ``uint64[n * nw, width]``, row i nw + j =
    2^(c j) rows[i] (ec_kernels.precompute)."""
    nw = table_windows(c)
    width = rows.shape[1]
    block = 256
    out = np.empty((len(rows) * nw, width), dtype=np.uint64)
    group_kernels(group).precompute(rows, c, nw, np.empty((block * nw, 2 * width), dtype=np.uint64),
                                    np.empty((block * nw, width // 2), dtype=np.uint64), out)
    return out


def cached_table(rows: np.ndarray, group: str, c: int = TABLE_C) -> np.ndarray:
    """build_table's result from TABLE_DIR (memory-mapped, read-only) when these exact bases were
    tabled before, else built and stored there (a temporary name renamed into place)."""
    h = hashlib.sha256(rows.tobytes())
    h.update(f"{group} {c} {group_kernels(group).ns['__name__']}".encode())
    path = os.path.join(TABLE_DIR, f"{group}-{h.hexdigest()[:32]}.npy")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError):
        pass
    table = build_table(rows, group, c)
    try:
        os.makedirs(TABLE_DIR, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npy", dir=TABLE_DIR)
        with os.fdopen(fd, "wb") as f:
            np.save(f, table, allow_pickle=False)
        os.replace(tmp, path)
    except OSError as e:  # a read-only or full disk: the table still serves this process
        log.warning("MSM table not stored: %s: %s (need %d MiB)", e.filename or TABLE_DIR, e.strerror,
                    table.nbytes >> 20)
    return table


def msm_table_rows(table: np.ndarray, scalars: np.ndarray, group: str, c: int = TABLE_C):
    """sum_i scalars[i] P_i from P's fixed-base table (rows i nw .. i nw + nw - 1 of each base)."""
    n = len(scalars)
    if n == 0:
        return None
    nw = table_windows(c)
    digits = np.empty((nw, n), dtype=np.int32)
    E.signed_digits(scalars, c, digits)
    flat = np.ascontiguousarray(digits.T).reshape(1, -1)  # k = i nw + j, as the table's rows
    width = table.shape[1]
    nb = 1 << (c - 1)
    out = np.empty((1, 2 * width), dtype=np.uint64)
    group_kernels(group).msm_table(
        table[: n * nw], flat, np.empty((nb, width), dtype=np.uint64), np.empty(nb, dtype=np.uint8),
        np.empty(nb, dtype=np.int64), np.empty((nb, 2 * width), dtype=np.uint64),
        np.empty(AFFINE_BATCH, dtype=np.int32), np.empty(AFFINE_BATCH, dtype=np.int32),
        np.empty(AFFINE_BATCH, dtype=np.uint8), np.empty((AFFINE_BATCH, width // 2), dtype=np.uint64),
        np.empty((1, 2 * width), dtype=np.uint64), out)
    return xyzz_row_to_affine(out[0], group)


@dataclass(frozen=True)
class MsmBases:
    """A G1 or G2 base array in the MSM kernels' layout (Montgomery rows), made once per key, and
    from TABLE_MIN_SIZE bases its fixed-base table (``table``; cached on disk)."""

    rows: np.ndarray
    group: str  # "g1" | "g2"
    table: np.ndarray | None = field(default=None, compare=False, repr=False)

    @classmethod
    def make(cls, points: np.ndarray, group: str) -> MsmBases:
        rows = to_mont_rows(points, 2 if group == "g1" else 4)
        table = cached_table(rows, group) if TABLE_MIN_SIZE <= len(rows) <= TABLE_MAX_BASES else None
        return cls(rows, group, table)

    @classmethod
    def g1(cls, points: np.ndarray) -> MsmBases:
        return cls.make(points, "g1")

    @classmethod
    def g2(cls, points: np.ndarray) -> MsmBases:
        return cls.make(points, "g2")

    def __len__(self) -> int:
        return len(self.rows)

    def msm(self, scalars, start: int | None = None):
        """sum_i s_i P_(start + i) (start None: the scalars cover every base) as a ref.bn254 point."""
        s = scalar_limbs(scalars)
        if start is None:
            if len(s) != len(self.rows):
                raise ValueError(f"MSM: {len(self.rows)} bases but {len(s)} scalars")
            start = 0
        elif start < 0 or start + len(s) > len(self.rows):
            raise ValueError(f"MSM: {len(s)} scalars from base {start} but {len(self.rows)} bases")
        if self.table is not None:
            nw = table_windows(TABLE_C)
            return msm_table_rows(self.table[start * nw : (start + len(s)) * nw], s, self.group)
        return msm_rows(self.rows[start : start + len(s)], s, self.group)


def warm_up() -> None:
    """Compile or load every MSM kernel (a tiny MSM in each group)."""
    g1 = np.array([[[1, 0, 0, 0], [2, 0, 0, 0]]], dtype=np.uint64)
    MsmBases.g1(g1).msm([3])
    g2 = np.array(BN254.g2, dtype=object)
    MsmBases.g2(ints_to_limbs(g2.tolist(), 4).reshape(1, 2, 2, 4)).msm([3])
