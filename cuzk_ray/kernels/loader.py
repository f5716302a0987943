"""Compile the kernels in this directory with NVRTC (through CuPy) and memoize them per device.

Every ``.cu`` file is one module. The source is read from disk, prefixed with ``#line 1 "<path>"``
so compiler errors name the file, and compiled with this directory on the include path
(``#include "ff/curve.cuh"``) for the current device's compute capability. Modules and their
kernels are cached per (file, defines, device): a process compiles each module once per GPU
(CuPy also keeps a disk cache under ~/.cupy/kernel_cache, so later processes skip NVRTC).

Precompiled kernels: NVRTC takes ~2 minutes for msm.cu on a fresh machine, so a module can
instead be loaded from a cubin built ahead of time with nvcc (``python -m cuzk_ray.kernels.build``,
no GPU needed). Cubins live in ``$CUZK_CUBIN_DIR`` (default ~/.cache/cuzk-ray/cubin), named by a
hash of the module's own source, every header (.cuh), the options and the target, so a stale
cubin is never loaded and a change to one module (or to a test-only module, TEST_MODULES) does
not invalidate the others; a cubin the driver refuses is skipped with a warning and NVRTC
compiles instead.

Curves: every module is one source for every curve (``ff/curve.cuh`` and ``ec/groups.cuh`` pick
the fields and groups at compile time); ``CURVES`` maps a curve name to the defines that select
it, and a module is compiled (and cached, and precompiled) once per (module, curve). BLS12-381
is the default and its cubins keep their names and keys (``msm-sm_90-<hash>.cubin``); another
curve's carry its name (``msm-bn254-sm_90-<hash>.cubin``).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent
STD = "-std=c++17"
TEST_MODULES = ("ff_test.cu",)  # kernels only the tests use: built by kernels.build on request (--tests)
LIBRARIES = ("host/radix_sort.cu",)  # host-callable shared libraries (nvcc -shared; loaded with ctypes)
DEFAULT_CURVE = "bls12381"
# The defines that compile a module for a curve (ff/curve.cuh); BLS12-381 needs none, so its
# cubin keys are what they were before curves were a parameter.
CURVES = {"bls12381": (), "bn254": ("CUZK_CURVE_BN254=1",)}

log = logging.getLogger(__name__)

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


def cubin_dir() -> Path:
    return Path(os.environ.get("CUZK_CUBIN_DIR") or Path.home() / ".cache" / "cuzk-ray" / "cubin")


def curve_defines(curve: str) -> tuple:
    """The defines that select ``curve`` (CURVES); ValueError naming the known curves otherwise."""
    try:
        return CURVES[curve]
    except KeyError:
        raise ValueError(f"kernels: unknown curve {curve!r}; known: {sorted(CURVES)}") from None


def module_hash(name: str, arch: str, defines: tuple = (), curve: str = DEFAULT_CURVE) -> str:
    """Hash of the module name, its source, every header (a .cuh change reaches every module that
    may include it), the options (the curve's defines first) and the target: the key of a
    precompiled cubin. Other modules' sources are not in it (a module includes headers only), so
    editing one .cu (ff_test.cu, say) leaves the other modules' cubins valid."""
    defines = curve_defines(curve) + tuple(defines)
    h = hashlib.sha256(f"{name}\0{arch}\0{STD}\0{defines!r}\0".encode())
    own = KERNEL_DIR / name
    for path in sorted(p for p in KERNEL_DIR.rglob("*") if p.suffix == ".cuh" or p == own):
        h.update(str(path.relative_to(KERNEL_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def cubin_stem(name: str, arch: str, curve: str = DEFAULT_CURVE) -> str:
    """The part of a cubin's file name before its hash: module, curve (except BLS12-381's), target."""
    tag = "" if curve == DEFAULT_CURVE else f"-{curve}"
    return f"{Path(name).stem}{tag}-{arch}"


def cubin_path(name: str, arch: str, defines: tuple = (), curve: str = DEFAULT_CURVE) -> Path:
    return cubin_dir() / f"{cubin_stem(name, arch, curve)}-{module_hash(name, arch, defines, curve)}.cubin"


def library_path(name: str, arch: str) -> Path:
    """Where kernels.build puts the shared library built from kernels/<name> (LIBRARIES) for
    arch, keyed like a cubin (its source, every header, the target)."""
    return cubin_dir() / f"lib{Path(name).stem}-{arch}-{module_hash(name, arch)}.so"


def load_library(name: str, arch: str):
    """The ctypes.CDLL of a precompiled library (LIBRARIES), or None when it was not built (or
    does not load: the caller has a fallback, and the reason is logged once)."""
    import ctypes

    path = library_path(name, arch)
    key = ("lib", name, arch)
    with _lock:
        if key not in _modules:
            lib = None
            if path.is_file():
                try:
                    lib = ctypes.CDLL(str(path))
                except OSError as exc:
                    log.warning("precompiled %s not loaded (%s)", path, exc)
            else:
                log.warning("no precompiled %s: using the slower fallback (python -m cuzk_ray.kernels.build "
                            "makes it; needs nvcc)", path.name)
            _modules[key] = lib
        return _modules[key]


def _load_cubin(cupy, name: str, arch: str, defines: tuple, first_kernel: str, curve: str):
    path = cubin_path(name, arch, defines, curve)
    if not path.is_file():
        return None
    try:
        mod = cupy.RawModule(path=str(path))
        mod.get_function(first_kernel)
        return mod
    except (cupy.cuda.driver.CUDADriverError, OSError) as exc:  # e.g. a driver older than its nvcc
        log.warning("precompiled %s not loaded (%s); compiling with NVRTC", path, exc)
        return None


def _compile(cupy, name: str, defines: tuple, first_kernel: str, curve: str):
    global _explicit_arch_ok
    cc = cupy.cuda.Device().compute_capability  # e.g. "90"
    mod = _load_cubin(cupy, name, f"sm_{cc}", defines, first_kernel, curve)
    if mod is not None:
        return mod
    src = source(name)
    defines = curve_defines(curve) + defines
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


def get_kernel(module: str, kernel: str, defines: tuple = (), curve: str = DEFAULT_CURVE):
    """The RawKernel ``kernel`` of kernels/<module> compiled for ``curve`` (CURVES), once per
    (module, defines, curve, device)."""
    curve_defines(curve)  # an unknown curve fails here, naming the known ones
    cupy = require_cupy()
    dev = cupy.cuda.Device().id
    key = (module, tuple(defines), curve, dev, kernel)
    fn = _kernels.get(key)
    if fn is not None:
        return fn
    with _lock:
        mkey = key[:4]
        mod = _modules.get(mkey)
        if mod is None:
            mod = _modules[mkey] = _compile(cupy, module, tuple(defines), kernel, curve)
        fn = _kernels[key] = mod.get_function(kernel)
    return fn
