"""The output contract under stress (issue 15): one job per output_dir (flock), an earlier run
refused unless resume/overwrite says what to do, no lost work on SIGINT or a full disk (a real
tmpfs, filled mid-run), files that cannot be swapped unnoticed, INSECURE keys named on every run.
Every job is a real subprocess (engine=local: the engine is not what is tested); every proof listed
is checked by jobs/verify.py, and snarkjs where the key file's format is at stake."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import snarkjs_verify
from interrupt import interrupt_mid_batch, start, wait_for_entries
from mounted import run_on_tmpfs, unshare_works

from cuzk_ray.field import Q_MOD, R_MOD

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "circom"
SMALL = ("backend=cpu", "circuit.constraints=256")
pytestmark = pytest.mark.slow
needs_unshare = pytest.mark.skipif(not unshare_works(), reason="needs `unshare -Urm` (user + mount namespaces) "
                                                                "to mount a real tmpfs without root")


def prove_cmd(out, cache, *overrides, engine="local") -> list[str]:
    return [sys.executable, str(ROOT / "jobs" / "prove.py"), f"engine={engine}", *SMALL, f"output_dir={out}",
            f"cache_dir={cache}", *map(str, overrides)]


def env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}


def prove(out, cache, *overrides, timeout=300):
    return subprocess.run(prove_cmd(out, cache, *overrides), capture_output=True, text=True, timeout=timeout,
                          env=env())


def verify(*args):
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "verify.py"), *map(str, args)], capture_output=True,
                          text=True, timeout=300, env=env())


def last(text: str) -> str:
    return text.strip().splitlines()[-1]


def manifest(out: Path, name="manifest.json") -> dict:
    return json.loads((out / name).read_text())


def journal_entries(out: Path) -> list[dict]:
    lines = (out / "journal.jsonl").read_text().splitlines()
    assert "run" in json.loads(lines[0])
    return [json.loads(x) for x in lines[1:]]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(out: Path) -> dict[str, str]:
    """Every file in output_dir with its SHA-256, but Hydra's (.hydra/, the log) and the lock file
    (it holds the pid of the last job that took it)."""
    files = [p for p in out.rglob("*") if p.is_file() and ".hydra" not in p.parts and p.suffix != ".log"
             and p.name != ".cuzk-ray.lock"]
    return {str(p.relative_to(out)): sha(p) for p in files}


def check_listed(out: Path, name="manifest.json") -> list[dict]:
    """Every entry's files exist with the recorded SHA-256 and jobs/verify.py accepts them."""
    m = manifest(out, name)
    for e in m["proofs"]:
        assert sha(out / e["proof"]) == e["proof_sha256"] and sha(out / e["public"]) == e["public_sha256"]
    v = verify("--manifest", out / name)
    assert v.returncode == 0 and v.stdout.count("OK") == len(m["proofs"]), v.stdout + v.stderr
    return m["proofs"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


# -- one job per directory -----------------------------------------------------------------------

def test_second_job_into_a_locked_dir_refuses_and_the_first_finishes(tmp_path, cache):
    out = tmp_path / "out"
    first = subprocess.Popen(prove_cmd(out, cache, "proofs=4", "circuit.partitions=2"), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env())
    try:
        wait_for_entries(out, 1, first)
        os.kill(first.pid, signal.SIGSTOP)  # paused: still running, still holding the lock
        second = prove(out, cache, "proofs=1", "circuit.partitions=1")
        hydra_record = (out / ".hydra" / "overrides.yaml").read_text()  # refused before Hydra wrote there
        # an output_dir the command line does not spell out (an interpolation): refused by the lock
        # that run() takes, after Hydra started, with the same line
        via_env = subprocess.run(prove_cmd("${oc.env:CUZK_TEST_OUT}", cache, "proofs=1", "circuit.partitions=1"),
                                 capture_output=True, text=True, timeout=300, env=dict(env(), CUZK_TEST_OUT=str(out)))
        elsewhere = prove(tmp_path / "other", cache, "proofs=1", "circuit.partitions=1")  # negative twin
    finally:
        os.kill(first.pid, signal.SIGCONT)
    stdout, stderr = first.communicate(timeout=300)
    # (the interpolated job got past Hydra, which rewrote .hydra/ before run() refused it: the
    # plain one is refused before Hydra starts, which keeps the running job's record in the common case)
    assert second.returncode == 2 and "Traceback" not in second.stderr
    assert last(second.stderr) == (f"error: output_dir={out} is in use by another job (pid {first.pid} holds "
                                   f"{out / '.cuzk-ray.lock'}): wait for it or use another output_dir")
    assert "proofs=4" in hydra_record and "proofs=1" not in hydra_record
    assert via_env.returncode == 2 and last(via_env.stderr) == last(second.stderr), via_env.stderr
    assert elsewhere.returncode == 0, elsewhere.stderr  # the lock is per directory
    assert manifest(tmp_path / "other")["complete"] is True
    # the first job's outputs are whole and its own
    assert first.returncode == 0, stdout + stderr
    assert last(stdout).startswith("total ") and last(stdout).endswith(f"manifest: {out / 'manifest.json'}")
    m = manifest(out)
    assert m["complete"] is True and m["run"]["proofs"] == 4
    entries = check_listed(out)
    assert [(e["proof_id"], e["partition"]) for e in entries] == [(f"proof-{p:03d}", k) for p in range(4)
                                                                   for k in range(2)]


# -- an earlier run is never mixed in --------------------------------------------------------------

def test_rerun_into_a_used_dir_is_refused_and_overwrite_keeps_the_users_files(tmp_path, cache):
    out = tmp_path / "out"
    assert prove(out, cache, "proofs=2", "circuit.partitions=2").returncode == 0
    (out / "notes.txt").write_text("mine")
    before = snapshot(out)
    again = prove(out, cache, "proofs=2", "circuit.partitions=2")
    assert again.returncode == 2 and "Traceback" not in again.stderr
    assert last(again.stderr) == (
        f"error: output_dir={out} holds an earlier run's outputs (manifest.json, journal.jsonl, "
        f"verification_key.json, proofs): resume=true finishes that run, overwrite=true replaces its files, "
        f"or use another output_dir")
    assert snapshot(out) == before  # nothing touched
    # negative twin: told to overwrite, the earlier run's files go (only those) and the new run is alone
    new = prove(out, cache, "proofs=1", "circuit.partitions=2", "seed=5", "overwrite=true")
    assert new.returncode == 0, new.stderr
    assert f"overwrite: removed 11 file(s) of the earlier run in {out}" in new.stdout  # 8 + vk, journal, manifest
    assert (out / "notes.txt").read_text() == "mine"
    assert not (out / "proofs" / "proof-001").exists()
    m = manifest(out)
    assert m["run"]["seed"] == 5 and m["complete"] is True
    assert [(e["proof_id"], e["partition"]) for e in check_listed(out)] == [("proof-000", 0), ("proof-000", 1)]
    assert len(journal_entries(out)) == 2


def test_resume_proves_only_what_is_missing(tmp_path, cache):
    out = tmp_path / "out"
    assert prove(out, cache, "proofs=3", "circuit.partitions=2").returncode == 0
    first = {(e["proof_id"], e["partition"]): e for e in manifest(out)["proofs"]}
    (out / "proofs" / "proof-001" / "partition-1" / "proof.json").unlink()  # lost after the run
    # negative twin first: another seed is another run, refused, nothing written
    before = snapshot(out)
    other = prove(out, cache, "proofs=3", "circuit.partitions=2", "seed=1", "resume=true")
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert last(other.stderr) == (f"error: resume=true: {out / 'journal.jsonl'} is a run with seed=0, this one "
                                  f"has seed=1; resume continues the same run only (overwrite=true replaces it)")
    assert snapshot(out) == before
    res = prove(out, cache, "proofs=3", "circuit.partitions=2", "resume=true")
    assert res.returncode == 0, res.stderr
    assert ("resume: 5 partition(s) on disk, 2 of 3 proof(s) complete; proving 1 (1 changed or missing on disk, "
            "proved again)") in res.stdout
    assert "; 2 partitions proved and verified in this run;" in last(res.stdout)
    entries = {(e["proof_id"], e["partition"]): e for e in check_listed(out)}
    assert sorted(entries) == sorted(first)
    for key, e in entries.items():  # the complete proofs were not proved again: same bytes, same timings
        assert (e["proof_sha256"] == first[key]["proof_sha256"]) == (key[0] != "proof-001"), key
    assert len(journal_entries(out)) == 6 + 2
    # a complete run resumed proves nothing
    again = prove(out, cache, "proofs=3", "circuit.partitions=2", "resume=true")
    assert again.returncode == 0 and "; 0 partitions proved and verified in this run;" in last(again.stdout)


# -- no lost work ---------------------------------------------------------------------------------

@pytest.mark.parametrize("engine,sig", [pytest.param("local", signal.SIGINT, id="local-SIGINT"),
                                        pytest.param("ray", signal.SIGINT, marks=pytest.mark.ray, id="ray-SIGINT"),
                                        pytest.param("ray", signal.SIGTERM, marks=pytest.mark.ray, id="ray-SIGTERM")])
def test_sigint_mid_batch_keeps_the_finished_proofs_and_resume_finishes(tmp_path, cache, engine, sig):
    """engine=ray too: the interrupt lands in Ray's wait, the actors and Ray are shut down. SIGTERM
    (timeout, systemd, `ray job stop`) the same way, although ray.init installs its own handler
    for it (a C++ stack dump, exit 15). That run also has Ray's spill-disk limit at 1 % (every disk
    is over it; 0 turns Ray's check off), so its raylet warns every 10 s: the job says it once in
    its words and Ray's line stays out of its output (one Ray start for both: the suite runs on 2
    cores; the filter itself is tested on Ray's real line in test_ray_lines.py)."""
    out = tmp_path / "out"
    extra = {"RAY_local_fs_capacity_threshold": "0.01"} if sig == signal.SIGTERM else {}
    job = start(prove_cmd(out, cache, "proofs=6", "circuit.partitions=2", engine=engine), env=dict(env(), **extra))
    stdout, stderr, kept = interrupt_mid_batch(job, out, sig=sig)
    assert 3 <= kept < 12
    assert not (out / "manifest.json").exists()
    # (with Ray, pw=2 partitions in flight: the kept ones need not be the first k in order)
    partial = manifest(out, "manifest.partial.json")
    assert partial["complete"] is False and partial["stopped"] == sig.name
    if sig == signal.SIGTERM:
        assert "SIGTERM received" not in stderr and "logging.cc" not in stderr, stderr  # Ray's stack dump
        assert "Object creation will fail" not in stdout + stderr, stderr
        ours = [ln for ln in stderr.splitlines() if "over Ray's spilling limit" in ln]
        assert len(ours) == 1 and re.match(r"warning: disk: \S+ is [\d.]+% full \([\d.]+ GiB free of [\d.]+ GiB\)",
                                           ours[0]), stderr
    assert len(check_listed(out, "manifest.partial.json")) == kept == len(journal_entries(out))
    assert not list(out.rglob(".*.json.*"))  # no temporary file left behind
    per_proof = Counter(e["proof_id"] for e in partial["proofs"])
    assert partial["incomplete"] == sorted(p for p, n in per_proof.items() if n < 2)
    complete = sum(n == 2 for n in per_proof.values())
    res = prove(out, cache, "proofs=6", "circuit.partitions=2", "resume=true")
    assert res.returncode == 0, res.stderr
    assert f"proving {6 - complete}" in res.stdout
    assert f"; {2 * (6 - complete)} partitions proved and verified in this run;" in last(res.stdout)
    assert len(check_listed(out)) == 12 and manifest(out)["complete"] is True
    assert not (out / "manifest.partial.json").exists()


def test_a_killed_job_keeps_its_journal_and_resume_finishes(tmp_path, cache):
    """SIGKILL: no chance to write a manifest; the journal and the files it lists are the record.
    A line half-written when the job died (appended here by hand: what a crash mid-append leaves)
    is dropped by the resume."""
    out = tmp_path / "out"
    job = subprocess.Popen(prove_cmd(out, cache, "proofs=5", "circuit.partitions=2"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env=env())
    wait_for_entries(out, 3, job)
    job.kill()
    job.communicate(timeout=60)
    assert job.returncode == -signal.SIGKILL
    assert not (out / "manifest.json").exists() and not (out / "manifest.partial.json").exists()
    entries = journal_entries(out)
    assert 3 <= len(entries) < 10
    for e in entries:  # every journalled partition is on disk, whole
        assert sha(out / e["proof"]) == e["proof_sha256"] and sha(out / e["public"]) == e["public_sha256"]
    with open(out / "journal.jsonl", "a") as f:
        f.write('{"proof_id": "proof-004", "partit')
    refused = prove(out, cache, "proofs=5", "circuit.partitions=2")  # negative twin: not without resume=true
    assert refused.returncode == 2 and "holds an earlier run's outputs" in last(refused.stderr)
    res = prove(out, cache, "proofs=5", "circuit.partitions=2", "resume=true")
    assert res.returncode == 0, res.stderr
    complete = sum(n == 2 for n in Counter(e["proof_id"] for e in entries).values())
    assert f"proving {5 - complete}" in res.stdout
    assert len(check_listed(out)) == 10 and manifest(out)["complete"] is True
    assert not (out / ".cuzk-ray.reserve").exists()


@needs_unshare
def test_full_disk_mid_run_keeps_every_finished_partition(tmp_path, cache):
    """A 512 KiB tmpfs, filled by another writer once 3 partitions are on disk (the job paused
    meanwhile): the next write gets ENOSPC from the kernel."""
    mnt = tmp_path / "mnt"
    out = mnt / "out"
    res = run_on_tmpfs(mnt, tmp_path / "keep", prove_cmd(out, cache, "proofs=4", "circuit.partitions=2"),
                       size="512k", fill_after=3, journal=str(out / "journal.jsonl"))
    disk = tmp_path / "keep" / "disk" / "out"
    assert res["filled"] and res["rc"] == 2, res
    assert "Traceback" not in res["stderr"] and "HYDRA_FULL_ERROR" not in res["stderr"]
    m = re.fullmatch(rf"error: {re.escape(str(out))}/(\S+): No space left on device \(ENOSPC\); (\d+) verified "
                     rf"partition\(s\) kept in {re.escape(str(out))}, listed in "
                     rf"{re.escape(str(out / 'manifest.partial.json'))}; rerun with resume=true to prove the rest",
                     last(res["stderr"]))
    assert m, last(res["stderr"])
    kept = int(m.group(2))
    assert 3 <= kept < 8
    partial = manifest(disk, "manifest.partial.json")
    assert partial["complete"] is False and "No space left on device" in partial["stopped"]
    assert len(check_listed(disk, "manifest.partial.json")) == kept == len(journal_entries(disk))
    assert not (disk / "manifest.json").exists() and not list(disk.rglob(".*.json.*"))


@needs_unshare
def test_too_small_a_disk_is_refused_before_proving(tmp_path, cache):
    mnt = tmp_path / "mnt"
    out = mnt / "out"
    res = run_on_tmpfs(mnt, tmp_path / "keep", prove_cmd(out, cache, "proofs=4", "circuit.partitions=2"), size="64k")
    assert res["rc"] == 2 and "Traceback" not in res["stderr"], res
    assert re.fullmatch(rf"error: output_dir={re.escape(str(out))}: need \d+ KiB free for 8 partition\(s\) and the "
                        rf"manifest, have \d+ KiB", last(res["stderr"])), last(res["stderr"])
    disk = tmp_path / "keep" / "disk" / "out"
    assert not (disk / "journal.jsonl").exists() and not (disk / "verification_key.json").exists()
    assert not (disk / "proofs").exists()
    # a disk already full (16 KiB): refused before Hydra writes its record there, in one line
    res = run_on_tmpfs(tmp_path / "mnt3", tmp_path / "keep3",
                       prove_cmd(tmp_path / "mnt3" / "out", cache, "proofs=4", "circuit.partitions=2"), size="16k")
    assert res["rc"] == 2 and "Traceback" not in res["stderr"] and "HYDRA_FULL_ERROR" not in res["stderr"], res
    assert last(res["stderr"]) == (f"error: output_dir={tmp_path / 'mnt3' / 'out'} cannot be written: "
                                   f"{tmp_path / 'mnt3' / 'out'}: No space left on device (ENOSPC)")
    assert os.listdir(tmp_path / "keep3" / "disk" / "out") == []
    # negative twin: the same job on a disk big enough
    res = run_on_tmpfs(tmp_path / "mnt2", tmp_path / "keep2",
                       prove_cmd(tmp_path / "mnt2" / "out", cache, "proofs=4", "circuit.partitions=2"), size="1m")
    assert res["rc"] == 0, res
    assert len(check_listed(tmp_path / "keep2" / "disk" / "out")) == 8


@needs_unshare
def test_read_only_output_and_cache_dirs_are_one_line(tmp_path, cache):
    mnt = tmp_path / "ro"
    res = run_on_tmpfs(mnt, tmp_path / "k1", prove_cmd(mnt / "out", cache, "circuit.partitions=1"), read_only=True)
    assert res["rc"] == 2 and "Traceback" not in res["stderr"], res
    assert last(res["stderr"]) == (f"error: output_dir={mnt / 'out'} cannot be written: {mnt / 'out'}: "
                                   f"Read-only file system (EROFS)")
    # a dev key to be made in a read-only cache_dir: one line naming the path
    res = run_on_tmpfs(mnt, tmp_path / "k2", prove_cmd(tmp_path / "o2", mnt / "cache", "circuit.partitions=1"),
                       read_only=True)
    assert res["rc"] == 2 and "Traceback" not in res["stderr"], res
    assert last(res["stderr"]).startswith(f"error: {mnt / 'cache'}") and "(EROFS)" in last(res["stderr"])
    # a snarkjs zkey with a read-only cache: proved all the same, the lost caching said in one line
    d = FIX / "linear"
    cmd = [sys.executable, str(ROOT / "jobs" / "prove.py"), "engine=local", "circuit=snarkjs",
           f"circuit.zkey={d / 'linear.zkey'}", f"circuit.witness=[{d / 'witness_1.wtns'}]",
           f"output_dir={tmp_path / 'o3'}", f"cache_dir={mnt / 'cache'}"]
    res = run_on_tmpfs(mnt, tmp_path / "k3", cmd, read_only=True)
    assert res["rc"] == 0, res
    # (the job's warnings are one line on stderr, and in prove.log: cuzk_ray/console.py)
    assert f"warning: the converted key is not cached: {mnt / 'cache'}: Read-only file system" in res["stderr"]
    assert len(check_listed(tmp_path / "o3")) == 1


def test_output_dir_under_a_file_is_one_line(tmp_path, cache):
    (tmp_path / "file").write_text("x")
    res = prove(tmp_path / "file" / "out", cache, "circuit.partitions=1")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert last(res.stderr) == (f"error: output_dir={tmp_path / 'file' / 'out'} cannot be written: "
                                f"{tmp_path / 'file' / 'out'}: Not a directory (ENOTDIR)")
    assert (tmp_path / "file").read_text() == "x"
    ok = prove(tmp_path / "dir" / "out", cache, "circuit.partitions=1")  # negative twin
    assert ok.returncode == 0 and len(check_listed(tmp_path / "dir" / "out")) == 1


# -- files that cannot lie ---------------------------------------------------------------------

def test_verify_manifest_catches_a_swapped_proof_and_a_changed_witness(tmp_path, cache):
    d = FIX / "linear"
    witnesses = []
    for k in (1, 2):  # copies: the test changes one afterwards
        w = tmp_path / f"w{k}.wtns"
        w.write_bytes((d / f"witness_{k}.wtns").read_bytes())
        witnesses.append(w)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "engine=local", "circuit=snarkjs",
                          f"circuit.zkey={d / 'linear.zkey'}", f"circuit.witness=[{witnesses[0]},{witnesses[1]}]",
                          f"output_dir={out}", f"cache_dir={cache}"], capture_output=True, text=True, env=env())
    assert res.returncode == 0, res.stderr
    entries = check_listed(out)
    assert [(e["witness"], e["witness_sha256"]) for e in entries] == [(str(w), sha(w)) for w in witnesses]
    ok = verify("--manifest", out / "manifest.json")
    assert ok.returncode == 0 and last(ok.stdout) == f"OK  {out / entries[1]['proof']}"
    # swap the two proofs on disk: named, exit 1
    p0, p1 = out / entries[0]["proof"], out / entries[1]["proof"]
    b0, b1 = p0.read_bytes(), p1.read_bytes()
    p0.write_bytes(b1)
    p1.write_bytes(b0)
    bad = verify("--manifest", out / "manifest.json")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    lines = bad.stdout.strip().splitlines()
    assert lines[-2:] == [f"CHANGED  {p}: SHA-256 differs from the proof_sha256 that {out / 'manifest.json'} records"
                          for p in (p0, p1)]
    p0.write_bytes(b0)
    p1.write_bytes(b1)
    witnesses[1].write_bytes(witnesses[1].read_bytes()[:-1] + b"\x01")
    changed = verify("--manifest", out / "manifest.json")
    assert changed.returncode == 1
    assert last(changed.stdout) == (f"CHANGED  {witnesses[1]}: the witness file's SHA-256 differs from the "
                                    f"witness_sha256 that {out / 'manifest.json'} records")


