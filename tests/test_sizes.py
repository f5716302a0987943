"""Sizes checked before allocation (issue 15 item 4), from headers, against the machine: an .r1cs
whose header claims 2^24 constraints, circuit.constraints beyond the machine or the field, and the
zkey preflight (from the zkey's headers, queries counted dense). Jobs run under a 2 GiB address
space limit: what they allocated before (3.4 GB for the r1cs, the density draws, 3.74 TiB at 2^40)
would end in a MemoryError traceback; the twins show a real run fits in the same limit."""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from cuzk_ray.circuits import SnarkjsCircuit
from cuzk_ray.field import R_MOD
from cuzk_ray.formats.snarkjs import FormatError, read_r1cs
from cuzk_ray.preflight import GIB, Have, PreflightError, RunPlan, check, preflight

ROOT = Path(__file__).resolve().parent.parent
LINEAR = ROOT / "tests" / "fixtures" / "circom" / "linear"
ADDRESS_SPACE = 2 * GIB
HYDRA_ONLY = {".hydra", "prove.log", ".cuzk-ray.lock"}  # written by Hydra and the lock before the job runs


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def job(*args, limit=True, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=env, preexec_fn=limited if limit else None)


def last_line(res) -> str:
    return res.stderr.strip().splitlines()[-1]


def refused(res, out: Path) -> str:
    """Exit 2, one error line last, no traceback, nothing of the run on disk."""
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and "MemoryError" not in res.stderr, res.stderr
    assert not out.exists() or set(os.listdir(out)) <= HYDRA_ONLY, sorted(os.listdir(out))
    return last_line(res)


def write_r1cs(path: Path, m: int, section_bytes: int, sparse: bool) -> Path:
    """A linear-sized r1cs header (9 wires, 1 output, 3 public inputs) claiming ``m`` constraints,
    section 2 of ``section_bytes`` zero bytes (empty constraints: three u32 term counts of 0 each):
    written, or a hole (sparse: 4 KiB on disk whatever its length)."""
    hdr = struct.pack("<I", 32) + R_MOD.to_bytes(32, "little") + struct.pack("<IIIIQI", 9, 1, 3, 0, 0, m)
    with open(path, "wb") as f:
        f.write(b"r1cs" + struct.pack("<II", 1, 2) + struct.pack("<IQ", 1, len(hdr)) + hdr)
        f.write(struct.pack("<IQ", 2, section_bytes))
        if sparse:
            f.truncate(f.tell() + section_bytes)
        else:
            f.write(bytes(section_bytes))
    return path


def snarkjs_args(tmp_path, r1cs):
    return ["circuit=snarkjs", f"circuit.zkey={LINEAR / 'linear.zkey'}",
            f"circuit.witness=[{LINEAR / 'witness_1.wtns'}]", f"circuit.r1cs={r1cs}",
            f"output_dir={tmp_path / 'out'}", f"cache_dir={tmp_path / 'cache'}", "engine=local"]


def test_r1cs_claiming_2_24_constraints_is_refused_from_its_header(tmp_path):
    """2^24 empty constraints over a sparse section (192 MiB long, 4 KiB on disk): a valid file,
    but not the zkey's circuit; its header is compared with the zkey's before section 2 is walked
    (the walk took 26 s and 3.4 GB)."""
    r1cs = write_r1cs(tmp_path / "empty.r1cs", 1 << 24, 12 << 24, sparse=True)
    assert os.stat(r1cs).st_blocks * 512 <= 8192  # it is the small file the issue describes
    res = job(*snarkjs_args(tmp_path, r1cs))
    assert refused(res, tmp_path / "out") == (f"error: {r1cs}: section 1 (header) nConstraints: expected 5 (from "
                                              f"linear.zkey), found 16777216 (the r1cs of another circuit?)")


