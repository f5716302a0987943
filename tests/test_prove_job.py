"""The main job end to end, as a user runs it: a subprocess, real Ray, real snarkjs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import snarkjs_verify, snarkjs_verify_many

from cuzk_ray.formats.snarkjs_json import read_proof, read_public, read_verification_key
from cuzk_ray.groth16.verifier import verify

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.ray, pytest.mark.slow]


def run_job(*overrides, cwd=None, timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), *overrides],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT, env=env)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def check_manifest(out: Path, snarkjs=None):
    manifest = json.loads((out / "manifest.json").read_text())
    entries = manifest["proofs"]
    for e in entries:
        vk = read_verification_key(out / e["verification_key"])
        assert e["verified"] is True
        assert verify(vk, read_public(out / e["public"]), read_proof(out / e["proof"]))
    if snarkjs is not None:  # the CLI on one, snarkjs's same verify on all in one process
        e = entries[0]
        assert snarkjs_verify(snarkjs, out / e["verification_key"], out / e["public"], out / e["proof"])
        triples = [(out / e["verification_key"], out / e["public"], out / e["proof"]) for e in entries]
        assert snarkjs_verify_many(snarkjs, triples) == [True] * len(entries)
    return entries


def test_default_run_is_verified_by_snarkjs(tmp_path, cache_dir, snarkjs):
    """`python jobs/prove.py` with the default config: one 10-partition proof (engine=auto: in
    this process, 10 x 2^13 is small; it says so)."""
    out = tmp_path / "out"
    res = run_job(f"output_dir={out}", f"cache_dir={cache_dir}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "engine: local (auto: no cluster given and 10 partition(s) x 2^13 fits one process" in res.stdout
    assert "10 partitions verified" in res.stdout and "msm_b_g2" in res.stdout
    entries = check_manifest(out, snarkjs)
    assert sorted(e["partition"] for e in entries) == list(range(10))
    assert {e["proof_id"] for e in entries} == {"proof-000"}
    assert all(e["synthesis_node"] and e["prover_node"] for e in entries)
    # Negative twin: snarkjs rejects a tampered proof from this run.
    e = entries[4]
    proof = json.loads((out / e["proof"]).read_text())
    proof["pi_c"], proof["pi_a"] = proof["pi_a"], proof["pi_c"]
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    assert not snarkjs_verify(snarkjs, out / e["verification_key"], out / e["public"], tmp_path / "bad.json")


def test_batch_with_overrides(tmp_path, cache_dir):
    out = tmp_path / "out"
    res = run_job(f"output_dir={out}", f"cache_dir={cache_dir}", "proofs=2", "pw=3", "seed=7",
                  "circuit.partitions=3", "circuit.constraints=256", "backend=cpu", "engine=ray")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "created by the INSECURE dev setup" in res.stdout
    entries = check_manifest(out)
    assert [(e["proof_id"], e["partition"]) for e in entries] == [
        (f"proof-{p:03d}", k) for p in range(2) for k in range(3)]
    publics = {json.dumps(json.loads((out / e["public"]).read_text())) for e in entries}
    assert len(publics) == 6  # every partition has its own witness
    assert {"synthesis", "h", "msm_h", "verify"} <= set(entries[0]["seconds"])
    assert (out / ".hydra" / "config.yaml").is_file()  # Hydra's logs go to output_dir
    # A second run finds the key cached.
    res2 = run_job(f"output_dir={tmp_path / 'out2'}", f"cache_dir={cache_dir}", "circuit.partitions=1",
                   "circuit.constraints=256")
    assert res2.returncode == 0 and "(cached" in res2.stdout


def test_unknown_key_is_rejected(tmp_path, cache_dir):
    res = run_job("pww=3", f"output_dir={tmp_path / 'o'}", f"cache_dir={cache_dir}")
    assert res.returncode == 2  # one line, before Hydra writes anything (issue 17)
    assert res.stderr.strip().splitlines() == ["error: pww=3: pww is not a key of the job (cuzk_ray/config.py "
                                               "lists them); did you mean pw=...?"]
    assert not (tmp_path / "o" / "manifest.json").exists()


def test_bad_circuit_size_is_one_line_error(tmp_path, cache_dir):
    res = run_job("circuit.constraints=16", f"output_dir={tmp_path / 'o'}", f"cache_dir={cache_dir}")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == (
        "error: circuit.constraints=16: too small for 4 public inputs (need >= 64)")
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "o" / "manifest.json").exists()


@pytest.mark.parametrize("override,message", [
    ("setup_backend=gpu", "error: setup_backend='gpu' is not one of cpu, cuda, auto"),
    ("gpu_concurrency=0", "error: gpu_concurrency=0: must be at least 1"),
])
def test_bad_engine_settings_are_one_line_errors(tmp_path, cache_dir, override, message):
    res = run_job(override, "circuit.constraints=256", "circuit.partitions=1", f"output_dir={tmp_path / 'o'}",
                  f"cache_dir={cache_dir}")
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines()[-1] == message and "Traceback" not in res.stderr
    assert not (tmp_path / "o" / "manifest.json").exists() and not (tmp_path / "o" / "proofs").exists()


def test_failed_run_leaves_no_manifest(tmp_path, cache_dir):
    out = tmp_path / "o"
    out.mkdir()
    (out / "manifest.json").write_text('{"proofs": []}')  # from an earlier run (overwrite=true: removed)
    res = run_job("backend=cuda", "circuit.constraints=256", "circuit.partitions=1", f"output_dir={out}",
                  f"cache_dir={cache_dir}", "overwrite=true")
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("error: backend=cuda:")
    assert not (out / "manifest.json").exists()


def test_local_engine_writes_the_same_contract(tmp_path, cache_dir, snarkjs):
    out = tmp_path / "out"
    res = run_job("engine=local", f"output_dir={out}", f"cache_dir={cache_dir}", "proofs=2",
                  "circuit.partitions=2", "circuit.constraints=256")
    assert res.returncode == 0, res.stdout + res.stderr
    entries = check_manifest(out, snarkjs)
    assert [(e["proof_id"], e["partition"]) for e in entries] == [
        ("proof-000", 0), ("proof-000", 1), ("proof-001", 0), ("proof-001", 1)]
    assert {e["prover_node"] for e in entries} == {"local"}
    res = run_job("engine=spark", f"output_dir={tmp_path / 'o2'}", f"cache_dir={cache_dir}")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1] == "error: engine='spark' is not one of auto, ray, local"


def test_constraints_as_a_power_of_two_as_the_readme_writes_it(tmp_path, cache_dir):
    """`circuit.constraints=2^k` (and 2**k) is the number; Hydra's own grammar has no '^' (issue 28)."""
    out = tmp_path / "out"
    res = run_job("circuit.constraints=2^8", "circuit.partitions=1", f"output_dir={out}",
                  f"cache_dir={cache_dir}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "engine: local (auto: no cluster given and 1 partition(s) x 2^8 fits one process" in res.stdout
    assert json.loads((out / "manifest.json").read_text())["run"]["circuit_id"].startswith("porep-c256-")
    res = run_job("circuit.constraints=2**8", "--cfg", "job")
    assert res.returncode == 0 and "  constraints: 256\n" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("override,message", [
    ("circuit.constraints=2^x", "error: bad override: LexerNoViableAltException: circuit.constraints=2^x "
                                "(unexpected '^'; quote such a value: key='...')"),
    ("pw=abc", "error: bad override: Error merging override pw=abc: Value 'abc' of type 'str' could not be "
               "converted to Integer"),
    ("circuit.constraints=2^64", "error: circuit.constraints=2^64: 2^64 is larger than an int64 "
                                 "(9223372036854775807)"),
    ("output_dir=", "error: output_dir= is empty: name a folder for the run (default outputs/prove); an empty one "
                    "would write it into the current directory"),
])
def test_every_bad_override_is_one_line_and_writes_nothing(tmp_path, override, message):
    """Negative twins of the test above: bad syntax, a wrong type, a power too large, an empty
    output_dir: one line, exit 2 (Hydra's own were many lines and exit 1, after writing .hydra/)."""
    res = run_job(override, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [message]
    assert list(tmp_path.iterdir()) == []  # nothing written where it ran (output_dir= wrote .hydra/ there)
