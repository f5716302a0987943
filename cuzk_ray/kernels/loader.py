"""Compile the kernels in this directory with NVRTC (through CuPy) and memoize them per device.

Every ``.cu`` file is one module. The source is read from disk, prefixed with ``#line 1 "<path>"``
so compiler errors name the file, and compiled with this directory on the include path
(``#include "ff/bls12_381.cuh"``) for the current device's compute capability. Modules and their
kernels are cached per (file, defines, device): a process compiles each module once per GPU
(CuPy also keeps a disk cache under ~/.cupy/kernel_cache, so later processes skip NVRTC).
"""

from __future__ import annotations

import threading
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent
STD = "-std=c++17"

_lock = threading.Lock()
_modules: dict = {}
_kernels: dict = {}
# CuPy appends its own -arch (from the same compute capability) to NVRTC options; if an NVRTC
# version rejects a second -arch we drop ours and remember it (see _compile).
_explicit_arch_ok = True


def require_cupy():
    """Import CuPy and check that a GPU is visible; raise RuntimeError with what to do if not."""
    try:
        import cupy
    except ImportError as exc:
        raise RuntimeError(
            "The CUDA kernels need CuPy: install the wheel matching your CUDA driver "
            "(pip install cupy-cuda13x, or cupy-cuda12x), or use the cpu backend."
        ) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError when no driver is present
        raise RuntimeError(
            f"CuPy is installed but CUDA reports no usable GPU ({exc}); run on a machine with an "
            "NVIDIA GPU and driver, or use the cpu backend."
        ) from exc
    if count == 0:
        raise RuntimeError("CuPy found no CUDA GPU; run on a machine with an NVIDIA GPU, or use the cpu backend.")
    return cupy


def source(name: str) -> str:
    """The text of kernels/<name> with a #line directive naming the file."""
    path = KERNEL_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"no kernel source {path}")
    return f'#line 1 "{path}"\n' + path.read_text()


def options(arch: str | None, defines: tuple = ()) -> tuple:
    opts = [STD, f"-I{KERNEL_DIR}"]
    if arch:
        opts.append(f"-arch={arch}")
    opts += [f"-D{d}" for d in defines]
    return tuple(opts)


def _compile(cupy, name: str, defines: tuple, first_kernel: str):
    global _explicit_arch_ok
    cc = cupy.cuda.Device().compute_capability  # e.g. "90"
    src = source(name)
    if _explicit_arch_ok:
        try:
            mod = cupy.RawModule(code=src, options=options(f"sm_{cc}", defines))
            mod.get_function(first_kernel)  # forces compilation now, so errors surface here
            return mod
        except cupy.cuda.compiler.CompileException as exc:
            if "arch" not in str(exc).lower() and "architecture" not in str(exc).lower():
                raise
            _explicit_arch_ok = False
    mod = cupy.RawModule(code=src, options=options(None, defines))
    mod.get_function(first_kernel)
    return mod


def get_kernel(module: str, kernel: str, defines: tuple = ()):
    """The RawKernel ``kernel`` of kernels/<module>, compiled once per (module, defines, device)."""
    cupy = require_cupy()
    dev = cupy.cuda.Device().id
    key = (module, tuple(defines), dev, kernel)
    fn = _kernels.get(key)
    if fn is not None:
        return fn
    with _lock:
        mkey = key[:3]
        mod = _modules.get(mkey)
        if mod is None:
            mod = _modules[mkey] = _compile(cupy, module, tuple(defines), kernel)
        fn = _kernels[key] = mod.get_function(kernel)
    return fn
