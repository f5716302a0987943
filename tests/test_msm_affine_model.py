"""CPU test of the batch-affine MSM accumulation's index and pairing logic (no GPU).

tests/affine_model.py emulates the kernels thread by thread (same slot, run, scratch and tree
indices as ec/msm_impl.cuh) under the host driver of cuda/msm.py (numpy as the array module);
the bucket sums must equal the direct definition (Python-int affine additions of ref/g1.py), and
an MSM put together from them must equal ref.g1.msm_naive. Inputs hit odd and even runs, runs of
one, one huge bucket (all scalars equal), -1 scalars, infinity bases, repeated points (P + P:
the doubling) and P + (-P) (infinity), several groups of runs, several blocks with partial ones;
deliberately broken variants must fail.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from affine_model import digits, direct_buckets, model_buckets, msm_from_buckets

from cuzk_ray.cuda import msm as cuda_msm
from cuzk_ray.field import Q_MOD, R_MOD
from cuzk_ray.ref import g1 as g1_ref

SEED = 1234


@pytest.fixture(scope="module")
def multiples():
    """k * B for k = 0..40 (0: infinity), B a random point."""
    rng = random.Random(SEED)
    base = g1_ref.affine_mul(rng.randrange(1, R_MOD), g1_ref.G1_GEN)
    pts, acc = [None], None
    for _ in range(40):
        acc = g1_ref.affine_add(acc, base)
        pts.append(acc)
    return pts


def sorted_entries(scalars, c: int):
    W = cuda_msm.windows_for(c)
    ent = digits(scalars, list(range(len(scalars))), c, W)
    ent.sort()
    return ent, W


def assert_same_buckets(got: list, want: list, what: str) -> None:
    """got == want, naming the first bucket that differs. Not `assert got == want`: with CI set,
    pytest diffs the two lists in full (difflib over 115-digit ints), minutes per broken variant."""
    bad = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), None)
    assert len(got) == len(want) and bad is None, f"{what}: bucket {bad} of {len(want)} differs"


def check(bases, scalars, c: int, budget: int = 1 << 40, msm: bool = False, **kw):
    ent, W = sorted_entries(scalars, c)
    total = W << (c - 1)
    ops = model_buckets(bases, ent, total, budget, **kw)
    want = direct_buckets(bases, ent, total)
    assert_same_buckets(ops.bucket, want, f"c={c} kw={kw}")
    M = int(np.searchsorted(ent, np.uint64(0xFFFFFFFF << 32)))
    R = sum(1 for e in range(M) if e == 0 or int(ent[e]) >> 32 != int(ent[e - 1]) >> 32)
    assert ops.additions == M - R  # every pair reduced once
    if msm:
        assert msm_from_buckets(ops.bucket, c, W) == g1_ref.msm_naive(scalars, bases)
    return ops


@pytest.mark.parametrize("n,c", [(1, 3), (2, 4), (3, 2), (37, 3), (200, 5), (301, 8)])
def test_random_scalars_and_bases(multiples, n, c):
    rng = random.Random(SEED + n * 31 + c)
    bases = [multiples[rng.randrange(0, 41)] for _ in range(n)]  # repeats and infinity
    scalars = [rng.choice([0, 1, R_MOD - 1, rng.randrange(R_MOD)]) for _ in range(n)]
    check(bases, scalars, c, msm=n <= 40)
    check(bases, scalars, c, block=2, k_min=3, k_max=3, min_threads=1)  # K not dividing anything


def test_one_huge_bucket_and_minus_one(multiples):
    """All scalars equal: per window one run of n entries (levels down to 1; repeated points
    P + P take the doubling); -1 everywhere: every digit negative."""
    rng = random.Random(SEED + 1)
    n = 257
    bases = [multiples[rng.randrange(1, 4)] for _ in range(n)]  # 3 distinct points
    s = rng.randrange(2, R_MOD)
    ops = check(bases, [s] * n, 6, msm=False)
    assert max(ops.levels) >= n // 2 and len(ops.levels) >= 9 * ops.groups
    check(bases, [R_MOD - 1] * n, 6)
    check(bases, [2] * n, 4, msm=True)  # one key in all: 2 = digit 2 in window 0


def test_opposite_points_and_infinity(multiples):
    """P, -P pairs (P + (-P) = infinity, then infinity operands pass through) and infinity bases."""
    p = multiples[7]
    neg = (p[0], (-p[1]) % Q_MOD)
    bases = [p, neg] * 40 + [None] * 9 + [p]
    check(bases, [5] * len(bases), 3, msm=True)
    check(bases, [1] * len(bases), 3, msm=True)
    check([None] * 10, [7] * 10, 3, msm=True)
    q = multiples[3]
    # same x, opposite y, at the same digit: q and -q through a negative digit
    check([q, q, q], [3, R_MOD - 3, 3], 3, msm=True)


def test_groups_of_runs(multiples):
    """A small budget: many groups (one run per group at the smallest), same sums."""
    rng = random.Random(SEED + 2)
    n = 120
    bases = [multiples[rng.randrange(0, 41)] for _ in range(n)]
    scalars = [rng.randrange(R_MOD) for _ in range(n)]
    one = check(bases, scalars, 4)
    assert one.groups == 1
    many = check(bases, scalars, 4, budget=2000)
    assert many.groups > 10
    single = check(bases, scalars, 4, budget=1)
    ent, _ = sorted_entries(scalars, 4)
    assert single.groups == len({int(e) >> 32 for e in ent} - {0xFFFFFFFF})


def test_aff_groups_cover_runs_within_budget():
    rng = np.random.default_rng(5)
    lens = rng.integers(1, 50, size=500).astype(np.uint32)
    lens[100] = 10_000  # alone larger than the budget
    budget = 20_000
    groups = cuda_msm.aff_groups(np, lens, 96, 48, budget)
    assert groups[0][0] == 0 and groups[-1][1] == 500
    assert all(a[1] == b[0] for a, b in zip(groups, groups[1:]))
    L = lens.astype(np.int64)
    cost = ((L + 1) // 2) * (144 + 16) + ((L + 3) // 4) * 96 + 64  # points, scratch, run map, source word
    for r0, r1 in groups:
        assert r1 > r0 and (cost[r0:r1].sum() <= budget or r1 == r0 + 1)
        assert r1 == 500 or cost[r0 : r1 + 1].sum() > budget  # greedy: the next run would not fit


def test_level_plan_and_k():
    out_len, out_start, slots = cuda_msm.aff_level_plan(np, np.array([1, 2, 3, 8, 1], dtype=np.uint32))
    assert list(out_len) == [1, 1, 2, 4, 1] and list(out_start) == [0, 1, 2, 4, 8] and slots == 9
    assert out_len.dtype == np.uint32 and out_start.dtype == np.uint32
    assert cuda_msm.aff_slots_per_thread(1) == cuda_msm.AFF_K_MIN
    assert cuda_msm.aff_slots_per_thread(1 << 40) == cuda_msm.AFF_K_MAX["g1"]


def test_block_size_matches_kernel():
    src = (Path(cuda_msm.__file__).parents[1] / "kernels" / "ec" / "msm_impl.cuh").read_text()
    assert int(re.search(r"#define AFF_B (\d+)", src).group(1)) == cuda_msm.AFF_THREADS


def test_split_geometry_matches_kernel():
    """cuda_msm.split_scalars launches one block of SPLIT_THREADS per tile of SPLIT_TILE scalars."""
    src = (Path(cuda_msm.__file__).parents[1] / "kernels" / "ec" / "msm_impl.cuh").read_text()
    threads = int(re.search(r"#define SPLIT_B (\d+)", src).group(1))
    items = int(re.search(r"#define SPLIT_ITEMS (\d+)", src).group(1))
    assert (threads, threads * items) == (cuda_msm.SPLIT_THREADS, cuda_msm.SPLIT_TILE)


@pytest.mark.parametrize("bug", ["prefix", "sign", "pass"])
def test_broken_variants_fail(multiples, bug):
    rng = random.Random(SEED + 3)
    n = 60
    bases = [multiples[rng.randrange(1, 41)] for _ in range(n)]
    scalars = [rng.randrange(R_MOD) for _ in range(n)]
    with pytest.raises(AssertionError):
        check(bases, scalars, 4, bug=bug)


def test_broken_pairing_fails(multiples, monkeypatch):
    """Offsets from floor(len / 2) (an odd run's last point dropped or misplaced) must fail."""
    rng = random.Random(SEED + 4)
    bases = [multiples[rng.randrange(1, 41)] for _ in range(50)]
    scalars = [rng.randrange(R_MOD) for _ in range(50)]

    def bad_plan(xp, in_len):
        out_len = xp.maximum(in_len >> xp.uint32(1), xp.uint32(1))
        csum = xp.cumsum(out_len, dtype=xp.uint32)
        return out_len, csum - out_len, int(csum[-1])

    monkeypatch.setattr(cuda_msm, "aff_level_plan", bad_plan)
    with pytest.raises(AssertionError):
        check(bases, scalars, 3)


def kernel_params(name: str) -> list[str]:
    """Parameter names of kernel `name` as DEFINE_MSM_KERNELS declares it (ec/msm_impl.cuh)."""
    src = (Path(cuda_msm.__file__).parents[1] / "kernels" / "ec" / "msm_impl.cuh").read_text().replace("\\\n", " ")
    sig = re.search(r"prefix##" + name + r"\((.*?)\)\s*\{", src, re.S).group(1)
    return [p.strip().split()[-1].lstrip("*") for p in sig.split(",")]


def test_device_ops_pass_the_kernels_arguments_in_order(multiples, monkeypatch):
    """cuda_msm.AffineOps (the device side) with the kernels replaced by the model, each launch's
    arguments bound by the kernel's own parameter names: the argument order of every launch, the
    grid / block shape and the bucket sums are checked without a GPU."""
    from affine_model import ModelOps

    rng = random.Random(SEED + 5)
    n, c = 150, 4
    bases = [multiples[rng.randrange(0, 41)] for _ in range(n)]
    scalars = [rng.randrange(R_MOD) for _ in range(n)]
    ent, W = sorted_entries(scalars, c)
    total = W << (c - 1)
    M = int(np.searchsorted(ent, np.uint64(0xFFFFFFFF << 32)))
    model = ModelOps(bases, total, block=cuda_msm.AFF_THREADS, k_min=cuda_msm.AFF_K_MIN,
                     k_max=cuda_msm.AFF_K_MAX["g1"], min_threads=cuda_msm.AFF_MIN_THREADS)
    calls, words = [], [None]  # words[0]: the source words the last msm_aff_sources wrote

    class Kernel:
        def __init__(self, name):
            self.name, self.params = name, kernel_params(name)

        def __call__(self, grid, block, args):
            assert len(args) == len(self.params), self.name
            a = dict(zip(self.params, args))
            calls.append(self.name)
            if self.name == "msm_aff_runs":
                assert grid[0] * block[0] >= int(a["len"])
                model.runs(a["sorted"], int(a["len"]), a["start_by_key"])
            elif self.name.startswith("msm_aff_sources"):
                slots = int(a["slots"])
                assert grid[0] * block[0] >= slots and len(a["src"]) == slots
                runs = ([int(v) for v in a[k]] for k in ("in_start", "in_len", "out_start", "run"))
                a["src"][:] = model.sources(self.name.endswith("_gather"), a.get("sorted"), *runs, slots)
                words[0] = a["src"]
            elif self.name.startswith("msm_aff_level"):
                assert block == (cuda_msm.AFF_THREADS,)
                gather = self.name.endswith("_gather")
                assert (a["pts"] is bases_marker) == gather and a["src"] is words[0]
                model.level_words(gather, a["pts"], a["src"], int(a["slots"]), int(a["K"]), grid[0], a["scratch"],
                                  a["out"])
            elif self.name == "msm_aff_buckets":
                assert a["buckets"] is bucket_marker and grid[0] * block[0] >= int(a["R"])
                model.buckets(a["pts"], a["keys"], int(a["R"]))
            else:
                raise AssertionError(self.name)

    bases_marker, bucket_marker = object(), object()
    monkeypatch.setattr(cuda_msm, "get_kernel", lambda module, name, defines=(), curve="bls12381": Kernel(name))

    class Ops(cuda_msm.AffineOps):  # host lists in place of device buffers (the model writes tuples)
        def alloc_points(self, k):
            return [None] * k

        def alloc_scratch(self, k):
            return [None] * k

        def alloc_sources(self, k):
            return [None] * k

    ops = Ops(np, cuda_msm.G1, bases_marker, bucket_marker)
    cuda_msm.affine_bucket_sums_with(np, ops, ent, M, total, cuda_msm.AFFINE_BUDGET)
    assert calls[:3] == ["msm_aff_runs", "msm_aff_sources_gather", "msm_aff_level_gather"], calls[:3]
    assert calls[-1] == "msm_aff_buckets" and "msm_aff_sources" in calls and "msm_aff_level" in calls
    assert_same_buckets(model.bucket, direct_buckets(bases, ent, total), "device ops")
