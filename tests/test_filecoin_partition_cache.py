"""The partition cache (filecoin/circuit/partition_cache.py) and the dev key streamed into .params
(filecoin/params_sink.py), at 2 KiB on the CPU.

One blank synthesis yields the recording and the witness tape: both must equal what the separate
paths make (partition_record.synthesize_blocks, fast_witness.witness_tape), the cache must be
reused without synthesizing again, and a cache file altered on disk must be refused in one line.
c2's fast partition witness must equal ``reference_witness`` bit for bit on a sealed 2 KiB C1 and
satisfy the recorded matrices; a tampered C1's must not. The streamed .params must be byte for byte
what dev_setup + write_params make; ``check_room`` refuses a disk or host that is too small.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import copy_partition_cache
from test_filecoin_stacked_circuit import sealed_2k, tampered_label  # noqa: F401

from cuzk_ray.circuits.filecoin import split_c1, synthesize_partition, with_share
from cuzk_ray.filecoin import c2, registry
from cuzk_ray.filecoin.c1 import write_c1
from cuzk_ray.filecoin.circuit import partition_cache, replay
from cuzk_ray.filecoin.circuit.fast_witness import witness_tape
from cuzk_ray.filecoin.circuit.partition_record import assemble, synthesize_blocks
from cuzk_ray.filecoin.circuit.stacked import tree_shape
from cuzk_ray.filecoin.params import BellpersonVerifyingKey, write_params, write_vk
from cuzk_ray.filecoin.params_sink import ParamsSink, check_room, params_layout, write_dev_params
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.locks import waiting_lock
from cuzk_ray.r1cs import UnsatisfiedConstraint
from cuzk_ray.witness import compact

REPO = Path(__file__).resolve().parent.parent
PROOF_2K = registry.registered_seal_proof("StackedDrg2KiBV1_1")
CONFIG_2K = PROOF_2K.config


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory, partition_cache_2k):
    """This module's copy of the session's 2 KiB partition cache (conftest.partition_cache_2k: one
    blank synthesis by c2.circuit_setup on an empty dir): the tests below alter its files."""
    return copy_partition_cache(partition_cache_2k, tmp_path_factory.mktemp("fc-cache"))


@pytest.fixture(scope="module")
def setup_2k(cache_dir):
    """c2's setup of the real 2 KiB circuit, read from the partition cache (every digest checked)."""
    return c2.circuit_setup(PROOF_2K, cache_dir, "stacked")


def test_cache_is_made_once_then_reused(setup_2k, cache_dir, monkeypatch):
    paths = partition_cache.cache_paths(cache_dir, CONFIG_2K)
    assert paths.recording.is_dir() and paths.tape.is_file() and paths.manifest.is_file()
    assert (paths.plan / "plan.json").is_file()

    def no_synthesis(config):
        raise AssertionError("the cached partition was synthesized again")

    monkeypatch.setattr(partition_cache, "synthesize_partition", no_synthesis)
    again = partition_cache.cached_partition(cache_dir, CONFIG_2K)
    assert again.recording.shape == setup_2k.recording.shape
    assert again.tape.layout == setup_2k.tape.layout
    # the twin: without the manifest the cache is incomplete and is synthesized again
    paths.manifest.rename(paths.manifest.with_suffix(".bak"))
    try:
        with pytest.raises(AssertionError, match="synthesized again"):
            partition_cache.cached_partition(cache_dir, CONFIG_2K)
    finally:
        paths.manifest.with_suffix(".bak").rename(paths.manifest)


def test_cache_equals_the_separate_recording_and_tape(setup_2k):
    shape = tree_shape(CONFIG_2K)
    blocks = synthesize_blocks(shape, CONFIG_2K.shape.layers, CONFIG_2K.challenges_per_partition, "separate")
    separate = assemble(blocks).cs
    cached = setup_2k.recording.cs
    for m in ("A", "B", "C"):
        one, two = getattr(cached, m), getattr(separate, m)
        assert np.array_equal(one.indptr, two.indptr) and np.array_equal(one.entries, two.entries)
        assert np.array_equal(one.table, two.table)
    tape, cached_tape = witness_tape(CONFIG_2K), setup_2k.tape
    assert tape.layout == cached_tape.layout and np.array_equal(tape.consts, cached_tape.consts)
    assert all(np.array_equal(tape.arrays[k], cached_tape.arrays[k]) for k in tape.arrays)
    assert cached.n_wires == setup_2k.recording.shape.num_inputs + setup_2k.recording.shape.num_aux


