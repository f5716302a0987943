"""The `cuzk-ray` command and what a first-time user meets (issue 17): snarkjs's verbs against real
snarkjs, the batch form (files, a folder, a glob; proofs named after their witness files),
engine=auto's choice and its printed reason, +key= refused, a single unbracketed witness for
jobs/prove.py, SIGINT through the command. Every command is a real subprocess (exit code, last
line, what is on disk); every positive test has a negative twin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import snarkjs_verify, snarkjs_verify_many
from interrupt import interrupt_mid_batch, start

from cuzk_ray.curves import BN254

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "circom"
LINEAR = FIX / "linear"
pytestmark = pytest.mark.slow


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def cli(*args, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk_ray.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env())


def last(text: str) -> str:
    return text.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def tampered(proof: Path, dest: Path) -> Path:
    p = json.loads(proof.read_text())
    p["pi_a"], p["pi_c"] = p["pi_c"], p["pi_a"]
    dest.write_text(json.dumps(p))
    return dest


def test_groth16_prove_single_writes_exactly_proof_and_public_and_snarkjs_accepts(tmp_path, cache, snarkjs):
    res = cli("groth16", "prove", LINEAR / "linear.zkey", LINEAR / "witness_1.wtns", "proof.json", "public.json",
              f"cache_dir={cache}", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert last(res.stdout) == "wrote proof.json and public.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proof.json", "public.json"]  # the scratch folder is gone
    assert "engine: local (auto: no cluster given" in res.stdout
    assert json.loads((tmp_path / "public.json").read_text()) == json.loads((LINEAR / "public_1.json").read_text())
    assert snarkjs_verify(snarkjs, LINEAR / "verification_key.json", tmp_path / "public.json", tmp_path / "proof.json")
    # negative twins: snarkjs rejects the proof tampered, and against another witness's public inputs
    bad = tampered(tmp_path / "proof.json", tmp_path / "bad.json")
    assert not snarkjs_verify(snarkjs, LINEAR / "verification_key.json", tmp_path / "public.json", bad)
    assert not snarkjs_verify(snarkjs, LINEAR / "verification_key.json", LINEAR / "public_2.json",
                              tmp_path / "proof.json")


def test_groth16_prove_single_bad_witness_is_one_line_and_writes_nothing(tmp_path, cache):
    wrong = FIX / "pow2" / "witness_1.wtns"  # another circuit's witness: wire count differs
    res = cli("groth16", "prove", LINEAR / "linear.zkey", wrong, "proof.json", "public.json", f"cache_dir={cache}",
              cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert last(res.stderr).startswith("error: ") and "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("form", ["files", "folder", "glob"])
def test_batch_form_names_proofs_after_their_witness_files(tmp_path, cache, snarkjs, form):
    wdir = tmp_path / "w"
    wdir.mkdir()
    for k in (1, 2, 3):
        (wdir / f"input-{k}.wtns").write_bytes((LINEAR / f"witness_{k}.wtns").read_bytes())
    (wdir / "notes.txt").write_text("not a witness")
    given = {"files": [wdir / "input-1.wtns", wdir / "input-3.wtns"], "folder": [wdir],
             "glob": [str(wdir / "input-[12].wtns")]}[form]
    out = tmp_path / "out"
    res = cli("groth16", "prove", LINEAR / "linear.zkey", *given, "-o", out, f"cache_dir={cache}")
    assert res.returncode == 0, res.stdout + res.stderr
    want = {"files": ["input-1", "input-3"], "folder": ["input-1", "input-2", "input-3"],
            "glob": ["input-1", "input-2"]}[form]
    assert sorted(p.name for p in (out / "proofs").iterdir()) == want
    m = json.loads((out / "manifest.json").read_text())
    assert sorted(e["proof_id"] for e in m["proofs"]) == want
    for e in m["proofs"]:
        k = e["proof_id"][-1]
        assert Path(e["witness"]).name == f"input-{k}.wtns"
        assert json.loads((out / e["public"]).read_text()) == json.loads((LINEAR / f"public_{k}.json").read_text())
    triples = [(out / "verification_key.json", out / e["public"], out / e["proof"]) for e in m["proofs"]]
    assert snarkjs_verify_many(snarkjs, triples) == [True] * len(triples)
    # prove.log holds the run's lines (what stdout showed), with timestamps
    log = (out / "prove.log").read_text()
    assert "engine: local" in log and f"{len(want)} partitions proved and verified" in log
    # negative twin: a folder without witnesses is one line, nothing proved
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("groth16", "prove", LINEAR / "linear.zkey", empty, "-o", tmp_path / "out2", f"cache_dir={cache}")
    assert res.returncode == 2
    assert last(res.stderr) == f"error: circuit.witness={empty}: the folder holds no .wtns files"
    assert not (tmp_path / "out2" / "proofs").exists()


def test_groth16_verify_accepts_snarkjs_proofs_and_rejects_wrong_inputs(tmp_path):
    res = cli("groth16", "verify", LINEAR / "verification_key.json", LINEAR / "public_1.json", LINEAR / "proof_1.json")
    assert res.returncode == 0 and last(res.stdout).startswith("OK"), res.stdout + res.stderr
    res = cli("groth16", "verify", LINEAR / "verification_key.json", LINEAR / "public_2.json", LINEAR / "proof_1.json")
    assert res.returncode == 1 and last(res.stdout).startswith("INVALID"), res.stdout + res.stderr
    res = cli("groth16", "verify", LINEAR / "verification_key.json", LINEAR / "public_1.json", tmp_path / "none.json")
    assert res.returncode == 2 and last(res.stderr).startswith("error: ") and "Traceback" not in res.stderr


def test_zkey_export_verificationkey_is_byte_identical_to_snarkjs(tmp_path, snarkjs):
    for circuit in ("linear", "pow2", "bn254"):
        ours, theirs = tmp_path / f"{circuit}-ours.json", tmp_path / f"{circuit}-snarkjs.json"
        res = cli("zkey", "export", "verificationkey", FIX / circuit / f"{circuit}.zkey", ours)
        assert res.returncode == 0, res.stdout + res.stderr
        sj = snarkjs("zkey", "export", "verificationkey", str(FIX / circuit / f"{circuit}.zkey"), str(theirs))
        assert sj.returncode == 0, sj.stdout + sj.stderr
        assert ours.read_bytes() == theirs.read_bytes()
    # negative twin: a zkey of an unsupported prime is refused in one line, nothing written
    data = bytearray((FIX / "bn254" / "bn254.zkey").read_bytes())
    at = bytes(data).index(BN254.p.to_bytes(32, "little"))
    data[at] ^= 2  # q + 2: no supported curve's prime
    (tmp_path / "odd.zkey").write_bytes(bytes(data))
    bad = tmp_path / "bn.json"
    res = cli("zkey", "export", "verificationkey", tmp_path / "odd.zkey", bad)
    assert res.returncode == 2 and last(res.stderr).startswith("error: ") and not bad.exists()
    assert "a supported curve" in last(res.stderr), res.stderr


def test_plus_key_and_unknown_keys_are_refused_in_one_line(tmp_path):
    out = tmp_path / "out"
    for args, want in [(["prove", "+proof=2"], "error: +proof=2: proof is not a key of the job"),
                       (["prove", "proof=2"], "error: proof=2: proof is not a key of the job"),
                       (["prove", "++proofs=2"], "error: ++proofs=2: '++' adds a key, and proofs exists")]:
        res = cli(*args, f"output_dir={out}")
        assert res.returncode == 2, res.stdout + res.stderr
        assert last(res.stderr).startswith(want) and len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not out.exists()  # refused before anything was written
    # jobs/prove.py refuses it the same way, before Hydra writes output_dir/.hydra
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "+proof=2", f"output_dir={out}"],
                         capture_output=True, text=True, timeout=120, env=env())
    assert res.returncode == 2 and last(res.stderr).startswith("error: +proof=2: proof is not a key")
    assert not out.exists()
    # twin: the key spelled right is accepted (no '+')
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "proofs=2", "--cfg", "job"],
                         capture_output=True, text=True, timeout=120, env=env())
    assert res.returncode == 0 and re.search(r"^proofs: 2$", res.stdout, re.M), res.stdout + res.stderr


def test_empty_output_dir_is_refused_by_the_command(tmp_path):
    """`output_dir=` or `-o ''` would write the run into the working directory (issue 28)."""
    for args in (["prove", "output_dir="], ["prove", "-o", ""], ["groth16", "prove", LINEAR / "linear.zkey", LINEAR,
                                                               "-o", ""]):
        res = cli(*args, cwd=tmp_path)
        assert res.returncode == 2, res.stdout + res.stderr
        assert res.stderr.strip().splitlines() == ["error: output_dir= is empty: name a folder for the run (default "
                                                   "outputs/prove); an empty one would write it into the current "
                                                   "directory"]
        assert list(tmp_path.iterdir()) == []
    # twin: 2^k is taken by the command too (the same expansion as jobs/prove.py's)
    res = cli("prove", "circuit.constraints=2^x", cwd=tmp_path)
    assert res.returncode == 2 and last(res.stderr).startswith("error: bad override: LexerNoViableAltException")


def test_prove_job_takes_a_single_unbracketed_witness(tmp_path, cache):
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "circuit=snarkjs",
                          f"circuit.zkey={LINEAR / 'linear.zkey'}", f"circuit.witness={LINEAR / 'witness_2.wtns'}",
                          f"output_dir={out}", f"cache_dir={cache}"], capture_output=True, text=True, timeout=300,
                         env=env())
    assert res.returncode == 0, res.stdout + res.stderr
    assert (out / "proofs" / "witness_2" / "partition-0" / "proof.json").is_file()
    assert [p.name for p in (out / "proofs").iterdir()] == ["witness_2"]
    # twin: a witness that does not exist is one line naming it
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), "circuit=snarkjs",
                          f"circuit.zkey={LINEAR / 'linear.zkey'}", f"circuit.witness={tmp_path / 'nope.wtns'}",
                          f"output_dir={tmp_path / 'o2'}", f"cache_dir={cache}"], capture_output=True, text=True,
                         timeout=300, env=env())
    assert res.returncode == 2 and "nope.wtns" in last(res.stderr), res.stdout + res.stderr


@pytest.mark.ray
def test_engine_auto_goes_to_ray_when_ray_settings_are_given_and_ray_is_quiet(tmp_path, cache, snarkjs):
    """The other side of auto's rule (the local side is in the tests above): ray.num_cpus is an
    embedded Ray's setting, so auto runs Ray and says why; and Ray's start-up says nothing of its
    own (no token-auth WARNING, no core_worker.cc constructor-arguments line)."""
    out = tmp_path / "out"
    res = cli("groth16", "prove", LINEAR / "linear.zkey", LINEAR, "-o", out, f"cache_dir={cache}", "ray.num_cpus=2")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "engine: ray (auto: ray.num_cpus set, which only the Ray engine honours)" in res.stdout
    assert "Token authentication" not in res.stderr + res.stdout
    assert "core_worker" not in res.stderr + res.stdout and "WARNING" not in res.stderr + res.stdout, res.stderr
    assert re.search(r"^start-up: [0-9.]+ s \(Ray started or connected, provers ready\)", res.stdout, re.M)
    m = json.loads((out / "manifest.json").read_text())
    assert m["engine"] == "ray" and len(m["proofs"]) == 3
    e = m["proofs"][0]
    assert snarkjs_verify(snarkjs, out / "verification_key.json", out / e["public"], out / e["proof"])


def test_sigint_through_the_command_is_one_line_and_keeps_finished_proofs(tmp_path, cache):
    """Ctrl-C to `cuzk-ray prove` mid-batch: exit 130, one line, the verified partitions kept."""
    out = tmp_path / "out"
    job = start([sys.executable, "-m", "cuzk_ray.cli", "prove", "backend=cpu", "circuit.constraints=256",
                 "proofs=6", "circuit.partitions=2", f"output_dir={out}", f"cache_dir={cache}"], env=env())
    _, _, kept = interrupt_mid_batch(job, out)
    partial = json.loads((out / "manifest.partial.json").read_text())
    assert len(partial["proofs"]) == kept >= 3 and not (out / "manifest.json").exists()
