"""NTT and the H computation on the GPU (kernels/ntt.cu).

Boundary format: standard-form Fr limbs ``uint64[n, 4]`` (or ``uint64[batch, n, 4]`` for the
NTT), numpy or cupy, C-contiguous, every value < r, or an FrVector (trusted: checked where it was
made). Results come back as numpy arrays of the same layout. ``*_device`` variants take and
return cupy arrays and leave everything in VRAM. ``domain`` is a cuzk_ray.domain.Domain (or a
root convention name; None: snarkjs); the twiddle tables are cached per device and domain
(device.NTT_TABLES).

Semantics match the CPU oracle (cuzk_ray.ref.ntt, cuzk_ray.ref.qap) bit for bit:
  ntt(x)                      = ref.ntt.ntt(x)             evaluations on w^j
  ntt(x, shift=g)             = ref.ntt.coset_ntt(x, g)    evaluations on g w^j
  ntt(x, inverse=True)        = ref.ntt.intt(x)
  ntt(x, inverse=True, shift=g) = ref.ntt.coset_intt(x, g)
  compute_h(a, b, c)          = ref.qap.compute_h(a, b, c)
  compute_h_bellperson(a, b, c) = ref.bellperson_qap.compute_h(a, b, c, domain)  (m - 1 values)

Curves: the domain names the curve (``Domain.of(n, "snarkjs", "bn254")``): its tables are built
mod that curve's r and the kernels are ntt.cu compiled for it (kernels/loader.py CURVES), so the
same entry points serve BLS12-381 and BN254.

CuPy is imported lazily; without it (or without a GPU) every entry point raises RuntimeError
saying what to install or do.
"""

from __future__ import annotations

import numpy as np

from ..curves import curve_named
from ..domain import Domain, resolve
from ..field import FR_LIMBS, FR_R, R_MOD, FrVector, fr_to_limbs, limbs_to_ints
from ..kernels.loader import DEFAULT_CURVE, get_kernel, require_cupy
from ..ref.bellperson_qap import COSET_GENERATOR
from ..ref.ntt import bit_reverse_permutation, powers
from .device import NTT_TABLES, check_fr, check_fr_array, log2_size, mont_limbs, two_level

MODULE = "ntt.cu"
# Compile-time variant of ntt.cu for every kernel of this module (benchmarks and tests compare
# variants, e.g. ("MONT_MUL_F64=1",): the Fr products on the FP64 units; kernels.build --variant).
DEFINES: tuple = ()
MAX_PASS_BITS = 8  # stages per shared-memory pass (tile of 2^8 rows x 4 columns, 32 KiB); at most 9
THREADS = 256  # pointwise kernels
# Apply an iNTT's scaling (1/n, the coset powers, compute_h's factors R) in the store loop of its
# last DIF pass (ntt.cu flags & 8) instead of a separate scale_powers pass, which reads and writes
# the vectors once more (at 2^27 x 3 vectors 24 GiB). False: the separate pass, as before
# (benchmarks time both: jobs/bench_kernels.py --h-fold 0,1); the results are the same bits.
# The same 2 products per element as scale_powers. H200, 2^27 (ninth session): H 273.07 ms
# folded, 272.98 with the pass: the passes are compute-bound, so the 24 GiB saved do not show.
# On because porep32g was measured with it; tests/test_kernels_gpu.py checks both settings.
FOLD_SCALE = True
# bellperson's H in six transforms instead of seven where c = a b on the domain (c_is_ab: the
# device computed c from a and b, spmv.C_FROM_AB): H is the upper half P_hi of the product
# a(X) b(X) = P_lo + X^n P_hi, and on the odd coset w_2n w^j (where X^n = -1) the product's values
# are those of P_lo - P_hi, so P_hi = (iNTT(c) - icoset_w2n(a_c b_c)) / 2. Saves one transform
# (~0.045 s of the 32 GiB partition's ~0.32 s H on the H200, an estimate). CPU reference:
# ref.bellperson_qap.compute_h_from_product; tests/test_bellperson_gpu.py (six) checks it against
# the seven-transform oracle. False: seven transforms (jobs/bench_spmv_filecoin.py times both).
SIX_TRANSFORM_H = True


# ---------------------------------------------------------------------------------------------
# Device tables


