"""`jobs/prove.py circuit=snarkjs` and `jobs/verify.py` on circom 2 + snarkjs 0.7.6 fixtures
(tests/fixtures/make_fixtures.sh says how they were made): every proof checked by snarkjs and by
our verifier, snarkjs's own proofs checked by ours, and bad inputs rejected in one line."""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import snarkjs_verify

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "circom"
pytestmark = pytest.mark.slow


def job(*args, script="prove.py", timeout=600):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(ROOT / "jobs" / script), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env)


def prove_args(zkey, witnesses, out, cache, *extra):
    return ["circuit=snarkjs", f"circuit.zkey={zkey}", f"circuit.witness=[{','.join(map(str, witnesses))}]",
            f"output_dir={out}", f"cache_dir={cache}", *extra]


@pytest.mark.parametrize("name,count,engine", [("linear", 3, "ray"), ("pow2", 2, "local")])
def test_prove_fixture_batch(tmp_path, snarkjs, name, count, engine):
    """A batch of witnesses for one zkey; linear: negative coefficients, linear constraints, 2 public
    inputs and 2 outputs; pow2: constraints + public inputs = 8, so the domain doubles to 16."""
    d = FIX / name
    witnesses = [d / f"witness_{k}.wtns" for k in range(1, count + 1)]
    out = tmp_path / "out"
    res = job(*prove_args(d / f"{name}.zkey", witnesses, out, tmp_path / "cache", f"engine={engine}",
                          f"circuit.r1cs={d / f'{name}.r1cs'}"))
    assert res.returncode == 0, res.stdout + res.stderr
    entries = json.loads((out / "manifest.json").read_text())["proofs"]
    assert [e["witness"] for e in entries] == [str(w) for w in witnesses]
    for k, e in enumerate(entries, start=1):
        # public.json holds the witness's public values: the same as snarkjs's for that witness
        assert json.loads((out / e["public"]).read_text()) == json.loads((d / f"public_{k}.json").read_text())
        assert snarkjs_verify(snarkjs, out / e["verification_key"], out / e["public"], out / e["proof"])
    # our verifier over the whole manifest, and snarkjs rejects a proof paired with another's inputs
    v = job("--manifest", out / "manifest.json", script="verify.py")
    assert v.returncode == 0 and v.stdout.count("OK") == count, v.stdout + v.stderr
    assert not snarkjs_verify(snarkjs, out / entries[0]["verification_key"], out / entries[1]["public"],
                              out / entries[0]["proof"])
    # the exported verification key is the zkey's: snarkjs's own proofs verify against it
    theirs = job(out / "verification_key.json", d / "public_1.json", d / "proof_1.json", script="verify.py")
    assert theirs.returncode == 0


def test_second_run_uses_the_converted_key_cache(tmp_path):
    d = FIX / "linear"
    args = prove_args(d / "linear.zkey", [d / "witness_1.wtns"], tmp_path / "o", tmp_path / "cache", "engine=local")
    first, second = job(*args), job(*args, "overwrite=true")  # the same output_dir: told to replace it
    assert first.returncode == second.returncode == 0
    assert "converted from the zkey" in first.stdout and "converted key cached" in second.stdout


@pytest.mark.parametrize("name", ["linear", "pow2"])
def test_verify_accepts_snarkjs_proofs_and_rejects_tampered(tmp_path, name):
    d = FIX / name
    ok = job(d / "verification_key.json", d / "public_1.json", d / "proof_1.json", script="verify.py")
    assert ok.returncode == 0 and ok.stdout.startswith("OK"), ok.stdout + ok.stderr
    proof = json.loads((d / "proof_1.json").read_text())
    proof["pi_a"], proof["pi_c"] = proof["pi_c"], proof["pi_a"]
    (tmp_path / "bad.json").write_text(json.dumps(proof))
    bad = job(d / "verification_key.json", d / "public_1.json", tmp_path / "bad.json", script="verify.py")
    assert bad.returncode == 1 and bad.stdout.startswith("INVALID")
    wrong = job(d / "verification_key.json", d / "public_2.json", d / "proof_1.json", script="verify.py")
    assert wrong.returncode == 1


def test_verify_bad_file_is_one_line(tmp_path):
    (tmp_path / "p.json").write_text('{"pi_a": ["1", "2"]}')
    d = FIX / "linear"
    res = job(d / "verification_key.json", d / "public_1.json", tmp_path / "p.json", script="verify.py")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == f"error: {tmp_path / 'p.json'}: field pi_b is missing"


