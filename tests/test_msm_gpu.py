"""G1 MSM on the GPU (cuda_msm.msm_g1) against the pure-Python oracle g1_ref, bit for bit.

Focus: the 0/1 split and the load-balanced bucket accumulation, i.e. inputs whose digits pile up
in a few buckets. Bases are k_i * B for a random B and small known k_i (0 = the point at
infinity), built by repeated affine addition, so that the expected sum of n terms is one scalar
multiplication (sum_i s_i k_i mod r) * B; small cases are also checked against the plain
affine msm_naive. Run on a GPU machine: ``pytest -m gpu tests/test_msm_gpu.py``; seeds are in the
assertion messages (CUZK_TEST_SEED replays them).
"""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import pytest
from gpu import multiplier_variant_cases, require_gpu

cp = require_gpu()

from cuzk_ray.cuda import msm as cuda_msm  # noqa: E402
from cuzk_ray.field import FP_LIMBS, Q_MOD, R_MOD, fp_to_limbs, fr_to_limbs, limbs_to_ints  # noqa: E402
from cuzk_ray.ref import g1 as g1_ref  # noqa: E402

pytestmark = pytest.mark.gpu
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
TABLE = 600  # distinct multiples 1..TABLE of the base point


NO_ACCUMULATION = {"test_mixed_digits_kernel_matches_the_model",  # no MSM at all
                   "test_all_zero_scalars", "test_all_one_scalars", "test_table_rows_are_window_multiples",
                   "test_scalar_range_check_on_device",
                   "test_split_classifies_by_every_limb",  # no bucket accumulation: run once
                   "test_split_lists_match_flatnonzero",
                   "test_multiplier_variant"}  # picks its accumulations itself


@pytest.fixture(autouse=True, params=["xyzz", "affine"])
def accumulate(request, monkeypatch):
    """Every MSM test of this module with both bucket accumulations (cuda_msm.ACCUMULATE["g1"])."""
    if request.param == "affine" and request.node.originalname in NO_ACCUMULATION:
        pytest.skip("no bucket accumulation in this test")
    monkeypatch.setitem(cuda_msm.ACCUMULATE, "g1", request.param)
    return request.param


@pytest.fixture(scope="module")
def table():
    """(B, rows) with rows[k] = k * B as uint64[2, 6] standard form, rows[0] = infinity."""
    rng = random.Random(SEED)
    base = g1_ref.affine_mul(rng.randrange(1, R_MOD), g1_ref.G1_GEN)
    pts, acc = [(0, 0)], None
    for _ in range(TABLE):
        acc = g1_ref.affine_add(acc, base)
        pts.append(acc)
    rows = fp_to_limbs([v for p in pts for v in p]).reshape(-1, 2, FP_LIMBS)
    return base, rows


def point(row):
    x, y = limbs_to_ints(row)
    return None if x == 0 and y == 0 else (int(x), int(y))


def expected(base, ks, scalars):
    return g1_ref.affine_mul(sum(int(k) * s for k, s in zip(ks, scalars)) % R_MOD, base)


def scalars_mix(rng, n, frac_bits, frac_zero_of_bits=0.5):
    """n scalars: a fraction frac_bits are 0 or 1, the rest uniform in [0, r)."""
    out = []
    for _ in range(n):
        if rng.random() < frac_bits:
            out.append(0 if rng.random() < frac_zero_of_bits else 1)
        else:
            out.append(rng.randrange(R_MOD))
    return out


def run(table, ks, scalars, window=None, device=False):
    _, rows = table
    pts = np.ascontiguousarray(rows[np.asarray(ks, dtype=np.int64)])
    sc = fr_to_limbs(scalars)
    if device:
        pts, sc = cp.asarray(pts), cp.asarray(sc)
    got = cuda_msm.msm_g1(pts, sc, window=window)
    assert got.shape == (2, FP_LIMBS) and got.dtype == np.uint64
    return point(got)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 31])
def test_tiny_sizes_vs_naive(table, n):
    rng = random.Random(SEED + n)
    ks = [rng.randrange(1, TABLE + 1) for _ in range(n)]
    for scalars in (
        [rng.randrange(R_MOD) for _ in range(n)],
        [1] * n,
        [rng.randrange(2) for _ in range(n)],
        [R_MOD - 1] * n,
    ):
        pts = [point(table[1][k]) for k in ks]
        want = g1_ref.msm_naive(scalars, pts)
        assert want == expected(table[0], ks, scalars)  # the two oracles agree
        assert run(table, ks, scalars) == want, f"n={n} scalars={scalars} seed {SEED}"


def test_all_zero_scalars(table):
    rng = random.Random(SEED + 100)
    ks = [rng.randrange(1, TABLE + 1) for _ in range(4099)]
    assert run(table, ks, [0] * len(ks)) is None
    # negative: one scalar 1 gives exactly that point
    sc = [0] * len(ks)
    sc[1234] = 1
    assert run(table, ks, sc) == point(table[1][ks[1234]])


