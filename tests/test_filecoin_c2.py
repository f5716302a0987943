"""Filecoin's C2 end to end on the CPU (filecoin/c2.py, circuits/filecoin.py, ``cuzk-ray filecoin c2``):
a sealed 2 KiB sector -> C1 -> c2 with a development .params -> a MultiProof that ``cuzk-ray
filecoin verify`` accepts, and that fails with another comm_r or a tampered proof byte.

The partition circuit here is the ``inputs`` stand-in (circuit/inputs_standin.py: the real
partition's 39 public inputs and its comm_r = Poseidon2(comm_c, comm_r_last) check, ~400
constraints), for the command's many paths; the real 2 KiB circuit (2.69M constraints, a
development key of ~10M points) is proved once, end to end, in tests/test_filecoin_c2_real.py.
The public inputs the verifier uses are derived from the sector's data by part 1's code
(``porep_public_inputs``), not taken from the prover.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuzk_ray.filecoin import c2, fr32, registry, seal
from cuzk_ray.filecoin.c1 import read_c1, write_c1
from cuzk_ray.filecoin.commands import main
from cuzk_ray.filecoin.parameters_json import published_key_names

PROVER_ID, SECTOR_ID, TICKET, SEED = bytes(31) + b"\x07", 77, bytes([12]) * 32, bytes([13]) * 32
PROOF = "StackedDrg2KiBV1_1"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """(folder, C1 path, cache dir) of a sealed 2 KiB sector."""
    root = tmp_path_factory.mktemp("c2")
    piece = bytearray(fr32.unpadded_size(2048))
    piece[0] = 3
    sector = seal.seal_sector(bytes(piece), registry.registered_seal_proof(PROOF), PROVER_ID, SECTOR_ID, TICKET)
    write_c1(seal.commit_phase1(sector, SEED), root / "c1.json")
    return root, root / "c1.json", root / "cache"


@pytest.fixture(scope="module")
def proved(sealed):
    """The c2 command's MultiProof and the dev .vk it was made with."""
    root, c1, cache = sealed
    out = root / "proof.bin"
    assert main(["c2", str(c1), "--variant", "inputs", "--cache-dir", str(cache), "-o", str(out)]) == 0
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "inputs")
    return out, c2.dev_key_files(setup, cache)[1]


def verify_args(c1_path, proof, vk, comm_r: bytes | None = None, sector_id: int = SECTOR_ID) -> list[str]:
    c1 = read_c1(c1_path)
    return ["verify", str(proof), "--vk", str(vk), "--registered-proof", PROOF, "--comm-r", (comm_r or c1.comm_r).hex(),
            "--comm-d", c1.comm_d.hex(), "--prover-id", PROVER_ID.hex(), "--sector-id", str(sector_id),
            "--ticket", TICKET.hex(), "--seed", SEED.hex()]


def test_c2_multiproof_verifies_with_cuzk_ray_filecoin_verify(sealed, proved, capsys):
    _, c1, _ = sealed
    proof, vk = proved
    assert proof.stat().st_size == 192 and not list(proof.parent.glob(".cuzk-ray-c2-*"))  # scratch removed
    capsys.readouterr()
    assert main(verify_args(c1, proof, vk)) == 0
    assert capsys.readouterr().out.strip() == "OK"


def test_c2_multiproof_fails_with_another_comm_r(sealed, proved, capsys):
    _, c1, _ = sealed
    proof, vk = proved
    comm_r = bytearray(read_c1(c1).comm_r)
    comm_r[0] ^= 1  # still a field element: another sector's comm_r
    capsys.readouterr()
    assert main(verify_args(c1, proof, vk, bytes(comm_r))) == 1
    assert capsys.readouterr().out.strip() == "INVALID"


