"""The cuda backend plugged into the prover (run on the GPU machine; skipped without a GPU):
proofs bit-identical to the CPU backend's for the same r, s, and the Ray engine with GpuProver."""

import numpy as np
import pytest

from cuzk_ray.backends import cuda_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA GPU")]


@pytest.fixture(scope="module")
def backends():
    from cuzk_ray.backends.cpu import CpuBackend
    from cuzk_ray.backends.cuda import CudaBackend

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
    from cuzk_ray.backends import cuda as gpu_mod
    from cuzk_ray.circuits.porep import build_circuit
    from cuzk_ray.groth16.setup import dev_setup

    cs = build_circuit(64, 1)
    pk = dev_setup(cs, seed=1)
    monkeypatch.setattr(gpu_mod, "VRAM_MARGIN", 1 << 50)
    with pytest.raises(MemoryError, match=r"GPU memory: the key.s queries \(G1 and G2\) need"):
        gpu_mod.CudaBackend().load_key(pk)


def test_msms_in_pieces_give_the_same_proof(backends, monkeypatch):
    """An MSM cut into pieces (a card whose free VRAM cannot hold its scratch: the 32 GiB PoRep on
    an 80 GB H100) gives the CPU backend's proof bit for bit: pieces forced by max_msm_piece (the
    last one short), and pieces chosen by piece_len when the scratch of more than 3000 scalars is
    made not to fit. The tampered twin: the proof fails with another public input."""
    from cuzk_ray.backends import cuda as gpu_mod
    from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize
    from cuzk_ray.groth16.prover import prove
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify

    cpu, _gpu = backends
    cs = build_circuit(1 << 14, 7)
    pk = dev_setup(cs, seed=14)
    w = synthesize(1 << 14, 7, seed=4)
    want = prove(pk, cs, w, 321, 654, cpu)
    msm = gpu_mod.cuda_msm
    seen = []
    real_parts = msm.msm_parts

    def record(g, bases, *a, **k):
        seen.append(bases.n)
        return real_parts(g, bases, *a, **k)

    monkeypatch.setattr(msm, "msm_parts", record)

    forced = gpu_mod.CudaBackend()
    forced.max_msm_piece = 5000
    got = prove(pk, cs, w, 321, 654, forced)
    assert all(np.array_equal(getattr(want, k), getattr(got, k)) for k in "abc")
    assert max(seen) == 5000 and any(n < 5000 for n in seen) and len(pk.h_query) > 5000

    seen.clear()
    real_scratch = msm.scratch_bytes
    monkeypatch.setattr(msm, "MIN_PIECE", 1)
    monkeypatch.setattr(msm, "scratch_bytes", lambda n, accumulate=None: real_scratch(n) if n <= 3000 else 1 << 60)
    got = prove(pk, cs, w, 321, 654, gpu_mod.CudaBackend())
    assert all(np.array_equal(getattr(want, k), getattr(got, k)) for k in "abc")
    assert max(seen) <= 3000 and len(seen) > 5
    pub = public_inputs(w, 7)
    assert verify(pk.vk, pub, got)
    assert not verify(pk.vk, [pub[0] + 1] + pub[1:], got)


def test_msm_without_room_for_its_scratch_names_the_shortfall(backends, monkeypatch):
    from cuzk_ray.backends import cuda as gpu_mod
    from cuzk_ray.circuits.porep import build_circuit
    from cuzk_ray.groth16.setup import dev_setup

    _cpu, gpu = backends
    pk = dev_setup(build_circuit(64, 1), seed=2)
    key = gpu.load_key(pk)
    monkeypatch.setattr(gpu_mod, "VRAM_MARGIN", 1 << 50)
    scalars = np.zeros((len(pk.h_query), 4), dtype=np.uint64)
    with pytest.raises(MemoryError, match=r"^GPU memory: an MSM of \d+ scalars needs [\d.]+ GiB of scratch even in "
                                          r"pieces of \d+, 0\.00 GiB free$"):
        gpu.msm_g1(key, "h_query", scalars)


@pytest.mark.ray
def test_engine_with_gpu_prover(tmp_path):
    import ray

    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engines import ProvingEngine
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
    # the device time by section: every prover stage that holds the device, summing to "gpu"
    for r in batch.results:
        sections = {k: v for k, v in r.times.items() if k.startswith("gpu.")}
        assert {"gpu.h", "gpu.msm_a", "gpu.msm_b_g1", "gpu.msm_b_g2", "gpu.msm_l", "gpu.msm_h"} <= set(sections)
        assert all(v > 0 for v in sections.values())
        assert sum(sections.values()) == pytest.approx(r.times["gpu"])