@pytest.mark.parametrize("n", [300, 5000, 2**16])
def test_all_one_scalars(table, n):
    rng = random.Random(SEED + 200 + n)
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]  # some infinity rows
    want = expected(table[0], ks, [1] * n)
    if n <= 300:
        assert want == g1_ref.msm_naive([1] * n, [point(table[1][k]) for k in ks])
    assert run(table, ks, [1] * n) == want, f"seed {SEED}"
    i = next(j for j, k in enumerate(ks) if k != 0)
    assert run(table, ks, [1] * i + [2] + [1] * (n - i - 1)) != want  # negative


@pytest.mark.parametrize("scan", [True, False])
def test_split_classifies_by_every_limb(table, scan, monkeypatch):
    """split_scalars looks at all four limbs: a scalar whose low limb is 0 or 1 but another limb
    is not zero is a Pippenger scalar, not a 0 or a 1 (index lists exact, then the MSM, with
    either split: SPLIT_SCAN)."""
    monkeypatch.setattr(cuda_msm, "SPLIT_SCAN", scan)
    edge = [0, 1, 2, 2**64, 2**64 + 1, 2**128 + 1, 2**192, 2**192 + 1, R_MOD - 1, 1, 0, 3]
    ones, rest = cuda_msm.split_scalars(cp, cp.asarray(fr_to_limbs(edge)))
    assert cp.asnumpy(ones).tolist() == [1, 9]
    assert cp.asnumpy(rest).tolist() == [2, 3, 4, 5, 6, 7, 8, 11]
    assert ones.dtype == cp.uint32 and rest.dtype == cp.uint32
    rng = random.Random(SEED + 300)
    ks = [rng.randrange(1, TABLE + 1) for _ in edge]
    assert run(table, ks, edge) == expected(table[0], ks, edge), f"seed {SEED}"
    assert run(table, ks, edge[:4] + [1] + edge[5:]) != expected(table[0], ks, edge)  # negative: 2^64 + 1 is not 1


def split_reference(limbs: np.ndarray) -> tuple[list, list]:
    """(indices of the scalars equal to 1, of those other than 0 and 1) by numpy on the host."""
    high = np.bitwise_or.reduce(limbs[:, 1:], axis=1) if limbs.shape[0] else np.zeros(0, np.uint64)
    one = (high == 0) & (limbs[:, 0] == 1)
    zero = (high == 0) & (limbs[:, 0] == 0)
    return np.flatnonzero(one).tolist(), np.flatnonzero(~one & ~zero).tolist()