@pytest.mark.parametrize("byte", [10, 100, 150])  # in A, in B, in C
def test_c2_multiproof_with_a_tampered_byte_fails(sealed, proved, tmp_path, capsys, byte):
    _, c1, _ = sealed
    proof, vk = proved
    data = bytearray(proof.read_bytes())
    data[byte] ^= 0x01
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(verify_args(c1, bad, vk)) in (1, 2)  # INVALID, or a point that is no longer on the curve
    assert "OK" not in capsys.readouterr().out


def test_check_multiproof_refuses_a_proof_of_another_c1(sealed, proved, tmp_path):
    root, c1_path, _ = sealed
    proof, vk = proved
    from cuzk_ray.filecoin.params import read_vk
    from cuzk_ray.filecoin.proofs import multiproof_from_bytes

    c1 = read_c1(c1_path)
    proofs = multiproof_from_bytes(proof.read_bytes())
    c2.check_multiproof(read_vk(vk), c1, proofs)  # the positive twin: no error
    other = c1.__class__(**{**c1.__dict__, "seed": bytes([14]) * 32})  # other challenges
    with pytest.raises(ValueError, match=r"partition\(s\) 0 do not verify"):
        c2.write_multiproof(tmp_path / "x.bin", read_vk(vk), other, proofs)
    assert not (tmp_path / "x.bin").exists()


def test_the_job_path_writes_a_verified_seal_proof(sealed, proved, tmp_path):
    _, c1, cache = sealed
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, str(REPO / "jobs" / "prove.py"), "circuit=filecoin", f"circuit.c1={c1}",
                        "circuit.variant=inputs", f"cache_dir={cache}", f"output_dir={out}", "backend=cpu"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "INSECURE" in r.stdout + r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    seal_proof = manifest["seal_proofs"]["c1"]  # beside the run info, by proof id (the C1's name)
    assert seal_proof["verified"] and (out / seal_proof["path"]).stat().st_size == 192
    assert seal_proof["c1"] == str(c1)
    assert [e["partition"] for e in manifest["proofs"]] == [0] and manifest["proofs"][0]["verified"]


def prove_job(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "jobs" / "prove.py"), "circuit=filecoin",
                           "circuit.variant=inputs", "backend=cpu", *map(str, args)],
                          capture_output=True, text=True, timeout=180)


def test_the_job_proves_a_folder_of_c1s_each_to_its_own_multiproof(sealed, proved, tmp_path, capsys):
    """circuit.c1=DIR: every .json in the folder is one proof of one run (one engine start-up for
    many sectors); each MultiProof verifies with ``filecoin verify`` against its own sector and is
    refused with the other sector's comm_r (their proofs were not swapped or mixed)."""
    _, c1, cache = sealed
    _, vk = proved
    folder = tmp_path / "c1s"
    folder.mkdir()
    shutil.copy(c1, folder / "a.json")
    piece = bytearray(fr32.unpadded_size(2048))
    piece[0] = 9
    other = seal.seal_sector(bytes(piece), registry.registered_seal_proof(PROOF), PROVER_ID, SECTOR_ID + 1, TICKET)
    write_c1(seal.commit_phase1(other, SEED), folder / "b.json")
    (folder / "notes.txt").write_text("not a C1: only .json files are taken")
    out = tmp_path / "run"
    r = prove_job(f"circuit.c1={folder}", f"cache_dir={cache}", f"output_dir={out}")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "2 proof(s) x 1 partition(s)" in r.stdout + r.stderr
    seals = json.loads((out / "manifest.json").read_text())["seal_proofs"]
    assert sorted(seals) == ["a", "b"] and all(s["verified"] for s in seals.values())
    proof_a, proof_b = (out / seals[n]["path"] for n in ("a", "b"))
    comm_r_b = read_c1(folder / "b.json").comm_r
    capsys.readouterr()
    assert main(verify_args(folder / "a.json", proof_a, vk)) == 0
    assert main(verify_args(folder / "b.json", proof_b, vk, sector_id=SECTOR_ID + 1)) == 0
    assert main(verify_args(folder / "a.json", proof_a, vk, comm_r_b)) == 1  # the negative twin
    assert main(verify_args(folder / "b.json", proof_a, vk, sector_id=SECTOR_ID + 1)) == 1  # a's proof as b's
    assert capsys.readouterr().out.split() == ["OK", "OK", "INVALID", "INVALID"]


