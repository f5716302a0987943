"""cuda/sort.py on the GPU: CUB's radix sort on the key bits of 64-bit entries against CuPy's
full sort (the same multiset, keys in order, NO_KEY entries last), through the precompiled
library when it is built (kernels.build; the GPU runs carry it) and through the fallback."""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from gpu import require_gpu

cp = require_gpu()

from cuzk_ray.cuda import sort as cuda_sort  # noqa: E402
from cuzk_ray.kernels import loader  # noqa: E402

pytestmark = pytest.mark.gpu
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
NO_KEY = 0xFFFFFFFF


def entries(rng, n: int, total: int, frac_none: float):
    """n entries (key << 32 | value): keys uniform below total, a fraction NO_KEY, values random."""
    keys = rng.integers(0, total, size=n, dtype=np.uint64)
    keys[rng.random(n) < frac_none] = NO_KEY
    values = rng.integers(0, 2**32, size=n, dtype=np.uint64)
    return cp.asarray((keys << np.uint64(32)) | values)


def check(got, original, total: int) -> None:
    keys = got >> cp.uint64(32)
    assert bool(cp.all(keys[1:] >= keys[:-1])), "keys out of order"
    assert bool(cp.all(cp.sort(got) == cp.sort(original))), "not a permutation of the input"
    m = int(cp.count_nonzero(keys != NO_KEY))
    assert bool(cp.all(keys[:m] < total)) and bool(cp.all(keys[m:] == NO_KEY))


def test_library_is_used_when_built():
    cc = cp.cuda.Device().compute_capability
    if not loader.library_path(cuda_sort.LIBRARY, f"sm_{cc}").is_file():
        pytest.skip("radix_sort library not built (python -m cuzk_ray.kernels.build)")
    assert cuda_sort.sort_library(cp) is not None


@pytest.mark.parametrize("n,total", [(0, 8), (1, 8), (2, 2), (1000, 2**19), (4097, 2), (2**20 + 3, 13 * 2**19),
                                     (2**20, 2**24), (2**18, 12 * 2**21), (2**16, 2**31)])
def test_sorted_by_key_bits(n, total):
    rng = np.random.default_rng(SEED + n + total)
    x = entries(rng, n, total, 0.2)
    original = x.copy()
    got = cuda_sort.sort_high_bits(cp, x, total.bit_length())
    assert got.shape == (n,) and got.dtype == cp.uint64
    if n:
        check(got, original, total)


def test_power_of_two_total_keeps_no_key_last():
    """total = 2^k: the last real key is k ones, so key_bits = k + 1 (bit_length) keeps NO_KEY
    apart; with k bits only it would tie with NO_KEY (negative: the order breaks)."""
    rng = np.random.default_rng(SEED)
    total = 2**12
    x = entries(rng, 50_000, total, 0.3)
    x[:1000] = cp.uint64((total - 1) << 32)  # many entries of the top key
    x[1000] = cp.uint64(NO_KEY << 32)
    x[-1] = cp.uint64((total - 1) << 32)  # after a NO_KEY: a stable sort on 12 bits keeps it there
    original = x.copy()
    check(cuda_sort.sort_high_bits(cp, x.copy(), total.bit_length()), original, total)
    if cuda_sort.sort_library(cp) is not None:
        bad = cuda_sort.sort_high_bits(cp, x.copy(), 12)
        keys = bad >> cp.uint64(32)
        assert not bool(cp.all(keys[1:] >= keys[:-1]))


def test_fallback_without_library(monkeypatch):
    monkeypatch.setattr(cuda_sort, "sort_library", lambda _cp: None)
    rng = np.random.default_rng(SEED + 1)
    x = entries(rng, 10_000, 2**15, 0.1)
    original = x.copy()
    check(cuda_sort.sort_high_bits(cp, x, 16), original, 2**15)


def test_bad_arguments():
    with pytest.raises(ValueError, match="contiguous 1-d uint64"):
        cuda_sort.sort_high_bits(cp, cp.zeros(4, dtype=cp.uint32), 8)
    with pytest.raises(ValueError, match="key_bits 33 outside"):
        cuda_sort.sort_high_bits(cp, cp.zeros(4, dtype=cp.uint64), 33)
