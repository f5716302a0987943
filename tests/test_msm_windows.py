"""Window plans of the G1/G2 MSM (cuda.msm.WindowPlan, CPU only): the signed-digit recoding that
msm_digits implements (cuda.msm.signed_digits / digit_key, the kernel's arithmetic in Python
ints) reconstructs every scalar < r with digits in range and keys in their window's buckets,
for uniform c-bit plans (exactly the keys w 2^(c-1) + |d| - 1 of before plans) and the mixed
21x8+22x4 plan; plans too narrow for the top window's carry are refused, and a recoding with
such widths does lose the carry."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk_ray.cuda import msm as cuda_msm
from cuzk_ray.cuda.msm import NO_KEY, WindowPlan, digit_key, signed_digits
from cuzk_ray.field import R_MOD

MIXED = WindowPlan.mixed()
UNIFORM_CS = [2, 3, 5, 7, 13, 16, 17, 20, 21, 22, 24]


def edge_scalars(plan: WindowPlan) -> list[int]:
    """0, 1, r - 1 and its neighbours, powers of two at every window edge, values with all bits
    of one window set (the digit 2^c - 1 -> -1 and a carry), all ones below r, and the value
    whose every window is exactly 2^(c-1) + 1 (a carry through every window)."""
    out = [0, 1, 2, R_MOD - 1, R_MOD - 2, (R_MOD - 1) // 2, 2**254, 2**254 - 1, 2**254 + 1, 2**255 - 1 - 2**254]
    for c, b in zip(plan.widths, plan.bits):
        out += [1 << b, (1 << b) - 1, ((1 << c) - 1) << b, (1 << (c - 1)) << b, ((1 << (c - 1)) + 1) << b]
    out.append((1 << R_MOD.bit_length() - 1) - 1)  # all ones, 254 bits
    out.append(sum(((1 << (c - 1)) + 1) << b for c, b in zip(plan.widths, plan.bits)) % R_MOD)
    carry_chain = 0  # every raw window value 2^(c-1) (+ the carry from below: negative, carry again)
    for c, b in zip(plan.widths[:-1], plan.bits[:-1]):
        carry_chain |= ((1 << c) - 1) << b
    out.append(carry_chain % R_MOD)
    return [s for s in out if 0 <= s < R_MOD]


def check_recoding(plan: WindowPlan, s: int) -> None:
    d = signed_digits(plan, s)
    assert len(d) == len(plan.widths)
    assert sum(dw << b for dw, b in zip(d, plan.bits)) == s, hex(s)
    for w, (dw, c) in enumerate(zip(d, plan.widths)):
        assert abs(dw) <= 1 << (c - 1), (hex(s), w, dw)
        key = digit_key(plan, w, dw)
        if dw == 0:
            assert key == NO_KEY
        else:
            assert plan.bases[w] <= key < plan.bases[w] + (1 << (c - 1)), (hex(s), w, dw)
            assert key < 2 ** plan.key_bits - 1  # below NO_KEY's low bits: the sort's bound
    assert d[-1] >= 0  # the top window never borrows: nothing above it


@pytest.mark.parametrize("plan", [MIXED] + [WindowPlan.uniform(c) for c in UNIFORM_CS], ids=lambda p: p.label)
def test_recoding_reconstructs_random_and_edge_scalars(plan):
    rng = random.Random(7)
    for s in edge_scalars(plan) + [rng.randrange(R_MOD) for _ in range(2000)]:
        check_recoding(plan, s)


def test_mixed_plan_shape():
    assert MIXED.widths == (21,) * 8 + (22,) * 4 and sum(MIXED.widths) == 256
    assert MIXED.total_buckets == 2**24 and MIXED.label == "21x8+22x4"
    assert MIXED.groups == ((21, 8, 0), (22, 4, 8 * 2**20))
    assert MIXED.bits[8] == 168 and MIXED.bits[-1] == 234
    # the largest reachable key (top window, digit (r - 1) >> 234 plus a carry) leaves the last
    # bucket unused, so the sort's 24 key bits still put NO_KEY after every key
    assert MIXED.key_bits == 24
    top = max(signed_digits(MIXED, s)[-1] for s in edge_scalars(MIXED))
    assert top == ((R_MOD - 1) >> 234) + 1 < 2**21
    words = MIXED.words()
    assert words.dtype == np.uint64 and len(words) == 12
    assert [(int(v) & 0xFF, (int(v) >> 8) & 0xFFFF, int(v) >> 32) for v in words] == list(
        zip(MIXED.widths, MIXED.bits, MIXED.bases))


@pytest.mark.parametrize("c", range(2, cuda_msm.MAX_WINDOW + 1))
def test_uniform_plan_is_the_old_windows(c):
    """WindowPlan.uniform(c): windows_for(c) windows, keys w 2^(c-1) + |d| - 1, sort bits no
    more than the old bit_length(total), groups one run (one bucket_reduce as before)."""
    plan = WindowPlan.uniform(c)
    W = cuda_msm.windows_for(c)
    assert plan.widths == (c,) * W and plan.bits == tuple(w * c for w in range(W))
    assert plan.total_buckets == W << (c - 1) and plan.groups == ((c, W, 0),) and plan.label == str(c)
    assert plan.key_bits <= plan.total_buckets.bit_length()
    rng = random.Random(c)
    for s in [R_MOD - 1, rng.randrange(R_MOD)]:
        for w, d in enumerate(signed_digits(plan, s)):
            if d:
                assert digit_key(plan, w, d) == (w << (c - 1)) | (abs(d) - 1)


def test_plans_too_narrow_or_too_wide_are_refused():
    with pytest.raises(ValueError, match="sum to 255"):
        WindowPlan((21,) * 7 + (22,) * 4 + (20,))  # 255 bits: the top window's carry may be lost
    with pytest.raises(ValueError, match="sum to 252"):
        WindowPlan((21,) * 12)
    with pytest.raises(ValueError, match="not all in 2..24"):
        WindowPlan((25,) * 11)
    with pytest.raises(ValueError, match="windows outside"):
        WindowPlan((2,) * 129)
    with pytest.raises(ValueError, match="starts past"):
        WindowPlan((20,) * 13 + (4,))
    with pytest.raises(ValueError, match="expected an int"):
        cuda_msm.plan_of("mixd")
    with pytest.raises(ValueError, match="outside 2..24"):
        cuda_msm.plan_of(25)
    assert cuda_msm.plan_of("mixed") == MIXED and cuda_msm.plan_of(20) == WindowPlan.uniform(20)


def test_a_narrow_plan_does_lose_the_carry():
    """Negative twin of the width check: the recoding with 255 bits of windows (bypassing
    WindowPlan's check) fails for a scalar whose top window carries: its digits do not sum to s."""
    narrow = object.__new__(WindowPlan)
    object.__setattr__(narrow, "widths", (21,) * 7 + (22,) * 4 + (20,))
    s = ((1 << 20) - 1) << 235  # bits 235..254 set: the 20-bit top window is negative, a carry out
    assert s < 2**255
    with pytest.raises(ValueError, match="carry out of the top window"):
        signed_digits(narrow, s)
    check_recoding(MIXED, s)  # the 256-bit plan takes the same scalar


def test_default_plan_by_size_and_group():
    assert cuda_msm.default_plan(cuda_msm.G1, cuda_msm.MIXED_MIN) == MIXED
    assert cuda_msm.default_plan(cuda_msm.G1, cuda_msm.MIXED_MIN - 1) == WindowPlan.uniform(20)
    assert cuda_msm.default_plan(cuda_msm.G2, cuda_msm.MIXED_MIN) == WindowPlan.uniform(20)
    assert cuda_msm.default_plan(cuda_msm.G1, 1000) == WindowPlan.uniform(cuda_msm.default_window(1000))


def test_scratch_bytes_counts_the_larger_bucket_set():
    """At MIXED_MIN the G1 mixed buckets (2^24 x 192 B) are counted beside G2's c = 20 ones; the
    bound is the larger group's, and never below either."""
    n = cuda_msm.MIXED_MIN
    got = cuda_msm.scratch_bytes(n, "xyzz")
    g1_mixed = 2 * 12 * n * 8 + 2**24 * 192 * 9 // 8 + n * 13
    g2_uniform = 2 * 13 * n * 8 + 13 * 2**19 * 384 * 9 // 8 + n * 13
    assert got >= g1_mixed and got >= g2_uniform and got == max(g1_mixed, g2_uniform)


def test_affine_level_bytes_bound_what_the_groups_take(monkeypatch):
    """affine_level_bytes (the VRAM bound of the affine levels) is never below what aff_groups
    counts for the same runs, and AFFINE_BUDGET caps it (one group of runs at a time)."""
    rng = np.random.default_rng(7)
    for g in (cuda_msm.G1, cuda_msm.G2):
        point = 2 * int(np.prod(g.elem)) * 8
        for _ in range(20):
            lens = rng.integers(1, 200, size=int(rng.integers(1, 500))).astype(np.int64)
            cost = int((((lens + 1) // 2) * (point + point // 2 + 16) + ((lens + 3) // 4) * point + 64).sum())
            monkeypatch.setattr(cuda_msm, "AFFINE_BUDGET", 1 << 40)
            assert cuda_msm.affine_level_bytes(g, int(lens.sum()), len(lens)) >= cost
            monkeypatch.setattr(cuda_msm, "AFFINE_BUDGET", cost // 2)
            assert cuda_msm.affine_level_bytes(g, int(lens.sum()), len(lens)) == cost // 2


def test_scratch_bytes_counts_g2_affine_levels_beyond_the_freed_sort_input(monkeypatch):
    """G2's affine accumulation (set per group) adds its level buffers less the sort input they reuse:
    at 2^27 the 16 GiB budget and run arrays exceed the 13 x 2^27 x 8 bytes of entries by ~5 GiB,
    so the bound is G2's, above the XYZZ one; with everything XYZZ it is the old bound."""
    n = cuda_msm.MIXED_MIN
    monkeypatch.setitem(cuda_msm.ACCUMULATE, "g2", "affine")
    g2_xyzz = 2 * 13 * n * 8 + 13 * 2**19 * 384 * 9 // 8 + n * 13
    extra = cuda_msm.AFFINE_BUDGET + 16 * n - 13 * n * 8
    assert cuda_msm.scratch_bytes(n) == g2_xyzz + extra > cuda_msm.scratch_bytes(n, "xyzz")


def test_piece_len_keeps_a_fitting_msm_whole_and_halves_one_that_does_not():
    """piece_len (cuda.msm; the backend cuts MSMs with it): the whole MSM when its scratch fits;
    else the largest n / 2^k (rounded up) whose scratch fits; a refusal in one line naming need
    and have when not even MIN_PIECE scalars fit."""
    gib = 1 << 30
    n = 1 << 27
    assert cuda_msm.piece_len(n, cuda_msm.scratch_bytes(n)) == n
    assert cuda_msm.piece_len(n, 12 * gib) == 1 << 25  # the 32 GiB PoRep's H MSM on an 80 GB card
    assert cuda_msm.scratch_bytes(1 << 25) <= 12 * gib < cuda_msm.scratch_bytes(1 << 26)
    odd = 130_169_893  # the 32 GiB PoRep's L query: not a power of two
    step = cuda_msm.piece_len(odd, 10 * gib)
    assert step == -(-odd // 4) and 4 * step >= odd > 3 * step
    assert cuda_msm.scratch_bytes(step) <= 10 * gib < cuda_msm.scratch_bytes(-(-odd // 2))
    small = 1000
    assert cuda_msm.piece_len(small, cuda_msm.scratch_bytes(small)) == small  # below MIN_PIECE, fits: whole
    with pytest.raises(MemoryError, match=r"^GPU memory: an MSM of 134217728 scalars needs 0\.47 GiB of "
                                          r"scratch even in pieces of 1048576, 0\.10 GiB free$"):
        cuda_msm.piece_len(n, gib // 10)
    with pytest.raises(MemoryError, match=r"pieces of 1000, 0\.00 GiB free$"):
        cuda_msm.piece_len(small, -5)