def test_each_multiproof_is_written_once_its_c1s_partitions_are_on_disk(sealed, proved, tmp_path):
    """SealProofWriter (the job's progress callback feeds it): a C1's MultiProof is written in the
    background as soon as its last partition is on disk, not after the run's last partition; the
    others at finish (resume: C1s completed by an earlier run); none for a C1 with a partition
    missing. The bytes are the job's own, verified again here by ``filecoin verify``."""
    from cuzk_ray.circuits.filecoin import FilecoinCircuit, SealProofWriter
    from cuzk_ray.outputs import ManifestEntry

    _, c1, cache = sealed
    _, vk = proved
    folder = tmp_path / "c1s"
    folder.mkdir()
    for name in ("a", "b", "c"):
        shutil.copy(c1, folder / f"{name}.json")
    out = tmp_path / "run"
    r = prove_job(f"circuit.c1={folder}", f"cache_dir={cache}", f"output_dir={out}")
    assert r.returncode == 0, r.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    job_seals = manifest["seal_proofs"]
    entries = {(e["proof_id"], e["partition"]): ManifestEntry.from_json(e) for e in manifest["proofs"]
               if e["proof_id"] != "c"}  # c: its partition missing, as after a failed run
    for name in ("a", "b", "c"):
        (out / job_seals[name]["path"]).unlink()
    circuit = FilecoinCircuit.from_config({"c1": str(folder), "variant": "inputs"})
    circuit.load_key(cache)  # the cached dev key: its .vk path for the writer
    writer = SealProofWriter(circuit, out)
    writer.partition_done(0, entries)  # a's only partition: its MultiProof starts now
    a, b = (out / job_seals[n]["path"] for n in ("a", "b"))
    for _ in range(600):
        if a.exists():
            break
        time.sleep(0.05)
    assert a.exists() and not b.exists()  # b's waits for finish, which the job calls at the end
    seals = writer.finish(entries)["seal_proofs"]
    assert sorted(seals) == ["a", "b"] and b.exists()  # c has no MultiProof: a partition is missing
    assert all(seals[n]["sha256"] == job_seals[n]["sha256"] and seals[n]["verified"] for n in ("a", "b"))
    assert main(verify_args(folder / "a.json", a, vk)) == 0


