"""G2 MSM on the GPU (cuda_msm.msm_g2), the cuda backend's msm_g2 on resident bases, and
fixed-base batch multiplication (cuda_fixed_base) for G1 and G2, against arkworks bit for bit.

Bases are k_i * B for a random B and small known k_i (0 = the point at infinity), so the expected
sum of n terms is one scalar multiplication (sum_i s_i k_i mod r) * B; sizes up to 2^12 + 5 are
also checked against py-arkworks' own MSM (cuzk_ray.ref.msm.msm_g2, G2Point.multiexp_unchecked).
Run on a GPU machine: ``pytest -m gpu tests/test_g2_gpu.py``; seeds are in the assertion
messages (CUZK_TEST_SEED replays them).
"""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import pytest
from gpu import multiplier_variant_cases, require_gpu

cp = require_gpu()

from py_arkworks_bls12381 import G2Point, Scalar  # noqa: E402

from cuzk_ray.cuda import msm as cuda_msm  # noqa: E402
from cuzk_ray.cuda.fixed_base import fixed_base_mul_gpu  # noqa: E402
from cuzk_ray.curve import g2_array, g2_points  # noqa: E402
from cuzk_ray.field import R_MOD, fr_to_limbs  # noqa: E402
from cuzk_ray.ref import msm as cpu_msm  # noqa: E402

pytestmark = pytest.mark.gpu
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
TABLE = 600  # distinct multiples 1..TABLE of the base point


@pytest.fixture(params=["xyzz", "affine"])
def accumulate(request, monkeypatch):
    """The MSM tests run with both bucket accumulations (cuda_msm.ACCUMULATE["g2"])."""
    monkeypatch.setitem(cuda_msm.ACCUMULATE, "g2", request.param)
    return request.param


@pytest.fixture(scope="module")
def table():
    """(B, rows) with rows[k] = k * B as uint64[2, 2, 6] standard form, rows[0] = infinity."""
    rng = random.Random(SEED)
    base = G2Point() * Scalar(rng.randrange(1, R_MOD))
    pts, acc = [G2Point.identity()], G2Point.identity()
    for _ in range(TABLE):
        acc = acc + base
        pts.append(acc)
    return base, g2_array(pts)


def expected(base, ks, scalars):
    return g2_array([base * Scalar(sum(int(k) * int(s) for k, s in zip(ks, scalars)) % R_MOD)])[0]


def scalars_mix(rng, n, frac_bits):
    """n scalars: a fraction frac_bits are 0 or 1, the rest uniform in [0, r)."""
    return [rng.randrange(2) if rng.random() < frac_bits else rng.randrange(R_MOD) for _ in range(n)]


def run(table, ks, scalars, window=None, device=False):
    pts = np.ascontiguousarray(table[1][np.asarray(ks, dtype=np.int64)])
    sc = fr_to_limbs(scalars)
    if device:
        pts, sc = cp.asarray(pts), cp.asarray(sc)
    got = cuda_msm.msm_g2(pts, sc, window=window)
    assert got.shape == (2, 2, 6) and got.dtype == np.uint64
    return got


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000, 2**12 + 5])
@pytest.mark.usefixtures("accumulate")
def test_random_vs_arkworks(table, n):
    rng = random.Random(SEED + n)
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]  # some points at infinity
    sc = scalars_mix(rng, n, 0.3)
    sc[0] = R_MOD - 1
    rows = np.ascontiguousarray(table[1][ks])
    want = g2_array([cpu_msm.msm_g2(g2_points(rows), sc)])[0]
    assert np.array_equal(want, expected(table[0], ks, sc))  # the two oracles agree
    assert np.array_equal(run(table, ks, sc), want), f"n={n} seed {SEED}"


