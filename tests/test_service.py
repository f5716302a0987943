"""The proving service end to end (issue 16): `jobs/serve.py` in its own process (embedded Ray,
Ray Serve on 127.0.0.1 and a free port, real SQLite, real files), talked to over HTTP; results
verified by snarkjs. One service for the module: the order of the tests below is the order a
client would meet things (503 while it starts first)."""

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest
from cluster import free_port
from conftest import snarkjs_verify, snarkjs_verify_many
from service import ROOT, ServiceProcess

pytestmark = [pytest.mark.ray, pytest.mark.slow]

FIX = ROOT / "tests" / "fixtures" / "circom" / "linear"
SMALL = {"kind": "porep", "constraints": 64, "partitions": 2}


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("service")
    # The config's key (2^13, made by the dev setup on first start) is preloaded: /healthz is 503
    # until its provers are up. pw=1: one partition in flight, so the order of work is visible.
    s = ServiceProcess(tmp, "circuit.partitions=2", "pw=1", "ray.num_cpus=4",
                       f"service.input_roots=[{tmp},{ROOT / 'tests' / 'fixtures'}]",
                       f"ray.metrics_export_port={free_port()}",
                       # Ray's spill-disk limit at 1 %: its raylet repeats "is over 1% full" every 10 s
                       env={"RAY_metrics_report_interval_ms": "1000", "RAY_local_fs_capacity_threshold": "0.01"})
    yield s
    code = s.stop()
    assert code == 0, s.text()[-3000:]
    assert "service: stopped" in s.text()
    from cuzk_ray.service.checks import ServiceLocks

    ServiceLocks(s.cache / "service" / "service.db", s.cache / "service" / "proofs").check()  # released


def results_dir(svc, proof_id) -> Path:
    return svc.cache / "service" / "proofs" / proof_id


def test_healthz_is_503_until_the_provers_are_up_then_200(svc):
    seen = []
    deadline = time.time() + 180
    while time.time() < deadline and (not seen or seen[-1][0] != 200):
        try:
            seen.append(svc.request("GET", "/healthz", token=False, timeout=5))
        except (OSError, ValueError):  # not listening yet, or the proxy up before the app (a text 404)
            pass
        assert svc.proc.poll() is None, svc.text()[-3000:]
        time.sleep(0.05)
    codes = [c for c, _ in seen]
    assert codes and codes[-1] == 200 and seen[-1][1] == {"status": "ok"}
    assert 503 in codes, codes  # the service answered before it was ready, and said so
    first = seen[codes.index(503)][1]
    assert set(first) == {"error"} and ("starting" in first["error"] or "not running" in first["error"])
    svc.wait_text(f"service: ready at {svc.url}")  # jobs/serve.py says so too (it looks every 0.5 s)


def test_every_route_but_healthz_needs_the_token(svc):
    svc.wait_ready()
    for method, path in [("GET", "/v1/status"), ("GET", "/v1/proofs/x"), ("GET", "/v1/proofs?ids=x"),
                         ("POST", "/v1/proofs"), ("DELETE", "/v1/proofs/x"), ("POST", "/v1/keys"),
                         ("DELETE", "/v1/keys/x")]:
        code, ans = svc.request(method, path, body={}, token=False)
        assert code == 401 and "Bearer" in ans["error"], (method, path, code, ans)
        code, ans = svc.request(method, path, body={}, token="not-the-token")
        assert (code, ans) == (401, {"error": "wrong token"})
    assert svc.request("GET", "/v1/status")[0] == 200  # the positive twin
    token_file = svc.cache / "service" / "token"
    assert token_file.stat().st_mode & 0o777 == 0o600


def test_many_proofs_status_in_one_call_is_each_proofs_own(svc):
    """GET /v1/proofs?ids=A,B: each proof's GET /v1/proofs/{id} answer, in the order asked, in one
    call (the batch client polls a whole batch with it); an unknown id is a 404 naming it, none
    or too many ids a 422."""
    from cuzk_ray.service.models import STATUS_IDS_MAX

    ids = [svc.submit(f"many-{i}", {**SMALL, "proof": i}) for i in range(2)]
    for pid in ids:
        svc.wait_state(pid)
    code, ans = svc.request("GET", f"/v1/proofs?ids={ids[1]},{ids[0]}")
    assert code == 200 and [p["proof_id"] for p in ans["proofs"]] == [ids[1], ids[0]]
    assert ans["proofs"] == [svc.request("GET", f"/v1/proofs/{p}")[1] for p in (ids[1], ids[0])]
    code, ans = svc.request("GET", f"/v1/proofs?ids={ids[0]},nosuchproof")
    assert code == 404 and "nosuchproof" in ans["error"], ans
    code, ans = svc.request("GET", "/v1/proofs")
    assert code == 422 and "ids" in ans["error"], ans
    code, ans = svc.request("GET", "/v1/proofs?ids=" + ",".join([ids[0]] * (STATUS_IDS_MAX + 1)))
    assert code == 422 and f"at most {STATUS_IDS_MAX}" in ans["error"], ans


