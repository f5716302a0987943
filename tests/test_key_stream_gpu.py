"""The streamed dev setup and the coded matrices on the GPU (issue 13 item 3), against the CPU,
bit for bit: setup scalars kept in VRAM and gathered there by density, fixed-base points in
chunks, straight into a bundle; a CodedCsr uploaded as it is gives the same a, b, c as the
CsrMatrix it came from. Run on a GPU machine: ``pytest -m gpu tests/test_key_stream_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest
from gpu import require_gpu

cp = require_gpu()

from cuzk_ray.circuits import porep  # noqa: E402
from cuzk_ray.cuda import spmv as cuda_spmv  # noqa: E402
from cuzk_ray.cuda.device import FIXED_BASE_TABLES  # noqa: E402
from cuzk_ray.formats.native import load_bundle  # noqa: E402
from cuzk_ray.groth16 import setup  # noqa: E402
from cuzk_ray.r1cs import CodedCsr  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape,constraints,chunk", [("default", 1 << 10, 1000), ("default", 1 << 12, None),
                                                    ("filecoin", 1 << 12, 1000), ("filecoin", 1 << 16, None)])
def test_streamed_gpu_setup_equals_cpu_setup(tmp_path, shape, constraints, chunk):
    """chunk None: one chunk per query, the gather and the fixed-base kernel back to back on two
    streams (the race fixed_base_mul_gpu's wait_event closes: a 2^12 key that did not verify)."""
    cs = porep.build_circuit(constraints, 4 if shape == "default" else 11, 0.05, 0, shape)
    want = setup.dev_setup(cs, 9)  # CPU scalars and CPU fixed-base
    path = setup.dev_setup_bundle(tmp_path / "k", cs, 9, backend="cuda", chunk=chunk)
    # the setup's device memory given back (a driver that made a key must not hold VRAM while
    # the prover actors load it): nothing cached in CuPy's pool, no fixed-base table kept
    assert cp.get_default_memory_pool().free_bytes() == 0
    assert len(FIXED_BASE_TABLES) == 0
    got, cs2 = load_bundle(path)
    for q in want.QUERIES + want.DENSITIES + ("beta_g1", "delta_g1"):
        a, b = getattr(want, q), getattr(got, q)
        assert (a is None and b is None) or np.array_equal(a, b), f"{q} ({shape}, {constraints})"
    assert np.array_equal(want.vk.ic, got.vk.ic)
    other = setup.dev_setup(cs, 10, backend="cuda")  # negative: another seed, other points
    assert not np.array_equal(other.h_query, got.h_query)
    assert isinstance(cs2.A, CodedCsr)


@pytest.mark.parametrize("shape", ["default", "filecoin"])
def test_coded_matrices_give_the_same_abc(shape):
    cs = porep.build_circuit(1 << 12, 4 if shape == "default" else 11, 0.05, 0, shape)
    w = porep.synthesize(1 << 12, 4 if shape == "default" else 11, 0.05, 0, 3, shape=shape)
    coded = type(cs)(cs.n_wires, cs.n_public, *(CodedCsr.from_csr(m) for m in (cs.A, cs.B, cs.C)), name=cs.name)
    plain = type(cs)(cs.n_wires, cs.n_public, *(CodedCsr.from_csr(m).to_csr() for m in (cs.A, cs.B, cs.C)),
                     name=cs.name)
    a = cuda_spmv.evaluate_abc(cuda_spmv.DeviceConstraintSystem(coded), w)
    b = cuda_spmv.evaluate_abc(cuda_spmv.DeviceConstraintSystem(plain), w)
    assert cp.array_equal(a, b)
    bad = w.copy()
    bad[cs.n_public + 1, 0] ^= 1  # negative: another witness, other a | b | c
    assert not cp.array_equal(cuda_spmv.evaluate_abc(cuda_spmv.DeviceConstraintSystem(coded), bad), a)