def test_an_interrupted_run_lists_the_multiproofs_it_wrote(sealed, proved, tmp_path):
    """Ctrl-C after the first C1's MultiProof is on disk: the partial manifest lists every
    MultiProof the run wrote (each on disk, its digest, verified), none it did not; before, it
    listed none, though they were on disk."""
    from interrupt import interrupt_mid_batch, start

    _, c1, cache = sealed
    _, vk = proved
    folder = tmp_path / "c1s"
    folder.mkdir()
    names = [f"s{i}" for i in range(8)]
    for name in names:
        shutil.copy(c1, folder / f"{name}.json")
    out = tmp_path / "run"
    job = start([sys.executable, str(REPO / "jobs" / "prove.py"), "circuit=filecoin", "circuit.variant=inputs",
                 "backend=cpu", "engine=local", f"circuit.c1={folder}", f"cache_dir={cache}", f"output_dir={out}"])
    deadline = time.monotonic() + 150
    while not list(out.glob("proofs/*/seal_proof.bin")) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    interrupt_mid_batch(job, out, k=1)
    manifest = json.loads((out / "manifest.partial.json").read_text())
    on_disk = sorted(p.parent.name for p in out.glob("proofs/*/seal_proof.bin"))
    seals = manifest.get("seal_proofs", {})
    assert 1 <= len(on_disk) < len(names) and sorted(seals) == on_disk, (on_disk, seals)
    for name, record in seals.items():
        path = out / record["path"]
        assert record["verified"] and record["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert sum(e["proof_id"] == name for e in manifest["proofs"]) == 1  # its one partition, listed too
    first = out / seals[on_disk[0]]["path"]
    assert main(verify_args(folder / f"{on_disk[0]}.json", first, vk)) == 0
    assert main(verify_args(folder / f"{on_disk[0]}.json", first, vk, sector_id=SECTOR_ID + 1)) == 1  # its twin


def test_c1s_of_two_registered_proofs_in_one_run_are_refused_in_one_line(sealed, tmp_path):
    """Two registered proofs need two keys: refused before anything is written, naming a C1 of each."""
    _, c1, cache = sealed
    folder = tmp_path / "c1s"
    folder.mkdir()
    shutil.copy(c1, folder / "a.json")
    obj = json.loads(c1.read_text())
    (folder / "b.json").write_text(json.dumps({**obj, "registered_proof": "StackedDrg2KiBV1"}))
    out = tmp_path / "run"
    r = prove_job(f"circuit.c1=[{folder / 'a.json'},{folder / 'b.json'}]", f"cache_dir={cache}", f"output_dir={out}")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert "b.json is a StackedDrg2KiBV1 C1" in lines[0] and "a.json a StackedDrg2KiBV1_1 one" in lines[0], lines[0]
    empty = tmp_path / "empty"
    empty.mkdir()
    r = prove_job(f"circuit.c1={empty}", f"cache_dir={cache}", f"output_dir={out}")
    assert r.returncode == 2 and "the folder holds no .json files" in r.stderr, r.stderr[-2000:]
    assert not (out / "manifest.json").exists() and not (out / "proofs").exists()


def test_a_c1_is_read_once_however_often_it_is_checked(sealed, tmp_path, monkeypatch):
    """The service checks a request's C1 several times (its key id, its partitions, the fitting), and
    a run checked every C1 twice (from_config, load_key): at 32 GiB each read is ~1.7 s of JSON, and
    the service's POSTs came 3.1-3.4 s apart on an H100 box. Now read once per file content; a C1
    rewritten in place is read again and its new fault named."""
    from cuzk_ray.circuits.filecoin import FilecoinCircuit
    from cuzk_ray.filecoin import c1 as c1_module
    from cuzk_ray.service.keys import key_circuit, key_id

    _, c1, cache = sealed
    path = tmp_path / "c1.json"
    shutil.copy(c1, path)
    reads, real = [], c1_module.read_c1
    monkeypatch.setattr(c1_module, "read_c1", lambda p: reads.append(str(p)) or real(p))
    request = {"kind": "filecoin-c2", "c1": str(path), "params": None, "variant": "inputs"}
    assert key_id(request, 0) == f"filecoin-inputs-{PROOF}-setup0"
    assert key_circuit(request).partitions == 1
    circuit = FilecoinCircuit.from_config({"c1": [str(path), str(path)], "variant": "inputs"})
    circuit.load_key(cache, setup_backend="cpu")
    assert reads == [str(path)]
    obj = json.loads(path.read_text())
    (vanilla,) = obj["vanilla_proofs"].values()
    path.write_text(json.dumps({**obj, "vanilla_proofs": {k: vanilla * 2 for k in obj["vanilla_proofs"]}}))
    with pytest.raises(ValueError, match=r"c1.json: vanilla_proofs holds 2 partition\(s\), StackedDrg2KiBV1_1 has 1"):
        key_id(request, 0)
    assert reads == [str(path)] * 2


# --- bad input: one line, exit 2 ---------------------------------------------------------------------------


def c2_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cuzk_ray.cli", "filecoin", "c2", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def one_line_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_c1_params_and_partitions_are_one_line_errors(sealed, tmp_path):
    _, c1, cache = sealed
    obj = json.loads(c1.read_text())
    missing = tmp_path / "missing.json"
    missing.write_text(json.dumps({k: v for k, v in obj.items() if k != "comm_r"}))
    one_line_error(c2_cli(missing, "-o", tmp_path / "p.bin", "--cache-dir", cache), "comm_r")
    one_line_error(c2_cli(tmp_path, "-o", tmp_path / "p.bin", "--cache-dir", cache), "not a file",
                   "circuit.c1=DIR")  # a folder: the job's many-C1 form, not c2's one proof
    two = tmp_path / "two.json"
    (vanilla,) = obj["vanilla_proofs"].values()
    two.write_text(json.dumps({**obj, "vanilla_proofs": {k: vanilla * 2 for k in obj["vanilla_proofs"]}}))
    one_line_error(c2_cli(two, "--variant", "inputs", "-o", tmp_path / "p.bin", "--cache-dir", cache),
                   "holds 2 partition(s)", "has 1")
    params_dir = tmp_path / "params"
    params_dir.mkdir()
    one_line_error(c2_cli(c1, "--variant", "inputs", "--params", params_dir, "-o", tmp_path / "p.bin",
                          "--cache-dir", cache), "no v28-", ".params")
    params_name, vk_name = published_key_names(2048)
    (params_dir / params_name).write_bytes(b"\0" * 1000)  # the published name, not its bytes
    (params_dir / vk_name).write_bytes(b"\0" * 100)
    one_line_error(c2_cli(c1, "--variant", "inputs", "--params", params_dir, "-o", tmp_path / "p.bin",
                          "--cache-dir", cache), params_name, "does not match parameters.json")
    assert not (tmp_path / "p.bin").exists()


def test_a_dev_params_file_of_the_wrong_size_is_named(sealed, proved, tmp_path):
    _, _, cache = sealed
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "inputs")
    params, _ = c2.ensure_dev_params(setup, cache)  # the dev key as a .params file (c2 maps a bundle)
    cut = tmp_path / "cut.params"
    cut.write_bytes(params.read_bytes()[:-50])
    with pytest.raises(ValueError, match=r"cut.params: .*truncated"):
        c2.load_params(cut, setup)
    c2.load_params(params, setup)  # the whole file loads


