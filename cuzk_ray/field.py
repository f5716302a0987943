"""BLS12-381 base field Fp and scalar field Fr: constants, limb-array conversions, FrVector (checked vectors).

Conventions (DESIGN.md section 4):
- Fr elements are ``uint64[n, 4]`` little-endian limbs, Fp elements ``uint64[n, 6]``.
- Arrays hold the *standard* form unless their name ends in ``_mont`` (Montgomery form,
  x * R mod p with R = 2^256 for Fr and 2^384 for Fp).
- CPU arithmetic works on numpy object arrays of Python ints ("int vectors"); the limb arrays
  are the storage and transfer format (keys on disk, Arrow partitions, GPU buffers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# Scalar field modulus r and base field modulus q.
R_MOD = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
Q_MOD = 0x1A0111EA397FE69A4B1BA7B6434BACD764774B84F38512BF6730D2A0F6B0F6241EABFFFEB153FFFFB9FEFFFFFFFFAAAB

FR_LIMBS = 4
FP_LIMBS = 6
FR_BYTES = 8 * FR_LIMBS
FP_BYTES = 8 * FP_LIMBS


def modulus_limbs(modulus: int, nlimbs: int) -> tuple[int, ...]:
    """The 64-bit limbs of a modulus, least significant first (what limb-wise comparisons use)."""
    return tuple((modulus >> (64 * k)) & (2**64 - 1) for k in range(nlimbs))


FR_MOD_LIMBS = modulus_limbs(R_MOD, FR_LIMBS)  # r as u64 limbs: the one place r is split

# Montgomery radices and their squares (what a GPU kernel multiplies by to enter Montgomery form).
FR_R = pow(2, 256, R_MOD)
FR_R2 = pow(2, 512, R_MOD)
FR_R_INV = pow(2**256, -1, R_MOD)
FP_R = pow(2, 384, Q_MOD)
FP_R2 = pow(2, 768, Q_MOD)
FP_R_INV = pow(2**384, -1, Q_MOD)
# -p^-1 mod 2^64 and mod 2^32: the reduction constants of word-wise Montgomery multiplication.
FR_INV64 = (-pow(R_MOD, -1, 2**64)) % 2**64
FP_INV64 = (-pow(Q_MOD, -1, 2**64)) % 2**64
FR_INV32 = FR_INV64 % 2**32
FP_INV32 = FP_INV64 % 2**32

# 2-adicity of r - 1 and the two generators of the 2^32-th roots of unity in use:
#  - snarkjs (ffjavascript): omega_(2^32) = 5^((r-1)/2^32), 5 being a quadratic non-residue.
#  - native (arkworks / bellman): omega_(2^32) = 7^((r-1)/2^32), 7 being Fr's multiplicative generator.
FR_TWO_ADICITY = 32
_T = (R_MOD - 1) >> FR_TWO_ADICITY
ROOT_GENERATORS = {"snarkjs": 5, "native": 7}


def two_adic_root(convention: str = "snarkjs") -> int:
    """The primitive 2^32-th root of unity of the named convention."""
    try:
        g = ROOT_GENERATORS[convention]
    except KeyError:
        raise ValueError(f"unknown root convention {convention!r}; use one of {sorted(ROOT_GENERATORS)}") from None
    return pow(g, _T, R_MOD)


def root_of_unity(n: int, convention: str = "snarkjs") -> int:
    """Primitive n-th root of unity (n a power of two <= 2^32), squared down from the 2^32-th root."""
    log_n = n.bit_length() - 1
    if n <= 0 or n != 1 << log_n or log_n > FR_TWO_ADICITY:
        raise ValueError(f"root_of_unity: n={n} is not a power of two <= 2^32")
    return pow(two_adic_root(convention), 1 << (FR_TWO_ADICITY - log_n), R_MOD)


# ---------------------------------------------------------------------------------------------
# Limb arrays <-> Python ints


def ints_to_limbs(values, nlimbs: int) -> np.ndarray:
    """Python ints (each 0 <= v < 2^(64*nlimbs)) -> writable ``uint64[n, nlimbs]``."""
    width = 8 * nlimbs
    buf = bytearray(b"".join(int(v).to_bytes(width, "little") for v in values))
    return np.frombuffer(buf, dtype="<u8").reshape(-1, nlimbs)


def limbs_to_ints(arr: np.ndarray) -> np.ndarray:
    """``uint64[n, k]`` -> object array of n Python ints."""
    arr = np.ascontiguousarray(arr, dtype="<u8")
    width = 8 * arr.shape[-1]
    raw = arr.tobytes()
    out = np.empty(len(raw) // width, dtype=object)
    out[:] = [int.from_bytes(raw[i : i + width], "little") for i in range(0, len(raw), width)]
    return out


def fr_to_limbs(values) -> np.ndarray:
    """Fr values (ints, reduced mod r) -> standard-form ``uint64[n, 4]``."""
    return ints_to_limbs(values, FR_LIMBS)


def fp_to_limbs(values) -> np.ndarray:
    return ints_to_limbs(values, FP_LIMBS)


def int_vector(values) -> np.ndarray:
    """A 1-D object array of Python ints (the CPU representation of a field vector)."""
    out = np.empty(len(values), dtype=object)
    out[:] = [int(v) for v in values]
    return out


def fr_vector(values) -> np.ndarray:
    """Coerce ints, an object array, standard-form Fr limbs or a (host) FrVector into an int vector mod r."""
    if isinstance(values, FrVector):
        values = np.asarray(values.limbs)
    if (isinstance(values, np.ndarray) and values.dtype == np.uint64 and values.ndim == 2
            and values.shape[1] == FR_LIMBS):
        return limbs_to_ints(values) % R_MOD
    return int_vector(values) % R_MOD


def as_fr_limbs(values) -> np.ndarray:
    """Standard-form ``uint64[n, 4]`` from limbs or a host FrVector (returned as a contiguous view
    when possible) or from ints / an int vector (reduced mod r and converted)."""
    if isinstance(values, FrVector):
        values = np.asarray(values.limbs)
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        return np.ascontiguousarray(values.reshape(-1, FR_LIMBS))
    return fr_to_limbs(fr_vector(values))


# ---------------------------------------------------------------------------------------------
# Checked field vectors


@dataclass(frozen=True, eq=False)
class FrVector:
    """Standard-form Fr limbs ``uint64[n, 4]`` (numpy, or cupy on the device), C-contiguous, every
    value < r. Made only where field vectors enter: the readers, synthesis (values reduced by
    construction), ``checked_fr`` here and the device layer's ``check_fr``. Backends and kernels
    take it as it is; a raw array given to them is checked first. Row slices stay FrVectors."""

    limbs: Any

    def __len__(self) -> int:
        return int(self.limbs.shape[0])

    def __getitem__(self, rows: slice) -> FrVector:
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("FrVector: only contiguous row slices (v[a:b]) keep the checked type")
        return FrVector(self.limbs[rows])

    @property
    def nbytes(self) -> int:
        return int(self.limbs.nbytes)

    @property
    def shape(self) -> tuple:
        return tuple(self.limbs.shape)

    @property
    def dtype(self):
        return self.limbs.dtype

    def __array__(self, dtype=None, copy=None):
        """The host limbs for numpy (np.asarray(v)); a device FrVector refuses, as cupy does."""
        out = np.asarray(self.limbs)
        return out if dtype is None else out.astype(dtype, copy=False)

    @property
    def on_device(self) -> bool:
        return hasattr(self.limbs, "__cuda_array_interface__")


def limbs_below(limbs, modulus: int, xp=np):
    """bool[n]: which rows of ``uint64[n, k]`` (little-endian limbs) are < modulus (``xp``: numpy,
    or cupy for a device array). Vectorized, most significant limb first."""
    mod = modulus_limbs(modulus, limbs.shape[-1])
    less = xp.zeros(limbs.shape[0], dtype=bool)
    equal = xp.ones(limbs.shape[0], dtype=bool)
    for i in range(len(mod) - 1, -1, -1):
        m = np.uint64(mod[i])
        col = limbs[:, i]
        less |= equal & (col < m)
        equal &= col == m
    return less


def first_not_below_r(limbs, xp=np, modulus: int = R_MOD) -> int:
    """Index of the first row of standard-form limbs ``uint64[n, 4]`` that is >= r, or -1
    (``xp``: numpy, or cupy for a device array; ``modulus``: another curve's r)."""
    less = limbs_below(limbs, modulus, xp)
    return -1 if bool(less.all()) else int(xp.argmin(less))


def checked_fr(values, what: str, modulus: int = R_MOD) -> FrVector:
    """An FrVector from a numpy ``uint64[n, 4]`` (range-checked: ValueError naming ``what`` and the
    first element >= r) or from ints / an int vector (reduced mod r). An FrVector passes through.
    ``modulus``: the r of the key's curve (BLS12-381's unless given; a BN254 key's is smaller)."""
    if isinstance(values, FrVector):
        return values
    if isinstance(values, np.ndarray) and values.dtype == np.uint64:
        if values.ndim != 2 or values.shape[1] != FR_LIMBS:
            raise ValueError(f"{what}: expected uint64[n, {FR_LIMBS}] standard-form Fr limbs, got shape "
                             f"{tuple(values.shape)}")
        limbs = np.ascontiguousarray(values)
        bad = first_not_below_r(limbs, modulus=modulus)
        if bad >= 0:
            raise ValueError(f"{what}: element {bad} is not a reduced Fr value (must be < r, standard form)")
        return FrVector(limbs)
    if hasattr(values, "__cuda_array_interface__"):
        raise TypeError(f"{what}: a device array is checked by the device layer (cuzk_ray.cuda.device.check_fr)")
    return FrVector(fr_to_limbs(int_vector(values) % modulus))


# ---------------------------------------------------------------------------------------------
# Montgomery form


_RADIX = {R_MOD: (FR_R, FR_R_INV), Q_MOD: (FP_R, FP_R_INV)}


def _radix(modulus: int) -> tuple[int, int]:
    try:
        return _RADIX[modulus]
    except KeyError:
        raise ValueError("Montgomery form is defined here for R_MOD (Fr) and Q_MOD (Fp) only") from None


def to_montgomery(values: np.ndarray, modulus: int) -> np.ndarray:
    """int vector (standard) -> int vector (Montgomery): x * R mod p (R = 2^256 for Fr, 2^384 for Fp)."""
    return (values * _radix(modulus)[0]) % modulus


def from_montgomery(values: np.ndarray, modulus: int) -> np.ndarray:
    """int vector (Montgomery) -> int vector (standard): x * R^-1 mod p."""
    return (values * _radix(modulus)[1]) % modulus


def fr_batch_inverse(values: np.ndarray) -> np.ndarray:
    """Inverses of non-zero Fr values with one exponentiation (Montgomery's trick)."""
    n = len(values)
    prefix = np.empty(n + 1, dtype=object)
    prefix[0] = 1
    acc = 1
    for i, v in enumerate(values):
        if v % R_MOD == 0:
            raise ZeroDivisionError(f"fr_batch_inverse: element {i} is zero")
        acc = acc * v % R_MOD
        prefix[i + 1] = acc
    inv = pow(acc, -1, R_MOD)
    out = np.empty(n, dtype=object)
    for i in range(n - 1, -1, -1):
        out[i] = prefix[i] * inv % R_MOD
        inv = inv * values[i] % R_MOD
    return out
