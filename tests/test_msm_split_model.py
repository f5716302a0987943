"""CPU model of the MSM's scan split (ec/msm_impl.cuh msm_split_count / msm_split_scatter; no
GPU): the same tiles, items, warps, ballots and prefix sums as the kernels, in numpy, must give
exactly flatnonzero(cls == 1) and flatnonzero(cls == 2). The kernels themselves are checked on a
GPU by tests/test_msm_gpu.py::test_split_lists_match_flatnonzero; this checks the index math
(item it of thread t is scalar b T + it B + t, and each item's ranks follow the earlier items').
"""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_ray.cuda import msm as cuda_msm

B, T = cuda_msm.SPLIT_THREADS, cuda_msm.SPLIT_TILE
ITEMS = T // B


def model_count(cls: np.ndarray) -> np.ndarray:
    """msm_split_count's counts: uint32[2, nblocks] (ones, others per tile)."""
    nb = -(-len(cls) // T)
    padded = np.zeros(nb * T, dtype=np.uint8)  # scalars past n count as nothing (i < n guard)
    padded[: len(cls)] = cls
    tiles = padded.reshape(nb, T)
    return np.stack([(tiles == 1).sum(axis=1), (tiles == 2).sum(axis=1)]).astype(np.uint32)


def model_scatter(cls: np.ndarray, offsets: np.ndarray, n_ones: int, n_rest: int,
                  bug: str = "") -> tuple[np.ndarray, np.ndarray]:
    """msm_split_scatter, block by block and item by item as the kernel runs it. bug (negative
    tests): "warps" leaves out the earlier warps' counts, "items" does not move the running
    totals on after an item."""
    n = len(cls)
    ones, rest = np.full(n_ones, -1, dtype=np.int64), np.full(n_rest, -1, dtype=np.int64)
    warp = np.arange(B) >> 5
    for b in range(offsets.shape[1]):
        nxt = [int(offsets[0, b]), int(offsets[1, b])]
        for it in range(ITEMS):
            i = b * T + it * B + np.arange(B)
            k = np.where(i < n, cls[np.minimum(i, n - 1)], 0)
            for want, out, slot in ((1, ones, 0), (2, rest, 1)):
                pred = k == want
                ballots = pred.reshape(-1, 32)  # one row per warp
                per_warp = ballots.sum(axis=1)
                pre_warp = np.concatenate([[0], np.cumsum(per_warp)[:-1]])  # warps w < warp
                if bug == "warps":
                    pre_warp[:] = 0
                below = (np.cumsum(ballots, axis=1) - ballots).reshape(-1)  # popc(ballot & lanes below)
                dest = (nxt[slot] + pre_warp[warp] + below)[pred]
                assert len(np.unique(dest)) == len(dest) and np.all(out[dest] == -1), "a slot written twice"
                out[dest] = i[pred]
                nxt[slot] += 0 if bug == "items" else int(per_warp.sum())
    return ones, rest


def model_split(cls: np.ndarray, bug: str = "") -> tuple[np.ndarray, np.ndarray]:
    """split_scalars(scan=True) on the host: count, the prefix sums, scatter."""
    counts = model_count(cls)
    ends = np.cumsum(counts, axis=1, dtype=np.uint32)
    return model_scatter(cls, ends - counts, int(ends[0, -1]), int(ends[1, -1]), bug)


@pytest.mark.parametrize("n", [1, 31, 32, 255, 256, 2047, 2048, 2049, 4096 + 300, 3 * 2048 - 1])
@pytest.mark.parametrize("mix", ["random", "zeros", "ones", "others", "runs"])
def test_scan_model_gives_flatnonzero(n, mix):
    gen = np.random.default_rng(n * 7 + len(mix))
    if mix == "random":
        cls = gen.integers(0, 3, size=n, dtype=np.uint8)
    elif mix == "runs":  # long runs of one class across warp and tile edges
        cls = np.repeat(gen.integers(0, 3, size=n // 97 + 1, dtype=np.uint8), 97)[:n]
    else:
        cls = np.full(n, {"zeros": 0, "ones": 1, "others": 2}[mix], dtype=np.uint8)
    ones, rest = model_split(cls)
    assert ones.tolist() == np.flatnonzero(cls == 1).tolist()
    assert rest.tolist() == np.flatnonzero(cls == 2).tolist()


@pytest.mark.parametrize("bug", ["warps", "items"])
def test_broken_scatter_fails(bug):
    """Negative twins: without the earlier warps' counts, or without moving on after each item,
    slots are written twice (the model's assertion) or the lists differ from flatnonzero."""
    cls = np.random.default_rng(3).integers(0, 3, size=2 * T + 5, dtype=np.uint8)
    with pytest.raises(AssertionError):
        ones, rest = model_split(cls, bug)
        assert ones.tolist() == np.flatnonzero(cls == 1).tolist()
        assert rest.tolist() == np.flatnonzero(cls == 2).tolist()