def test_stage_uploads_once_and_gpu_time_is_counted_per_context(backends):
    """stage(): the witness on the device through pinned memory, bit for bit; a device array is
    passed through. account(): kernels submitted to the backend's threads count towards the
    context that submitted them, and only that one."""
    cp = pytest.importorskip("cupy")
    _cpu, gpu = backends
    rng = np.random.default_rng(5)
    w = rng.integers(0, 2**63, size=(4099, 4), dtype=np.uint64)
    w[:, 3] &= (1 << 60) - 1  # < r
    dev = gpu.stage(w)
    assert isinstance(dev.limbs, cp.ndarray) and np.array_equal(dev.limbs.get(), w)  # an FrVector on the device
    assert gpu.stage(dev) is dev
    with gpu.account() as mine:
        h = gpu.submit(gpu.compute_h, w[:4096], w[1:4097], w[2:4098]).result()
    with gpu.account() as other:
        pass
    assert mine.seconds > 0 and other.seconds == 0
    assert np.array_equal(np.asarray(h), np.asarray(gpu.compute_h(w[:4096], w[1:4097], w[2:4098])))


@pytest.mark.ray
@pytest.mark.parametrize("concurrency", [1, 2])
def test_one_gpu_actor_overlaps_partitions_when_concurrent(tmp_path, concurrency):
    """gpu_concurrency=2 on a real GPU: one actor works on two partitions at once (their proving
    spans overlap), every proof verifies, each partition's GPU seconds are its own (their sum is
    at most the wall time of the batch: one device); with 1 they never overlap (the twin)."""
    import ray

    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engines import ProvingEngine
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify

    circuit = PorepCircuit(constraints=1 << 16, partitions=6)
    cs = circuit.build()
    pk = dev_setup(cs, 2, backend="cuda")
    ray.init(address="local", num_cpus=4, num_gpus=1, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        engine = ProvingEngine(pk, cs, circuit, backend="cuda", pw=6, threads=4, gpu_concurrency=concurrency)
        assert len(engine.provers) == 1
        batch = engine.run(1, seed=3)
        engine.shutdown()
    finally:
        ray.shutdown()
    assert not batch.failed and len(batch.results) == 6
    assert all(verify(pk.vk, r.public, r.proof) for r in batch.results)
    assert all(r.times["gpu"] > 0 and "upload" in r.times for r in batch.results)
    assert sum(r.times["gpu"] for r in batch.results) <= batch.wall_s
    spans = sorted((min(a for st, a, _ in r.spans if st != "synthesis"),
                    max(b for st, _, b in r.spans if st != "synthesis"))
                   for r in batch.results)
    overlapping = any(b[0] < a[1] for a, b in zip(spans, spans[1:]))
    assert overlapping == (concurrency == 2), spans


def test_a_partition_is_range_checked_once_raw_and_never_as_an_fr_vector(backends, monkeypatch):
    """The cuda path checks a raw witness once (stage) and an FrVector witness not at all: every
    later kernel (spmv, the five MSMs) takes the checked FrVector as it is. Counted at the one
    device check (cuda.device.below_r_kernel)."""
    from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize
    from cuzk_ray.cuda import device
    from cuzk_ray.field import FrVector
    from cuzk_ray.groth16.prover import prove
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify

    _cpu, gpu = backends
    cs = build_circuit(1024, 4)
    pk = dev_setup(cs, seed=11)
    w = synthesize(1024, 4, seed=5)
    gpu.load_key(pk)
    gpu.load_cs(cs)  # the matrices' coefficients are checked on upload, once per process
    calls = []
    inner = device.below_r_kernel
    monkeypatch.setattr(device, "below_r_kernel", lambda cp_: calls.append(1) or inner(cp_))
    p_raw = prove(pk, cs, w, 12, 34, gpu)
    assert len(calls) == 1
    calls.clear()
    p_vec = prove(pk, cs, FrVector(w), 12, 34, gpu)
    assert calls == []
    for k in "abc":
        assert np.array_equal(getattr(p_raw, k), getattr(p_vec, k)), k
    assert verify(pk.vk, public_inputs(w, 4), p_vec)
    bad = w.copy()  # negative: a raw witness >= r is still refused, at the one check
    bad[7] = np.uint64(2**64 - 1)
    with pytest.raises(ValueError, match="element 7 is not a reduced Fr value"):
        prove(pk, cs, bad, 12, 34, gpu)


def test_one_prover_worker_holds_two_keys_and_unload_frees_the_vram():
    """The pool's prover (issue 28): one ProverWorker on the cuda backend proves partitions of two
    keys (each verified, each refused with the other's key); evicting one gives its VRAM back
    (queries, tables, matrices) and the other still proves."""
    from cuzk_ray.circuits import PorepCircuit, synthesize
    from cuzk_ray.engines.worker import ProverWorker
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify
    from cuzk_ray.partition import Partition

    worker = ProverWorker("cuda", threads=2)
    cp = worker.backend.cp
    keys = {}
    for name, c in (("a", 1 << 12), ("b", 1 << 14)):
        circuit = PorepCircuit(constraints=c, partitions=2)
        cs = circuit.build()
        keys[name] = (circuit, dev_setup(cs, seed=c), cs)

    def used() -> int:
        cp.get_default_memory_pool().free_all_blocks()
        free, total = cp.cuda.runtime.memGetInfo()
        return total - free

    base = used()
    for name, (_circuit, pk, cs) in keys.items():
        worker.load(name, pk, cs)
    loaded = used()
    assert list(worker.keys) == ["a", "b"] and loaded > base
    for name, (circuit, pk, _cs) in keys.items():
        w = synthesize(circuit.synth_spec(5, 0, 1))
        out = worker.prove(name, Partition("p", 1, circuit.circuit_id, w), 11, 13)
        other = keys["b" if name == "a" else "a"][1]
        assert verify(pk.vk, out.public, out.proof) and not verify(other.vk, out.public, out.proof)
    before = used()
    assert worker.evict("b") and not worker.evict("b") and list(worker.keys) == ["a"]
    freed = before - used()
    circuit_b, pk_b, _cs = keys["b"]
    assert freed >= pk_b.h_query.nbytes, (freed, pk_b.h_query.nbytes)  # at least its H bases went
    with pytest.raises(KeyError, match="not resident"):
        worker.prove("b", Partition("p", 0, circuit_b.circuit_id, synthesize(circuit_b.synth_spec(5, 0, 0))))
    circuit_a, pk_a, _cs = keys["a"]
    out = worker.prove("a", Partition("p", 0, circuit_a.circuit_id, synthesize(circuit_a.synth_spec(6, 0, 0))))
    assert verify(pk_a.vk, out.public, out.proof)


def test_the_room_for_a_key_is_the_same_with_or_without_keys_resident():
    """What the service fits a key against (engines.admission.vram_room of the provers' readings,
    here the local executor's: free + this process's CuPy pool): about the same before a key is
    loaded, with it resident and after it is evicted, while the free memory alone drops by the
    key's VRAM. So a key is fitted as if alone on the card, whatever else is resident."""
    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engines import Engine, EngineSettings
    from cuzk_ray.groth16.setup import dev_setup

    circuit = PorepCircuit(constraints=1 << 16, partitions=2)
    cs = circuit.build()
    pk = dev_setup(cs, 3)
    engine = Engine(EngineSettings(engine="local", backend="cuda"))
    try:
        (before,) = engine.executor.device_rooms()
        engine.add_key("k", pk, cs, circuit)
        (loaded,) = engine.executor.device_rooms()
        engine.remove_key("k")
        (evicted,) = engine.executor.device_rooms()
    finally:
        engine.shutdown()
    room = [r.free + r.pool for r in (before, loaded, evicted)]
    assert max(room) - min(room) <= 64 << 20, (before, loaded, evicted)
    assert before.free - loaded.free >= pk.h_query.nbytes, (before, loaded)  # the key took VRAM


@pytest.mark.ray
def test_gpu_provers_read_their_device_for_the_service(tmp_path):
    """GpuProver.device_room through the Ray executor: one reading per prover, two provers on one
    card named as one device (vram_room counts both pools once each against one free reading),
    and the pool's room, with the key resident, no larger after partitions were proved (their
    blocks cached in the provers' pools count as theirs) and lower by less than the VRAM margin:
    what proving leaves outside the pools is each CUDA context's own, which cannot be given back
    (on an H100, 2026-12-07: 540 MiB for two provers, ~270 MiB each once their MSM kernels had
    run; most likely the kernels' local memory, not measured), and the margin (1 GiB) covers it."""
    import ray

    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engines import ProvingEngine
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.preflight import VRAM_MARGIN

    circuit = PorepCircuit(constraints=1 << 14, partitions=4)
    cs = circuit.build()
    pk = dev_setup(cs, 4)
    ray.init(address="local", num_cpus=4, num_gpus=1, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        engine = ProvingEngine(pk, cs, circuit, backend="cuda", pw=3, gpu_workers_per_device=2)
        readings = engine.executor.device_rooms()
        room = engine.device_room()
        batch = engine.run(1, seed=1)
        after = engine.device_room()
        engine.shutdown()
    finally:
        ray.shutdown()
    assert not batch.failed
    assert len(readings) == 2 and len({r.device for r in readings}) == 1, readings
    assert all(r.pool > 0 for r in readings)
    assert room == min(r.free for r in readings) + sum(r.pool for r in readings)
    assert room - VRAM_MARGIN < after <= room, (room, after)
