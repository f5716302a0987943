"""GPU kernels against the CPU oracle (cuzk_ray.field / ntt / qap), bit for bit.

Run on a machine with CuPy and an NVIDIA GPU: ``pytest -m gpu tests/test_kernels_gpu.py``.
Skipped cleanly elsewhere. Seeds are printed in assertion messages so a failure can be replayed.
"""

from __future__ import annotations

import functools
import os
import random

import numpy as np
import pytest
from gpu import require_gpu

cp = require_gpu()

from cuzk_ray.cuda import msm as cuda_msm  # noqa: E402
from cuzk_ray.cuda import ntt as cuda  # noqa: E402
from cuzk_ray.cuda.device import NTT_TABLES  # noqa: E402
from cuzk_ray.field import FR_R, Q_MOD, R_MOD, fp_to_limbs, fr_to_limbs, limbs_to_ints, root_of_unity  # noqa: E402
from cuzk_ray.kernels.loader import get_kernel  # noqa: E402
from cuzk_ray.ref import ntt as ref  # noqa: E402
from cuzk_ray.ref import qap  # noqa: E402

pytestmark = pytest.mark.gpu
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
CONVENTIONS = ("snarkjs", "native")


@pytest.fixture
def rng():
    return random.Random(SEED)


PASS_KERNELS = ["ntt_pass", "ntt_pass_r4", "ntt_pass_tws", "ntt_pass_w", "ntt_pass_w32", "ntt_pass_r4w",
                "ntt_pass_tws_w"]


@pytest.fixture(params=PASS_KERNELS)
def pass_kernel(request, monkeypatch):
    """Run a test with each NTT pass kernel."""
    monkeypatch.setattr(cuda, "PASS_KERNEL", request.param)
    return request.param


def rand_fr(rng, n):
    return [rng.randrange(R_MOD) for _ in range(n)]


def with_edges(values, p):
    return [0, 1, p - 1, 2, p - 2] + values