def test_fast_partition_witness_is_the_reference_and_satisfies_the_recording(setup_2k, sealed_2k):  # noqa: F811
    _, c1 = sealed_2k
    fast = c2.partition_witness(setup_2k, c1, 0)
    reference = compact(c2.reference_witness(setup_2k, c1, 0))
    assert fast == reference and fast.n_wires == setup_2k.recording.cs.n_wires
    bound = c2.full_wires(setup_2k)  # what admission sizes a partition by
    assert fast.n_full <= bound < fast.n_wires // 10, (fast.n_full, bound)
    setup_2k.recording.cs.check(fast.expand())
    bad_c1 = dataclasses.replace(c1, vanilla_proofs=((tampered_label(c1), c1.vanilla_proofs[0][1]),))
    bad = c2.partition_witness(setup_2k, bad_c1, 0)
    assert bad != reference
    with pytest.raises(UnsatisfiedConstraint, match="is not satisfied"):
        setup_2k.recording.cs.check(bad.expand())


def test_the_engine_synthesis_task_makes_the_fast_witness(setup_2k, sealed_2k, cache_dir, tmp_path):  # noqa: F811
    """What the Ray synthesis task runs (circuits.filecoin.synthesize_partition): the tape from the
    cache, replayed with the C1 read from its file; a tampered C1 file gives another witness."""
    _, c1 = sealed_2k
    write_c1(c1, tmp_path / "c1.json")
    spec = {"kind": "filecoin", "c1": str(tmp_path / "c1.json"), "proof_type": PROOF_2K.name, "variant": "stacked",
            "cache_dir": str(cache_dir), "proof": 0, "partition": 0}
    assert synthesize_partition(spec) == c2.partition_witness(setup_2k, c1, 0)
    bad_c1 = dataclasses.replace(c1, vanilla_proofs=((tampered_label(c1), c1.vanilla_proofs[0][1]),))
    write_c1(bad_c1, tmp_path / "bad.json")
    assert synthesize_partition({**spec, "c1": str(tmp_path / "bad.json")}) != c2.partition_witness(setup_2k, c1, 0)


def test_a_partition_handed_its_share_is_synthesized_without_the_file(setup_2k, sealed_2k, cache_dir,  # noqa: F811
                                                                     tmp_path):
    """What the Ray engine's synthesis task runs when its proof's C1 was split (split_c1, with_share):
    the same witness, bit for bit, from a spec that names no file (the C1 is removed first)."""
    _, c1 = sealed_2k
    path = tmp_path / "c1.json"
    write_c1(c1, path)
    spec = {"kind": "filecoin", "c1": str(path), "proof_type": PROOF_2K.name, "variant": "stacked",
            "cache_dir": str(cache_dir), "proof": 0, "partition": 0}
    (share,) = split_c1(spec)
    shared = with_share(spec, share)
    assert "c1" not in shared
    path.unlink()
    assert synthesize_partition(shared) == c2.partition_witness(setup_2k, c1, 0)
    with pytest.raises(FileNotFoundError):  # the twin: without its share the spec needs the file
        synthesize_partition(spec)


@pytest.mark.ray
def test_on_a_cluster_the_plan_comes_through_the_object_store(ray_local, setup_2k, sealed_2k, cache_dir):  # noqa: F811
    """What the Ray engine's synthesis task runs on a cluster node: its share and the witness plan
    as objects (the plan read back from the object store, its arrays read-only), a spec naming
    neither the C1 nor the partition cache; the witness is the same, bit for bit."""
    import ray

    from cuzk_ray.circuits.filecoin import FilecoinCircuit
    from cuzk_ray.engines.ray_executor import synthesize_partition as synthesis_task
    from cuzk_ray.engines.types import SplitShare
    from cuzk_ray.partition import from_record_batch

    _, c1 = sealed_2k
    circuit = FilecoinCircuit((), variant="stacked", proof_type=PROOF_2K.name, meta={"cache_dir": str(cache_dir)})
    spec = {"kind": "filecoin", "c1": "/nonexistent/c1.json", "proof_type": PROOF_2K.name, "variant": "stacked",
            "cache_dir": str(cache_dir), "proof": 0, "partition": 0}
    assert "cache_dir" not in with_share(spec, c1.partition_share(0), circuit.synthesis_plan())
    batch = synthesis_task.remote(spec, "proof-000", "c", None, ray.put(SplitShare(c1.partition_share(0), None)),
                                  ray.put(circuit.synthesis_plan()))
    assert from_record_batch(ray.get(batch)).witness == c2.partition_witness(setup_2k, c1, 0)
    assert FilecoinCircuit((), variant="inputs", proof_type=PROOF_2K.name).synthesis_plan() is None