def test_real_r1cs_passes_under_the_same_limit(tmp_path):
    res = job(*snarkjs_args(tmp_path, LINEAR / "linear.r1cs"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "manifest:" in res.stdout.strip().splitlines()[-1]
    assert (tmp_path / "out" / "manifest.json").is_file()


def test_r1cs_section_shorter_than_its_header_claims(tmp_path):
    """The file as its size says, 4 KiB: section 2 cannot hold 2^24 constraints (12 bytes each at
    least): refused from the lengths, naming section 2, before anything is allocated."""
    path = write_r1cs(tmp_path / "short.r1cs", 1 << 24, 4000, sparse=False)
    with pytest.raises(FormatError) as e:
        read_r1cs(path)
    assert str(e.value) == (f"{path}: section 2 (constraints) length: expected at least 201326592 bytes for "
                            f"nConstraints=16777216, found 4000")
    # twin: a header whose claim the section holds (4 empty constraints, 48 bytes) is read
    cs = read_r1cs(write_r1cs(tmp_path / "ok.r1cs", 4, 48, sparse=False))
    assert cs.n_constraints == 4 and cs.A.nnz == cs.B.nnz == cs.C.nnz == 0


@pytest.mark.parametrize("constraints", [1 << 28, 1 << 31])
def test_constraints_beyond_the_machine_are_refused_by_the_preflight(tmp_path, constraints):
    """2^28 (the OOM killer's case) and 2^31, the largest the field allows: the preflight's host
    memory line (the quick pass: the key's density floor, no draws), before any key is made."""
    out = tmp_path / "out"
    res = job(f"circuit.constraints={constraints}", f"output_dir={out}", f"cache_dir={tmp_path / 'cache'}")
    last = refused(res, out)
    assert last.startswith("error: host memory: need ") and ", have " in last, last
    assert not (tmp_path / "cache").exists()


def test_constraints_beyond_the_field_are_refused_by_range(tmp_path):
    out = tmp_path / "out"
    res = job(f"circuit.constraints={1 << 40}", f"output_dir={out}", f"cache_dir={tmp_path / 'cache'}")
    assert refused(res, out) == ("error: circuit.constraints=1099511627776: must be at most 2^31 = 2147483648 "
                                 "(the QAP domain needs the 2n-th roots of unity; Fr has them up to 2^32)")
    assert not (tmp_path / "cache").exists()


def test_a_size_that_fits_runs_under_the_same_limit(tmp_path):
    """The twin of the refusals: a small built-in circuit proves within the same address space."""
    out = tmp_path / "out"
    res = job("circuit.constraints=256", "circuit.partitions=1", "engine=local", f"output_dir={out}",
              f"cache_dir={tmp_path / 'cache'}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (out / "manifest.json").is_file() and "manifest:" in res.stdout.strip().splitlines()[-1]


# ---------------------------------------------------------------------------------------------
# The zkey preflight: KeyShape from the zkey's headers


def zkey_circuit() -> SnarkjsCircuit:
    return SnarkjsCircuit(str(LINEAR / "linear.zkey"), (str(LINEAR / "witness_1.wtns"),))


def plan(**kw) -> RunPlan:
    base = dict(pw=2, partition_host_bytes=1 << 20, backend="cpu", engine="local", key_on_disk=True)
    return RunPlan(**{**base, **kw})


def test_zkey_shape_comes_from_its_headers():
    c = zkey_circuit()
    shape = c.key_shape()
    assert (shape.n_wires, shape.n_public, shape.domain, shape.nnz) == (9, 4, 16, 14)
    assert shape.dense_bound and shape.a_points is None and shape.b_points is None  # counted dense
    # A and B1 (9 wires), C (9 - 4 - 1 private wires), H (16) in G1, B2 in G2: dense
    assert shape.key_bytes == (9 + 9 + 4 + 16) * 96 + 9 * 192
    assert c.meta["n_wires"] == 9 and c.meta["domain"] == 16  # for the estimates before load_key


def test_zkey_preflight_refuses_a_small_machine_and_passes_a_big_one():
    shape = zkey_circuit().key_shape()
    small = Have(disk_free=1 << 10, host_available=1 << 40)
    with pytest.raises(PreflightError) as e:
        check(shape, plan(), small)
    msg = str(e.value)
    assert msg.startswith("disk (key cache): need ") and "key (dense: an upper bound) " in msg, msg
    assert msg.endswith("have 0.0 MiB") and "\n" not in msg
    dense_host = r"^host memory: need .*key copy \(dense: an upper bound\).*have 1\.0 MiB$"
    with pytest.raises(PreflightError, match=dense_host):
        check(shape, plan(), Have(disk_free=1 << 40, host_available=1 << 20))
    got = check(shape, plan(), Have(disk_free=1 << 40, host_available=1 << 40))
    assert [n.resource for n in got] == ["disk (key cache)", "host memory"] and all(n.fits for n in got)


def test_zkey_preflight_counts_the_cache_disk_until_the_conversion_is_cached(tmp_path):
    from cuzk_ray.engines import EngineSettings

    settings = EngineSettings(engine="local", backend="cpu")
    c = zkey_circuit()
    assert not c.key_cached(tmp_path)
    assert [n.resource for n in preflight(settings, c, str(tmp_path))] == ["disk (key cache)", "host memory"]
    c.load_key(str(tmp_path))
    assert c.key_cached(tmp_path)
    assert [n.resource for n in preflight(settings, c, str(tmp_path))] == ["host memory"]


def sparse_zkey(tmp_path, n_vars: int) -> Path:
    """linear.zkey with nVars claimed ``n_vars`` and its point sections 5-8 as long as that needs,
    holes (2 TiB long at 2^32 - 1, a few KiB on disk): a header the preflight must refuse."""
    data = (LINEAR / "linear.zkey").read_bytes()
    n, pos, secs = struct.unpack_from("<I", data, 8)[0], 12, []
    for _ in range(n):
        sid, length = struct.unpack_from("<IQ", data, pos)
        secs.append((sid, bytearray(data[pos + 12 : pos + 12 + length])))
        pos += 12 + length
    path = tmp_path / "huge.zkey"
    with open(path, "wb") as f:
        f.write(data[:12])
        for sid, payload in secs:
            if sid == 2:
                struct.pack_into("<I", payload, 88, n_vars)
            sizes = {5: 96, 6: 96, 7: 192, 8: 96}
            if sid in sizes:
                count = n_vars - 4 - 1 if sid == 8 else n_vars
                f.write(struct.pack("<IQ", sid, count * sizes[sid]))
                f.seek(count * sizes[sid], 1)
                continue
            f.write(struct.pack("<IQ", sid, len(payload)) + payload)
        f.truncate(f.tell())
    return path


def test_zkey_claiming_2_32_wires_is_refused_before_it_is_hashed_or_read(tmp_path):
    """The job: the quick pass refuses the zkey's host memory from its headers (hashing the 2 TiB
    of holes to ask the cache would take hours: the subprocess timeout bounds it)."""
    zkey = sparse_zkey(tmp_path, (1 << 32) - 1)
    assert os.stat(zkey).st_size > 2**40 and os.stat(zkey).st_blocks * 512 < 1 << 20
    out = tmp_path / "out"
    res = job("circuit=snarkjs", f"circuit.zkey={zkey}", f"circuit.witness=[{LINEAR / 'witness_1.wtns'}]",
              f"output_dir={out}", f"cache_dir={tmp_path / 'cache'}", "engine=local", limit=False)
    last = refused(res, out)
    assert last.startswith("error: host memory: need ") and "key copy (dense: an upper bound) " in last, last
    assert not (tmp_path / "cache").exists()