# --- selftest, with development files standing in for the published ones ------------------------------------


@pytest.fixture
def published_dev_files(sealed, tmp_path, monkeypatch):
    """A folder with the 2 KiB stand-in circuit's dev .params/.vk under the published names, and a
    function that makes parameters.json's table carry their digests (as if they were published)."""
    from cuzk_ray.filecoin import parameters_json as pj

    _, _, cache = sealed
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "inputs")
    params, vk = c2.dev_key_files(setup, cache)
    c2.ensure_dev_params(setup, cache)
    folder = tmp_path / "params"
    folder.mkdir()
    names = published_key_names(2048)
    for src, name in zip((params, vk), names):
        (folder / name).write_bytes(src.read_bytes())

    def publish():
        for name in names:
            entry = pj.PUBLISHED_FILES[name]
            monkeypatch.setitem(pj.PUBLISHED_FILES, name, pj.PublishedFile(name, entry.sector_size, entry.cid,
                                                                           pj.file_digest(folder / name)))
    return folder, cache, publish


def selftest(capsys, folder, cache) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["selftest", "--params", str(folder), "--cache-dir", str(cache), "--variant", "inputs"])
    return code, capsys.readouterr().out.strip()


def test_selftest_says_compatible_for_files_that_fit(published_dev_files, capsys):
    folder, cache, publish = published_dev_files
    publish()
    code, out = selftest(capsys, folder, cache)
    assert code == 0 and out.startswith("compatible: a fresh 2 KiB sector's partition (391 constraints)"), out


def test_selftest_says_not_compatible_and_why(published_dev_files, capsys, sealed):
    folder, cache, publish = published_dev_files
    code, out = selftest(capsys, folder, cache)  # the dev files' digests are not parameters.json's
    assert code == 1 and out.startswith("NOT compatible: ") and "does not match parameters.json" in out, out
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "inputs")
    c2.ensure_dev_params(setup, cache, setup_seed=1)
    params_name, vk_name = published_key_names(2048)
    (folder / vk_name).write_bytes(c2.dev_key_files(setup, cache, 1)[1].read_bytes())  # another key's .vk
    publish()
    code, out = selftest(capsys, folder, cache)
    assert code == 1 and out == f"NOT compatible: {vk_name} is not the verifying key inside {params_name}", out
    (folder / params_name).unlink()
    code, out = selftest(capsys, folder, cache)
    assert code == 1 and out.startswith("NOT compatible: ") and "missing" in out, out


