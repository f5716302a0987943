"""CUDA C++ kernels (.cu / .cuh), compiled at run time by CuPy through :mod:`.loader`."""