def plans_equal(one, two) -> bool:
    return (one.layout == two.layout and (one.p_fr, one.b_fr) == (two.p_fr, two.b_fr)
            and len(one.ops) == len(two.ops) and all(np.array_equal(x, y) for x, y in zip(one.ops, two.ops))
            and np.array_equal(one.slot, two.slot) and np.array_equal(one.consts_mont, two.consts_mont))


def test_the_workers_plan_is_read_from_the_cache_and_equals_the_tapes(setup_2k, cache_dir, monkeypatch):
    """What a synthesis worker loads (c2.witness_plan): the plan saved when the cache was recorded,
    mapped from disk, equal to the tape planned in memory; made again from the tape only when it is
    missing or was made from another tape."""
    paths = partition_cache.cache_paths(cache_dir, CONFIG_2K)
    made = []
    monkeypatch.setattr(partition_cache, "plan", lambda tape: made.append(1) or replay.plan(tape))
    loaded = partition_cache.cached_plan(cache_dir, CONFIG_2K)
    assert made == [] and loaded.tape is None and plans_equal(loaded, setup_2k.plan)
    assert all(x.flags.c_contiguous and x.dtype == np.int64 for x in loaded.ops)
    shutil.rmtree(paths.plan)  # missing: made from the tape
    assert plans_equal(partition_cache.cached_plan(cache_dir, CONFIG_2K), setup_2k.plan) and made == [1]
    meta = json.loads((paths.plan / "plan.json").read_text())
    (paths.plan / "plan.json").write_text(json.dumps({**meta, "tape_sha256": "0" * 64}))  # another tape's
    assert plans_equal(partition_cache.cached_plan(cache_dir, CONFIG_2K), setup_2k.plan) and made == [1, 1]
    assert partition_cache.plan_meta(paths.plan)["tape_sha256"] == meta["tape_sha256"]
    assert sorted(p.name for p in paths.plan.parent.iterdir() if p.name.startswith(".")) == []  # no temporaries


PLAN_IN_A_PROCESS = """
import sys
from cuzk_ray.filecoin import registry
from cuzk_ray.filecoin.circuit import partition_cache
save = partition_cache.save_plan
partition_cache.save_plan = lambda *a: print("made", flush=True) or save(*a)
print("ready", flush=True)
pl = partition_cache.cached_plan(sys.argv[1], registry.registered_seal_proof("StackedDrg2KiBV1_1").config)
print(int(sum(int(x.sum()) for x in pl.ops)))
"""


def test_processes_starting_together_make_the_plan_once(setup_2k, cache_dir, tmp_path):
    """Synthesis workers start at once on a cache without a plan: one makes it while the others
    wait for the lock, then every one maps the same files. The test holds the lock until all three
    have looked for the plan and found none, so all three would make it without the lock."""
    shutil.copytree(cache_dir / "partitions", tmp_path / "partitions")
    paths = partition_cache.cache_paths(tmp_path, CONFIG_2K)
    shutil.rmtree(paths.plan)
    with waiting_lock(paths.plan.with_name(paths.plan.name + ".lock")):
        procs = [subprocess.Popen([sys.executable, "-c", PLAN_IN_A_PROCESS, str(tmp_path)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, cwd=REPO) for _ in range(3)]
        assert [p.stdout.readline().strip() for p in procs] == ["ready"] * 3
        time.sleep(1.0)  # each is now past plan_meta, waiting for the lock
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e for _, e in outs]
    want = str(int(sum(int(x.sum()) for x in setup_2k.plan.ops)))
    lines = [o.split() for o, _ in outs]
    assert sorted(line[-1] for line in lines) == [want] * 3
    assert sum(line.count("made") for line in lines) == 1, lines
    assert sorted(p.name for p in paths.plan.iterdir()) == sorted(partition_cache.PLAN_FILES + ("plan.json",))