def test_overwrite_removes_an_earlier_seal_proof(sealed, tmp_path):
    from cuzk_ray.outputs import SEAL_PROOF, OutputDir

    run = tmp_path / "run"
    (run / "proofs" / "c1").mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    (run / "proofs" / "c1" / SEAL_PROOF).write_bytes(bytes(192))
    (run / "proofs" / "c1" / "mine.txt").write_text("the user's")  # not the contract's: kept
    with OutputDir.open(run, overwrite=True) as out:
        assert out.removed == 2
    assert not (run / "proofs" / "c1" / SEAL_PROOF).exists() and (run / "proofs" / "c1" / "mine.txt").exists()


def test_the_dev_key_bundle_is_the_dev_params_key(sealed, proved):
    """ensure_dev_bundle (the dev key of c2 and circuit=filecoin: mapped by the prover actors, none
    in Ray's object store) holds the key ensure_dev_params writes as .params, array for array, and
    the same .vk; a bundle tagged with another H convention is refused naming it. (Seed 2: a key
    neither c2 run of this module made.)"""
    import numpy as np

    from cuzk_ray.groth16.keys import ProvingKey

    _, _, cache = sealed
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "inputs")
    params, made = c2.ensure_dev_params(setup, cache, setup_seed=2)
    vk = c2.dev_key_files(setup, cache, 2)[1]
    assert made and not params.with_suffix(".bundle").exists()
    vk_bytes = vk.read_bytes()
    from_params = c2.load_params(params, setup)
    pk, vk_path, made = c2.ensure_dev_bundle(setup, cache, setup_seed=2)
    assert made and vk_path == vk and vk.read_bytes() == vk_bytes
    assert pk.qap == "bellperson" and pk.meta["bundle_path"] and pk.domain_size == from_params.domain_size
    for name in ProvingKey.QUERIES + ProvingKey.DENSITIES:
        assert np.array_equal(getattr(pk, name), getattr(from_params, name)), name
    for name in ProvingKey.VK_ARRAYS:
        assert np.array_equal(getattr(pk.vk, name), getattr(from_params.vk, name)), name
    assert c2.ensure_dev_bundle(setup, cache, setup_seed=2)[2] is False  # cached
    mf = Path(pk.meta["bundle_path"]) / "manifest.json"
    manifest = json.loads(mf.read_text())
    manifest["meta"]["qap"] = "snarkjs"
    mf.write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"-setup2\.bundle: proving key: h_query has 511 points, expected a power"):
        c2.ensure_dev_bundle(setup, cache, setup_seed=2)


