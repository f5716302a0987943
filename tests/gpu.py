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
