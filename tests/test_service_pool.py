"""The service's one prover pool on a real 2-CPU `ray start` cluster (issue 28): a porep key and a
circom key resident together are served by the one CPU prover (before the pool, each key's own
prover took a CPU and no synthesis task could ever run: 600 s with no partition); the loop's
watchdog fails the proofs whose synthesis cannot get a CPU in watchdog_s with one line (in
/v1/proofs/{id} and /v1/status) while the service goes on serving; a key no prover can hold
(above service.key_budget) fails its proof in one line while another proof completes."""

import json
import os
import signal
import time

import pytest
from cluster import LocalCluster, hold_one_cpu_per_node
from conftest import snarkjs_verify_many
from service import ROOT, ServiceProcess

from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.keystore import ensure_dev_key

pytestmark = [pytest.mark.ray, pytest.mark.slow]

FIX = ROOT / "tests" / "fixtures" / "circom" / "linear"
POREP = {"kind": "porep", "constraints": 256, "partitions": 4}
CIRCOM = {"kind": "snarkjs", "zkey": str(FIX / "linear.zkey"), "witness": str(FIX / "witness_2.wtns"),
          "r1cs": str(FIX / "linear.r1cs")}
WATCHDOG_S = 5

@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pool")
    cache = tmp / "cache"
    pk, cs, _path, _made = ensure_dev_key(PorepCircuit(constraints=256, partitions=4), cache, 0, "cpu")
    budget = 3 * (pk.nbytes + cs.nbytes)  # the porep key and the circom key fit; a 2^12 porep key does not
    (tmp / "cluster").mkdir()
    cluster = LocalCluster(tmp / "cluster", nodes=1, cpus=2)
    svc = ServiceProcess(tmp, f"ray.address={cluster.address}", "pw=2", "circuit.constraints=256",
                         "circuit.partitions=4", f"watchdog_s={WATCHDOG_S}", f"service.key_budget={budget}",
                         f"service.input_roots=[{tmp},{ROOT / 'tests' / 'fixtures'}]", cache=cache)
    try:
        svc.wait_ready()
        yield cluster, svc, tmp
    finally:
        code = svc.stop()
        cluster.stop()
    assert code == 0, svc.text()[-3000:]


def verified(svc, snarkjs, tmp, pid) -> list[bool]:
    """snarkjs's verdict on every partition of a done proof, from its result."""
    code, res = svc.request("GET", f"/v1/proofs/{pid}/result")
    assert code == 200, res
    vk = tmp / f"vk-{pid}.json"
    vk.write_text(json.dumps(res["verification_key"]))
    triples = []
    for k, part in enumerate(res["partitions"]):
        public, proof = tmp / f"public-{pid}-{k}.json", tmp / f"proof-{pid}-{k}.json"
        public.write_text(json.dumps(part["public"]))
        proof.write_text(json.dumps(part["proof"]))
        triples.append((vk, public, proof))
    return snarkjs_verify_many(snarkjs, triples)


def test_a_porep_key_and_a_circom_key_share_the_one_prover(pool, snarkjs):
    cluster, svc, tmp = pool
    porep = svc.submit("pool-porep", dict(POREP, seed=1))
    circom = svc.submit("pool-circom", CIRCOM)
    assert svc.wait_state(circom, timeout=180)["partitions_done"] == 1
    assert svc.wait_state(porep, timeout=180)["partitions_done"] == 4
    st = svc.request("GET", "/v1/status")[1]
    assert len(st["provers"]) == 1 and len(st["keys"]) == 2  # one prover, both keys resident in it
    assert sorted(st["provers"][0]["keys"]) == sorted(k["key_id"] for k in st["keys"])
    assert verified(svc, snarkjs, tmp, porep) == [True] * 4
    assert verified(svc, snarkjs, tmp, circom) == [True]
    # negative twin: a partition's public input changed is refused by the same verifier
    pub = tmp / f"public-{porep}-0.json"
    values = json.loads(pub.read_text())
    pub.write_text(json.dumps([str(int(values[0]) + 1), *values[1:]]))
    from conftest import snarkjs_verify

    assert not snarkjs_verify(snarkjs, tmp / f"vk-{porep}.json", pub, tmp / f"proof-{porep}-0.json")


def test_the_watchdog_fails_work_no_cpu_can_run_and_the_service_goes_on(pool):
    cluster, svc, tmp = pool
    hog = hold_one_cpu_per_node(cluster)  # one node: the CPU synthesis needs is taken
    try:
        t0 = time.time()
        stuck = svc.submit("pool-stuck", dict(POREP, seed=2))
        st = svc.wait_state(stuck, states=("failed", "done"), timeout=120)
        took = time.time() - t0
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    assert st["state"] == "failed" and st["partitions_done"] == 0, st
    assert f"(watchdog_s={WATCHDOG_S}): " in st["error"] and "wait for 1 CPU each and no node has one free" \
        in st["error"] and "\n" not in st["error"], st["error"]
    assert WATCHDOG_S <= took < WATCHDOG_S + 60, took
    assert st["error"] in svc.request("GET", "/v1/status")[1]["stalled"]
    # the CPU is back: the service serves the next proof
    after = svc.submit("pool-after", dict(POREP, seed=3))
    assert svc.wait_state(after, timeout=180)["partitions_done"] == 4


def test_a_key_no_prover_can_hold_fails_in_one_line_while_another_proof_completes(pool):
    cluster, svc, tmp = pool
    big = svc.submit("pool-big", dict(POREP, constraints=4096, seed=4))
    other = svc.submit("pool-other", dict(POREP, seed=5))
    st = svc.wait_state(big, states=("failed", "done"), timeout=WATCHDOG_S + 120)
    assert st["state"] == "failed" and "service.key_budget" in st["error"] and "\n" not in st["error"], st
    assert svc.wait_state(other, timeout=180)["partitions_done"] == 4