def test_submit_is_idempotent_by_request_id_and_409_on_another_body(svc):
    code, first = svc.request("POST", "/v1/proofs", {"request_id": "idem-1", "circuit": SMALL})
    assert code == 202 and first["state"] == "queued" and set(first) == {"proof_id", "state"}
    code, again = svc.request("POST", "/v1/proofs", {"request_id": "idem-1", "circuit": SMALL})
    assert code == 200 and again["proof_id"] == first["proof_id"]
    # spelling out the defaults is the same request
    code, same = svc.request("POST", "/v1/proofs", {"request_id": "idem-1", "priority": "normal",
                                                    "circuit": dict(SMALL, seed=0, proof=0)})
    assert code == 200 and same["proof_id"] == first["proof_id"]
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "idem-1", "circuit": dict(SMALL, seed=5)})
    assert code == 409 and first["proof_id"] in ans["error"]
    svc.wait_state(first["proof_id"])
    with sqlite3.connect(svc.cache / "service" / "service.db") as db:  # one row, one proof
        assert db.execute("SELECT COUNT(*) FROM proofs WHERE request_id = 'idem-1'").fetchone() == (1,)
    assert len(json.loads((results_dir(svc, first["proof_id"]) / "manifest.json").read_text())["proofs"]) == 2


@pytest.mark.parametrize("body,field", [
    ({"circuit": SMALL}, "request_id"),
    ({"request_id": "", "circuit": SMALL}, "request_id"),
    ({"request_id": "m", "circuit": SMALL, "priority": "urgent"}, "priority"),
    ({"request_id": "m", "circuit": SMALL, "extra": 1}, "extra"),
    ({"request_id": "m"}, "circuit"),
    ({"request_id": "m", "circuit": {"kind": "groth17"}}, "circuit.kind"),
    ({"request_id": "m", "circuit": dict(SMALL, partitions="2")}, "circuit.partitions"),
    ({"request_id": "m", "circuit": dict(SMALL, partitions=0)}, "circuit.partitions=0: must be at least 1"),
    ({"request_id": "m", "circuit": dict(SMALL, seed=-1)}, "circuit.seed=-1"),
    ({"request_id": "m", "circuit": dict(SMALL, colour=1)}, "circuit.colour"),
    ({"request_id": "m", "circuit": {"kind": "snarkjs", "zkey": str(FIX / "linear.zkey")}}, "circuit.witness"),
    # the batch job's size checks and preflight (issue 28): absurd sizes are refused, not accepted with 202
    ({"request_id": "m", "circuit": dict(SMALL, partitions=1000000)}, "circuit.partitions=1000000: at most 1024"),
    ({"request_id": "m", "circuit": dict(SMALL, constraints=1000)}, "circuit.constraints=1000: not a power of two"),
    ({"request_id": "m", "circuit": dict(SMALL, constraints=1 << 30)}, "circuit: key porep-c1073741824-p4-f0.05-s0"
                                                                         "-setup0: host memory: need "),
])
def test_malformed_body_is_422_naming_the_field(svc, body, field):
    code, ans = svc.request("POST", "/v1/proofs", body)
    assert code == 422 and field in ans["error"] and "\n" not in ans["error"], (code, ans)
    assert svc.request("GET", "/v1/status")[1]["proofs"]["failed"] == 0


def test_not_json_is_422(svc):
    code, ans = svc.request("POST", "/v1/proofs", raw=b"{not json")
    assert code == 422 and ans["error"].startswith("body: not JSON")
    # nested beyond the parser (a plain-text 500 before issue 28) or beyond what a request is
    for raw in (b"[" * 100_000, b'{"request_id": "deep", "circuit": ' + b"[" * 40 + b"]" * 40 + b"}"):
        code, ans = svc.request("POST", "/v1/proofs", raw=raw)
        assert (code, ans) == (422, {"error": "body: nested more than 32 levels deep"})


