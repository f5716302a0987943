"""Shared by the GPU test modules: skip the whole module unless CuPy sees a CUDA GPU."""

import pytest


def require_gpu():
    """Return the cupy module, or skip the calling test module (no CuPy, no driver, no GPU)."""
    cp = pytest.importorskip("cupy")
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception:  # no driver
        n = 0
    if n == 0:
        pytest.skip("no CUDA GPU visible to CuPy", allow_module_level=True)
    return cp


def multiplier_variant_cases(rng, n: int, table_size: int, mix, r_mod: int) -> list:
    """The cases of both MSM modules' multiplier-variant tests, as (name, base multiples k_i,
    scalars, msm keyword arguments): uniform and bit-heavy scalars (mix(rng, n, fraction)) over
    bases with infinity (k = 0) and repeats, one scalar for all over 3 distinct points (doublings
    and cancellations in the buckets), the 0/1 split off; the affine accumulation at n = 4097.
    The first base of case 0 is not infinity, so tampering with its scalar changes the sum."""
    ks = [rng.randrange(0, table_size + 1) for _ in range(n)]
    ks[0] = ks[0] or 1
    few = [rng.randrange(1, 4) for _ in range(n)]
    s = rng.randrange(2, r_mod)
    cases = [("uniform", ks, [rng.randrange(r_mod) for _ in range(n)], {}),
             ("mixed", ks, mix(rng, n, 0.5), {}),
             ("equal, 3 points", few, [s] * n, {}),
             ("mixed, no split", ks, mix(rng, n, 0.3), {"split": False})]
    if n == 4097:
        cases.append(("mixed, affine", ks, mix(rng, n, 0.5), {"accumulate": "affine"}))
    return cases