@pytest.mark.parametrize("scan", [True, False])
@pytest.mark.parametrize("n", [1, 31, 2047, 2048, 2049, 6144, 100_003, 2**20 + 5])
@pytest.mark.parametrize("mix", ["zeros", "ones", "uniform", "bits", "limbs"])
def test_split_lists_match_flatnonzero(n, mix, scan):
    """split_scalars, by the scan passes (msm_split_count + msm_split_scatter, tiles of 2048) and by
    msm_classify + flatnonzero, gives both index lists in ascending order, as numpy's flatnonzero
    does, at tile edges and across many tiles; negative twin: one scalar changed from 1 to 2
    moves its index from one list to the other."""
    gen = np.random.default_rng(SEED + n)
    limbs = np.zeros((n, 4), dtype=np.uint64)
    if mix == "ones":
        limbs[:, 0] = 1
    elif mix == "uniform":  # 4 random limbs below r: the top limb < r's
        limbs[:] = gen.integers(0, 2**63, size=(n, 4), dtype=np.uint64)
        limbs[:, 3] >>= np.uint64(2)
    elif mix == "bits":
        limbs[:, 0] = gen.integers(0, 2, size=n, dtype=np.uint64)
        limbs[gen.random(n) < 0.05, 0] = 7  # a few others
    elif mix == "limbs":  # low limb 0 or 1 with one other limb set: never a 0 or a 1
        limbs[:, 0] = gen.integers(0, 2, size=n, dtype=np.uint64)
        limbs[np.arange(n), gen.integers(0, 4, size=n)] |= gen.integers(0, 2, size=n, dtype=np.uint64) << np.uint64(40)
    want_ones, want_rest = split_reference(limbs)
    ones, rest = cuda_msm.split_scalars(cp, cp.asarray(limbs), scan=scan)
    assert ones.dtype == cp.uint32 and rest.dtype == cp.uint32
    assert cp.asnumpy(ones).tolist() == want_ones, f"{mix} n={n}, seed {SEED}"
    assert cp.asnumpy(rest).tolist() == want_rest, f"{mix} n={n}, seed {SEED}"
    if want_ones:  # negative twin
        j = want_ones[len(want_ones) // 2]
        limbs[j, 0] = 2
        ones2, rest2 = cuda_msm.split_scalars(cp, cp.asarray(limbs), scan=scan)
        assert j not in cp.asnumpy(ones2).tolist() and j in cp.asnumpy(rest2).tolist()
        assert len(ones2) == len(want_ones) - 1 and len(rest2) == len(want_rest) + 1


@pytest.mark.parametrize("frac_bits", [0.0, 0.5, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("n", [1000, 4097, 2**16 - 3])
def test_mixed_bits_and_uniform(table, n, frac_bits):
    rng = random.Random(SEED + int(frac_bits * 1000) + n)
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    sc = scalars_mix(rng, n, frac_bits)
    want = expected(table[0], ks, sc)
    assert run(table, ks, sc) == want, f"n={n} frac_bits={frac_bits} seed {SEED}"


@pytest.mark.parametrize("frac_bits", [0.5, 0.99])
@pytest.mark.parametrize("n", [4097, 2**16 - 3])
def test_scan_split_gives_the_same_msm(table, n, frac_bits, monkeypatch):
    """The MSM with SPLIT_SCAN (the two scan passes) equals the oracle and the flatnonzero split;
    negative twin: one 1 turned into a 0 changes the sum."""
    rng = random.Random(SEED + 500 + int(frac_bits * 1000) + n)
    ks = [rng.randrange(1, TABLE + 1) for _ in range(n)]
    sc = scalars_mix(rng, n, frac_bits)
    want = expected(table[0], ks, sc)
    monkeypatch.setattr(cuda_msm, "SPLIT_SCAN", True)
    assert run(table, ks, sc) == want, f"n={n} frac_bits={frac_bits} seed {SEED}"
    i = sc.index(1)
    assert run(table, ks, sc[:i] + [0] + sc[i + 1 :]) != want
    monkeypatch.setattr(cuda_msm, "SPLIT_SCAN", False)
    assert run(table, ks, sc) == want


@pytest.mark.parametrize("n", [1, 7, 4097, 2**16 + 3])
def test_no_split_sends_zeros_and_ones_through_the_windows(table, n):
    """split=False (the H MSM: uniform scalars): every scalar through the windows, 0 and 1 and the
    limb edges included, the same sum as with the split and the oracle."""
    rng = random.Random(SEED + 400 + n)
    edge = [0, 1, 2**64, 2**64 + 1, R_MOD - 1, 1, 0]
    sc = (edge + scalars_mix(rng, n, 0.3))[:n]
    ks = [rng.randrange(0, TABLE + 1) for _ in sc]
    ks[0] = ks[0] or 1  # a point other than infinity first (the negative twin changes its scalar)
    _, rows = table
    pts = np.ascontiguousarray(rows[np.asarray(ks, dtype=np.int64)])
    want = expected(table[0], ks, sc)
    assert point(cuda_msm.msm_g1(pts, fr_to_limbs(sc), split=False)) == want, f"seed {SEED}"
    assert point(cuda_msm.msm_g1(pts, fr_to_limbs(sc), split=True)) == want
    sc[0] = (sc[0] + 1) % R_MOD  # negative twin: another scalar, another sum
    assert point(cuda_msm.msm_g1(pts, fr_to_limbs(sc), split=False)) != want


def test_device_inputs_and_windows(table):
    rng = random.Random(SEED + 300)
    n = 3001
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    sc = scalars_mix(rng, n, 0.5)
    want = expected(table[0], ks, sc)
    assert run(table, ks, sc, device=True) == want
    plans = ("mixed", cuda_msm.WindowPlan((7,) * 20 + (8,) * 15), cuda_msm.WindowPlan((8,) * 15 + (7,) * 20))
    for window in (2, 3, 7, 13, 16, 20, 21, *plans):
        assert run(table, ks, sc, window=window) == want, f"window {window} seed {SEED}"
    tampered = list(sc)
    i = next(j for j, s in enumerate(sc) if s > 1 and ks[j] != 0)
    tampered[i] = (tampered[i] + 1) % R_MOD
    assert run(table, ks, tampered) != want


def test_skewed_buckets(table):
    """Every scalar the same (every window's digit lands in one bucket), plus repeated points."""
    rng = random.Random(SEED + 400)
    n = 2**16
    s = rng.randrange(2, R_MOD)
    ks = [rng.randrange(1, 4) for _ in range(n)]  # only 3 distinct points
    want = expected(table[0], ks, [s] * n)
    assert run(table, ks, [s] * n) == want, f"seed {SEED}"
    # small digits only: every scalar in 2..9 (one window, 8 buckets)
    sc = [rng.randrange(2, 10) for _ in range(n)]
    assert run(table, ks, sc) == expected(table[0], ks, sc), f"seed {SEED}"
    # r - 1 (= -1) everywhere: the sum of the negated points
    assert run(table, ks, [R_MOD - 1] * n) == expected(table[0], ks, [R_MOD - 1] * n)


@pytest.mark.parametrize("n", [1, 2, 1000, 2**12 + 3, 2**16])
def test_mixed_plan_vs_oracle(table, n):
    """window="mixed" (8 x 21 + 4 x 22 bits, 2^24 buckets, two bucket reductions): uniform
    scalars with 0, 1 and r - 1 mixed in, infinity and repeated bases, equal to the oracle and to
    the default windows; finish with the widths reversed (22 x 4 + 21 x 8) gives another point."""
    rng = np.random.default_rng(SEED % 2**32 + 1400 + n)
    ks = rng.integers(0, TABLE + 1, size=n)
    ks[0] = ks[0] or 1  # a point other than infinity first, with a uniform scalar (the negative twin)
    limbs = uniform_limbs(rng, n)
    special = rng.random(n) < 0.1
    special[0] = False
    limbs[special] = np.asarray([[0, 0, 0, 0], [1, 0, 0, 0], fr_to_limbs([R_MOD - 1])[0]],
                                dtype=np.uint64)[rng.integers(0, 3, size=int(special.sum()))]
    sc = [int(v) for v in limbs_to_ints(limbs)]
    pts = cp.asarray(np.ascontiguousarray(table[1][ks]))
    want = expected(table[0], ks, sc)
    if n <= 2:
        assert want == g1_ref.msm_naive(sc, [point(table[1][k]) for k in ks])
    parts = cuda_msm.msm_parts(cuda_msm.G1, pts, cp.asarray(limbs), window="mixed")
    assert parts.widths == cuda_msm.MIXED_WIDTHS and len(parts.windows) == 12
    assert point(cuda_msm.finish(parts)) == want, f"n={n} seed {SEED}"
    assert point(cuda_msm.msm_g1(pts, cp.asarray(limbs), window=cuda_msm.WindowPlan.mixed())) == want
    assert point(cuda_msm.msm_g1(pts, cp.asarray(limbs))) == want
    reversed_widths = dataclasses.replace(parts, widths=parts.widths[::-1])
    assert point(cuda_msm.finish(reversed_widths)) != want  # negative twin


def test_mixed_plan_by_default_from_mixed_min(table, monkeypatch):
    """With MIXED_MIN lowered to 2^12, a 2^12-scalar G1 MSM without a window takes the mixed
    plan (12 window rows) and is exact; one scalar fewer takes the uniform default."""
    monkeypatch.setattr(cuda_msm, "MIXED_MIN", 2**12)
    rng = np.random.default_rng(SEED % 2**32 + 1500)
    n = 2**12
    ks = rng.integers(0, TABLE + 1, size=n)
    limbs = uniform_limbs(rng, n)
    sc = [int(v) for v in limbs_to_ints(limbs)]
    pts = cp.asarray(np.ascontiguousarray(table[1][ks]))
    parts = cuda_msm.msm_parts(cuda_msm.G1, pts, cp.asarray(limbs), split=False)
    assert parts.widths == cuda_msm.MIXED_WIDTHS
    assert point(cuda_msm.finish(parts)) == expected(table[0], ks, sc), f"seed {SEED}"
    fewer = cuda_msm.msm_parts(cuda_msm.G1, pts[1:], cp.asarray(limbs[1:]), split=False)
    assert fewer.widths == cuda_msm.WindowPlan.uniform(cuda_msm.default_window(n - 1)).widths


def test_mixed_digits_kernel_matches_the_model():
    """msm_digits with the mixed plan's words writes exactly the entries of the Python recoding
    (cuda_msm.signed_digits / digit_key): edge scalars (r - 1, 2^254, full windows, carries
    through every window) and uniform ones, over a shuffled index list."""
    from cuzk_ray.cuda.device import launch
    from cuzk_ray.kernels.loader import get_kernel

    plan = cuda_msm.WindowPlan.mixed()
    rng = random.Random(SEED + 1600)
    edge = [R_MOD - 1, R_MOD - 2, 2**254, 2**254 - 1, (1 << 234) - 1, ((1 << 21) - 1) << 168, 2, 0]
    edge += [((1 << (c - 1)) + 1) << b for c, b in zip(plan.widths, plan.bits)]
    edge = [e for e in edge if e < R_MOD]  # scalars are < r (the top window's edge is not)
    sc = edge + [rng.randrange(R_MOD) for _ in range(3000)]
    m = len(sc)
    idx = list(range(m))
    rng.shuffle(idx)
    W = len(plan.widths)
    entries = cp.empty(W * m, dtype=cp.uint64)
    launch(get_kernel("msm.cu", "msm_digits"), m,
           (cp.asarray(fr_to_limbs(sc)), cp.asarray(np.array(idx, dtype=np.uint32)), np.uint32(m),
            cuda_msm.plan_words(cp, plan), np.int32(W), np.uint32(0), entries), cuda_msm.THREADS)
    got = cp.asnumpy(entries).reshape(W, m)
    for i, s in enumerate(sc):
        for w, d in enumerate(cuda_msm.signed_digits(plan, s)):
            if d == 0:  # only the key counts (NO_KEY: sorted last, never read); a digit that wrapped
                # to 0 (raw 2^c - 1 plus a carry) keeps the kernel's sign bit in its value
                assert int(got[w, i]) >> 32 == cuda_msm.NO_KEY, f"scalar {s:#x} window {w} seed {SEED}"
                continue
            want = (cuda_msm.digit_key(plan, w, d) << 32) | idx[i] | (int(d < 0) << 31)
            assert int(got[w, i]) == want, f"scalar {s:#x} window {w} seed {SEED}"
    # negative twin: the model with the widths reversed (22 x 4 + 21 x 8) is not what the kernel wrote
    other = cuda_msm.WindowPlan(plan.widths[::-1])
    assert any(int(got[w, 1]) != (cuda_msm.digit_key(other, w, d) << 32) | idx[1] | (int(d < 0) << 31)
               for w, d in enumerate(cuda_msm.signed_digits(other, sc[1])))


def test_opposite_points_cancel(table):
    rng = random.Random(SEED + 500)
    k = rng.randrange(1, TABLE + 1)
    p = point(table[1][k])
    neg = (p[0], (-p[1]) % Q_MOD)
    rows = fp_to_limbs([p[0], p[1], neg[0], neg[1]] * 500).reshape(-1, 2, FP_LIMBS)
    for s in (1, 7, rng.randrange(R_MOD)):
        assert point(cuda_msm.msm_g1(rows, fr_to_limbs([s] * 1000))) is None
    sc = [1] * 1000
    sc[0] = 2
    assert point(cuda_msm.msm_g1(rows, fr_to_limbs(sc))) == p


@pytest.mark.parametrize("log_n", [18, 20])
def test_large_vs_oracle_and_halves(table, log_n):
    """Large n: exact oracle, and the sum of the two halves' MSMs equals the whole."""
    rng = np.random.default_rng(SEED % 2**32 + log_n)
    n = 2**log_n
    ks = rng.integers(0, TABLE + 1, size=n)
    limbs = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    limbs[:, 3] %= np.uint64(R_MOD >> 192)
    bits = rng.random(n) < 0.9
    limbs[bits, 1:] = 0
    limbs[bits, 0] = rng.integers(0, 2, size=int(bits.sum()), dtype=np.uint64)
    sc = [int(v) for v in limbs_to_ints(limbs)]
    _, rows = table
    pts = cp.asarray(np.ascontiguousarray(rows[ks]))
    d_sc = cp.asarray(limbs)
    whole = point(cuda_msm.msm_g1(pts, d_sc))
    assert whole == expected(table[0], ks, sc), f"n=2^{log_n} seed {SEED}"
    h = n // 2 + 12345
    lo = point(cuda_msm.msm_g1(cp.ascontiguousarray(pts[:h]), cp.ascontiguousarray(d_sc[:h])))
    hi = point(cuda_msm.msm_g1(cp.ascontiguousarray(pts[h:]), cp.ascontiguousarray(d_sc[h:])))
    assert g1_ref.affine_add(lo, hi) == whole
    assert lo != whole and hi != whole  # negative: neither half alone


def test_bases_in_montgomery_form_reused(table):
    """prepare_bases once, many MSMs: the same results as raw standard-form points."""
    rng = random.Random(SEED + 600)
    n = 2500
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    pts = np.ascontiguousarray(table[1][np.asarray(ks)])
    bases = cuda_msm.prepare_bases(cuda_msm.G1, pts)
    assert bases.table is None and bases.n == n
    for frac in (0.0, 0.9):
        sc = scalars_mix(rng, n, frac)
        want = expected(table[0], ks, sc)
        assert point(cuda_msm.msm_g1(bases, fr_to_limbs(sc))) == want, f"seed {SEED}"
    sub = bases.slice(100, 1000)
    sc = scalars_mix(rng, 1000, 0.5)
    assert point(cuda_msm.msm_g1(sub, fr_to_limbs(sc))) == expected(table[0], ks[100:1100], sc)
    with pytest.raises(ValueError, match="2500 bases for 7 scalars"):
        cuda_msm.msm_g1(bases, fr_to_limbs([1] * 7))
    with pytest.raises(ValueError, match="bases prepared for bls12381 g1, not bls12381 g2"):
        cuda_msm.msm_g2(bases, fr_to_limbs([1] * n))
    with pytest.raises(ValueError, match="use_table without a table"):
        cuda_msm.msm_g1(bases, fr_to_limbs([2] * n), use_table=True)
    tabled = cuda_msm.prepare_bases(cuda_msm.G1, pts, table_window=8)
    with pytest.raises(ValueError, match="use_table takes the table's window"):
        cuda_msm.msm_g1(tabled, fr_to_limbs([2] * n), window=8, use_table=True)


@pytest.mark.parametrize("c", [2, 5, 13, 20, 22])
def test_table_rows_are_window_multiples(table, c):
    """Row w n + i of the table = 2^(c w) P_i (infinity rows stay all zero), Montgomery form."""
    from cuzk_ray.field import FP_R_INV

    rng = random.Random(SEED + 700 + c)
    n = 37
    ks = [0] + [rng.randrange(1, TABLE + 1) for _ in range(n - 2)] + [5]
    bases = cuda_msm.prepare_bases(cuda_msm.G1, np.ascontiguousarray(table[1][np.asarray(ks)]), table_window=c)
    W = cuda_msm.windows_for(c)
    assert bases.table.shape == (W * n, 2, FP_LIMBS) and bases.table_window == c
    rows = cp.asnumpy(bases.table)
    base = table[0]
    for w in sorted({0, 1, W // 2, W - 1}):
        for i in (0, 1, n - 1):
            x, y = (int(v) * FP_R_INV % Q_MOD for v in limbs_to_ints(rows[w * n + i]))
            got = None if x == 0 and y == 0 else (x, y)
            want = g1_ref.affine_mul(ks[i] * 2 ** (c * w) % R_MOD, base) if ks[i] else None
            assert got == want, f"c={c} w={w} i={i} seed {SEED}"


@pytest.mark.parametrize("c", [3, 11, 16, 20, 22])
def test_msm_with_table(table, c):
    """MSMs through the table (one shared bucket set) equal the oracle, for uniform, mixed,
    all-equal and -1 scalars, with infinity and repeated bases; a tampered scalar does not."""
    rng = random.Random(SEED + 800 + c)
    n = 3000
    ks = [rng.randrange(0, 4) if j % 2 else rng.randrange(0, TABLE + 1) for j in range(n)]
    bases = cuda_msm.prepare_bases(cuda_msm.G1, np.ascontiguousarray(table[1][np.asarray(ks)]), table_window=c)
    s = rng.randrange(2, R_MOD)
    cases = {"uniform": [rng.randrange(R_MOD) for _ in range(n)], "mixed": scalars_mix(rng, n, 0.7),
             "equal": [s] * n, "minus one": [R_MOD - 1] * n, "small": [rng.randrange(2, 10) for _ in range(n)]}
    for name, sc in cases.items():
        want = expected(table[0], ks, sc)
        got = point(cuda_msm.msm_g1(bases, cp.asarray(fr_to_limbs(sc)), use_table=True))
        assert got == want, f"{name} c={c} seed {SEED}"
    sc = cases["uniform"]
    i = next(j for j, k in enumerate(ks) if k != 0)
    tampered = list(sc)
    tampered[i] = (tampered[i] + 1) % R_MOD
    assert point(cuda_msm.msm_g1(bases, fr_to_limbs(tampered), use_table=True)) != expected(table[0], ks, sc)


def test_table_used_by_default_for_large_uniform(table, monkeypatch):
    """2^17 uniform scalars over bases with a table: the default path takes the table (one
    bucket set, window_sums called with table_n) and is exact; use_table=False takes the
    per-window path and gives the same point."""
    rng = np.random.default_rng(SEED % 2**32 + 900)
    n = 2**17
    ks = rng.integers(0, TABLE + 1, size=n)
    limbs = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    limbs[:, 3] %= np.uint64(R_MOD >> 192)
    sc = [int(v) for v in limbs_to_ints(limbs)]
    bases = cuda_msm.prepare_bases(cuda_msm.G1, cp.asarray(np.ascontiguousarray(table[1][ks])),
                                   table_window=cuda_msm.table_window_for(n))
    calls = []
    inner = cuda_msm.window_sums

    def spy(*args, **kw):
        calls.append(kw.get("table_n", 0))
        return inner(*args, **kw)

    monkeypatch.setattr(cuda_msm, "window_sums", spy)
    got = point(cuda_msm.msm_g1(bases, cp.asarray(limbs)))
    assert got == expected(table[0], ks, sc), f"seed {SEED}"
    assert point(cuda_msm.msm_g1(bases, cp.asarray(limbs), use_table=False)) == got
    assert calls == [n, 0]


def _limb_row(v: int) -> list:
    return [(v >> (64 * k)) & (2**64 - 1) for k in range(4)]


def test_scalar_range_check_on_device(monkeypatch):
    """cupy scalars go through the one-pass device check (cuda.device.below_r_kernel): values < r pass
    untouched; r, r + 1, 2^256 - 1 and values equal to r in the top limbs but larger below are
    refused with the row's index, in [n, 4] and [batch, n, 4] shapes."""
    from cuzk_ray.cuda import device as cuda

    calls = []
    inner = cuda.below_r_kernel

    def spy(cp_):
        calls.append(1)
        return inner(cp_)

    monkeypatch.setattr(cuda, "below_r_kernel", spy)
    r = R_MOD
    rl = _limb_row(r)
    good = [0, 1, r - 1, r - 2, (r >> 64) << 64, rl[3] << 192]
    rows = np.array([_limb_row(v) for v in good * 200], dtype=np.uint64)
    x = cp.asarray(rows)
    assert cuda.check_fr_array(x, "t") is x and calls
    bad = [r, r + 1, 2**256 - 1, (rl[3] << 192) | (rl[2] << 128) | ((rl[1] + 1) << 64),
           (rl[3] << 192) | ((rl[2] + 1) << 128)]
    for v in bad:
        assert v >= r
        for j in (0, 537, len(rows) - 1):
            y = rows.copy()
            y[j] = _limb_row(v)
            with pytest.raises(ValueError, match=f"element {j} is not a reduced Fr value"):
                cuda.check_fr_array(cp.asarray(y), "t")
        z = np.stack([rows, rows])
        z[1, 3] = _limb_row(v)
        with pytest.raises(ValueError, match=f"element {len(rows) + 3} is not"):
            cuda.check_fr_array(cp.asarray(z), "t", ndims=(2, 3))
    assert cuda.check_fr_array(cp.asarray(np.stack([rows, rows])), "t", ndims=(2, 3)).shape == (2, len(rows), 4)


# --- batch-affine accumulation (ACCUMULATE["g1"] = "affine"): sizes, windows, K and groups forced ---


def uniform_limbs(rng, n):
    limbs = rng.integers(0, 2**64, size=(n, 4), dtype=np.uint64)
    limbs[:, 3] %= np.uint64(R_MOD >> 192)
    return limbs


@pytest.mark.parametrize("n", [2, 3, 4, 5, 17, 64, 255, 1000, 4097, 2**14, 2**16 + 1, 2**18 - 1, 2**20])
def test_affine_sizes_vs_oracle(table, n, accumulate):
    """2^1..2^20 and sizes that are no multiple of a block (128 threads x K slots): uniform
    scalars with some 0, 1 and -1, infinity and repeated bases; xyzz and affine agree."""
    if accumulate == "xyzz":
        pytest.skip("the affine path's sweep (xyzz is the same call with accumulate=)")
    rng = np.random.default_rng(SEED % 2**32 + n)
    ks = rng.integers(0, TABLE + 1, size=n)
    limbs = uniform_limbs(rng, n)
    special = rng.random(n) < 0.1
    limbs[special] = np.asarray([[0, 0, 0, 0], [1, 0, 0, 0], fr_to_limbs([R_MOD - 1])[0]],
                                dtype=np.uint64)[rng.integers(0, 3, size=int(special.sum()))]
    sc = [int(v) for v in limbs_to_ints(limbs)]
    pts = cp.asarray(np.ascontiguousarray(table[1][ks]))
    want = expected(table[0], ks, sc)
    if n <= 64:
        assert want == g1_ref.msm_naive(sc, [point(table[1][k]) for k in ks])
    got = point(cuda_msm.msm_g1(pts, cp.asarray(limbs), accumulate="affine"))
    assert got == want, f"n={n} seed {SEED}"
    assert point(cuda_msm.msm_g1(pts, cp.asarray(limbs), accumulate="xyzz")) == want


@pytest.mark.parametrize("setting", ["K=1", "K=256 partial blocks", "K=3", "tiny budget"])
def test_affine_k_and_groups_forced(table, monkeypatch, setting, accumulate):
    """The level kernel with one slot per thread, always 256 (a last block mostly idle), an odd
    K, and many groups of runs (AFFINE_BUDGET of 1 MiB): uniform, all-equal and small digits."""
    if accumulate == "xyzz":
        pytest.skip("affine only")
    values = {"K=1": dict(AFF_K_MIN=1, AFF_K_MAX={"g1": 1}),
              "K=256 partial blocks": dict(AFF_K_MIN=256, AFF_MIN_THREADS=1),
              "K=3": dict(AFF_K_MIN=3, AFF_K_MAX={"g1": 3}), "tiny budget": dict(AFFINE_BUDGET=1 << 20)}[setting]
    for k, v in values.items():
        monkeypatch.setattr(cuda_msm, k, v)
    rng = random.Random(SEED + 1000)
    n = 20001
    ks = [rng.randrange(0, TABLE + 1) if j % 3 else rng.randrange(1, 3) for j in range(n)]
    s = rng.randrange(2, R_MOD)
    for name, sc in {"uniform": [rng.randrange(R_MOD) for _ in range(n)], "equal": [s] * n,
                     "small": [rng.randrange(2, 10) for _ in range(n)], "minus one": [R_MOD - 1] * n}.items():
        assert run(table, ks, sc) == expected(table[0], ks, sc), f"{setting} {name} seed {SEED}"


def test_affine_large_windows_and_table(table, accumulate):
    """Windows above the old limit of 20 and MSMs through a table of window multiples."""
    if accumulate == "xyzz":
        pytest.skip("affine only")
    rng = random.Random(SEED + 1100)
    n = 3001
    ks = [rng.randrange(0, TABLE + 1) for _ in range(n)]
    sc = scalars_mix(rng, n, 0.3)
    want = expected(table[0], ks, sc)
    for window in (22, 24):
        assert run(table, ks, sc, window=window) == want, f"window {window} seed {SEED}"
    with pytest.raises(ValueError, match="outside 2..24"):
        run(table, ks, sc, window=25)
    bases = cuda_msm.prepare_bases(cuda_msm.G1, np.ascontiguousarray(table[1][np.asarray(ks)]), table_window=11)
    assert point(cuda_msm.msm_g1(bases, fr_to_limbs(sc), use_table=True, accumulate="affine")) == want
    with pytest.raises(ValueError, match="accumulate"):
        cuda_msm.msm_g1(bases, fr_to_limbs(sc), accumulate="affin")


def test_affine_doubling_and_cancelling_pairs(table, accumulate):
    """Level 0 pairs equal points (P + P: the doubling formula) and P + (-P) (infinity, which
    later levels pass through): every scalar the same, bases P, P, -P, -P, ... and P, -P, ..."""
    if accumulate == "xyzz":
        pytest.skip("affine only")
    rng = random.Random(SEED + 1200)
    p = point(table[1][rng.randrange(1, TABLE + 1)])
    neg = (p[0], (-p[1]) % Q_MOD)
    for pattern, k in (([p, p, neg, neg], 0), ([p, neg], 0), ([p, p, p], 3 * 1000), ([p, None, p, p], 3 * 750)):
        flat = [v for q in pattern * (3000 // len(pattern)) for v in (q or (0, 0))]
        rows = fp_to_limbs(flat).reshape(-1, 2, FP_LIMBS)
        for s in (5, rng.randrange(R_MOD)):
            got = point(cuda_msm.msm_g1(rows, fr_to_limbs([s] * rows.shape[0]), accumulate="affine"))
            assert got == g1_ref.affine_mul(k * s % R_MOD, p), f"{pattern} s={s} seed {SEED}"


# --- compile-time variants of the Fp multiplication in msm.cu (ff/mont32.cuh): MONT_MUL_F64=1 (operator*
# by mul_f64, ff/mont_f64.cuh), MONT_MUL_KARA=1 (by mul_kara: Karatsuba product, sqr_wide's reduction),
# MONT_MUL_SUB=0 (the point formulas' a b - c d as two products; the default, 1, in one reduction) ---

# builds of msm.cu: the multipliers, and the accumulation's point prefetch (none; by cp.async)
MUL_VARIANTS = ["MONT_MUL_F64=1", "MONT_MUL_KARA=1", "MONT_MUL_SUB=0", "MSM_PREFETCH=0", "MSM_PREFETCH=2"]


@pytest.mark.parametrize("define", MUL_VARIANTS)
@pytest.mark.parametrize("n", [1, 31, 4097, 2**16 + 3])
def test_multiplier_variant(table, n, define):
    """Each multiplier build of msm.cu (its operator* in every kernel: to_mont,
    the XYZZ accumulation, the bucket reduction, the batch-affine levels) gives the oracle's sum
    bit for bit: uniform and bit-heavy scalars over bases with infinity and repeats, one scalar
    for all over 3 distinct points (doublings and cancellations in the buckets), the 0/1 split
    off; the affine accumulation once; a tampered scalar gives another sum. NVRTC compiles the
    variant on first use unless its cubin was built (kernels.build --variant msm.cu:MONT_MUL_F64=1)."""
    group = dataclasses.replace(cuda_msm.G1, defines=(define,))
    rng = random.Random(SEED + 1300 + n)
    _, rows = table
    cases = multiplier_variant_cases(rng, n, TABLE, scalars_mix, R_MOD)
    for name, kk, sc, kw in cases:
        pts = np.ascontiguousarray(rows[np.asarray(kk, dtype=np.int64)])
        want = expected(table[0], kk, sc)
        got = point(cuda_msm.msm(group, pts, fr_to_limbs(sc), **kw))
        assert got == want, f"{define} {name} n={n} seed {SEED}"
    name, kk, sc, kw = cases[0]
    tampered = list(sc)
    tampered[0] = (tampered[0] + 1) % R_MOD  # point 0 is not infinity
    pts = np.ascontiguousarray(rows[np.asarray(kk, dtype=np.int64)])
    assert point(cuda_msm.msm(group, pts, fr_to_limbs(tampered))) != expected(table[0], kk, sc)