def raw_post(svc, body_parts, headers: dict, timeout: float = 20) -> tuple[int, dict]:
    """POST /v1/proofs over a plain HTTP/1.1 connection: the headers, then ``body_parts`` sent one by
    one (a chunked body when no Content-Length is given); (status, JSON answer)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=timeout)
    try:
        conn.putrequest("POST", "/v1/proofs")
        chunked = "Content-Length" not in headers
        if chunked:
            headers = dict(headers, **{"Transfer-Encoding": "chunked"})
        for k, v in {"Authorization": f"Bearer {svc.token}", "Content-Type": "application/json", **headers}.items():
            conn.putheader(k, v)
        conn.endheaders()
        try:
            for part in body_parts:
                conn.send(b"%x\r\n%s\r\n" % (len(part), part) if chunked else part)
            if chunked:
                conn.send(b"0\r\n\r\n")
        except OSError:  # the service answered and closed while we were still sending
            pass
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def test_a_body_over_the_limit_is_refused_before_it_is_read(svc):
    """1 MiB at most (issue 28: a 1.5 GB upload was read whole first): by its Content-Length at once
    (the body is never sent here: waiting for it would time out), and a chunked one as soon as the
    stream passes the limit. The twins: a chunked body under the limit is read and accepted."""
    code, ans = raw_post(svc, [b"{}"], {"Content-Length": "1500000000"}, timeout=10)
    assert (code, ans) == (413, {"error": "body: 1500000000 bytes (Content-Length), at most 1048576"})
    code, ans = raw_post(svc, [b" " * (64 << 10)] * 32, {})  # 2 MiB, chunked
    assert code == 413 and ans["error"].startswith("body: more than 1048576 bytes (stopped reading at "), ans
    body = json.dumps({"request_id": "chunked-1", "circuit": SMALL}).encode()
    code, ans = raw_post(svc, [body[:10], body[10:]], {})
    assert code == 202 and ans["state"] == "queued", ans
    code, ans = raw_post(svc, [body], {"Content-Length": str(len(body))})
    assert code == 200 and ans["state"] in ("queued", "running", "done"), ans  # the same request, read whole
    svc.wait_state(ans["proof_id"])


def test_a_fifo_or_a_directory_in_the_input_roots_is_422_and_blocks_nothing(svc):
    """Opening a FIFO with no writer waits for good (issue 28: a handler thread blocked forever)."""
    import os

    fifo = svc.tmp / "blocking.wtns"
    os.mkfifo(fifo)
    circuit = {"kind": "snarkjs", "zkey": str(FIX / "linear.zkey"), "witness": str(fifo)}
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "fifo-1", "circuit": circuit}, timeout=10)
    assert (code, ans) == (422, {"error": f"circuit.witness={fifo}: a FIFO, not a regular file"})
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "fifo-2", "circuit": dict(
        circuit, zkey=str(svc.tmp), witness=str(FIX / "witness_1.wtns"))}, timeout=10)
    assert (code, ans) == (422, {"error": f"circuit.zkey={svc.tmp}: a directory, not a regular file"})
    code, ans = svc.request("POST", "/v1/keys", {"circuit": {"kind": "snarkjs", "zkey": str(fifo)}}, timeout=10)
    assert (code, ans) == (422, {"error": f"circuit.zkey={fifo}: a FIFO, not a regular file"})


def test_paths_outside_input_roots_are_403_and_bad_files_422_naming_them(svc, tmp_path):
    circuit = {"kind": "snarkjs", "zkey": "/etc/hostname", "witness": str(FIX / "witness_1.wtns")}
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "roots-1", "circuit": circuit})
    assert code == 403 and "circuit.zkey=/etc/hostname: outside service.input_roots" in ans["error"]
    # a symlink inside a root to a file outside it is outside
    link = svc.tmp / "escape.zkey"
    link.symlink_to("/etc/hostname")
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "roots-2", "circuit": dict(circuit, zkey=str(link))})
    assert code == 403, ans
    bad = svc.tmp / "bad.zkey"
    bad.write_bytes(b"zkey" + b"\0" * 40)
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "roots-3", "circuit": dict(circuit, zkey=str(bad))})
    assert code == 422 and str(bad) in ans["error"], ans
    missing = svc.tmp / "missing.wtns"
    code, ans = svc.request("POST", "/v1/proofs", {"request_id": "roots-4", "circuit": dict(
        circuit, zkey=str(FIX / "linear.zkey"), witness=str(missing))})
    assert code == 422 and str(missing) in ans["error"], ans
    with sqlite3.connect(svc.cache / "service" / "service.db") as db:  # nothing refused was stored
        assert db.execute("SELECT COUNT(*) FROM proofs WHERE request_id LIKE 'roots-%'").fetchone() == (0,)


def test_unknown_ids_are_404(svc):
    for method, path in [("GET", "/v1/proofs/nope"), ("GET", "/v1/proofs/nope/result"), ("DELETE", "/v1/proofs/nope"),
                         ("DELETE", "/v1/keys/nope"), ("GET", "/v1/nothing-here")]:
        code, ans = svc.request(method, path)
        assert code == 404 and set(ans) == {"error"}, (method, path, code, ans)


def write_result(tmp: Path, result: dict, k: int) -> tuple[Path, Path, Path]:
    vk, public, proof = tmp / "vk.json", tmp / f"public{k}.json", tmp / f"proof{k}.json"
    vk.write_text(json.dumps(result["verification_key"]))
    public.write_text(json.dumps(result["partitions"][k]["public"]))
    proof.write_text(json.dumps(result["partitions"][k]["proof"]))
    return vk, public, proof


def test_result_is_409_until_done_then_verified_by_snarkjs(svc, snarkjs, tmp_path):
    pid = svc.submit("result-1", dict(SMALL, partitions=3, seed=7))
    code, ans = svc.request("GET", f"/v1/proofs/{pid}/result")
    assert code == 409 and ("queued" in ans["error"] or "running" in ans["error"]), (code, ans)
    st = svc.wait_state(pid)
    assert st == {"proof_id": pid, "request_id": "result-1", "state": "done", "partitions": 3, "partitions_done": 3,
                  "timings": st["timings"], "error": None}
    assert {"synthesis", "h", "msm_b_g2", "verify"} <= set(st["timings"])
    assert all(v >= 0 for v in st["timings"].values())
    code, res = svc.request("GET", f"/v1/proofs/{pid}/result")
    assert code == 200 and len(res["partitions"]) == 3
    triples = [write_result(tmp_path, res, k) for k in range(3)]
    assert snarkjs_verify(snarkjs, *triples[0])  # the CLI, and its same verify on all three in one process
    assert snarkjs_verify_many(snarkjs, triples) == [True] * 3
    assert len({public.read_text() for _, public, _ in triples}) == 3  # three partitions, three statements
    # negative twin: a partition's proof against another partition's public inputs
    vk, public0, _ = write_result(tmp_path, res, 0)
    _, _, proof1 = write_result(tmp_path, res, 1)
    assert not snarkjs_verify(snarkjs, vk, public0, proof1)
    # the batch output contract on disk, manifest last
    d = results_dir(svc, pid)
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["complete"] and [e["partition"] for e in manifest["proofs"]] == [0, 1, 2]
    assert {e["proof_id"] for e in manifest["proofs"]} == {pid}


def test_a_result_changed_on_disk_is_a_json_error_naming_the_file(svc):
    """Issue 28: a tampered result file answered a plain-text 500. Now: 500 naming the file for
    garbage, 410 for a file that is gone, always the one-line JSON error. The twin: 200 before."""
    pid = svc.submit("tamper-1", dict(SMALL, seed=11))
    svc.wait_state(pid)
    assert svc.request("GET", f"/v1/proofs/{pid}/result")[0] == 200
    d = results_dir(svc, pid)
    manifest = json.loads((d / "manifest.json").read_text())
    proof = d / manifest["proofs"][1]["proof"]
    proof.write_text("garbage")
    code, ans = svc.request("GET", f"/v1/proofs/{pid}/result")
    assert code == 500 and ans["error"].startswith(f"proof {pid}: its result file {proof}: not valid JSON"), ans
    proof.unlink()
    code, ans = svc.request("GET", f"/v1/proofs/{pid}/result")
    assert (code, ans) == (410, {"error": f"proof {pid} is done but {proof} is gone (its results were removed)"})
    (d / "manifest.json").write_text('["not", "a", "manifest"]')
    code, ans = svc.request("GET", f"/v1/proofs/{pid}/result")
    assert code == 500 and ans["error"].startswith(f"proof {pid}: {d / 'manifest.json'} is not its manifest"), ans


def test_snarkjs_request_is_proved_with_its_own_key(svc, snarkjs, tmp_path):
    circuit = {"kind": "snarkjs", "zkey": str(FIX / "linear.zkey"), "witness": str(FIX / "witness_2.wtns"),
               "r1cs": str(FIX / "linear.r1cs")}
    pid = svc.submit("snarkjs-1", circuit, priority="high")
    assert svc.wait_state(pid)["partitions_done"] == 1
    code, res = svc.request("GET", f"/v1/proofs/{pid}/result")
    vk, public, proof = write_result(tmp_path, res, 0)
    assert snarkjs_verify(snarkjs, FIX / "verification_key.json", public, proof)  # the zkey's own vk
    assert json.loads(public.read_text()) == json.loads((FIX / "public_2.json").read_text())
    keys = {k["key_id"] for k in svc.request("GET", "/v1/status")[1]["keys"]}
    assert any(k.startswith("snarkjs-linear.zkey-") for k in keys) and len(keys) >= 2


def test_filecoin_c2_request_writes_a_multiproof_that_filecoin_verify_accepts(svc, capsys):
    """A sealed 2 KiB sector's C1 as a filecoin-c2 request (the inputs stand-in circuit, a dev key the
    service makes): the same pool and queue; the MultiProof verifies with ``cuzk-ray filecoin verify``
    against the sector's data, and a C1 with a missing field is refused with 422 naming it."""
    from cuzk_ray.filecoin import c2, fr32, registry, seal
    from cuzk_ray.filecoin.c1 import write_c1
    from cuzk_ray.filecoin.commands import main as filecoin

    proof = registry.registered_seal_proof("StackedDrg2KiBV1_1")
    ids = (bytes(31) + b"\x09", 5, bytes([3]) * 32, bytes([4]) * 32)  # prover_id, sector_id, ticket, seed
    sector = seal.seal_sector(bytes(fr32.unpadded_size(2048)), proof, *ids[:3])
    c1 = seal.commit_phase1(sector, ids[3])
    write_c1(c1, svc.tmp / "c1.json")
    pid = svc.submit("filecoin-1", {"kind": "filecoin-c2", "c1": str(svc.tmp / "c1.json"), "variant": "inputs"})
    assert svc.wait_state(pid)["partitions_done"] == 1
    manifest = json.loads((results_dir(svc, pid) / "manifest.json").read_text())
    (seal_proof,) = manifest["seal_proofs"].values()
    out = results_dir(svc, pid) / seal_proof["path"]
    setup = c2.circuit_setup(proof, svc.cache, "inputs")  # the service recorded it there
    flags = ["--vk", str(c2.dev_key_files(setup, svc.cache)[1]), "--registered-proof", proof.name, "--comm-d",
             c1.comm_d.hex(), "--prover-id", ids[0].hex(), "--sector-id", str(ids[1]), "--ticket", ids[2].hex(),
             "--seed", ids[3].hex()]
    capsys.readouterr()
    assert filecoin(["verify", str(out), "--comm-r", c1.comm_r.hex(), *flags]) == 0
    other = bytes([c1.comm_r[0] ^ 1]) + c1.comm_r[1:]
    assert filecoin(["verify", str(out), "--comm-r", other.hex(), *flags]) == 1
    assert capsys.readouterr().out.split() == ["OK", "INVALID"]
    obj = json.loads((svc.tmp / "c1.json").read_text())
    del obj["seed"]
    (svc.tmp / "c1-bad.json").write_text(json.dumps(obj))
    body = {"request_id": "filecoin-bad", "circuit": {"kind": "filecoin-c2", "c1": str(svc.tmp / "c1-bad.json")}}
    code, ans = svc.request("POST", "/v1/proofs", body)
    assert code == 422 and "seed" in json.dumps(ans), (code, ans)


