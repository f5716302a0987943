"""What the device modules share: input checks (``check_fr``), host-side table helpers, the
per-device caches and ``release_device_memory``.

Checks. A field vector reaches a kernel either as an ``FrVector`` (cuzk_ray.field: checked where
it entered, trusted here, uploaded if it is on the host) or as a raw numpy / cupy ``uint64``
array, which is checked once: dtype, shape, C-contiguity and every row < r (one coalesced pass on
the device, ``below_r_kernel``). ``check_fr`` returns an FrVector on the device; kernels that take
a batch (``[batch, n, 4]``, the NTT) use ``check_fr_array``.

Caches. Tables that depend only on the device and a small key (NTT twiddles, fixed-base window
multiples) are kept in VRAM for the life of the process, one ``DeviceCache`` per kind:
``NTT_TABLES`` (cuda/ntt.py), ``FIXED_BASE_TABLES`` (cuda/fixed_base.py). ``release_device_memory``
clears both and gives CuPy's pooled blocks back.
"""

from __future__ import annotations

import numpy as np

from ..field import FR_LIMBS, FR_TWO_ADICITY, R_MOD, FrVector, first_not_below_r, modulus_limbs
from ..kernels.loader import require_cupy
from ..ref.ntt import powers

THREADS = 256  # default block size of the one-thread-per-element kernels


# ---------------------------------------------------------------------------------------------
# Host-side helpers


def mont_limbs(values, modulus: int = R_MOD) -> np.ndarray:
    """int vector -> Montgomery-form ``uint64[len, 4]`` (x * 2^256 mod r; modulus: another curve's r).
    2^256 itself, not FR_R (2^256 reduced mod BLS12-381's r), so the factor is right for any r."""
    vals = (np.asarray(values, dtype=object) * (1 << 256)) % modulus
    raw = b"".join(int(v).to_bytes(32, "little") for v in vals)
    return np.frombuffer(bytearray(raw), dtype="<u8").reshape(-1, FR_LIMBS)


def two_level(g: int, log_n: int, factors, modulus: int = R_MOD) -> tuple[np.ndarray, np.ndarray, int]:
    """Tables with g^j * f = hi[j >> L] * lo_f[j & (2^L - 1)] for j < 2^log_n and each f, mod r
    (or ``modulus``, another curve's r).

    Returns (hi, lo stacked per factor, L), Montgomery form; sizes 2^(log_n - L) and 2^L.
    """
    m = modulus
    lo_bits = (log_n + 1) // 2
    lo_base = powers(g, 1 << lo_bits, modulus=m)
    hi = powers(pow(g, 1 << lo_bits, m), 1 << (log_n - lo_bits), modulus=m)
    lo = np.concatenate([mont_limbs(lo_base * (f % m) % m, m) for f in factors])
    return mont_limbs(hi, m), lo, lo_bits


def log2_size(n: int, what: str) -> int:
    """log2(n); ValueError naming ``what`` unless n is a power of two between 1 and 2^32."""
    log_n = n.bit_length() - 1
    if n < 1 or n != 1 << log_n or log_n > FR_TWO_ADICITY:
        raise ValueError(f"{what}: length {n} is not a power of two between 1 and 2^{FR_TWO_ADICITY}")
    return log_n


def device_id() -> int:
    return require_cupy().cuda.Device().id


