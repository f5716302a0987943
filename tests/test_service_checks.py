"""The service's checks without Ray (issue 28): what a request may name and ask for
(service/checks.py), the locks that keep a second service off a database and output directory,
and a done proof's result read back when its files were changed on disk (service/results.py).
The same refusals over real HTTP are in tests/test_service.py."""

import json
import os
from pathlib import Path

import pytest

from cuzk_ray.errors import OutputError
from cuzk_ray.formats.native import file_sha256
from cuzk_ray.formats.regular import NotRegularFile
from cuzk_ray.service.checks import PARTITIONS_MAX, ServiceLocks, check_request
from cuzk_ray.service.models import Damaged, Forbidden, Gone, Invalid
from cuzk_ray.service.results import read_result
from cuzk_ray.service.service import service_settings

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "circom" / "linear"


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from cuzk_ray.config import register

    register()
    cache = tmp_path_factory.mktemp("cache")
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return OmegaConf.to_container(compose("config", overrides=[f"cache_dir={cache}"]), resolve=True)


def porep(**kw) -> dict:
    return {"kind": "porep", "constraints": 64, "partitions": 2, "public": 4, "circuit_seed": 0, "field_share": 0.05,
            "shape": "default", "seed": 0, "proof": 0, **kw}


def check(cfg, circuit, roots=(FIX,), resident=()):
    return check_request(circuit, cfg, service_settings(cfg), [Path(r) for r in roots], resident=resident)


def test_porep_sizes_are_checked_as_the_batch_job_checks_them(cfg):
    assert check(cfg, porep()) == ("porep-c64-p4-f0.05-s0-setup0", 2)
    assert check(cfg, porep(partitions=PARTITIONS_MAX)).partitions == PARTITIONS_MAX
    with pytest.raises(Invalid, match=r"^circuit\.partitions=1000000: at most 1024 per request"):
        check(cfg, porep(partitions=1_000_000))
    with pytest.raises(Invalid, match=r"^circuit\.constraints=1000: not a power of two .*512 or 1024"):
        check(cfg, porep(constraints=1000))


def test_a_key_this_machine_cannot_hold_is_refused_by_the_preflight_unless_resident(cfg):
    big = porep(constraints=1 << 30)
    with pytest.raises(Invalid, match=r"^circuit: key porep-c1073741824-\S+: host memory: need [\d.]+ GiB .*, "
                                      r"have [\d.]+ GiB"):
        check(cfg, big)
    kid = "porep-c1073741824-p4-f0.05-s0-setup0"
    assert check(cfg, big, resident={kid}) == (kid, 2)  # a resident key passed its preflight when it loaded


def snarkjs(**kw) -> dict:
    return {"kind": "snarkjs", "zkey": str(FIX / "linear.zkey"), "witness": str(FIX / "witness_1.wtns"), "r1cs": None,
            **kw}


def test_only_regular_files_inside_the_roots_are_opened(cfg, tmp_path):
    assert check(cfg, snarkjs()).partitions == 1
    fifo = tmp_path / "w.wtns"
    os.mkfifo(fifo)  # no writer: opening it for reading the usual way would wait for good
    with pytest.raises(Invalid, match=rf"^circuit\.witness={fifo}: a FIFO, not a regular file$"):
        check(cfg, snarkjs(witness=str(fifo)), roots=(FIX, tmp_path))
    with pytest.raises(Invalid, match=rf"^circuit\.zkey={tmp_path}: a directory, not a regular file$"):
        check(cfg, snarkjs(zkey=str(tmp_path)), roots=(FIX, tmp_path))
    with pytest.raises(Invalid, match=r"^circuit\.witness=/dev/zero: a character device"):
        check(cfg, snarkjs(witness="/dev/zero"), roots=(FIX, "/dev"))
    with pytest.raises(Forbidden, match=rf"^circuit\.witness={fifo}: outside service.input_roots"):
        check(cfg, snarkjs(witness=str(fifo)))  # outside the roots: refused before it is even looked at
    with pytest.raises(NotRegularFile):  # the readers themselves: a FIFO swapped in after the check
        file_sha256(fifo)