def test_prove_job_with_service_url_for_c1s_writes_their_multiproofs(svc, tmp_path, capsys):
    """``jobs/prove.py circuit=filecoin circuit.c1=DIR service.url=...``: one filecoin-c2 request per
    C1 of the folder (before, the client sent the built-in circuit's request and proved that),
    whatever proofs= says, as the batch job counts them, and the MultiProofs a local run writes,
    each verified against its C1's inputs with the service's key; ``filecoin verify`` accepts each
    against its own sector and refuses it against the other's comm_r."""
    from cuzk_ray.filecoin import c2, fr32, registry, seal
    from cuzk_ray.filecoin.c1 import write_c1
    from cuzk_ray.filecoin.commands import main as filecoin
    from cuzk_ray.outputs import SEAL_PROOF

    proof = registry.registered_seal_proof("StackedDrg2KiBV1_1")
    folder = svc.tmp / "client-c1s"
    folder.mkdir()
    sectors = {}  # name -> (C1, prover_id, sector_id, ticket, seed)
    for name, sector_id in (("s6", 6), ("s7", 7)):
        ids = (bytes(31) + b"\x0b", sector_id, bytes([5]) * 32, bytes([6]) * 32)
        c1 = seal.commit_phase1(seal.seal_sector(bytes(fr32.unpadded_size(2048)), proof, *ids[:3]), ids[3])
        write_c1(c1, folder / f"{name}.json")
        sectors[name] = (c1, *ids)
    out = tmp_path / "run"
    res = prove_job(f"output_dir={out}", f"service.url={svc.url}", "circuit=filecoin", f"circuit.c1={folder}",
                    "circuit.variant=inputs", "proofs=3", f"cache_dir={svc.cache}", "progress_s=0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 proof(s) x 1 partition(s) of filecoin sent to" in res.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    seals = manifest["seal_proofs"]
    assert manifest["complete"] and sorted(seals) == ["s6", "s7"]
    vk = str(c2.dev_key_files(c2.circuit_setup(proof, svc.cache, "inputs"), svc.cache)[1])
    capsys.readouterr()
    for name, other in (("s6", "s7"), ("s7", "s6")):
        assert seals[name]["verified"] and seals[name]["vk"] is None
        multiproof = out / seals[name]["path"]
        assert multiproof == out / "proofs" / name / SEAL_PROOF and multiproof.stat().st_size == 192
        c1, prover_id, sector_id, ticket, seed = sectors[name]
        flags = ["--vk", vk, "--registered-proof", proof.name, "--comm-d", c1.comm_d.hex(), "--prover-id",
                 prover_id.hex(), "--sector-id", str(sector_id), "--ticket", ticket.hex(), "--seed", seed.hex()]
        assert filecoin(["verify", str(multiproof), "--comm-r", c1.comm_r.hex(), *flags]) == 0
        assert filecoin(["verify", str(multiproof), "--comm-r", sectors[other][0].comm_r.hex(), *flags]) == 1
    assert capsys.readouterr().out.split() == ["OK", "INVALID"] * 2


def times(svc, ids) -> dict[str, tuple]:
    """(created, started, finished) of each proof, from the service's own database."""
    with sqlite3.connect(svc.cache / "service" / "service.db") as db:
        rows = db.execute(f"SELECT proof_id, created, started, finished FROM proofs WHERE proof_id IN "
                          f"({','.join('?' * len(ids))})", ids).fetchall()
    return {p: (c, s, f) for p, c, s, f in rows}


def test_priority_order_under_load_critical_before_the_earlier_lows(svc):
    """pw=1: one partition in flight. Five low proofs, then a critical one: every low proof that
    had not started when the critical one was accepted finishes after it (the low proof already
    running may finish before or after); the lows keep their order of arrival."""
    lows = [svc.submit(f"prio-low-{i}", dict(SMALL, seed=100 + i), priority="low") for i in range(5)]
    crit = svc.submit("prio-crit", dict(SMALL, seed=200), priority="critical")
    for pid in [*lows, crit]:
        svc.wait_state(pid)
    t = times(svc, [*lows, crit])
    waiting = [p for p in lows if t[p][1] > t[crit][0]]  # first submitted after the critical one came
    assert len(waiting) >= 3, t  # the test is only worth something under load
    assert all(t[crit][2] < t[p][2] for p in waiting), t
    assert sorted(lows, key=lambda p: t[p][2]) == lows  # oldest first within a priority
    st = svc.request("GET", "/v1/status")[1]
    assert st["queue"] == {"critical": 0, "high": 0, "normal": 0, "low": 0}


def test_cancel_queued_and_running(svc):
    long = svc.submit("cancel-running", dict(SMALL, partitions=12, seed=300))
    queued = svc.submit("cancel-queued", dict(SMALL, seed=301), priority="low")  # behind the long one
    code, ans = svc.request("DELETE", f"/v1/proofs/{queued}")
    assert (code, ans) == (200, {"state": "cancelled"})
    st = svc.wait_state(long, states=("running",))
    deadline = time.time() + 60
    while st["partitions_done"] < 2 and time.time() < deadline:
        time.sleep(0.05)
        st = svc.request("GET", f"/v1/proofs/{long}")[1]
    code, ans = svc.request("DELETE", f"/v1/proofs/{long}")
    assert (code, ans) == (200, {"state": "cancelled"})
    at_cancel = svc.request("GET", f"/v1/proofs/{long}")[1]
    time.sleep(3)  # several partitions' time: none is proved or written any more
    after = svc.request("GET", f"/v1/proofs/{long}")[1]
    assert after["state"] == "cancelled" and after["partitions_done"] == at_cancel["partitions_done"] < 12
    journal = (results_dir(svc, long) / "journal.jsonl").read_text().splitlines()
    assert len(journal) - 1 <= at_cancel["partitions_done"] + 1  # + at most the one in flight (pw=1)
    assert not (results_dir(svc, long) / "manifest.json").exists()  # partial only: it is not done
    assert svc.request("GET", f"/v1/proofs/{queued}")[1]["state"] == "cancelled"
    assert svc.request("GET", f"/v1/proofs/{queued}")[1]["partitions_done"] == 0
    journal = results_dir(svc, queued) / "journal.jsonl"  # handed to the scheduler, never submitted
    assert not journal.exists() or len(journal.read_text().splitlines()) == 1
    assert svc.request("DELETE", f"/v1/proofs/{long}") == (200, {"state": "cancelled"})  # again: the same
    assert svc.request("GET", f"/v1/proofs/{long}/result")[0] == 409
    # a done proof stays done
    done = svc.submit("cancel-done", dict(SMALL, seed=302))
    svc.wait_state(done)
    code, ans = svc.request("DELETE", f"/v1/proofs/{done}")
    assert code == 409 and "done" in ans["error"]
    assert svc.request("GET", f"/v1/proofs/{done}")[1]["state"] == "done"


def test_proofs_go_on_while_another_key_loads(svc):
    """A key is made resident in a thread of its own: the partitions of a resident key's proof
    keep being proved and written while a fresh key (made by the dev setup) loads."""
    pid = svc.submit("load-side", dict(SMALL, partitions=16, seed=400))
    svc.wait_state(pid, states=("running",))
    code, ans = svc.request("POST", "/v1/keys", {"circuit": {"kind": "porep", "constraints": 8192,
                                                             "circuit_seed": 3}})
    assert code == 202, ans
    seen, deadline = set(), time.time() + 120
    while time.time() < deadline:
        st = svc.request("GET", "/v1/status")[1]
        if ans["key_id"] in [k["key_id"] for k in st["keys"]]:
            break
        if st["loading"] == ans["key_id"]:
            seen.add(svc.request("GET", f"/v1/proofs/{pid}")[1]["partitions_done"])
        time.sleep(0.05)
    assert ans["key_id"] in [k["key_id"] for k in st["keys"]], st
    assert len(seen) >= 2, seen  # partitions verified while the key loaded
    assert svc.wait_state(pid)["partitions_done"] == 16
    assert svc.request("DELETE", f"/v1/keys/{ans['key_id']}")[0] == 200


def test_status_reports_queue_proofs_provers_keys_and_budget(svc):
    code, st = svc.request("GET", "/v1/status")
    assert code == 200 and st["ready"] is True
    assert set(st["queue"]) == {"critical", "high", "normal", "low"}
    assert set(st["proofs"]) == {"queued", "running", "done", "failed", "cancelled"}
    assert st["proofs"]["done"] >= 5 and st["proofs"]["cancelled"] == 2
    assert st["provers"] and all(p["node"] and p["backend"] == "cpu" and p["busy"] is False and p["state"] == "up"
                                 for p in st["provers"])
    assert len(st["provers"]) == 1  # one pool: one CPU prover on the one node, for every key
    assert set(st["provers"][0]["keys"]) == {k["key_id"] for k in st["keys"]}
    assert all(k["bytes"] > 0 and k["provers"] == 1 for k in st["keys"])
    assert all(k["partitions_at_once"] is None for k in st["keys"])  # CPU provers: no VRAM to fit
    assert st["key_bytes"] == sum(k["bytes"] for k in st["keys"])
    assert st["host"]["reserved"] == 0 and st["host"]["budget"] is None
    # host memory measured on the node: the engine actor, the prover and Ray's processes
    nodes = st["host"]["nodes"]
    assert len(nodes) == 1 and nodes[0]["processes"] >= 2 and nodes[0]["bytes"] > 0
    assert nodes[0]["peak"] >= nodes[0]["bytes"] > 0 and st["stalled"] == []


def test_metrics_are_exported_as_ray_cuzk(svc):
    """Queue depth, proofs by state, request phases, key load and per-stage seconds on the
    embedded Ray's Prometheus endpoint (ray.metrics_export_port)."""
    import re
    import urllib.request

    port = next(a.split("=")[1] for a in svc.proc.args if a.startswith("ray.metrics_export_port="))
    want = ['ray_cuzk_service_queue_depth{', 'ray_cuzk_service_proofs{', 'ray_cuzk_service_request_seconds_bucket{',
            'ray_cuzk_service_key_load_seconds_count', 'ray_cuzk_stage_seconds_bucket{', 'ray_cuzk_partitions_done',
            'ray_cuzk_service_host_bytes{']
    deadline, text = time.time() + 60, ""
    while time.time() < deadline:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        if all(w in text for w in want):
            break
        time.sleep(1)
    missing = [w for w in want if w not in text]
    assert not missing, missing
    done = re.search(r'^ray_cuzk_service_proofs\{[^}]*state="done"[^}]*\} (\S+)$', text, re.M)
    assert done and float(done.group(1)) >= 5
    assert re.search(r'ray_cuzk_service_request_seconds_bucket\{[^}]*phase="queued"', text)


def test_every_state_change_is_a_log_line(svc):
    text = svc.text()
    for line in ("request idem-1: accepted", "request idem-1: queued -> running", "request idem-1: running -> done",
                 "request cancel-queued: queued -> cancelled", "request cancel-running: running -> cancelled"):
        assert line in text, line


def prove_job(*overrides, timeout=300):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), *overrides], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def test_prove_job_with_service_url_writes_the_manifest_of_a_local_run(svc, tmp_path, snarkjs):
    common = ["circuit.constraints=64", "circuit.partitions=2", "proofs=3", "seed=9", f"cache_dir={svc.cache}",
              "progress_s=0"]
    local, remote = tmp_path / "local", tmp_path / "remote"
    res = prove_job(f"output_dir={local}", "engine=local", *common)
    assert res.returncode == 0, res.stdout + res.stderr
    res = prove_job(f"output_dir={remote}", f"service.url={svc.url}", *common)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"sent to {svc.url}" in res.stdout and "6/6 partitions verified" in res.stdout
    assert "INSECURE: " in res.stdout and "comes from the development setup (setup_seed=0)" in res.stdout
    m_local, m_remote = (json.loads((d / "manifest.json").read_text()) for d in (local, remote))
    assert m_local["complete"] and m_remote["complete"]
    for k in ("run", "verification_key", "verification_key_sha256", "insecure_dev_setup", "setup_seed", "circuit"):
        assert m_local[k] == m_remote[k], k

    def same(e):  # what two runs of one batch share (proof bytes differ: r and s are random)
        return {k: v for k, v in e.items() if k not in ("proof_sha256", "seconds", "synthesis_node", "prover_node")}

    assert [same(e) for e in m_local["proofs"]] == [same(e) for e in m_remote["proofs"]]
    assert [set(e) for e in m_local["proofs"]] == [set(e) for e in m_remote["proofs"]]
    assert len(m_remote["proofs"]) == 6 and all(e["verified"] for e in m_remote["proofs"])
    assert (local / "verification_key.json").read_bytes() == (remote / "verification_key.json").read_bytes()
    e = m_remote["proofs"][5]
    assert snarkjs_verify(snarkjs, remote / e["verification_key"], remote / e["public"], remote / e["proof"])
    assert e["seconds"]["synthesis"] > 0 and e["prover_node"]
    # the same command again (overwrite): the service already has these requests, nothing is proved twice
    db = svc.cache / "service" / "service.db"
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT COUNT(*) FROM proofs").fetchone()
    res = prove_job(f"output_dir={remote}", f"service.url={svc.url}", "overwrite=true", *common)
    assert res.returncode == 0, res.stdout + res.stderr
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM proofs").fetchone() == rows
    assert json.loads((remote / "manifest.json").read_text())["proofs"] == m_remote["proofs"]