def _kernel(name: str, curve: str):
    """A kernel of ntt.cu compiled for ``curve`` (a cuzk_ray.curves name)."""
    return get_kernel(MODULE, name, DEFINES, curve)


def _fr(curve: str) -> tuple[int, int]:
    """(r, R mod r) of a curve's Fr: the modulus and the Montgomery factor (R = 2^256)."""
    c = curve_named(curve)
    return c.r, c.fr_r


def _omega_table(d: Domain):
    """Twiddles level by level, tw[k - 1 + r] = w_(2k)^r for k = 1, 2, .., n/2 and r < k
    (n - 1 entries, Montgomery form), on the current device (cached per domain).
    The top level (w_n^r) comes from a two-level table, the lower ones by a gather from it."""

    def build():
        cp = require_cupy()
        log_n = d.log_n
        half = 1 << (log_n - 1)
        hi, lo, lo_bits = two_level(d.omega, log_n - 1, [1], d.r)
        tab = cp.empty((2 * half - 1, FR_LIMBS), dtype=cp.uint64)
        _kernel("powers_table", d.curve)(
            ((half + THREADS - 1) // THREADS,), (THREADS,),
            (tab[half - 1 :], np.uint64(half), cp.asarray(hi), cp.asarray(lo), np.int32(lo_bits)),
        )
        if half > 1:
            _kernel("twiddle_levels", d.curve)(((half + THREADS - 1) // THREADS,), (THREADS,),
                                               (tab, np.int32(log_n)))
        return tab

    return NTT_TABLES.get(("omega", d), build)


def _scale_table(g: int, log_n: int, factors: tuple, curve: str = DEFAULT_CURVE):
    def build():
        cp = require_cupy()
        hi, lo, lo_bits = two_level(g, log_n, factors, _fr(curve)[0])
        return cp.asarray(hi), cp.asarray(lo), lo_bits

    return NTT_TABLES.get(("scale", g, log_n, factors, curve), build)


def fold_tables(g: int, log_n: int, k: int, factors: tuple,
                modulus: int = R_MOD) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Host tables of the scaled store on a last DIF pass of k bits (ntt.cu fold_block_factor):
    (st, shi, slo, slo_bits), Montgomery form. st holds, per factor f, the 2^k entries
    st[j] = f * g^(bitrev_k(j) << (log_n - k)); shi, slo the two-level table of g^m for
    m < 2^(log_n - k) (cuda.device.two_level). fold_factor mirrors the kernel's use of them."""
    if not 1 <= k <= log_n:
        raise ValueError(f"fold_tables: need 1 <= k <= log_n, got k={k}, log_n={log_n}")
    m = modulus  # r of the curve (BLS12-381's unless given)
    rows = powers(pow(g, 1 << (log_n - k), m), 1 << k, modulus=m)[bit_reverse_permutation(1 << k)]
    st = np.concatenate([mont_limbs(rows * (f % m) % m, m) for f in factors])
    shi, slo, slo_bits = two_level(g, log_n - k, [1], m)
    return st, shi, slo, slo_bits


def fold_factor(tables, log_n: int, k: int, y: int, idx: int) -> int:
    """The factor (an int, standard form) that the scaled store applies to the element of vector
    y that the last DIF pass stores from pass position idx: the kernel's index math and its two
    Montgomery products on fold_tables' output, for host tests (it must equal
    factors[y] * g^bitrev(idx) over log_n bits)."""
    st, shi, slo = (limbs_to_ints(t) for t in tables[:3])
    slo_bits = tables[3]
    stride = (1 << k) if len(st) > (1 << k) else 0
    high, j = idx >> k << k, idx & ((1 << k) - 1)
    m = int(format(high, f"0{log_n}b")[::-1], 2)  # bitrev_log_n(high), fold_block_index
    r_inv = pow(FR_R, -1, R_MOD)
    block = int(shi[m >> slo_bits]) * int(slo[m & ((1 << slo_bits) - 1)]) * r_inv % R_MOD  # Montgomery
    return int(st[y * stride + j]) * block * r_inv * r_inv % R_MOD  # Montgomery product, then out of R


def _fold_table(g: int, log_n: int, k: int, factors: tuple, curve: str = DEFAULT_CURVE):
    """fold_tables on the current device, cached per (g, log_n, k, factors), and st's stride
    per vector (0 when one factor serves every vector)."""

    def build():
        cp = require_cupy()
        st, shi, slo, slo_bits = fold_tables(g, log_n, k, factors, _fr(curve)[0])
        return cp.asarray(st), cp.asarray(shi), cp.asarray(slo), slo_bits, (1 << k) if len(factors) > 1 else 0

    return NTT_TABLES.get(("fold", g, log_n, k, factors, curve), build)


# ---------------------------------------------------------------------------------------------
# Kernel launches (x: cupy uint64[batch, n, 4], modified in place)


def _pass_plan(log_n: int, dit: bool) -> list[tuple[int, int]]:
    """(lo, k) windows of index bits, balanced, k <= MAX_PASS_BITS; DIF top-down, DIT bottom-up."""
    npass = -(-log_n // MAX_PASS_BITS)
    sizes = [log_n // npass + (1 if i < log_n % npass else 0) for i in range(npass)]
    plan, lo = [], 0
    for k in sizes:
        plan.append((lo, k))
        lo += k
    return plan if dit else [(log_n - lo - k, k) for lo, k in plan]


# NTT pass kernel (kernels/ntt.cu): "ntt_pass" (radix 2, twiddles from global memory),
# "ntt_pass_r4" (radix 4 in registers), "ntt_pass_tws" (radix 2, the block's twiddles staged in
# shared memory); "ntt_pass_w", "ntt_pass_w32", "ntt_pass_r4w": ntt_pass / ntt_pass_r4 with the
# 64-bit-pair Fr multiplication (mul_wide) and, except _w32, 128-bit shared-memory accesses;
# "ntt_pass_tws_w": ntt_pass_tws with both.
# All are tested bit for bit; the default is the fastest measured on the H200 (2026-11-29:
# 2^24 5.27 ms with ntt_pass_w vs 7.64 with ntt_pass, 2^27 43.8 vs 63.8; docs/BENCHMARKS.md).
PASS_KERNEL = "ntt_pass_w"
# kernel -> (tile elements per thread, launch bound of threads per block); a block of fewer
# threads than tile / per-thread loops over the tile (the pass loops are strided).
_PASS_GEOMETRY = {"ntt_pass": (2, 512), "ntt_pass_r4": (4, 256), "ntt_pass_tws": (2, 512),
                  "ntt_pass_w": (2, 512), "ntt_pass_w32": (2, 512), "ntt_pass_r4w": (4, 256),
                  "ntt_pass_tws_w": (2, 512)}
_TWIDDLES_IN_SHARED = ("ntt_pass_tws", "ntt_pass_tws_w")  # twice the tile's shared memory
# At most this many threads per pass block (None: the kernel's launch bound above); fewer make a
# thread loop over more butterflies per stage and let more, smaller blocks share an SM (the
# benchmark's --pass-threads). H200, ntt_pass_w (2026-12-02, docs/BENCHMARKS.md): 128 threads
# 2^24 4.66 ms, 2^27 40.25 ms against 5.33 / 42.82 at the launch bound (512 / 256): a block
# waits at each stage's barrier for its slowest warp, and 4 warps wait less than 8-16 do.
PASS_THREADS: int | None = 128


_NO_FOLD = (np.uint64(0), np.uint64(0), np.uint64(0), 0, 0)  # null tables: a pass without flags & 8


def _launch_pass(src, dst, log_n: int, tw, lo: int, k: int, flags: int, fold=_NO_FOLD,
                 curve: str = DEFAULT_CURVE) -> None:
    """One pass kernel launch; fold: _fold_table's entry for a scaled store (flags & 8)."""
    c = min(lo, 2)
    tile = 1 << (k + c)
    per_thread, max_threads = _PASS_GEOMETRY[PASS_KERNEL]
    threads = min(max(tile // per_thread, 1), max_threads, PASS_THREADS or max_threads)
    smem = tile * 32 * (2 if PASS_KERNEL in _TWIDDLES_IN_SHARED else 1)
    kernel = _kernel(PASS_KERNEL, curve)
    st, shi, slo, slo_bits, st_stride = fold
    if smem > 48 * 1024 and kernel.max_dynamic_shared_size_bytes < smem:
        kernel.max_dynamic_shared_size_bytes = smem  # opt in beyond the default 48 KiB
    kernel((1 << (log_n - k - c), src.shape[0]), (threads,),
           (src, dst, tw, np.int32(log_n), np.int32(lo), np.int32(k), np.int32(c), np.int32(flags),
            st, shi, slo, np.int32(slo_bits), np.int32(st_stride)),
           shared_mem=smem)


def _run_passes(src, dst, log_n: int, tw, inverse: bool, dit: bool, bitrev_out: bool = False,
                scale: tuple | None = None, overwrite_src: bool = False, curve: str = DEFAULT_CURVE) -> None:
    """All passes of one transform of every vector of src, result in dst (src == dst: in place).

    With bitrev_out the result is written in bit-reversed order; then dst must not alias src,
    and a temporary buffer is used between passes when there is more than one, unless
    overwrite_src says src is scratch: then the passes before the last run in place on src.
    scale = (g, factors), DIF only: coefficient i of vector y comes out multiplied by
    g^i * factors[y or 0], applied by the last pass as it stores (ntt.cu flags & 8).
    """
    plan = _pass_plan(log_n, dit)
    base = (1 if inverse else 0) | (2 if dit else 0)
    if bitrev_out and src is dst:
        raise ValueError("_run_passes: a bit-reversed write cannot be in place")
    if scale is not None and dit:
        raise ValueError("_run_passes: the scaled store is for DIF passes (coefficients come out of the last)")
    cur = src
    for i, (lo, k) in enumerate(plan):
        last = i == len(plan) - 1
        if last:
            target = dst
        elif cur is not src or src is dst or overwrite_src:
            target = cur
        else:
            target = require_cupy().empty_like(src) if bitrev_out else dst
        flags = base | (4 if last and bitrev_out else 0)
        if last and scale is not None:  # the last DIF pass has lo = 0, as the kernel needs
            _launch_pass(cur, target, log_n, tw, lo, k, flags | 8, _fold_table(scale[0], log_n, k, scale[1], curve),
                         curve)
        else:
            _launch_pass(cur, target, log_n, tw, lo, k, flags, curve=curve)
        cur = target


def _scale(src, dst, log_n: int, g: int, factors: tuple, bitrev: bool, curve: str = DEFAULT_CURVE) -> None:
    """dst[y][i] = src[y][i] * g^j * factors[y or 0], j = i or bitrev(i); src may be dst."""
    hi, lo, lo_bits = _scale_table(g, log_n, factors, curve)
    stride = (1 << lo_bits) if len(factors) > 1 else 0
    n = 1 << log_n
    _kernel("scale_powers", curve)(
        ((n + THREADS - 1) // THREADS, src.shape[0]), (THREADS,),
        (src, dst, np.int32(log_n), hi, lo, np.int32(lo_bits), np.uint64(stride), np.int32(1 if bitrev else 0)),
    )


# ---------------------------------------------------------------------------------------------
# Public API


def ntt_device(x, inverse: bool = False, shift: int | None = None, domain: Domain | str | None = None):
    """NTT of each row of a cupy ``uint64[batch, n, 4]`` (standard form); returns a new cupy array.

    Natural order in and out. Forward: evaluations at shift * w^j (shift None = 1). Inverse: the
    coefficients of the polynomial with those evaluations (the 1/n and shift^-i are applied).
    The input is not modified. Cost: ceil(log2 n / 8) shared-memory passes (the first reads x,
    the last writes the result bit-reversed, i.e. in natural order) + one scaling pass for a
    forward coset NTT (an inverse one scales in its last pass, FOLD_SCALE; else also one pass).
    """
    cp = require_cupy()
    log_n = log2_size(x.shape[1], "ntt")
    d = resolve(domain, x.shape[1], "ntt")
    shift = None if shift is None else int(shift) % d.r
    if shift == 0:
        raise ValueError("ntt: shift must be a non-zero Fr element")
    if log_n == 0:
        return x.copy()  # a 1-point transform is the identity for any shift
    tw = _omega_table(d)
    out = cp.empty_like(x)
    if not inverse:
        src = x
        if shift not in (None, 1):
            src = cp.empty_like(x)
            _scale(x, src, log_n, shift, (1,), bitrev=False, curve=d.curve)
        _run_passes(src, out, log_n, tw, inverse=False, dit=False, bitrev_out=True, curve=d.curve)
        return out
    _inverse_into(x, out, d, 1 if shift is None else shift)
    return out


def _inverse_into(src, dst, d: Domain, shift: int, overwrite_src: bool = False, factor: int = 1) -> None:
    """dst = the coefficients (natural order) of the polynomials with values src on shift * w^j,
    times ``factor``; src and dst cupy ``uint64[batch, n, 4]``, n > 1, distinct. overwrite_src:
    src is scratch (no temporary buffer between the passes)."""
    log_n, tw = d.log_n, _omega_table(d)
    g, scale = pow(shift, -1, d.r), (d.n_inv * factor % d.r,)
    if FOLD_SCALE:  # coefficient i *= g^i factor / n as the last pass stores it
        _run_passes(src, dst, log_n, tw, inverse=True, dit=False, bitrev_out=True, scale=(g, scale),
                    overwrite_src=overwrite_src, curve=d.curve)
    else:
        _run_passes(src, dst, log_n, tw, inverse=True, dit=False, bitrev_out=True, overwrite_src=overwrite_src,
                    curve=d.curve)
        _scale(dst, dst, log_n, g, scale, bitrev=False, curve=d.curve)


def compute_h_device(abc, domain: Domain | str | None = None, c_over_r: bool = False):
    """h from a cupy ``uint64[3, n, 4]`` holding a, b, c (standard form); overwrites abc.
    c_over_r: abc[2] holds c / R (c = a * b as one Montgomery product, cuda.spmv.evaluate_abc);
    the factor R is folded into its 1/n scaling, which costs nothing.

    Steps (all in VRAM, 3 vectors per launch):
      1. iNTT_n by DIF passes with inverse twiddles  -> coefficients in bit-reversed order
      2. coefficient i *= w_2n^i / n (and an extra R on b, see h_pointwise; on c with c_over_r)
                                                     -> in step 1's last pass as it stores
                                                        (FOLD_SCALE; else 1 scaling pass)
      3. NTT_n by DIT passes (bit-reversed in)       -> values at the odd 2n-th roots, natural order
      4. h_j = a_j b_j - c_j                          -> new cupy uint64[n, 4]
    No permutation pass is needed: DIF leaves bit-reversed order and DIT consumes it.
    """
    cp = require_cupy()
    d = resolve(domain, _abc_size(abc, "compute_h_device"), "compute_h")
    if d.log_n == 0:
        return _h_n1(abc, c_over_r, d)  # n = 1: iNTT and NTT are identities and w_2^0 = 1
    _to_coset(abc, d, d.omega_2n, _h_factors(d, c_over_r, 1))
    h = cp.empty((d.n, FR_LIMBS), dtype=cp.uint64)
    _h_pointwise(h, abc, d.curve)
    return h


def compute_h_bellperson_device(abc, domain: Domain | str | None = None, c_over_r: bool = False,
                                c_is_ab: bool = False):
    """bellperson's H (ref.bellperson_qap.compute_h): its m - 1 coefficients as a cupy
    ``uint64[m - 1, 4]`` (a view of an m-row buffer) from a cupy ``uint64[3, m, 4]`` holding
    a, b, c (standard form); overwrites abc. ``domain``: of size m in the "native" convention
    (None: that one). c_over_r as compute_h_device.

    Steps (g = 7, Z(g) = g^m - 1; all in VRAM):
      1-3. as compute_h_device with the coset g instead of w_2n, and 1 / Z(g) folded into a's and
           c's scaling                            -> a, b / Z(g), c / Z(g) at g w^j
      4. q_j = a_j b_j - c_j, into abc[2]         -> (A B - C) / Z at g w^j (Z is g^m there)
      5. inverse coset NTT of q by DIF passes, in place on abc[2] but for the last, which writes
         the new buffer in natural order and scales coefficient i by g^-i / m as it stores
      6. the first m - 1 coefficients              (the last is 0 for a satisfying witness)
    Cost: compute_h_device's, plus one inverse transform of one vector (ceil(log2 m / 8) passes).
    c_is_ab: c is a b on the domain (computed so on the device), which allows six transforms
    instead of seven (SIX_TRANSFORM_H, _h_from_product); the same H then, bit for bit.
    """
    cp = require_cupy()
    n = _abc_size(abc, "compute_h_bellperson_device")
    d = resolve("native" if domain is None else domain, n, "compute_h_bellperson")
    if d.convention != "native":
        raise ValueError(f"compute_h_bellperson: the domain's roots are {d.convention!r}, need 'native' (7)")
    if d.log_n == 0:
        return cp.empty((0, FR_LIMBS), dtype=cp.uint64)  # m = 1: H has no coefficient
    if c_is_ab and SIX_TRANSFORM_H:
        return _h_from_product(abc, d, c_over_r)
    g = COSET_GENERATOR
    _to_coset(abc, d, g, _h_factors(d, c_over_r, pow(pow(g, n, d.r) - 1, -1, d.r)))
    _h_pointwise(abc[2], abc, d.curve)  # element i reads c_i before it writes q_i: in place is safe
    h = cp.empty((1, n, FR_LIMBS), dtype=cp.uint64)
    _inverse_into(abc[2:], h, d, g, overwrite_src=True)
    return h[0, : n - 1]


def _h_from_product(abc, d: Domain, c_over_r: bool):
    """bellperson's H for c = a b on the domain, in six transforms (SIX_TRANSFORM_H): H = P_hi =
    (iNTT(c) - icoset_w2n(a_c b_c)) / 2; a cupy ``uint64[m - 1, 4]`` view. Overwrites abc.

      1. c's coefficients / 2 (R too when abc[2] holds c / R), natural order  -> h
      2. a, b to the odd coset w_2n w^j (b times R, for h_pointwise)          -> abc[0], abc[1]
      3. q_j = a_j b_j: h_pointwise with c = 0                                 -> abc[2]
      4. q's coefficients on that coset / 2 (P_lo - P_hi) / 2, natural order  -> abc[0]
      5. h -= abc[0]                                                          (fr_sub)
    Cost: 4 inverse + 2 forward transforms of one vector each (compute_h_bellperson_device: 4 + 3),
    a fill, a product and a subtraction pass."""
    cp = require_cupy()
    r, mont = _fr(d.curve)
    n, half = d.n, pow(2, -1, r)
    h = cp.empty((1, n, FR_LIMBS), dtype=cp.uint64)
    _inverse_into(abc[2:], h, d, 1, overwrite_src=True, factor=half * mont % r if c_over_r else half)
    _to_coset(abc[:2], d, d.omega_2n, (d.n_inv, d.n_inv * mont % r))
    abc[2].fill(0)
    _h_pointwise(abc[2], abc, d.curve)
    _inverse_into(abc[2:], abc[:1], d, d.omega_2n, overwrite_src=True, factor=half)
    _kernel("fr_sub", d.curve)(((n + THREADS - 1) // THREADS,), (THREADS,), (h[0], h[0], abc[0], np.uint64(n)))
    return h[0, : n - 1]


# The device H of each QAP convention (a key's ``qap``), by name.
H_DEVICE = {"snarkjs": compute_h_device, "bellperson": compute_h_bellperson_device}


def h_device_function(qap: str):
    """compute_h_device or compute_h_bellperson_device for a key's ``qap``; ValueError for others."""
    fn = H_DEVICE.get(qap)
    if fn is None:
        raise ValueError(f"H: qap={qap!r} is not one of {', '.join(H_DEVICE)}")
    return fn


def _abc_size(abc, what: str) -> int:
    """n of a cupy ``uint64[3, n, 4]`` (a power of two: checked)."""
    if abc.ndim != 3 or abc.shape[0] != 3:
        raise ValueError(f"{what}: expected shape [3, n, 4], got {tuple(abc.shape)}")
    log2_size(abc.shape[1], what)
    return abc.shape[1]


def _h_factors(d: Domain, c_over_r: bool, z_inv: int) -> tuple:
    """The scaling of a, b, c's coefficients before the coset NTT: 1/n each, R on b (h_pointwise's
    Montgomery product), R on c when it holds c / R, and z_inv on a and c (bellperson's 1/Z(g))."""
    n_inv, (r, mont) = d.n_inv, _fr(d.curve)
    c_factor = n_inv * mont % r if c_over_r else n_inv
    return (n_inv * z_inv % r, n_inv * mont % r, c_factor * z_inv % r)


def _to_coset(abc, d: Domain, shift: int, factors: tuple) -> None:
    """abc (values on w^j) -> values on shift * w^j of its polynomials, each vector also scaled by
    n * its factor, in place: iNTT by DIF passes, coefficient i *= shift^i * factor (the last
    pass's store, FOLD_SCALE; else a scaling pass), NTT by DIT passes."""
    log_n, tw, curve = d.log_n, _omega_table(d), d.curve
    if FOLD_SCALE:
        _run_passes(abc, abc, log_n, tw, inverse=True, dit=False, scale=(shift, factors), curve=curve)
    else:
        _run_passes(abc, abc, log_n, tw, inverse=True, dit=False, curve=curve)
        _scale(abc, abc, log_n, shift, factors, bitrev=True, curve=curve)
    _run_passes(abc, abc, log_n, tw, inverse=False, dit=True, curve=curve)


def _h_pointwise(out, abc, curve: str = DEFAULT_CURVE) -> None:
    """out_j = a_j (b_j R) - c_j (kernels/ntt.cu h_pointwise); out may be abc[2]."""
    n = abc.shape[1]
    _kernel("h_pointwise", curve)(((n + THREADS - 1) // THREADS,), (THREADS,), (out, abc, np.uint64(n)))


def _h_n1(abc, c_over_r: bool, d: Domain):
    cp = require_cupy()
    a, b, c = limbs_to_ints(cp.asnumpy(abc.reshape(3, FR_LIMBS)))
    if c_over_r:  # abc[2] holds c / R
        c = c * _fr(d.curve)[1]
    return cp.asarray(fr_to_limbs([(a * b - c) % d.r]))


def ntt(x, inverse: bool = False, shift: int | None = None, domain: Domain | str | None = None) -> np.ndarray:
    """NTT on the GPU of standard-form Fr limbs ``uint64[n, 4]`` or ``uint64[batch, n, 4]`` (or an
    FrVector). Returns a new numpy array of the same shape (standard form); x is not written. See
    the module docstring for the exact meaning of inverse and shift.
    """
    cp = require_cupy()
    xd = check_fr(x, "ntt").limbs if isinstance(x, FrVector) else check_fr_array(x, "ntt", (2, 3), _r_of(domain))
    out = ntt_device(xd.reshape(-1, *xd.shape[-2:]), inverse, shift, domain)
    return cp.asnumpy(out).reshape(x.shape)


def compute_h(a, b, c, domain: Domain | str | None = None) -> np.ndarray:
    """ref.qap.compute_h on the GPU: a, b, c standard-form ``uint64[n, 4]`` (raw arrays are
    checked, FrVectors trusted); returns h, numpy ``uint64[n, 4]``.

    a, b, c are copied into one device buffer (the inputs are not written); everything between
    upload and download stays in VRAM.
    """
    cp = require_cupy()
    return cp.asnumpy(compute_h_device(_stack_abc(a, b, c, "compute_h", _r_of(domain)), domain))


def compute_h_bellperson(a, b, c, domain: Domain | str | None = None) -> np.ndarray:
    """ref.bellperson_qap.compute_h on the GPU: a, b, c as for compute_h, of length m; returns
    H's m - 1 coefficients, numpy ``uint64[m - 1, 4]``. ``domain``: native, of size m (None: that)."""
    cp = require_cupy()
    return cp.asnumpy(compute_h_bellperson_device(_stack_abc(a, b, c, "compute_h_bellperson", _r_of(domain)),
                                                  domain))


def _r_of(domain: Domain | str | None) -> int:
    """The r raw inputs are checked below: the Domain's curve's (a name or None: BLS12-381's)."""
    return domain.r if isinstance(domain, Domain) else R_MOD


def _stack_abc(a, b, c, what: str, modulus: int = R_MOD):
    """a, b, c (checked below ``modulus`` unless FrVectors) copied into one new cupy ``uint64[3, n, 4]``."""
    cp = require_cupy()
    vecs = [check_fr(v, f"{what} {name}", modulus).limbs for v, name in ((a, "a"), (b, "b"), (c, "c"))]
    if not (vecs[0].shape == vecs[1].shape == vecs[2].shape):
        raise ValueError(f"{what}: a, b, c differ in shape: {[tuple(v.shape) for v in vecs]}")
    return cp.stack(vecs)
