"""Compact witnesses expanded on the device (cuda/witness.py, kernels/witness.cu; run on the GPU
machine, skipped without a GPU): bit for bit the host expansion across sizes and edge cases, the
cuda backend's stage() of a compact partition, a proof from one equal to the CPU backend's."""

import numpy as np
import pytest
from test_witness import random_witness

from cuzk_ray.backends import cuda_available
from cuzk_ray.field import R_MOD, fr_to_limbs
from cuzk_ray.witness import CompactWitness, compact

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA GPU")]

SIZES = [1, 7, 8, 9, 31, 32, 33, (1 << 10) + 3, 1 << 20]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("full_share", [0.0, 0.03, 0.5, 1.0])
def test_device_expansion_equals_host_expansion(rng, n, full_share):
    import cupy as cp

    from cuzk_ray.cuda.witness import expand_compact

    w = random_witness(np.random.default_rng(rng.seed_value), n, full_share)
    c = compact(w)
    dev = expand_compact(c)
    assert isinstance(dev, cp.ndarray) and dev.shape == (n, 4) and dev.dtype == cp.uint64
    assert np.array_equal(cp.asnumpy(dev), c.expand().limbs)
    assert np.array_equal(cp.asnumpy(dev), w)


def test_device_expansion_edge_values_and_its_negative_twin():
    import cupy as cp

    from cuzk_ray.cuda.witness import expand, expand_compact, padded_bitmap

    vals = [1, 0, 2, R_MOD - 1, 1, 2**64, 0, R_MOD - 2, 1]  # wire 0 is 1, as in every witness
    w = fr_to_limbs(vals)
    c = compact(w)
    assert np.array_equal(cp.asnumpy(expand_compact(c)), w)
    ones = fr_to_limbs([1] * 40)
    assert np.array_equal(cp.asnumpy(expand_compact(compact(ones))), ones)  # no full wires at all
    values = c.values.copy()
    values[1, 3] ^= 1  # the twin: a changed value shows in the device output
    changed = CompactWitness(c.n_wires, c.full, c.bits, values)
    assert not np.array_equal(cp.asnumpy(expand_compact(changed)), w)
    full = cp.asarray(padded_bitmap(c.full, c.n_wires)).view(cp.uint32)
    bits = cp.asarray(padded_bitmap(c.bits, c.n_wires)).view(cp.uint32)
    with pytest.raises(ValueError, match="the full bitmap marks 4 wires, values has 3 rows"):
        expand(c.n_wires, full, bits, cp.asarray(c.values[:3]))
    with pytest.raises(ValueError, match=r"full must be a C-contiguous cupy uint32\[1\]"):
        expand(c.n_wires, cp.asarray(padded_bitmap(c.full, c.n_wires)), bits, cp.asarray(c.values))


@pytest.fixture(scope="module")
def cuda_backend():
    from cuzk_ray.backends.cuda import CudaBackend

    return CudaBackend()


@pytest.mark.parametrize("n", [1, 9, (1 << 10) + 3, 1 << 20])
def test_backend_stage_of_a_compact_witness_read_from_arrow(cuda_backend, rng, n):
    import cupy as cp

    from cuzk_ray.partition import Partition, from_record_batch, to_record_batch

    w = random_witness(np.random.default_rng(rng.seed_value), n, 0.05)
    part = from_record_batch(to_record_batch(Partition("p", 0, "c", compact(w))))  # read-only views
    staged = cuda_backend.stage(part.witness)
    assert staged.on_device and np.array_equal(cp.asnumpy(staged.limbs), w)
    full = cuda_backend.stage(part.witness.expand())  # the full form still uploads as before
    assert np.array_equal(cp.asnumpy(full.limbs), w)


def test_backend_stage_of_a_filecoin_partition_equals_its_expansion(cuda_backend, rng):
    import cupy as cp

    from cuzk_ray.circuits import PorepCircuit, synthesize
    from cuzk_ray.circuits.porep import FilecoinLayout, expand_filecoin, synthesize_filecoin_parts

    c = PorepCircuit(constraints=1 << 16, public=327, shape="filecoin")
    w = synthesize(c.synth_spec(rng.seed_value, 0, 3))
    want = expand_filecoin(FilecoinLayout.make(1 << 16, 327),
                           synthesize_filecoin_parts(1 << 16, 327, seed=rng.seed_value, partition=3))
    assert np.array_equal(cp.asnumpy(cuda_backend.stage(w).limbs), want)


def test_gpu_proof_of_a_compact_partition_equals_the_cpu_proof():
    from cuzk_ray.circuits import PorepCircuit, synthesize
    from cuzk_ray.engines.worker import PartitionProver
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify
    from cuzk_ray.partition import Partition

    circuit = PorepCircuit(constraints=1024, public=4, shape="filecoin")
    cs = circuit.build()
    pk = dev_setup(cs, 3)
    part = Partition("proof-000", 0, circuit.circuit_id, synthesize(circuit.synth_spec(7, 0, 0)))
    gpu = PartitionProver("cuda", pk, cs).prove(part, 21, 34)
    cpu = PartitionProver("cpu", pk, cs).prove(part, 21, 34)
    for k in "abc":
        assert np.array_equal(getattr(gpu.proof, k), getattr(cpu.proof, k)), k
    assert gpu.public == cpu.public and verify(pk.vk, gpu.public, gpu.proof)
    assert not verify(pk.vk, [gpu.public[0] + 1] + gpu.public[1:], gpu.proof)