def test_prove_job_with_a_bad_service_is_one_line(svc, tmp_path):
    from cluster import free_port

    res = prove_job(f"output_dir={tmp_path / 'a'}", f"service.url=http://127.0.0.1:{free_port()}",
                    f"cache_dir={svc.cache}", "circuit.constraints=64")
    assert res.returncode == 2 and "cannot reach the service" in res.stderr and "Traceback" not in res.stderr
    res = prove_job(f"output_dir={tmp_path / 'b'}", f"service.url={svc.url}", "service.token=wrong",
                    f"cache_dir={svc.cache}", "circuit.constraints=64")
    assert res.returncode == 2 and "answered 401: wrong token" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def serve_job(*overrides, timeout=120):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "serve.py"), *overrides], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def test_the_api_listens_on_loopback_only(svc):
    import shutil
    import subprocess

    if shutil.which("ss") is None:
        pytest.skip("no ss here")
    rows = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True, check=True).stdout.splitlines()
    mine = [r.split()[3] for r in rows if r.split()[3].endswith(f":{svc.port}")]
    assert mine == [f"127.0.0.1:{svc.port}"], mine


def test_a_second_service_on_the_same_db_or_output_dir_is_refused_at_start(svc, tmp_path):
    """Issue 28: a second service on one service.db took over the first's running proof. Each is
    locked for the service's life (the engine actor holds both locks); a second jobs/serve.py stops
    before Ray starts, naming the file and the holder (the twin: the fixture's teardown finds both
    free once the service stopped)."""
    pid = svc.request("GET", "/v1/status")[1]["engine"]["pid"]
    db, out = svc.cache / "service" / "service.db", svc.cache / "service" / "proofs"
    res = serve_job(f"cache_dir={svc.cache}", f"service.port={free_port()}")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (f"error: service.db={db} is in use by another job (pid {pid} "
                                                   f"holds {db}.lock): stop that service or use another service.db")
    res = serve_job(f"cache_dir={svc.cache}", f"service.port={free_port()}", f"service.db={tmp_path / 'other.db'}")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"error: service.output_dir={out} is in use by another job (pid {pid} holds {out}/.cuzk-ray.lock)" \
        in res.stderr, res.stderr
    assert not (tmp_path / "other.db").exists()  # refused before anything was made


