"""Each C1 is read once per proof on the Ray engine: a split task on the driver's node parses it
and hands each partition's synthesis task its own share (C1Output.partition_share), not the file.
Before, every synthesis task parsed the whole C1 for its one partition: at 32 GiB 38.6 MB of JSON,
~1.7-2.3 s of a ~3.5-4 s witness, ten times per sector.

The engine test proves two consistent 32 GiB C1s (conftest.c1s_32g, 10 partitions each) with the
``inputs`` stand-in circuit (the real partition's 328 public inputs, ~1k constraints:
circuit/inputs_standin.py), so that ten shares, not one, are split and matched to their partitions:
a share given to the wrong partition would make a partition proof of the wrong challenges, which
the MultiProof check against the C1's public inputs (derived by part 1's code) refuses.
"""

from __future__ import annotations

import json
import time

import pytest

from cuzk_ray.circuits.filecoin import split_c1
from cuzk_ray.filecoin import c2
from cuzk_ray.filecoin.c1 import read_c1
from cuzk_ray.filecoin.circuit.stacked import stacked_circuit_from_c1


def test_each_share_holds_its_partition_alone(c1s_32g):
    spec = {"kind": "filecoin", "c1": str(c1s_32g / "a.json")}
    c1 = read_c1(spec["c1"])
    shares = split_c1(spec)
    assert len(shares) == 10
    for k, share in enumerate(shares):
        assert share.vanilla_proofs[k] == c1.vanilla_proofs[k]
        assert all(not p for j, p in enumerate(share.vanilla_proofs) if j != k)
        assert (share.comm_r, share.comm_d, share.replica_id) == (c1.comm_r, c1.comm_d, c1.replica_id)
    assert stacked_circuit_from_c1(shares[3], 3) == stacked_circuit_from_c1(c1, 3)
    with pytest.raises(ValueError, match=r"vanilla_proofs\[4\]: no vanilla proofs"):  # another partition's
        stacked_circuit_from_c1(shares[3], 4)


@pytest.mark.ray
def test_the_ray_engine_splits_each_c1_once_and_proves_its_multiproof(ray_local, c1s_32g, tmp_path):
    import ray
    from ray.util.state import list_tasks

    from cuzk_ray import job
    from cuzk_ray.filecoin.params import read_vk
    from cuzk_ray.filecoin.proofs import multiproof_from_bytes

    out, cache = tmp_path / "run", tmp_path / "cache"
    cfg = job.compose(["circuit=filecoin", f"circuit.c1={c1s_32g}", "circuit.variant=inputs", "backend=cpu",
                       "setup_backend=cpu", "engine=ray", "pw=2", f"cache_dir={cache}", f"output_dir={out}"])
    assert job.run(cfg) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    seals = manifest["seal_proofs"]
    assert sorted(seals) == ["a", "b"] and all(s["verified"] and s["partitions"] == 10 for s in seals.values())
    assert len(manifest["proofs"]) == 20 and all(e["verified"] for e in manifest["proofs"])
    # the split's seconds reach the report once a proof: in partition 0's times, no other's
    split_s = {(e["proof_id"], e["partition"]): e["seconds"].get("split") for e in manifest["proofs"]}
    assert all(split_s[p, 0] > 0 for p in ("a", "b"))
    assert all(v is None for (_, k), v in split_s.items() if k != 0)

    address = ray.get_runtime_context().gcs_address
    want = {"split:a", "split:b"}
    for _ in range(30):  # task events reach the GCS asynchronously (about once a second)
        tasks = list_tasks(address=address, limit=10000)
        if want <= {t.name for t in tasks}:
            break
        time.sleep(0.5)
    splits = sorted(t.name for t in tasks if t.name.startswith("split:"))
    assert splits == ["split:a", "split:b"]  # one read per C1, not one per partition
    assert sum(t.name.startswith("synth:") for t in tasks) == 20

    vk = read_vk(seals["a"]["vk"])
    proof_a = multiproof_from_bytes((out / seals["a"]["path"]).read_bytes())
    c2.check_multiproof(vk, read_c1(c1s_32g / "a.json"), proof_a)  # the positive twin
    with pytest.raises(ValueError, match=r"do not verify"):  # a's proof is no proof of sector b
        c2.check_multiproof(vk, read_c1(c1s_32g / "b.json"), proof_a)