def test_an_altered_plan_is_refused_in_one_line(setup_2k, cache_dir, tmp_path):
    shutil.copytree(cache_dir / "partitions", tmp_path / "partitions")
    paths = partition_cache.cache_paths(tmp_path, CONFIG_2K)
    ops = paths.plan / "op_columns.npy"
    raw = bytearray(ops.read_bytes())
    raw[-1] ^= 1
    ops.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"op_columns.npy: SHA-256 \w+\.\.\., plan.json says \w+\.\.\.: the file was "
                                         r"altered or damaged \(delete .*plan to make it again\)") as e:
        partition_cache.cached_plan(tmp_path, CONFIG_2K)
    assert "\n" not in str(e.value)
    ops.unlink()
    with pytest.raises(ValueError, match=r"op_columns.npy: SHA-256 missing"):
        partition_cache.cached_plan(tmp_path, CONFIG_2K)
    (paths.plan / "plan.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"plan.json: not a readable replay plan") as e:
        partition_cache.cached_plan(tmp_path, CONFIG_2K)
    assert "\n" not in str(e.value)


def test_altered_cache_files_are_refused_in_one_line(setup_2k, cache_dir, tmp_path):
    paths = partition_cache.cache_paths(cache_dir, CONFIG_2K)
    data = paths.tape.read_bytes()
    try:
        paths.tape.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        with pytest.raises(ValueError, match=r"tape.npz: SHA-256 \w+\.\.\., the manifest says \w+\.\.\.: the file was"
                                             r" altered") as e:
            partition_cache.cached_tape(cache_dir, CONFIG_2K)
        assert "\n" not in str(e.value)
    finally:
        paths.tape.write_bytes(data)
    assert partition_cache.cached_tape(cache_dir, CONFIG_2K).layout == setup_2k.tape.layout
    npy = sorted(paths.recording.glob("B_entries*.npy"))[0]
    raw = bytearray(npy.read_bytes())
    try:
        raw[-1] ^= 1
        npy.write_bytes(bytes(raw))
        with pytest.raises(ValueError, match="B_entries") as e:
            partition_cache.cached_partition(cache_dir, CONFIG_2K)
        assert "\n" not in str(e.value)
    finally:
        raw[-1] ^= 1
        npy.write_bytes(bytes(raw))
    meta = json.loads(paths.manifest.read_text())
    other = tmp_path / "partitions"
    other.mkdir()
    moved = partition_cache.cache_paths(tmp_path, CONFIG_2K)
    moved.manifest.write_text(json.dumps({**meta, "sector_size": 8 << 20}))
    with pytest.raises(ValueError, match="field 'sector_size' is 8388608, need 2048"):
        partition_cache.cached_tape(tmp_path, CONFIG_2K)


# --- the .params sink -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return c2.circuit_setup(PROOF_2K, tmp_path_factory.mktemp("standin"), "inputs")


def test_streamed_params_equal_dev_setup_then_write_params(standin, tmp_path):
    cs = standin.recording.cs
    pk = dev_setup(cs, 5, meta={"circuit_id": standin.name}, qap="bellperson")
    write_params(tmp_path / "whole.params", pk)
    write_vk(tmp_path / "whole.vk", BellpersonVerifyingKey.from_proving_key(pk))
    layout = write_dev_params(tmp_path / "streamed.params", tmp_path / "streamed.vk", cs, 5,
                              meta={"circuit_id": standin.name})
    assert (tmp_path / "streamed.params").read_bytes() == (tmp_path / "whole.params").read_bytes()
    assert (tmp_path / "streamed.vk").read_bytes() == (tmp_path / "whole.vk").read_bytes()
    assert (tmp_path / "streamed.params").stat().st_size == layout.total_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["streamed.params", "streamed.vk", "whole.params",
                                                          "whole.vk"]  # no temporary file left
    # the twin: another seed is another key
    write_dev_params(tmp_path / "seed6.params", tmp_path / "seed6.vk", cs, 6)
    assert (tmp_path / "seed6.params").read_bytes() != (tmp_path / "whole.params").read_bytes()


def test_params_sink_refuses_a_query_of_the_wrong_size_and_leaves_nothing(standin, tmp_path):
    layout = params_layout(standin.recording.cs)
    sink = ParamsSink(tmp_path / "k.params", layout)
    try:
        with pytest.raises(ValueError, match=r"a_query: the setup makes 1 points, the layout has room for \d+"):
            sink.stream("a_query", np.uint64, (1, 2, 6))
        with pytest.raises(ValueError, match="query .* was not written completely"):
            sink.finish(tmp_path / "k.vk")
    finally:
        sink.close()
    assert list(tmp_path.iterdir()) == []


def test_check_room_refuses_in_one_line(tmp_path):
    check_room(tmp_path / "k.params", 1, 1)  # a byte of disk and of memory: there
    with pytest.raises(ValueError, match=r"k.params: the key needs 1000000.0 GB of disk, .* has [\d.]+ GB free"):
        check_room(tmp_path / "k.params", 10**15)
    with pytest.raises(ValueError, match=r"k.params: the key needs 1000000.0 GB of host memory, [\d.]+ GB "
                                         "available"):
        check_room(tmp_path / "sub" / "k.params", 1, 10**15)
