"""The cuda backend plugged into the prover (run on the GPU machine; skipped without a GPU):
proofs bit-identical to the CPU backend's for the same r, s, and the Ray engine with GpuProver."""

import numpy as np
import pytest

from cuzk_ray.backends import cuda_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA GPU")]


@pytest.fixture(scope="module")
def backends():
    from cuzk_ray.backends.cpu import CpuBackend
    from cuzk_ray.backends.gpu import CudaBackend

    return CpuBackend(), CudaBackend()


@pytest.mark.parametrize("constraints,public", [(64, 1), (1024, 4), (1 << 14, 7)])
def test_gpu_proof_equals_cpu_proof(backends, constraints, public):
    from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize
    from cuzk_ray.groth16.prover import prove
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify

    cpu, gpu = backends
    cs = build_circuit(constraints, public)
    pk = dev_setup(cs, seed=constraints)
    w = synthesize(constraints, public, seed=3)
    p_cpu = prove(pk, cs, w, 1234, 5678, cpu)
    p_gpu = prove(pk, cs, w, 1234, 5678, gpu)
    for k in "abc":
        assert np.array_equal(getattr(p_cpu, k), getattr(p_gpu, k)), k
    pub = public_inputs(w, public)
    assert verify(pk.vk, pub, p_gpu)
    assert not verify(pk.vk, [(pub[0] + 1)] + pub[1:], p_gpu)
    assert gpu.gpu_seconds > 0


def test_vram_check_names_the_shortfall(backends, monkeypatch):
    from cuzk_ray.backends import gpu as gpu_mod
    from cuzk_ray.circuits.porep import build_circuit
    from cuzk_ray.groth16.setup import dev_setup

    cs = build_circuit(64, 1)
    pk = dev_setup(cs, seed=1)
    monkeypatch.setattr(gpu_mod, "VRAM_MARGIN", 1 << 50)
    with pytest.raises(MemoryError, match=r"GPU memory: the key.s queries \(G1 and G2\) need"):
        gpu_mod.CudaBackend().load_key(pk)


@pytest.mark.ray
def test_engine_with_gpu_prover(tmp_path):
    import ray

    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engine import ProvingEngine
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify

    circuit = PorepCircuit(constraints=4096, partitions=4)
    cs = circuit.build()
    pk = dev_setup(cs, 2)
    ray.init(address="local", num_cpus=4, num_gpus=1, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        engine = ProvingEngine(pk, cs, circuit, backend="cuda", pw=3, gpu_workers_per_device=2)
        assert len(engine.provers) == 2 and {p["backend"] for p in engine.prover_info} == {"cuda"}
        batch = engine.run(2, seed=1)
        engine.shutdown()
    finally:
        ray.shutdown()
    assert not batch.failed and len(batch.results) == 8
    assert all(verify(pk.vk, r.public, r.proof) for r in batch.results)
    assert all(r.times["gpu"] > 0 for r in batch.results)
