"""Fast CPU paths with the API of cuzk_ray.ref: ntt (numba NTT and the snarkjs H), fr_kernels (the
compiled Fr arithmetic under it). Importing ``fast.ntt`` imports numba: only where it pays. Where
numba caches the kernels: the top package's NUMBA_CACHE_DIR."""