def test_serve_refuses_a_port_in_use_and_bad_settings_in_one_line(svc, tmp_path):
    res = serve_job(f"cache_dir={tmp_path}", f"service.port={svc.port}")  # the running service's port
    assert res.returncode == 2 and f"service.port={svc.port}: cannot listen there" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / "ray").exists()  # refused before Ray started
    res = serve_job(f"cache_dir={tmp_path}", "engine=local", f"service.port={free_port()}")
    assert res.returncode == 2 and "engine=local: the service proves on Ray" in res.stderr, res.stderr
    res = serve_job(f"cache_dir={tmp_path}", "service.portt=1")
    assert res.returncode == 2 and "did you mean service.port" in res.stderr, res.stderr


def test_prove_job_with_service_url_for_circom_witnesses(svc, tmp_path, snarkjs):
    witness = f"circuit.witness=[{FIX / 'witness_1.wtns'},{FIX / 'witness_3.wtns'}]"
    common = ["circuit=snarkjs", f"circuit.zkey={FIX / 'linear.zkey'}", witness, f"cache_dir={svc.cache}"]
    local, remote = tmp_path / "local", tmp_path / "remote"
    res = prove_job(f"output_dir={local}", "engine=local", *common)
    assert res.returncode == 0, res.stdout + res.stderr
    res = prove_job(f"output_dir={remote}", f"service.url={svc.url}", *common)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "INSECURE" not in res.stdout + res.stderr  # a ceremony key (the zkey): the twin of the dev key's line
    m_local, m_remote = (json.loads((d / "manifest.json").read_text()) for d in (local, remote))
    assert m_local["run"] == m_remote["run"] and m_remote["complete"]
    ids = [(e["proof_id"], e["witness"], e["witness_sha256"], e["public_sha256"]) for e in m_remote["proofs"]]
    assert ids == [(e["proof_id"], e["witness"], e["witness_sha256"], e["public_sha256"]) for e in m_local["proofs"]]
    assert [e["proof_id"] for e in m_remote["proofs"]] == ["witness_1", "witness_3"]
    for e in m_remote["proofs"]:
        assert snarkjs_verify(snarkjs, FIX / "verification_key.json", remote / e["public"], remote / e["proof"])


def test_rays_repeated_disk_line_is_said_once_in_our_words(svc):
    """Issue 28: the raylet's "is over N% full ... Object creation will fail" line came every 10 s
    in the service's output; the service says it once, with the numbers, and drops Ray's repeats
    (they stay in Ray's logs). The cluster has been up for well over 10 s by now."""
    text = svc.wait_text("over Ray's spilling limit", timeout=60)
    ours = re.findall(r"disk: \S+ is [\d.]+% full \([\d.]+ GiB free of [\d.]+ GiB\)", text)
    assert len(ours) == 1, ours
    assert "Object creation will fail if spilling is required" not in text