def test_insecure_dev_key_is_said_on_every_run_and_snarkjs_still_reads_its_vk(tmp_path, snarkjs):
    own_cache = tmp_path / "cache"
    runs = [prove(tmp_path / f"o{n}", own_cache, "circuit.partitions=1", "setup_seed=3") for n in (1, 2)]
    key = own_cache / "keys" / "porep-c256-p4-f0.05-s0-setup3"
    line = (f"INSECURE: {key} comes from the development setup (setup_seed=3): anyone who knows the seed can forge "
            f"its proofs; use a ceremony key (circuit=snarkjs) for anything real")
    for n, res in enumerate(runs, start=1):
        assert res.returncode == 0, res.stderr
        assert line in res.stdout.splitlines()
        out = tmp_path / f"o{n}"
        m = manifest(out)
        assert m["insecure_dev_setup"] is True and m["setup_seed"] == 3
        vk = json.loads((out / "verification_key.json").read_text())
        assert vk["insecure_dev_setup"] is True and vk["setup_seed"] == 3
        [e] = check_listed(out)
        assert snarkjs_verify(snarkjs, out / "verification_key.json", out / e["public"], out / e["proof"])
    assert "(cached" in runs[1].stdout  # the second run did not make the key: it still says INSECURE
    v = verify("--manifest", tmp_path / "o2" / "manifest.json")
    assert "comes from an INSECURE development setup (setup_seed=3)" in v.stderr
    # snarkjs really reads that file: a tampered proof is rejected with it
    proof = json.loads((tmp_path / "o2" / e["proof"]).read_text())
    proof["pi_a"], proof["pi_c"] = proof["pi_c"], proof["pi_a"]
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    assert not snarkjs_verify(snarkjs, tmp_path / "o2" / "verification_key.json", tmp_path / "o2" / e["public"],
                              tmp_path / "bad.json")
    # negative twin: a ceremony key (snarkjs zkey) says nothing of the kind
    d = FIX / "linear"
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "engine=local", "circuit=snarkjs",
                          f"circuit.zkey={d / 'linear.zkey'}", f"circuit.witness=[{d / 'witness_1.wtns'}]",
                          f"output_dir={tmp_path / 'z'}", f"cache_dir={own_cache}"], capture_output=True, text=True,
                         env=env())
    assert res.returncode == 0 and "INSECURE" not in res.stdout + res.stderr
    assert manifest(tmp_path / "z")["insecure_dev_setup"] is False
    assert "insecure_dev_setup" not in json.loads((tmp_path / "z" / "verification_key.json").read_text())