def test_a_params_key_is_decoded_once_into_a_mapped_bundle(sealed, proved, tmp_path):
    """c2.mapped_params (what c2 and circuit=filecoin load with --params): the .params' key, array for array as
    load_params decodes it, from a bundle made once and made again when the .params changes; a
    truncated .params is refused naming it, and leaves no bundle."""
    import os

    import numpy as np

    from cuzk_ray.filecoin.params import ParamsError
    from cuzk_ray.groth16.keys import ProvingKey

    _, _, cache = sealed
    setup = c2.circuit_setup(registry.registered_seal_proof(PROOF), cache, "inputs")
    params = tmp_path / "k.params"
    params.write_bytes(c2.ensure_dev_params(setup, cache)[0].read_bytes())
    want = c2.load_params(params, setup)
    pk = c2.mapped_params(params, setup, tmp_path / "cache")
    bundle = Path(pk.meta["bundle_path"])
    assert bundle.name == "k.params.bundle" and pk.qap == "bellperson"
    for name in ProvingKey.QUERIES + ProvingKey.DENSITIES:
        assert np.array_equal(getattr(pk, name), getattr(want, name)), name
    for name in ProvingKey.VK_ARRAYS:
        assert np.array_equal(getattr(pk.vk, name), getattr(want.vk, name)), name
    made = (bundle / "manifest.json").stat().st_mtime_ns
    assert c2.mapped_params(params, setup, tmp_path / "cache").meta["bundle_path"] == str(bundle)
    assert (bundle / "manifest.json").stat().st_mtime_ns == made  # found, not decoded again
    os.utime(params, ns=(made + 10**9, made + 10**9))
    c2.mapped_params(params, setup, tmp_path / "cache")
    assert (bundle / "manifest.json").stat().st_mtime_ns != made  # another file there: decoded again
    short = tmp_path / "short.params"
    short.write_bytes(params.read_bytes()[:-96])
    with pytest.raises(ParamsError, match=r"short\.params: .*truncated"):
        c2.mapped_params(short, setup, tmp_path / "cache")
    assert not (tmp_path / "cache" / "keys" / "short.params.bundle").exists()


# --- the preflight, once the key is known ------------------------------------------------------------------


def test_a_loaded_filecoin_key_has_the_shape_the_preflight_checks(sealed, proved):
    """Before load_key a Filecoin circuit's sizes are unknown (None: the preflight waits); after it,
    key_shape is the mapped key's (its queries' lengths, the recording's non-zeros), so the job's
    second preflight checks VRAM, host memory and the object store with real numbers."""
    from cuzk_ray.circuits import make_circuit
    from cuzk_ray.preflight import Have, PreflightError, RunPlan, check

    _, c1, cache = sealed
    circuit = make_circuit({"kind": "filecoin", "c1": str(c1), "variant": "inputs"})
    assert circuit.key_shape() is None and not circuit.key_cached(cache)
    pk, cs, _ = circuit.load_key(cache)
    shape = circuit.key_shape()
    assert (shape.n_wires, shape.n_public, shape.domain) == (pk.n_wires, pk.n_public, pk.domain_size)
    assert shape.key_bytes == pk.nbytes  # every query and density index counted, nothing else
    assert (shape.nnz_a, shape.nnz_b, shape.nnz_c) == (cs.A.nnz, cs.B.nnz, cs.C.nnz)
    assert circuit.key_cached(cache) and circuit.key_bundle  # mapped: no disk to find, no object-store copy
    plan = RunPlan(pw=2, partition_host_bytes=1 << 20, backend="cuda", engine="ray", key_on_disk=False,
                   key_in_object_store=False)
    roomy = Have(disk_free=1 << 40, host_available=1 << 40, object_store=1 << 40, vram_free=1 << 40)
    assert all(n.fits for n in check(shape, plan, roomy))  # the positive twin
    short = Have(disk_free=1 << 40, host_available=1 << 40, object_store=1 << 40, vram_free=pk.nbytes // 2)
    with pytest.raises(PreflightError, match=r"^VRAM: need .*key .*, have "):
        check(shape, plan, short)


def test_the_job_refuses_a_filecoin_run_that_cannot_fit_before_ray_starts(sealed, proved, tmp_path):
    """circuit=filecoin: the preflight runs again once the key is mapped, and a run that cannot
    fit (here an object store too small for the partitions' batches) ends in one line, exit 2,
    with nothing written to output_dir."""
    _, c1, cache = sealed
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, str(REPO / "jobs" / "prove.py"), "circuit=filecoin", f"circuit.c1={c1}",
                        "circuit.variant=inputs", f"cache_dir={cache}", f"output_dir={out}", "backend=cpu",
                        "engine=ray", "ray.object_store_memory=1MiB"],
                       capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: object store: need"), r.stderr[-2000:]
    assert lines[0].endswith("have 1.0 MiB"), lines[0]
    assert not (out / "manifest.json").exists()
