"""Fast CPU paths with the API of cuzk_ray.ref: ntt (numba NTT and the snarkjs H), fr_kernels (the
compiled Fr arithmetic under it). Importing ``fast.ntt`` imports numba: only where it pays."""

import os

# One on-disk kernel cache per user, not beside the sources: Ray workers import this package from
# an extracted runtime_env copy, where numba's default __pycache__ would be a fresh, empty cache.
# Set here, before any module of the package imports numba (numba reads it once, at its import).
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "cuzk-ray", "numba"))