def _sections(data: bytes) -> dict:
    """id -> (offset of the section's length field, offset of its payload)."""
    n, pos, out = struct.unpack_from("<I", data, 8)[0], 12, {}
    for _ in range(n):
        sid, length = struct.unpack_from("<IQ", data, pos)
        out[sid] = (pos + 4, pos + 12)
        pos += 12 + length
    return out


def _copy(tmp_path, src, edit=None, name=None):
    data = bytearray(Path(src).read_bytes())
    if edit:
        data = edit(data)
    p = tmp_path / (name or Path(src).name)
    p.write_bytes(bytes(data))
    return p


def _lying_nvars(data):
    struct.pack_into("<I", data, _sections(data)[2][1] + 88, 10)  # nVars: 9 -> 10
    return data


BAD_INPUTS = {
    "truncated zkey": (lambda t: _copy(t, FIX / "linear/linear.zkey", lambda d: d[: len(d) // 2]), None,
                       ["linear.zkey", "truncated"]),
    "corrupt zkey": (lambda t: _copy(t, FIX / "linear/linear.zkey", lambda d: b"xxxx" + d[4:]), None,
                     ["linear.zkey", "magic"]),
    "witness of another curve": (lambda t: FIX / "bn254/bn254.zkey", None,
                                 ["linear/witness_1.wtns", "prime: expected BN254 (bn128) scalar field r (the curve "
                                  "of bn254.zkey)", "found BLS12-381 scalar field r"]),
    "BN254 witness for a BLS12-381 zkey": (lambda t: FIX / "linear/linear.zkey", FIX / "bn254/witness_1.wtns",
                                           ["bn254/witness_1.wtns", "expected BLS12-381 scalar field r (the curve of "
                                            "linear.zkey)", "found BN254 (bn128) scalar field r"]),
    "lying header": (lambda t: _copy(t, FIX / "linear/linear.zkey", _lying_nvars), None,
                     ["linear.zkey", "section 5 (A) length: expected 960 bytes"]),
    "missing zkey": (lambda t: t / "nowhere.zkey", None, ["nowhere.zkey: file not found"]),
    "witness of another circuit": (lambda t: FIX / "linear/linear.zkey", FIX / "pow2/witness_1.wtns",
                                   ["pow2/witness_1.wtns", "nWitness: expected 9 values", "another circuit"]),
    "missing witness": (lambda t: FIX / "linear/linear.zkey", Path("/nonexistent/w.wtns"),
                        ["/nonexistent/w.wtns: file not found"]),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, case):
    make_zkey, witness, fragments = BAD_INPUTS[case]
    zkey = make_zkey(tmp_path)
    witness = witness or FIX / "linear/witness_1.wtns"
    out = tmp_path / "out"
    res = job(*prove_args(zkey, [witness], out, tmp_path / "cache", "engine=local"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and all(f in last for f in fragments), last
    assert not (out / "manifest.json").exists() and not (out / "proofs").exists()
    assert not (out / "verification_key.json").exists()


def test_unsatisfied_witness_is_named(tmp_path):
    """A witness that does not satisfy the circuit: its proof does not verify and the error names it."""
    def edit(data):
        off = _sections(data)[2][1] + 32 * 8  # the last wire's value
        data[off] ^= 1
        return data

    bad = _copy(tmp_path, FIX / "linear/witness_2.wtns", edit, name="bad.wtns")
    res = job(*prove_args(FIX / "linear/linear.zkey", [bad], tmp_path / "out", tmp_path / "cache", "engine=local"))
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert str(bad) in last and "does not verify" in last, last
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_batch_with_one_bad_witness_writes_no_manifest(tmp_path):
    """One good and one unsatisfying witness: the good proof is written and listed in
    manifest.partial.json with the failure; no manifest.json (it means a complete batch); exit 2."""
    def edit(data):
        data[_sections(data)[2][1] + 32 * 8] ^= 1
        return data

    d = FIX / "linear"
    bad = _copy(tmp_path, d / "witness_2.wtns", edit, name="bad.wtns")
    out = tmp_path / "out"
    res = job(*prove_args(d / "linear.zkey", [d / "witness_1.wtns", bad], out, tmp_path / "cache", "engine=local"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert str(bad) in res.stderr.strip().splitlines()[-1]
    assert not (out / "manifest.json").exists()
    partial = json.loads((out / "manifest.partial.json").read_text())
    assert partial["complete"] is False and list(partial["failed"]) == [f"witness {bad}"]
    assert [e["witness"] for e in partial["proofs"]] == [str(d / "witness_1.wtns")]
    v = job("--manifest", out / "manifest.partial.json", script="verify.py")
    assert v.returncode == 1 and "OK" in v.stdout and "records failed proofs" in v.stderr
