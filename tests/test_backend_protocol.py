"""Both backends satisfy the Backend protocol (backends/base.py), and the CPU backend's no-ops
do nothing: stage gives its input back, account yields None, vram_peak is None."""

from __future__ import annotations

import numpy as np
import pytest

from cuzk_ray.backends import cuda_available, cuda_backend_class
from cuzk_ray.backends.base import Backend, DeviceTime
from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.field import FrVector, fr_to_limbs

METHODS = ("warm_up", "load_key", "load_cs", "unload", "stage", "account", "compute_h", "compute_h_from_witness",
           "gather", "msm_g1", "msm_g2", "submit")


def test_cpu_backend_is_a_backend_and_its_device_methods_are_no_ops():
    be = CpuBackend(threads=1)
    assert isinstance(be, Backend)
    assert be.name == "cpu" and be.split_g2 is True
    w = fr_to_limbs([1, 2, 3])
    assert be.stage(w) is w
    v = FrVector(w)
    assert be.stage(v) is v
    ints = [1, 2, 3]
    assert be.stage(ints) is ints
    with be.account() as box:
        assert box is None
    assert be.vram_peak is None
    assert be.warm_up(None) is None


def test_the_cuda_backend_class_has_every_protocol_member():
    """Without a GPU the class is still importable and structurally a Backend (a class check:
    instances need a GPU)."""
    cls = cuda_backend_class()
    assert cls is not None and cls.name == "cuda" and cls.split_g2 is False
    for m in METHODS:
        assert callable(getattr(cls, m)), m
    assert isinstance(cls.vram_peak, property)
    # negative: something that lacks a member is not a Backend
    class Partial:
        name, split_g2 = "x", False

        def stage(self, w):
            return w

    assert not isinstance(Partial(), Backend)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA GPU")
def test_cuda_backend_instance_is_a_backend():
    be = cuda_backend_class()()
    assert isinstance(be, Backend)
    with be.account() as box:
        assert isinstance(box, DeviceTime) and box.seconds == 0.0
    staged = be.stage(fr_to_limbs([1, 2, 3]))
    assert isinstance(staged, FrVector) and staged.on_device
    assert be.stage(staged) is staged
    assert np.array_equal(staged.limbs.get(), fr_to_limbs([1, 2, 3]))