def launch(kernel, n: int, args, threads: int = THREADS) -> None:
    """kernel on n threads in blocks of ``threads`` (no launch for n = 0)."""
    if n:
        kernel(((n + threads - 1) // threads,), (threads,), args)


# ---------------------------------------------------------------------------------------------
# Per-device caches


class DeviceCache:
    """Device arrays kept for the life of the process, keyed by (device, key)."""

    def __init__(self, what: str):
        self.what = what
        self._items: dict = {}

    def get(self, key, build):
        """The entry for key on the current device, built by ``build()`` on first use."""
        k = (device_id(), key)
        value = self._items.get(k)
        if value is None:
            value = self._items[k] = build()
        return value

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


NTT_TABLES = DeviceCache("NTT twiddles and scale tables, per domain")
FIXED_BASE_TABLES = DeviceCache("fixed-base window multiples, per group")


def release_device_memory() -> None:
    """After a GPU setup in a process that goes on without proving on the GPU itself (the driver):
    drop the fixed-base and NTT tables and give CuPy's cached device and pinned blocks back, so
    the prover actors' free-VRAM checks see the memory."""
    cp = require_cupy()
    FIXED_BASE_TABLES.clear()
    NTT_TABLES.clear()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


# ---------------------------------------------------------------------------------------------
# Checks


_BELOW_R: dict = {}  # modulus -> kernel


def below_r_kernel(cp, modulus: int = R_MOD):
    """CuPy elementwise kernel: y[i] = (row i of standard-form limbs < r), one coalesced pass over
    the scalars (the generic check takes ~12 passes, ~2 ms at 2^24; a ReductionKernel over the
    four strided limb columns measured ~15 ms). ``modulus``: another curve's r (BN254's), one
    kernel each."""
    kernel = _BELOW_R.get(modulus)
    if kernel is None:
        r = [f"{limb}ull" for limb in modulus_limbs(modulus, FR_LIMBS)]
        body = ("const unsigned long long a0 = x[4 * i], a1 = x[4 * i + 1], a2 = x[4 * i + 2], a3 = x[4 * i + 3];"
                f"y = a3 < {r[3]} || (a3 == {r[3]} && (a2 < {r[2]} || (a2 == {r[2]} && "
                f"(a1 < {r[1]} || (a1 == {r[1]} && a0 < {r[0]})))));")
        name = "cuzk_below_r" if modulus == R_MOD else f"cuzk_below_r_{modulus & 0xFFFFFFFF:08x}"
        kernel = _BELOW_R[modulus] = cp.ElementwiseKernel("raw uint64 x", "bool y", body, name)
    return kernel


def check_fr_array(x, what: str, ndims=(2,), modulus: int = R_MOD):
    """x (numpy or cupy) as a C-contiguous cupy uint64 array after checking dtype, shape
    (``[n, 4]``, or ``[batch, n, 4]`` when 3 is in ndims), contiguity and every value < r
    (``modulus``: the r of another curve, BN254's). A cupy input that passes is returned as it
    is; a numpy one is uploaded, then checked on the device."""
    cp = require_cupy()
    if not isinstance(x, (np.ndarray, cp.ndarray)):
        raise TypeError(f"{what}: expected a numpy or cupy uint64 array, got {type(x).__name__}")
    if x.dtype != np.uint64:
        raise TypeError(f"{what}: expected dtype uint64 (standard-form Fr limbs), got {x.dtype}")
    if x.ndim not in ndims or x.shape[-1] != FR_LIMBS:
        want = " or ".join(("[n, 4]", "[batch, n, 4]")[: len(ndims)])
        raise ValueError(f"{what}: expected shape {want}, got {tuple(x.shape)}")
    if not x.flags.c_contiguous:
        raise ValueError(f"{what}: array must be C-contiguous (use numpy.ascontiguousarray)")
    xd = x if isinstance(x, cp.ndarray) else cp.asarray(x)
    flat = xd.reshape(-1, FR_LIMBS)
    below = below_r_kernel(cp) if modulus == R_MOD else below_r_kernel(cp, modulus)  # tests spy on the 1-arg call
    if flat.shape[0] and bool(below(flat.reshape(-1), cp.empty(flat.shape[0], dtype=bool)).all()):
        return xd  # every row < r; else the generic check below finds the first bad row
    bad = first_not_below_r(flat, cp, modulus)
    if bad >= 0:
        raise ValueError(f"{what}: element {bad} is not a reduced Fr value (must be < r, standard form)")
    return xd


def check_fr(x, what: str, modulus: int = R_MOD) -> FrVector:
    """An FrVector on the device: an FrVector as it is (uploaded if on the host, not checked
    again); a raw numpy or cupy ``uint64[n, 4]`` checked by check_fr_array (below ``modulus``)."""
    if isinstance(x, FrVector):
        return x if x.on_device else FrVector(require_cupy().asarray(x.limbs))
    return FrVector(check_fr_array(x, what, modulus=modulus))