# -- verify.py on hostile input ------------------------------------------------------------------

Q, R = Q_MOD, R_MOD  # the smallest non-canonical values


def _proof():
    return json.loads((FIX / "linear" / "proof_1.json").read_text())


def _with(obj, path, value):
    node = obj
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return obj


BAD = {  # name -> (which file, its text, the line verify.py must end with after "error: <file>: ")
    "deep": ("proof", "[" * 200000 + "]" * 200000, "not valid JSON (nested too deeply)"),
    "infinity": ("proof", json.dumps(_proof()).replace('"1"', "Infinity", 1),
                 "not valid JSON (Infinity is not a JSON number)"),
    "nan": ("public", '["1", NaN]', "not valid JSON (NaN is not a JSON number)"),
    "number": ("proof", json.dumps(_with(_proof(), ["pi_a", 0], 5)), "pi_a[0] is a JSON number, expected a "
               "decimal string"),
    "signed": ("proof", json.dumps(_with(_proof(), ["pi_b", 1, 0], "-1")), "pi_b[1][0] is '-1', expected a "
               "decimal string"),
    "not canonical (q)": ("proof", json.dumps(_with(_proof(), ["pi_c", 1], str(Q))),
                          f"pi_c[1] = {Q} is out of range [0, q)"),
    "not canonical (r)": ("public", json.dumps([str(R), "1"]), f"[0] = {R} is out of range [0, r)"),
    "public number": ("public", "[1, 2]", "[0] is a JSON number, expected a decimal string"),
    "nPublic string": ("vk", json.dumps(_with(json.loads((FIX / "linear" / "verification_key.json").read_text()),
                                              ["nPublic"], "4")), "nPublic is '4', expected an integer"),
    "IC number": ("vk", json.dumps(_with(json.loads((FIX / "linear" / "verification_key.json").read_text()),
                                         ["IC", 1, 0], 7)), "IC[1][0] is a JSON number, expected a decimal string"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_verify_refuses_hostile_input_in_one_line(tmp_path, case):
    which, text, message = BAD[case]
    d = FIX / "linear"
    files = {"vk": d / "verification_key.json", "public": d / "public_1.json", "proof": d / "proof_1.json"}
    good = verify(files["vk"], files["public"], files["proof"])  # negative twin: the untouched files
    assert good.returncode == 0 and last(good.stdout) == f"OK  {files['proof']}"
    files[which] = tmp_path / f"{which}.json"
    files[which].write_text(text)
    res = verify(files["vk"], files["public"], files["proof"])
    assert res.returncode == 2 and "Traceback" not in res.stderr and res.stdout == ""
    assert last(res.stderr) == f"error: {files[which]}: {message}"


def test_verify_manifest_refuses_paths_outside_its_dir(tmp_path, cache):
    out = tmp_path / "out"
    assert prove(out, cache, "circuit.partitions=1").returncode == 0
    m = manifest(out)
    m["proofs"][0]["public"] = "../../etc/passwd"
    (out / "evil.json").write_text(json.dumps(m))
    res = verify("--manifest", out / "evil.json")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert last(res.stderr) == (f"error: {out / 'evil.json'}: proofs[0].public = '../../etc/passwd' is not a path "
                                f"inside {out}")
    assert verify("--manifest", out / "manifest.json").returncode == 0  # negative twin


def test_resume_and_overwrite_together_are_refused(tmp_path, cache):
    res = prove(tmp_path / "o", cache, "resume=true", "overwrite=true")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert last(res.stderr) == ("error: resume=true and overwrite=true: give one (resume continues the earlier run, "
                                "overwrite replaces it)")
    assert not (tmp_path / "o" / "journal.jsonl").exists()
    ok = prove(tmp_path / "o", cache, "circuit.partitions=1", "resume=true")  # negative twin: resume alone, fresh
    assert ok.returncode == 0 and manifest(tmp_path / "o")["complete"] is True


def test_permission_denied_is_one_line(capsys):
    """As root (this box) a chmod does not refuse writes, so the EACCES path is driven directly."""
    from cuzk_ray.errors import exit_with_error

    assert exit_with_error(PermissionError(13, "Permission denied", "/srv/out/proofs")) == 2
    assert capsys.readouterr().err == "error: /srv/out/proofs: Permission denied (EACCES)\n"
    with pytest.raises(ConnectionError):  # negative twin: an OSError that is not about a path stays a bug
        exit_with_error(ConnectionError(111, "refused"))