def test_a_second_service_is_refused_on_the_db_and_on_the_output_dir(tmp_path):
    db, out = tmp_path / "service.db", tmp_path / "proofs"
    out.mkdir()
    first = ServiceLocks(db, out)
    first.take()
    try:
        with pytest.raises(OutputError, match=rf"^service\.db={db} is in use by another job \(pid {os.getpid()} "
                                              rf"holds {db}\.lock\)"):
            ServiceLocks(db, tmp_path / "other").check()
        with pytest.raises(OutputError, match=rf"^service\.output_dir={out} is in use by another job \(pid "
                                              rf"{os.getpid()} holds {out}/\.cuzk-ray\.lock\)"):
            ServiceLocks(tmp_path / "other.db", out).take()
        ServiceLocks(tmp_path / "other.db", tmp_path / "other").take()  # the twin: other files are free
    finally:
        first.release()
    second = ServiceLocks(db, out)  # released: the next service takes both
    second.take()
    second.release()


def write_done(d: Path) -> None:
    """A minimal done proof's files in the output contract (one partition)."""
    (d / "proofs" / "p" / "partition-0").mkdir(parents=True)
    (d / "proofs" / "p" / "partition-0" / "proof.json").write_text('{"pi_a": ["1"]}')
    (d / "proofs" / "p" / "partition-0" / "public.json").write_text('["7"]')
    (d / "verification_key.json").write_text('{"protocol": "groth16"}')
    entry = {"partition": 0, "proof": "proofs/p/partition-0/proof.json", "public": "proofs/p/partition-0/public.json",
             "seconds": {"h": 0.1}, "synthesis_node": "n", "prover_node": "n"}
    (d / "manifest.json").write_text(json.dumps({"proofs": [entry], "verification_key": "verification_key.json",
                                                 "run": {"seed": 0}}))


def test_a_result_changed_on_disk_is_named_not_a_bug(tmp_path):
    write_done(tmp_path)
    res = read_result(tmp_path, "p")
    assert res["partitions"][0]["public"] == ["7"] and res["verification_key"] == {"protocol": "groth16"}
    proof = tmp_path / "proofs" / "p" / "partition-0" / "proof.json"
    proof.write_text("garbage, not JSON")
    with pytest.raises(Damaged, match=rf"^proof p: its result file {proof}: not valid JSON"):
        read_result(tmp_path, "p")
    proof.write_text("[" * 100_000)
    with pytest.raises(Damaged, match="nested too deeply"):
        read_result(tmp_path, "p")
    proof.unlink()
    with pytest.raises(Gone, match=rf"{proof} is gone"):
        read_result(tmp_path, "p")
    manifest = tmp_path / "manifest.json"
    manifest.write_text("[]")
    with pytest.raises(Damaged, match=rf"^proof p: {manifest} is not its manifest"):
        read_result(tmp_path, "p")
    manifest.write_text(json.dumps({"proofs": [], "verification_key": "../../etc/hostname"}))
    with pytest.raises(Damaged, match=r"names '\.\./\.\./etc/hostname', outside"):
        read_result(tmp_path, "p")


def test_a_key_is_fitted_and_checked_against_the_room_the_gpu_provers_measured(cfg):
    """The service fits and checks a key against the VRAM its GPU provers measured
    (Engine.device_room, passed in as ``vram``), not against this process's GPU (none here: the
    same checks without ``vram`` pass, see the other tests). A room that holds one partition's
    working set but not two lowers gpu_concurrency to 1 for that key; one byte less is refused
    naming the need and the room; enough for two keeps 2."""
    from dataclasses import replace

    from cuzk_ray.preflight import preflight_quick
    from cuzk_ray.service.keys import fitted, key_circuit

    circuit = porep(constraints=1 << 16)
    settings = replace(service_settings(cfg), backend="cuda", gpu_concurrency=2)
    base = key_circuit(circuit)

    def vram_need(gc: int) -> int:
        got = preflight_quick(replace(settings, gpu_concurrency=gc), base, cfg["cache_dir"], cfg["setup_seed"],
                              vram=1 << 50)
        return next(n.need for n in got if n.resource == "VRAM")

    one, two = vram_need(1), vram_need(2)
    assert one < two
    assert fitted(settings, base, cfg, vram=one).gpu_concurrency == 1
    assert fitted(settings, base, cfg, vram=two).gpu_concurrency == 2
    roots = [FIX]
    kid = "porep-c65536-p4-f0.05-s0-setup0"
    assert check_request(circuit, cfg, settings, roots, vram=one) == (kid, 2)
    with pytest.raises(Invalid, match=rf"^circuit: key {kid}: VRAM: need [\d.]+ GiB \(1 x key .*\), have [\d.]+ GiB$"):
        check_request(circuit, cfg, settings, roots, vram=one - 1)
