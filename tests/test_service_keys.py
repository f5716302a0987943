"""Resident keys of the service (issue 16): preload, evict, least-recently-used eviction under
service.key_budget, a key in use not evicted, a key above the budget refused in one line. A real
service (jobs/serve.py, embedded Ray, Serve on a free port); the keys' sizes are measured first
on the same dev keys (the service then finds them cached)."""

import time

import pytest
from service import ServiceProcess

from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.keystore import ensure_dev_key

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def kid(c: int) -> str:
    return f"porep-c{c}-p4-f0.05-s0-setup0"


def circuit(c: int, **kw) -> dict:
    return {"kind": "porep", "constraints": c, "partitions": 2, **kw}


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keys")
    sizes = {}
    for c in (64, 128, 256, 1024):
        pk, cs, _path, _made = ensure_dev_key(PorepCircuit(constraints=c, partitions=2), tmp / "cache", 0, "cpu")
        sizes[c] = pk.nbytes + cs.nbytes
    budget = sizes[64] + sizes[128] + sizes[256] - 1  # any two of the three small keys fit, not all three
    assert sizes[1024] > budget
    s = ServiceProcess(tmp, "service.preload=false", "pw=1", "ray.num_cpus=5", f"service.key_budget={budget}")
    s.wait_ready()
    yield s, sizes, budget
    assert s.stop() == 0, s.text()[-3000:]


def resident(svc) -> list[str]:
    return [k["key_id"] for k in svc.request("GET", "/v1/status")[1]["keys"]]


def wait_resident(svc, key: str, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while key not in resident(svc):
        st = svc.request("GET", "/v1/status")[1]
        assert key not in st["key_errors"], st["key_errors"]
        assert time.time() < deadline, (key, st)
        time.sleep(0.1)


def test_preload_then_lru_eviction_under_the_budget(sized):
    svc, sizes, budget = sized
    assert resident(svc) == []  # service.preload=false: nothing loaded, /healthz already 200
    assert svc.request("POST", "/v1/keys", {"circuit": circuit(64)}) == (202, {"key_id": kid(64), "state": "loading"})
    wait_resident(svc, kid(64))
    assert svc.request("POST", "/v1/keys", {"circuit": circuit(64)}) == (200, {"key_id": kid(64), "state": "resident"})
    svc.request("POST", "/v1/keys", {"circuit": circuit(128)})
    wait_resident(svc, kid(128))
    assert resident(svc) == [kid(64), kid(128)]
    st = svc.request("GET", "/v1/status")[1]
    assert st["key_bytes"] == sizes[64] + sizes[128] and st["key_budget"] == budget
    # one prover pool for every key: one CPU prover (one node), holding both keys
    assert len(st["provers"]) == 1 and st["provers"][0]["keys"] == sorted([kid(64), kid(128)])
    assert [k["provers"] for k in st["keys"]] == [1, 1]
    # use 64 again: 128 is now the least recently used, and goes when 256 needs the room
    assert svc.request("POST", "/v1/keys", {"circuit": circuit(64)})[0] == 200
    svc.request("POST", "/v1/keys", {"circuit": circuit(256)})
    wait_resident(svc, kid(256))
    assert sorted(resident(svc)) == sorted([kid(64), kid(256)])  # not 64: it was used later than 128
    assert svc.request("GET", "/v1/status")[1]["key_bytes"] <= budget
    svc.wait_text(f"key {kid(128)} evicted (least recently used: room for {kid(256)})")


def test_every_load_of_a_development_key_says_insecure(sized):
    """Issue 28: the README promises the INSECURE line on every run that uses a development key;
    the service said nothing for a cached one. These keys were made before the service started
    (no setup ran in it): the line comes from each load, in the batch job's words."""
    svc, _sizes, _budget = sized
    for c in (64, 128, 256):
        svc.wait_text(f"INSECURE: {svc.cache / 'keys' / kid(c)} comes from the development setup (setup_seed=0): "
                      f"anyone who knows the seed can forge its proofs")
    assert "INSECURE development setup" not in svc.text()  # the setup's own warning: no key was made here


def test_a_proof_loads_its_key_and_a_busy_key_is_not_evicted(sized):
    svc, sizes, budget = sized
    # 128 is not resident: the proof loads it, evicting the least recently used idle key (64)
    pid = svc.submit("keys-1", circuit(128, partitions=12, seed=1))
    svc.wait_state(pid, states=("running",))
    assert sorted(resident(svc)) == sorted([kid(256), kid(128)])
    code, ans = svc.request("DELETE", f"/v1/keys/{kid(128)}")
    assert code == 409 and pid in ans["error"]  # in use
    assert svc.request("DELETE", f"/v1/proofs/{pid}")[0] == 200
    assert svc.request("DELETE", f"/v1/keys/{kid(128)}") == (200, {"key_id": kid(128), "state": "evicted"})
    assert resident(svc) == [kid(256)]
    assert svc.request("GET", "/v1/status")[1]["provers"][0]["keys"] == [kid(256)]  # gone from the prover too
    assert svc.request("DELETE", f"/v1/keys/{kid(128)}")[0] == 404
    # the proof of an evicted key loads it again
    pid = svc.submit("keys-2", circuit(128, seed=2))
    assert svc.wait_state(pid)["partitions_done"] == 2
    assert kid(128) in resident(svc)


def test_a_key_above_the_budget_is_refused_in_one_line(sized):
    svc, sizes, budget = sized
    assert svc.request("POST", "/v1/keys", {"circuit": circuit(1024)})[0] == 202
    deadline = time.time() + 60
    while kid(1024) not in svc.request("GET", "/v1/status")[1]["key_errors"]:
        assert time.time() < deadline
        time.sleep(0.1)
    err = svc.request("GET", "/v1/status")[1]["key_errors"][kid(1024)]
    assert "service.key_budget" in err and "\n" not in err
    assert kid(1024) not in resident(svc)
    pid = svc.submit("keys-big", circuit(1024))
    st = svc.wait_state(pid, states=("failed",))
    assert "service.key_budget" in st["error"] and st["partitions_done"] == 0
    # the service goes on: a proof of a key that fits still runs
    assert svc.wait_state(svc.submit("keys-after", circuit(64, seed=3)))["state"] == "done"