@pytest.mark.usefixtures("accumulate")
def test_large_mixed(table):
    rng = random.Random(SEED + 7)
    n = 2**16
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    sc = scalars_mix(rng, n, 0.5)
    want = expected(table[0], ks, sc)
    assert np.array_equal(run(table, ks, sc, device=True), want), f"seed {SEED}"
    i = next(j for j, k in enumerate(ks) if k)
    sc[i] = (sc[i] + 1) % R_MOD
    assert not np.array_equal(run(table, ks, sc, device=True), want)  # negative


@pytest.mark.usefixtures("accumulate")
def test_zero_and_one_scalars(table):
    rng = random.Random(SEED + 100)
    n = 4099
    ks = [rng.randrange(1, TABLE + 1) for _ in range(n)]
    assert not run(table, ks, [0] * n).any()  # all zero -> infinity
    sc = [0] * n
    sc[1234] = 1
    assert np.array_equal(run(table, ks, sc), table[1][ks[1234]])
    assert np.array_equal(run(table, ks, [1] * n), expected(table[0], ks, [1] * n))
    bits = [rng.randrange(2) for _ in range(n)]
    assert np.array_equal(run(table, ks, bits), expected(table[0], ks, bits))


@pytest.mark.usefixtures("accumulate")
def test_infinity_repeated_and_opposite_points(table):
    rng = random.Random(SEED + 200)
    n = 3000
    assert not run(table, [0] * n, [rng.randrange(R_MOD) for _ in range(n)]).any()  # every base infinity
    ks = [rng.randrange(1, 4) for _ in range(n)]  # 3 distinct points, repeated
    s = rng.randrange(2, R_MOD)
    assert np.array_equal(run(table, ks, [s] * n), expected(table[0], ks, [s] * n)), f"seed {SEED}"
    # P and -P in pairs cancel for equal scalars
    p = table[1][rng.randrange(1, TABLE + 1)]
    neg = g2_array([-g2_points(p[None])[0]])[0]
    rows = np.ascontiguousarray(np.stack([p, neg] * 500))
    for s in (1, 7, rng.randrange(R_MOD)):
        assert not cuda_msm.msm_g2(rows, fr_to_limbs([s] * 1000)).any()
    sc = [1] * 1000
    sc[0] = 2
    assert np.array_equal(cuda_msm.msm_g2(rows, fr_to_limbs(sc)), p)


@pytest.mark.usefixtures("accumulate")
def test_windows_and_odd_sizes(table):
    rng = random.Random(SEED + 300)
    n = 3001  # not a multiple of any window's bucket count
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    sc = scalars_mix(rng, n, 0.5)
    want = expected(table[0], ks, sc)
    for window in (None, 2, 3, 7, 13, 16, 18, 20):
        assert np.array_equal(run(table, ks, sc, window=window), want), f"window {window} seed {SEED}"


def test_bad_inputs():
    with pytest.raises(ValueError, match="expected shape"):
        cuda_msm.msm_g2(np.zeros((3, 2, 6), np.uint64), fr_to_limbs([1, 2, 3]))
    with pytest.raises(ValueError, match="not a reduced Fr value"):
        cuda_msm.msm_g2(np.zeros((1, 2, 2, 6), np.uint64), fr_to_limbs([0]) + np.uint64(2**64 - 1))


