"""Compute backends with one interface (base.Backend): ``cpu`` (cpu.py: numpy, numba,
py-arkworks) and ``cuda`` (cuda.py: the device layer cuzk_ray.cuda).

Chosen by a config string; CuPy is imported only when the cuda backend is asked for.
"""

from __future__ import annotations


def cuda_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def visible_gpus() -> int:
    """CUDA devices CuPy sees (0 without CuPy or a driver)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def resolve_backend_name(name: str, key: str = "backend") -> str:
    """'cpu' | 'cuda' | 'auto' -> the backend that will run ('auto' takes cuda when usable);
    ``key`` names the setting in the error (backend, setup_backend)."""
    if name == "auto":
        return "cuda" if cuda_available() and cuda_backend_class() is not None else "cpu"
    if name not in ("cpu", "cuda"):
        raise ValueError(f"{key}={name!r} is not one of cpu, cuda, auto")
    return name


def cuda_backend_class():
    try:
        from .cuda import CudaBackend
    except ImportError:
        return None
    return CudaBackend


# The curves each backend proves over (cuzk_ray.curves names). cuda: the kernels are compiled per
# curve (kernels/loader.py CURVES), the backend takes the groups, domain and r from the key
# (issue 31); a BN254 key proves in snarkjs's QAP only (groth16.prover.check_backend_qap).
BACKEND_CURVES = {"cpu": ("bls12381", "bn254"), "cuda": ("bls12381", "bn254")}


def check_backend_curve(backend_name: str, curve_name: str) -> None:
    """ValueError in one line unless the backend proves over the curve."""
    have = BACKEND_CURVES.get(backend_name, ())
    if curve_name not in have:
        others = [b for b, curves in BACKEND_CURVES.items() if curve_name in curves]
        where = f"a {curve_name} key proves on backend={' or '.join(others)}" if others else "no backend has them"
        raise ValueError(f"backend={backend_name}: no {curve_name} kernels ({where}); this backend proves over "
                         f"{', '.join(have) or 'no curve'}")


def make_backend(name: str, **kwargs):
    """Instantiate the named backend. A requested GPU that is missing fails with what to do."""
    name = resolve_backend_name(name)
    if name == "cpu":
        from .cpu import CpuBackend

        return CpuBackend(**kwargs)
    cls = cuda_backend_class()
    if cls is None:
        raise RuntimeError("backend=cuda: the CUDA proving backend is not available in this build; "
                           "use backend=cpu (or backend=auto)")
    if not cuda_available():
        raise RuntimeError("backend=cuda: no CUDA GPU visible to CuPy; install cupy-cuda12x or "
                           "cupy-cuda13x (pip install -e '.[cuda13]') on a machine with a GPU, or use backend=cpu")
    return cls(**kwargs)