def carry_edges(p, nbits):
    """Inputs below p that stress the carry chains: all-ones limbs (32-bit, and mul_f64's 48-bit ones),
    the top bit, R and R^2 mod p; and mul_kara's half-limb cases (karatsuba_edges)."""
    top = nbits - 32
    vals = [(1 << k) - 1 for k in range(32, nbits, 32)] + [p - (1 << k) for k in range(32, nbits, 32)]
    vals += [(1 << k) - 1 for k in range(48, nbits, 48)] + [p - (1 << k) for k in range(48, nbits, 48)]  # mul_f64
    vals += [((p >> top) - 1) << top | ((1 << top) - 1), (1 << (p.bit_length() - 1)) - 1, 1 << (p.bit_length() - 1),
             p // 2, (1 << nbits) % p, (1 << 2 * nbits) % p, 3, p - 3]
    return [v for v in vals if v < p] + karatsuba_edges(p, nbits)


def karatsuba_edges(p, nbits):
    """mul_kara's cases (halves of nbits/2 bits): equal halves (a0 - a1 = 0), one half zero or
    all ones, each half the larger (both signs of (a0 - a1)(b1 - b0)), halves differing by one."""
    h = nbits // 2
    full, top = (1 << h) - 1, (p >> h) - 1  # the largest low half, and a high half that stays < p
    vals = []
    for hi, lo in ((top, top), (1, 1), (top, 0), (0, full), (top, full), (1, full), (full, 1), (5, 4), (4, 5),
                   (top, top - 1), (top - 1, top), (top >> 1, full >> 1)):
        vals.append((hi << h) | lo)
    return [v for v in vals if v < p]


# ------------------------------------------------------------------------------- field arithmetic

OPS = {"add": 0, "sub": 1, "mul": 2, "sqr": 3, "inv": 4, "neg": 5, "to_mont": 6, "from_mont": 7, "raw_mul": 8,
       "raw_mul_wide": 9, "raw_sqr_wide": 10, "raw_mul_f64": 11, "raw_mul_kara": 12,
       "raw_mul_sub": 13}


def expected(op, a, b, p, nbits):
    R = 1 << nbits
    return {
        "add": (a + b) % p,
        "sub": (a - b) % p,
        "mul": a * b % p,
        "sqr": a * a % p,
        "inv": pow(a, p - 2, p),
        "neg": -a % p,
        "to_mont": a * R % p,
        "from_mont": a * pow(R, -1, p) % p,
        "raw_mul": a * b * pow(R, -1, p) % p,
        "raw_mul_wide": a * b * pow(R, -1, p) % p,
        "raw_sqr_wide": a * a * pow(R, -1, p) % p,
        "raw_mul_f64": a * b * pow(R, -1, p) % p,
        "raw_mul_kara": a * b * pow(R, -1, p) % p,
        "raw_mul_sub": (a * b - (a + b) * (b - a)) * pow(R, -1, p) % p,
    }[op]


def run_field(kernel, to_limbs, p, nbits, op, a, b):
    fn = get_kernel("ff_test.cu", kernel)
    da, db = cp.asarray(to_limbs(a)), cp.asarray(to_limbs(b))
    out = cp.zeros_like(da)
    n = len(a)
    fn(((n + 127) // 128,), (128,), (da, db, out, np.int32(OPS[op]), np.uint64(n)))
    return list(limbs_to_ints(cp.asnumpy(out)))


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("field", ["fr", "fp"])
def test_field_ops(field, op, rng):
    p, nbits, to_limbs = (R_MOD, 256, fr_to_limbs) if field == "fr" else (Q_MOD, 384, fp_to_limbs)
    n = 600 if op == "inv" else 3000
    a = with_edges([rng.randrange(p) for _ in range(n)], p)
    b = [p - 1, 0, p - 1, 1, p - 1] + [rng.randrange(p) for _ in range(n)]
    edges, ke = carry_edges(p, nbits), karatsuba_edges(p, nbits)
    a, b = a + edges + [x for x in ke for _ in ke], b + edges[::-1] + [y for _ in ke for y in ke]
    got = run_field(f"{field}_test", to_limbs, p, nbits, op, a, b)
    want = [expected(op, x, y, p, nbits) for x, y in zip(a, b)]
    bad = [i for i in range(len(a)) if got[i] != want[i]]
    assert not bad, (f"{field} {op}: {len(bad)} mismatches, first at {bad[0]} (a={a[bad[0]]}, b={b[bad[0]]}), "
                     f"seed {SEED}")
    # Negative check: the comparison can tell ops apart (a wrong op would be caught).
    if op == "mul":
        assert got != [expected("add", x, y, p, nbits) for x, y in zip(a, b)]
    if op == "raw_sqr_wide":  # a square, not the product with b
        assert got != [expected("raw_mul_wide", x, y, p, nbits) for x, y in zip(a, b)]
    if op == "raw_mul_sub":  # the difference of the two products, not the first alone
        assert got != [expected("raw_mul_wide", x, y, p, nbits) for x, y in zip(a, b)]
    if op in ("raw_mul_f64", "raw_mul_kara"):  # the product with b, not a square, reduced by R^-1
        assert got != [expected("raw_sqr_wide", x, y, p, nbits) for x, y in zip(a, b)]
        assert got != [expected("mul", x, y, p, nbits) for x, y in zip(a, b)]


FP2_OPS = {"mul": 0, "sqr": 1, "mul_lazy": 2, "mul_sub_lazy": 3}  # ff_test.cu fp2_test


def fp2_mul(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % Q_MOD, (a[0] * b[1] + a[1] * b[0]) % Q_MOD)


def fp2_expected(op, x, y):
    if op == "sqr":
        return fp2_mul(x, x)
    if op == "mul_sub_lazy":  # x y - (x + y)(y - x)
        s, d = ((x[0] + y[0]) % Q_MOD, (x[1] + y[1]) % Q_MOD), ((y[0] - x[0]) % Q_MOD, (y[1] - x[1]) % Q_MOD)
        xy, sd = fp2_mul(x, y), fp2_mul(s, d)
        return ((xy[0] - sd[0]) % Q_MOD, (xy[1] - sd[1]) % Q_MOD)
    return fp2_mul(x, y)


@pytest.mark.parametrize("op", list(FP2_OPS))
def test_fp2(op, rng):
    """Fp2 mul (Karatsuba, or mul_lazy in modules with FP2_MUL_LAZY), sqr, and the lazily reduced
    mul_lazy / mul_sub_lazy called directly, against ints: random pairs, edge pairs, and pairs of
    carry-chain edges (every sign of the lazy forms' c0 / re and im occurs)."""
    n = 2000
    a = [(rng.randrange(Q_MOD), rng.randrange(Q_MOD)) for _ in range(n)]
    a += [(0, 0), (1, 0), (0, 1), (Q_MOD - 1, Q_MOD - 1)]
    b = [(rng.randrange(Q_MOD), rng.randrange(Q_MOD)) for _ in range(n)]
    b += [(Q_MOD - 1, 1), (0, 1), (0, 1), (Q_MOD - 1, 0)]
    edges = carry_edges(Q_MOD, 384)
    a += [(e, f) for e in edges for f in edges[:6]]
    b += [(f, e) for e in edges[::-1] for f in edges[:6]]
    fn = get_kernel("ff_test.cu", "fp2_test")
    da = cp.asarray(fp_to_limbs([v for pair in a for v in pair]))
    db = cp.asarray(fp_to_limbs([v for pair in b for v in pair]))
    out = cp.zeros_like(da)
    fn(((len(a) + 127) // 128,), (128,), (da, db, out, np.int32(FP2_OPS[op]), np.uint64(len(a))))
    got = list(limbs_to_ints(cp.asnumpy(out)))
    pairs = [(got[2 * i], got[2 * i + 1]) for i in range(len(a))]
    bad = [i for i, (x, y) in enumerate(zip(a, b)) if pairs[i] != fp2_expected(op, x, y)]
    assert not bad, f"fp2 {op}: {len(bad)} mismatches, first at {bad[0]} (a={a[bad[0]]}, b={b[bad[0]]}), seed {SEED}"
    if op == "mul_sub_lazy":  # the difference, not the product alone
        assert pairs != [fp2_mul(x, y) for x, y in zip(a, b)]


# ------------------------------------------------------------------------------- NTT, exhaustive


@functools.cache
def _oracle_cached(x: tuple, inverse, shift, convention):
    return tuple(oracle_uncached(np.array(x, dtype=object), inverse, shift, convention))


def oracle(x, inverse, shift, convention):
    """The CPU answer, cached: every pass kernel is checked against the same random rows."""
    return _oracle_cached(tuple(int(v) for v in x), inverse, shift, convention)


def oracle_uncached(x, inverse, shift, convention):
    if inverse:
        return ref.intt(x, convention) if shift is None else ref.coset_intt(x, shift, convention)
    return ref.ntt(x, convention) if shift is None else ref.coset_ntt(x, shift, convention)


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("log_n", range(0, 13))
def test_ntt_matches_oracle(log_n, convention, rng, pass_kernel):
    n = 1 << log_n
    rows = [rand_fr(rng, n), rand_fr(rng, n), ([R_MOD - 1] * n)]
    x = np.stack([fr_to_limbs(r) for r in rows])
    shift = rng.randrange(2, R_MOD)
    for inverse in (False, True):
        for s in (None, shift):
            got = cuda.ntt(x, inverse=inverse, shift=s, domain=convention)
            assert got.shape == x.shape and got.dtype == np.uint64
            for row, vals in enumerate(rows):
                want = oracle(np.array(vals, dtype=object), inverse, s, convention)
                assert tuple(limbs_to_ints(got[row])) == want, (
                    f"n={n} {convention} inverse={inverse} shift={s} row {row}, seed {SEED}")
    # single vector shape [n, 4] and the input left untouched
    x0 = x[0].copy()
    got = cuda.ntt(x[0], domain=convention)
    assert np.array_equal(x[0], x0)
    assert list(limbs_to_ints(got)) == list(ref.ntt(np.array(rows[0], dtype=object), convention))


@pytest.mark.parametrize("bits", [8, 9])
@pytest.mark.parametrize("kernel", PASS_KERNELS)
@pytest.mark.parametrize("log_n", [9, 13, 17, 18, 20, 25])
def test_ntt_pass_kernels_agree(log_n, kernel, bits, rng, monkeypatch):
    """Every pass kernel, with 8 or 9 stages per pass, gives the same bits as ntt_pass with 8
    (checked against the oracle above) on sizes where the pass plans differ: forward, inverse,
    coset, both conventions, and a DIF/DIT round trip through compute_h's code path."""
    batch = 1 if log_n >= 25 else 2
    x = rand_device_fr(rng, batch, 1 << log_n)
    shift = rng.randrange(2, R_MOD)
    cases = [(False, None, "snarkjs"), (True, None, "native"), (False, shift, "native"), (True, shift, "snarkjs")]
    monkeypatch.setattr(cuda, "MAX_PASS_BITS", 8)
    monkeypatch.setattr(cuda, "PASS_KERNEL", "ntt_pass")
    want = [cuda.ntt_device(x, inverse=i, shift=s, domain=c) for i, s, c in cases]
    monkeypatch.setattr(cuda, "MAX_PASS_BITS", bits)
    monkeypatch.setattr(cuda, "PASS_KERNEL", kernel)
    for (i, s, c), w in zip(cases, want):
        got = cuda.ntt_device(x, inverse=i, shift=s, domain=c)
        assert cp.array_equal(got, w), f"{kernel} bits={bits} n=2^{log_n} inverse={i} shift={s} {c}, seed {SEED}"
    assert cp.array_equal(cuda.ntt_device(want[0], inverse=True), x)
    if log_n <= 20:  # compute_h: DIF inverse passes, then DIT forward passes
        abc = rand_device_fr(rng, 3, 1 << log_n)
        got = cuda.compute_h_device(abc.copy())
        monkeypatch.setattr(cuda, "MAX_PASS_BITS", 8)
        monkeypatch.setattr(cuda, "PASS_KERNEL", "ntt_pass")
        assert cp.array_equal(got, cuda.compute_h_device(abc)), f"compute_h {kernel} bits={bits} n=2^{log_n}"


@pytest.mark.parametrize("threads", [None, 64, 128, 256])
@pytest.mark.parametrize("kernel", ["ntt_pass_w", "ntt_pass_tws_w"])
@pytest.mark.parametrize("log_n", [10, 17, 24])
def test_ntt_pass_threads_cap(log_n, kernel, threads, rng, monkeypatch):
    """PASS_THREADS caps the threads of a pass block (each thread then loops over more
    butterflies per stage; None: the kernel's launch bound): the same bits as the default
    geometry (itself checked against the oracle above), forward and inverse."""
    x = rand_device_fr(rng, 1, 1 << log_n)
    monkeypatch.setattr(cuda, "PASS_KERNEL", kernel)
    want = [cuda.ntt_device(x), cuda.ntt_device(x, inverse=True)]
    monkeypatch.setattr(cuda, "PASS_THREADS", threads)
    got = [cuda.ntt_device(x), cuda.ntt_device(x, inverse=True)]
    assert all(cp.array_equal(g, w) for g, w in zip(got, want)), f"{kernel} threads={threads} n=2^{log_n}"


def test_ntt_conventions_differ_and_zero(rng):
    x = fr_to_limbs(rand_fr(rng, 64))
    assert not np.array_equal(cuda.ntt(x, domain="snarkjs"), cuda.ntt(x, domain="native"))
    z = np.zeros((3, 256, 4), dtype=np.uint64)
    assert not cuda.ntt(z).any() and not cuda.ntt(z, inverse=True, shift=5).any()


def test_wrappers_reject_bad_input():
    good = fr_to_limbs([1, 2, 3, 4])
    with pytest.raises(ValueError, match="not a reduced"):
        cuda.ntt(fr_to_limbs([1, 2, R_MOD, 4]))
    with pytest.raises(TypeError):
        cuda.ntt(good.astype(np.int64))
    with pytest.raises(ValueError, match="power of two"):
        cuda.ntt(fr_to_limbs([1, 2, 3]))
    with pytest.raises(ValueError, match="contiguous"):
        cuda.ntt(np.asfortranarray(np.stack([good, good]))[:, :, :])
    with pytest.raises(ValueError, match="shape"):
        cuda.compute_h(good, good, fr_to_limbs([1, 2]))


# ------------------------------------------------------------------------------- NTT, large sizes


def rand_device_fr(rng, batch, n):
    """Random standard-form Fr limbs on the device (top limb below r's, so every value < r)."""
    x = np.random.default_rng(rng.randrange(2**32)).integers(0, 2**64, size=(batch, n, 4), dtype=np.uint64)
    x[..., 3] %= np.uint64(R_MOD >> 192)
    return cp.asarray(x)


@pytest.mark.slow
@pytest.mark.parametrize("log_n", [13, 16, 20, 24, 27])
def test_ntt_large(log_n, rng):
    n = 1 << log_n
    batch = 1 if log_n == 27 else 2
    x = rand_device_fr(rng, batch, n)
    shift = rng.randrange(2, R_MOD)
    # round trips, plain and coset
    y = cuda.ntt_device(x)
    assert not cp.array_equal(y, x)
    assert cp.array_equal(cuda.ntt_device(y, inverse=True), x), f"round trip n=2^{log_n}, seed {SEED}"
    y = None
    ys = cuda.ntt_device(x, shift=shift, domain="native")
    assert cp.array_equal(cuda.ntt_device(ys, inverse=True, shift=shift, domain="native"), x)
    # spot checks of dense random input against naive evaluation (O(n) per index on the CPU)
    if log_n <= 16:
        xs = limbs_to_ints(cp.asnumpy(x[0]))
        got = limbs_to_ints(cp.asnumpy(ys[0]))
        w = root_of_unity(n, "native")
        for j in [0, 1, n - 1, rng.randrange(n)]:
            pt = shift * pow(w, j, R_MOD) % R_MOD
            acc = 0
            for v in reversed(xs):
                acc = (acc * pt + int(v)) % R_MOD
            assert got[j] == acc, f"coset spot check j={j} n=2^{log_n}, seed {SEED}"
    ys = None
    # sparse low-degree input (8 random coefficients): every evaluation is cheap to check
    coeffs = rand_fr(rng, 8)
    sparse = cp.zeros((1, n, 4), dtype=cp.uint64)
    sparse[0, :8] = cp.asarray(fr_to_limbs(coeffs))
    ev = cuda.ntt_device(sparse)
    w = root_of_unity(n, "snarkjs")
    idx = [0, 1, 2, n // 2, n - 1] + [rng.randrange(n) for _ in range(8)]
    got = limbs_to_ints(cp.asnumpy(ev[0, idx]))
    for j, g in zip(idx, got):
        pt = pow(w, j, R_MOD)
        assert g == sum(c * pow(pt, i, R_MOD) for i, c in enumerate(coeffs)) % R_MOD, f"j={j} n=2^{log_n}"


# ------------------------------------------------------------------------------- H


# ntt.cu variants of its Fr products: mul_f64 (ff/mont_f64.cuh), mul_kara (ff/mont32.cuh)
NTT_VARIANTS = ["MONT_MUL_F64=1", "MONT_MUL_KARA=1"]


@pytest.mark.parametrize("define", NTT_VARIANTS)
@pytest.mark.parametrize("log_n", [0, 1, 2, 7, 12])
def test_ntt_multiplier_variant_matches_oracle(log_n, define, rng, monkeypatch):
    """Each multiplier build of ntt.cu (the default pass kernel and the scale and H kernels with
    that multiplier) against the CPU oracle: forward, inverse, coset, both conventions,
    rows with r - 1 in every entry; compute_h too. NVRTC compiles the variant on first use unless
    its cubin was built (kernels.build --variant ntt.cu:MONT_MUL_F64=1)."""
    monkeypatch.setattr(cuda, "DEFINES", (define,))
    n = 1 << log_n
    rows = [rand_fr(rng, n), [R_MOD - 1] * n]
    x = np.stack([fr_to_limbs(r) for r in rows])
    shift = rng.randrange(2, R_MOD)
    for inverse, s, convention in ((False, None, "snarkjs"), (True, None, "native"), (False, shift, "native"),
                                   (True, shift, "snarkjs")):
        got = cuda.ntt(x, inverse=inverse, shift=s, domain=convention)
        for row, vals in enumerate(rows):
            want = oracle(np.array(vals, dtype=object), inverse, s, convention)
            assert tuple(limbs_to_ints(got[row])) == want, (
                f"{define} n={n} {convention} inverse={inverse} shift={s} row {row}, seed {SEED}")
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    got = cuda.compute_h(fr_to_limbs(a), fr_to_limbs(b), fr_to_limbs(c), domain="snarkjs")
    assert list(limbs_to_ints(got)) == list(h_oracle(tuple(a), tuple(b), tuple(c), "snarkjs")), f"{define} h n={n}"
    c[0] = (c[0] + 1) % R_MOD  # negative twin: another c gives another h
    tampered = cuda.compute_h(fr_to_limbs(a), fr_to_limbs(b), fr_to_limbs(c), domain="snarkjs")
    assert not np.array_equal(tampered, got)


@pytest.mark.parametrize("define", NTT_VARIANTS)
@pytest.mark.parametrize("log_n", [13, 17, 20, 25])
def test_ntt_multiplier_variant_agrees_at_size(log_n, define, rng, monkeypatch):
    """At sizes the oracle is too slow for, each multiplier build gives the default build's bits
    (itself checked against the oracle above): forward, inverse, coset, and compute_h to 2^20."""
    x = rand_device_fr(rng, 1, 1 << log_n)
    shift = rng.randrange(2, R_MOD)
    cases = [(False, None, "snarkjs"), (True, None, "native"), (False, shift, "native"), (True, shift, "snarkjs")]
    want = [cuda.ntt_device(x, inverse=i, shift=s, domain=c) for i, s, c in cases]
    abc = rand_device_fr(rng, 3, 1 << log_n) if log_n <= 20 else None
    want_h = cuda.compute_h_device(abc.copy()) if abc is not None else None
    monkeypatch.setattr(cuda, "DEFINES", (define,))
    for (i, s, c), w in zip(cases, want):
        assert cp.array_equal(cuda.ntt_device(x, inverse=i, shift=s, domain=c), w), f"{define} n=2^{log_n} {i} {s} {c}"
    if abc is not None:
        assert cp.array_equal(cuda.compute_h_device(abc), want_h), f"{define} compute_h n=2^{log_n}"


@functools.cache
def h_oracle(a: tuple, b: tuple, c: tuple, convention):
    arr = [np.array(v, dtype=object) for v in (a, b, c)]
    return list(qap.compute_h(*arr, convention))


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("log_n", list(range(0, 13)) + [16])
def test_compute_h_matches_oracle(log_n, convention, rng, pass_kernel):
    n = 1 << log_n
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    if log_n >= 2:
        a[0], b[1], c[2] = R_MOD - 1, 0, R_MOD - 1
    got = cuda.compute_h(fr_to_limbs(a), fr_to_limbs(b), fr_to_limbs(c), domain=convention)
    want = h_oracle(tuple(a), tuple(b), tuple(c), convention)
    assert got.shape == (n, 4)
    assert list(limbs_to_ints(got)) == list(want), f"compute_h n={n} {convention}, seed {SEED}"
    if log_n >= 2:  # negative: the other convention gives another h (w_4 is shared by both)
        other = "native" if convention == "snarkjs" else "snarkjs"
        assert list(limbs_to_ints(cuda.compute_h(fr_to_limbs(a), fr_to_limbs(b), fr_to_limbs(c), other))) != list(want)


def test_compute_h_satisfied_constraints(rng):
    """The realistic case: a*b = c on the domain (a satisfied R1CS), still bit-exact."""
    n = 1024
    a, b = rand_fr(rng, n), rand_fr(rng, n)
    c = [x * y % R_MOD for x, y in zip(a, b)]
    got = cuda.compute_h(fr_to_limbs(a), fr_to_limbs(b), fr_to_limbs(c))
    want = qap.compute_h(np.array(a, dtype=object), np.array(b, dtype=object), np.array(c, dtype=object))
    assert list(limbs_to_ints(got)) == list(want)


# ------------------------------------------------------------------------------- scaled store

# cuda.FOLD_SCALE: the iNTT's scaling (1/n, coset powers, compute_h's factors R) applied by the
# last DIF pass as it stores (ntt.cu flags & 8), or by the separate scale_powers pass as before.
R_INV = pow(FR_R, -1, R_MOD)


def h_both_ways(abc, monkeypatch, **kw):
    """compute_h_device on copies of abc with FOLD_SCALE True, then False."""
    out = []
    for fold in (True, False):
        monkeypatch.setattr(cuda, "FOLD_SCALE", fold)
        out.append(cuda.compute_h_device(abc.copy(), **kw))
    return out


@pytest.mark.parametrize("c_over_r", [False, True])
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("log_n", range(0, 13))
def test_compute_h_fold_matches_oracle(log_n, convention, c_over_r, rng, pass_kernel, monkeypatch):
    """Folded and unfolded H both equal the oracle, with c given as c (c_over_r False) or as
    c / R (c_over_r True: the fold's third table carries the extra R); n = 1 is _h_n1's case."""
    n = 1 << log_n
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    if log_n >= 2:
        a[0], b[1], c[2] = R_MOD - 1, 0, R_MOD - 1
    c_in = [v * R_INV % R_MOD for v in c] if c_over_r else c
    abc = cp.asarray(np.stack([fr_to_limbs(v) for v in (a, b, c_in)]))
    folded, unfolded = h_both_ways(abc, monkeypatch, domain=convention, c_over_r=c_over_r)
    want = h_oracle(tuple(a), tuple(b), tuple(c), convention)
    what = f"compute_h n={n} {convention} c_over_r={c_over_r} {pass_kernel}, seed {SEED}"
    assert list(limbs_to_ints(cp.asnumpy(folded))) == list(want), "folded " + what
    assert cp.array_equal(folded, unfolded), "folded vs unfolded " + what
    if log_n >= 1:  # negative twin: c read with the other convention of c_over_r gives another h
        monkeypatch.setattr(cuda, "FOLD_SCALE", True)
        other = cuda.compute_h_device(abc.copy(), domain=convention, c_over_r=not c_over_r)
        assert not cp.array_equal(other, folded), "c_over_r ignored: " + what


@pytest.mark.parametrize("bits", [1, 2, 3])
@pytest.mark.parametrize("log_n", [1, 2, 3, 4, 5, 7])
def test_fold_small_pass_plans(log_n, bits, rng, pass_kernel, monkeypatch):
    """Pass plans of 1..3 bits per pass (MAX_PASS_BITS), so the last DIF pass has k = 1, 2 or 3
    after several passes: folded H and coset iNTT against the oracle and the unfolded path."""
    monkeypatch.setattr(cuda, "MAX_PASS_BITS", bits)
    n = 1 << log_n
    a, b, c = rand_fr(rng, n), rand_fr(rng, n), rand_fr(rng, n)
    abc = cp.asarray(np.stack([fr_to_limbs(v) for v in (a, b, c)]))
    folded, unfolded = h_both_ways(abc, monkeypatch, domain="native")
    want = h_oracle(tuple(a), tuple(b), tuple(c), "native")
    assert list(limbs_to_ints(cp.asnumpy(folded))) == list(want), f"h n={n} bits={bits} {pass_kernel}, seed {SEED}"
    assert cp.array_equal(folded, unfolded)
    shift = rng.randrange(2, R_MOD)
    for fold in (True, False):
        monkeypatch.setattr(cuda, "FOLD_SCALE", fold)
        got = cuda.ntt_device(abc, inverse=True, shift=shift, domain="snarkjs")
        for row, vals in enumerate((a, b, c)):
            want_row = oracle(np.array(vals, dtype=object), True, shift, "snarkjs")
            assert tuple(limbs_to_ints(cp.asnumpy(got[row]))) == want_row, (
                f"coset intt fold={fold} n={n} bits={bits} row {row} {pass_kernel}, seed {SEED}")


@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("log_n", range(1, 13))
def test_ntt_inverse_fold_matches_oracle(log_n, convention, rng, pass_kernel, monkeypatch):
    """ntt_device(inverse=True), plain and coset (shift): folded and unfolded equal the oracle,
    on a batch of 3 (one 1/n table row serves every vector)."""
    n = 1 << log_n
    rows = [rand_fr(rng, n), rand_fr(rng, n), [R_MOD - 1] * n]
    x = cp.asarray(np.stack([fr_to_limbs(r) for r in rows]))
    x0 = x.copy()
    shift = rng.randrange(2, R_MOD)
    for s in (None, shift):
        got = {}
        for fold in (True, False):
            monkeypatch.setattr(cuda, "FOLD_SCALE", fold)
            got[fold] = cuda.ntt_device(x, inverse=True, shift=s, domain=convention)
        for row, vals in enumerate(rows):
            want = oracle(np.array(vals, dtype=object), True, s, convention)
            assert tuple(limbs_to_ints(cp.asnumpy(got[True][row]))) == want, (
                f"folded intt n={n} {convention} shift={s} row {row} {pass_kernel}, seed {SEED}")
        assert cp.array_equal(got[True], got[False])
    assert cp.array_equal(x, x0)  # the input is not written


@pytest.mark.parametrize("bits", [8, 9])
@pytest.mark.parametrize("kernel", PASS_KERNELS)
@pytest.mark.parametrize("log_n", [13, 17, 18, 20])
def test_fold_agrees_at_size(log_n, kernel, bits, rng, monkeypatch):
    """At sizes the oracle is too slow for, the folded path gives the unfolded path's bits
    (both checked against the oracle above) for every pass kernel and 8 or 9 stages per pass:
    compute_h with c_over_r False and True, both conventions, and the coset / plain iNTT."""
    monkeypatch.setattr(cuda, "PASS_KERNEL", kernel)
    monkeypatch.setattr(cuda, "MAX_PASS_BITS", bits)
    abc = rand_device_fr(rng, 3, 1 << log_n)
    for convention, c_over_r in (("snarkjs", False), ("native", True)):
        folded, unfolded = h_both_ways(abc, monkeypatch, domain=convention, c_over_r=c_over_r)
        assert cp.array_equal(folded, unfolded), f"h {kernel} bits={bits} n=2^{log_n} {convention} {c_over_r}"
    shift = rng.randrange(2, R_MOD)
    for s, convention in ((shift, "native"), (None, "snarkjs")):
        got = []
        for fold in (True, False):
            monkeypatch.setattr(cuda, "FOLD_SCALE", fold)
            got.append(cuda.ntt_device(abc[:2], inverse=True, shift=s, domain=convention))
        assert cp.array_equal(*got), f"intt {kernel} bits={bits} n=2^{log_n} shift={s} {convention}"


@pytest.mark.slow
@pytest.mark.parametrize("log_n", [24, 27])
def test_fold_agrees_at_production_size(log_n, rng, monkeypatch):
    """The default pass kernel at the production sizes: folded H = unfolded H, bit for bit
    (2^27: 3 x 4 GiB of input, twice, plus H)."""
    abc = rand_device_fr(rng, 3, 1 << log_n)
    folded, unfolded = h_both_ways(abc, monkeypatch, c_over_r=True)
    assert cp.array_equal(folded, unfolded), f"h n=2^{log_n}, seed {SEED}"


def test_fold_wrong_table_gives_other_h(rng, monkeypatch):
    """Negative twin: the comparison sees a wrong fold table. With fold_tables building b's
    table from another factor, the folded H differs from the unfolded one; rebuilt honestly,
    they agree again."""
    real = cuda.fold_tables
    abc = rand_device_fr(rng, 3, 1 << 10)
    monkeypatch.setattr(cuda, "FOLD_SCALE", False)
    want = cuda.compute_h_device(abc.copy())
    monkeypatch.setattr(cuda, "FOLD_SCALE", True)

    def tampered(g, log_n, k, factors, *modulus):
        return real(g, log_n, k, (factors[0], factors[1] * 2 % R_MOD) + tuple(factors[2:]), *modulus)

    NTT_TABLES.clear()  # the fold tables are cached per (device, g, log_n, k, factors)
    monkeypatch.setattr(cuda, "fold_tables", tampered)
    try:
        assert not cp.array_equal(cuda.compute_h_device(abc.copy()), want)
    finally:
        NTT_TABLES.clear()
    monkeypatch.setattr(cuda, "fold_tables", real)
    assert cp.array_equal(cuda.compute_h_device(abc.copy()), want)


# ------------------------------------------------------------------------------- G1 MSM

from cuzk_ray.field import FP_LIMBS  # noqa: E402
from cuzk_ray.ref import g1 as g1_ref  # noqa: E402


def g1_rows(points):
    """affine int points (None = infinity) -> uint64[n, 2, 6] standard form."""
    flat = [v for p in points for v in ((0, 0) if p is None else p)]
    return fp_to_limbs(flat).reshape(-1, 2, FP_LIMBS)


def g1_from_row(row):
    x, y = limbs_to_ints(row)
    return None if x == 0 and y == 0 else (int(x), int(y))


@pytest.fixture(scope="module")
def msm_case():
    """100 subgroup points (with repeats, a P / -P pair and an infinity row) and scalars with
    0, 1, r - 1 and a repeated scalar; the expected sum by affine double-and-add."""
    rng = random.Random(SEED + 1)
    bases = [g1_ref.affine_mul(rng.randrange(1, R_MOD), g1_ref.G1_GEN) for _ in range(8)]
    pts, acc = [], bases[0]
    for i in range(100):
        acc = g1_ref.affine_add(acc, bases[i % 8])
        pts.append(acc)
    pts[10] = pts[11]  # repeated point
    pts[12] = (pts[13][0], (-pts[13][1]) % Q_MOD)  # P and -P
    pts[20] = None  # infinity
    sc = [rng.randrange(R_MOD) for _ in pts]
    sc[0], sc[1], sc[2], sc[12], sc[13] = 0, 1, R_MOD - 1, 5, 5
    sc[30] = sc[31]
    return pts, sc, g1_ref.msm_naive(sc, pts)


@pytest.mark.parametrize("window", [None, 2, 5, 8, 12, 16])
def test_msm_g1_matches_reference(msm_case, window):
    pts, sc, want = msm_case
    assert want is not None and g1_ref.on_curve(want)
    got = cuda_msm.msm_g1(g1_rows(pts), fr_to_limbs(sc), window=window)
    assert got.shape == (2, FP_LIMBS) and got.dtype == np.uint64
    assert g1_from_row(got) == want, f"msm window={window}, seed {SEED}"


def test_msm_g1_negative_and_edges(msm_case):
    pts, sc, want = msm_case
    rows, limbs = g1_rows(pts), fr_to_limbs(sc)
    tampered = list(sc)
    tampered[50] = (tampered[50] + 1) % R_MOD
    assert g1_from_row(cuda_msm.msm_g1(rows, fr_to_limbs(tampered))) != want
    assert not cuda_msm.msm_g1(rows, fr_to_limbs([0] * len(sc))).any()  # all-zero scalars -> infinity
    # device-resident inputs give the same answer
    assert g1_from_row(cuda_msm.msm_g1(cp.asarray(rows), cp.asarray(limbs))) == want
    # P + (-P) alone is infinity
    p = pts[13]
    pair = g1_rows([p, (p[0], (-p[1]) % Q_MOD)])
    assert not cuda_msm.msm_g1(pair, fr_to_limbs([7, 7])).any()
    with pytest.raises(ValueError, match="shape"):
        cuda_msm.msm_g1(rows[:10], limbs)


def test_msm_g1_bit_scalars():
    """Bit-heavy scalars (PoRep witnesses): 0/1 only, many points in one bucket."""
    rng = random.Random(SEED + 2)
    base = g1_ref.affine_mul(rng.randrange(1, R_MOD), g1_ref.G1_GEN)
    pts, acc = [], base
    for _ in range(300):
        acc = g1_ref.affine_add(acc, base)
        pts.append(acc)
    bits = [rng.randrange(2) for _ in pts]
    want = None
    for b, p in zip(bits, pts):
        if b:
            want = g1_ref.affine_add(want, p)
    assert g1_from_row(cuda_msm.msm_g1(g1_rows(pts), fr_to_limbs(bits))) == want