@pytest.mark.usefixtures("accumulate")
def test_backend_msm_g2_resident_and_slices():
    from cuzk_ray.backends.cpu import CpuBackend
    from cuzk_ray.backends.cuda import CudaBackend
    from cuzk_ray.circuits.porep import build_circuit
    from cuzk_ray.groth16.setup import dev_setup

    pk = dev_setup(build_circuit(1024, 2), seed=9)
    n = len(pk.b_g2_query)
    rng = random.Random(SEED + 400)
    w = fr_to_limbs(scalars_mix(rng, n, 0.5))
    gpu, cpu = CudaBackend(), CpuBackend()
    key, ckey = gpu.load_key(pk), cpu.load_key(pk)
    assert "b_g2_query" not in key.queries and "b_g2_query" in key.device  # no CPU-side conversion
    assert gpu.split_g2 is False and cpu.split_g2 is True
    whole = cpu.msm_g2(ckey, "b_g2_query", w)
    assert gpu.msm_g2(key, "b_g2_query", w) == whole
    assert gpu.msm_g2(key, "b_g2_query", cp.asarray(w)) == whole  # device scalars
    h = n // 2 + 3
    lo = gpu.msm_g2(key, "b_g2_query", w[:h], 0)
    hi = gpu.msm_g2(key, "b_g2_query", cp.asarray(w[h:]), h)
    assert lo + hi == whole and lo != whole
    assert hi == cpu.msm_g2(ckey, "b_g2_query", w[h:], h)
    with pytest.raises(ValueError, match="scalars from base"):
        gpu.msm_g2(key, "b_g2_query", w[:10], n - 5)
    with pytest.raises(ValueError, match="bases but"):
        gpu.msm_g2(key, "b_g2_query", w[:10])


def edge_scalars(rng, n):
    fixed = [0, 1, 2, 3, 255, 256, R_MOD - 1, R_MOD - 2, (1 << 254) + 12345, R_MOD >> 1, 0, 1]
    return fixed + [rng.randrange(R_MOD) for _ in range(n - len(fixed))]


@pytest.mark.parametrize("group", ["g1", "g2"])
def test_fixed_base_vs_cpu(group):
    rng = random.Random(SEED + 500)
    sc = fr_to_limbs(edge_scalars(rng, 300))
    want = cpu_msm.fixed_base_mul_array(group, sc, workers=1)
    got = fixed_base_mul_gpu(group, sc)
    assert got.shape == want.shape and got.dtype == np.uint64
    assert np.array_equal(got, want), f"{group} seed {SEED}"
    assert not got[0].any()  # scalar 0 -> infinity
    assert np.array_equal(fixed_base_mul_gpu(group, cp.asarray(sc), chunk=64), want)  # chunked, device input
    bad = sc.copy()
    bad[5, 0] ^= np.uint64(1)
    assert not np.array_equal(fixed_base_mul_gpu(group, bad)[5], want[5])  # negative


def test_fixed_base_rejects_bad_input():
    with pytest.raises(ValueError, match="not 'g1' or 'g2'"):
        fixed_base_mul_gpu("g3", fr_to_limbs([1]))
    with pytest.raises(ValueError, match="not a reduced Fr value"):
        fixed_base_mul_gpu("g1", fr_to_limbs([R_MOD - 1]) + np.uint64(2))
    assert fixed_base_mul_gpu("g2", np.zeros((0, 4), np.uint64)).shape == (0, 2, 2, 6)


def test_dev_setup_on_the_gpu_equals_cpu():
    from cuzk_ray.circuits.porep import build_circuit
    from cuzk_ray.groth16.setup import dev_setup

    cs = build_circuit(2048, 3)
    k_gpu, k_cpu = dev_setup(cs, 5, fixed_base="cuda"), dev_setup(cs, 5)
    for q in ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query"):
        assert np.array_equal(getattr(k_gpu, q), getattr(k_cpu, q)), q
    assert np.array_equal(k_gpu.vk.delta_g2, k_cpu.vk.delta_g2)


@pytest.mark.parametrize("c", [4, 16, 20])
@pytest.mark.usefixtures("accumulate")
def test_g2_msm_with_table(table, c):
    """G2 bases with a table of window multiples: MSMs through it equal arkworks; tampered differs."""
    rng = random.Random(SEED + 900 + c)
    n = 1500
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    bases = cuda_msm.prepare_bases(cuda_msm.G2, np.ascontiguousarray(table[1][np.asarray(ks)]), table_window=c)
    assert bases.table.shape == (cuda_msm.windows_for(c) * n, 2, 2, 6)
    for sc in ([rng.randrange(R_MOD) for _ in range(n)], scalars_mix(rng, n, 0.6), [R_MOD - 1] * n):
        want = expected(table[0], ks, sc)
        assert np.array_equal(cuda_msm.msm_g2(bases, fr_to_limbs(sc), use_table=True), want), f"c={c} seed {SEED}"
    i = next(j for j, k in enumerate(ks) if k != 0)
    sc[i] = (sc[i] + 1) % R_MOD
    assert not np.array_equal(cuda_msm.msm_g2(bases, fr_to_limbs(sc), use_table=True), want)


