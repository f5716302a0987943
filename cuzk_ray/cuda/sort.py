"""Sort of 64-bit keys on their high bits only (the MSM's digit entries), on the device.

``sort_high_bits(cp, keys, key_bits)`` returns the ``uint64`` cupy array ``keys`` ordered by
bits 32 .. 32 + key_bits - 1 (the entry's bucket key); entries with equal keys come in no
particular order, and the bits above are not looked at. So the MSM passes key_bits =
total.bit_length() for keys < total: NO_KEY (all ones) then still sorts after every real key.
Through CUB's DeviceRadixSort (kernels/host/radix_sort.cu, a shared library built by ``python -m
cuzk_ray.kernels.build``): ceil(key_bits / 8) passes instead of the 8 of a full 64-bit sort.
Without that library (not built, or not loadable), CuPy's full sort, which gives an order the
contract above allows too.

The result may live in a second buffer (CUB's double buffer), so the input array is consumed:
callers use the returned array only.
"""

from __future__ import annotations

import ctypes
import logging

import numpy as np

from ..kernels.loader import load_library

log = logging.getLogger(__name__)
LIBRARY = "host/radix_sort.cu"
_bound: set = set()


def sort_library(cp):
    """The loaded radix_sort library for the current device (argument types set), or None."""
    cc = cp.cuda.Device().compute_capability
    lib = load_library(LIBRARY, f"sm_{cc}")
    if lib is not None and id(lib) not in _bound:
        lib.cuzk_sort_temp_bytes.argtypes = [ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                                             ctypes.POINTER(ctypes.c_size_t)]
        lib.cuzk_sort_keys.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int,
                                       ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        lib.cuzk_sort_error.restype = ctypes.c_char_p
        _bound.add(id(lib))
    return lib


def _check(lib, err: int, what: str) -> None:
    if err:
        raise RuntimeError(f"radix sort ({what}): CUDA error {err}: {lib.cuzk_sort_error(err).decode()}")


def sort_high_bits(cp, keys, key_bits: int):
    """keys (cupy uint64, contiguous) sorted by bits 32 .. 32 + key_bits - 1; see the module
    docstring. The returned array may be keys itself or a new one."""
    if keys.dtype != np.uint64 or keys.ndim != 1 or not keys.flags.c_contiguous:
        raise ValueError("sort_high_bits: expected a contiguous 1-d uint64 cupy array")
    if not 1 <= key_bits <= 32:
        raise ValueError(f"sort_high_bits: key_bits {key_bits} outside 1..32")
    n = int(keys.shape[0])
    lib = sort_library(cp) if n > 1 else None
    if lib is None:
        keys.sort()
        return keys
    begin, end = 32, 32 + key_bits
    nbytes = ctypes.c_size_t(0)
    _check(lib, lib.cuzk_sort_temp_bytes(n, begin, end, ctypes.byref(nbytes)), "temporary size")
    temp = cp.empty(max(1, nbytes.value), dtype=cp.uint8)
    alt = cp.empty_like(keys)
    selector = ctypes.c_int(0)
    stream = cp.cuda.get_current_stream().ptr
    _check(lib, lib.cuzk_sort_keys(cp.cuda.Device().id, temp.data.ptr, nbytes.value, keys.data.ptr, alt.data.ptr,
                                   n, begin, end, stream, ctypes.byref(selector)), "sort")
    del temp
    return alt if selector.value else keys