@pytest.mark.parametrize("n", [2, 5, 128, 4097, 2**16 + 1])
def test_g2_affine_sizes_and_forced_k(table, monkeypatch, n):
    """G2 through the batch-affine levels: sizes no multiple of a block, uniform and all-equal
    scalars over repeated bases (doublings), K = 1 and K = 3, many groups (1 MiB budget)."""
    rng = random.Random(SEED + 1000 + n)
    ks = [rng.randrange(0, TABLE + 1) if j % 2 else rng.randrange(1, 3) for j in range(n)]
    s = rng.randrange(2, R_MOD)
    for setting in ({}, dict(AFF_K_MIN=1, AFF_K_MAX={"g2": 1}), dict(AFF_K_MIN=3, AFF_K_MAX={"g2": 3}),
                    dict(AFFINE_BUDGET=1 << 20)):
        for k, v in setting.items():
            monkeypatch.setattr(cuda_msm, k, v)
        for sc in (scalars_mix(rng, n, 0.2), [s] * n, [R_MOD - 1] * n):
            pts = np.ascontiguousarray(table[1][np.asarray(ks, dtype=np.int64)])
            got = cuda_msm.msm_g2(pts, fr_to_limbs(sc), accumulate="affine")
            assert np.array_equal(got, expected(table[0], ks, sc)), f"n={n} {setting} seed {SEED}"


# --- compile-time variants of the Fp multiplication of msm_g2.cu (inside each Fp2 product): MONT_MUL_F64=1
# (mul_f64, ff/mont_f64.cuh) and MONT_MUL_KARA=1 (mul_kara, ff/mont32.cuh) ---


@pytest.mark.parametrize("define", ["MONT_MUL_F64=1", "MONT_MUL_KARA=1"])
@pytest.mark.parametrize("n", [1, 31, 4097])
def test_multiplier_variant(table, n, define):
    """Each multiplier build of msm_g2.cu gives arkworks' sum bit for bit: uniform and bit-heavy
    scalars over bases with infinity and repeats, one scalar for all over 3 distinct points
    (doublings and cancellations in the buckets), the 0/1 split off, the affine accumulation once;
    a tampered scalar gives another sum. NVRTC compiles the variant on first use unless its cubin
    was built (kernels.build --variant msm_g2.cu:MONT_MUL_KARA=1)."""
    group = dataclasses.replace(cuda_msm.G2, defines=(define,))
    rng = random.Random(SEED + 1300 + n)
    cases = multiplier_variant_cases(rng, n, TABLE, scalars_mix, R_MOD)
    for name, kk, sc, kw in cases:
        pts = np.ascontiguousarray(table[1][np.asarray(kk, dtype=np.int64)])
        got = cuda_msm.msm(group, pts, fr_to_limbs(sc), **kw)
        assert np.array_equal(got, expected(table[0], kk, sc)), f"{define} {name} n={n} seed {SEED}"
    _, kk, sc, _ = cases[0]
    tampered = list(sc)
    tampered[0] = (tampered[0] + 1) % R_MOD  # point 0 is not infinity
    pts = np.ascontiguousarray(table[1][np.asarray(kk, dtype=np.int64)])
    assert not np.array_equal(cuda_msm.msm(group, pts, fr_to_limbs(tampered)), expected(table[0], kk, sc))
