"""`jobs/prove.py circuit=snarkjs` with keys that lie (issue 15 item 6) and the zkey preflight
(item 4): a point off the curve or outside the subgroup is refused in one line before Ray starts
(no Ray session directory, no "provers:" line), a changed coefficient gives a proof failure that
names the key and the witness. Real fixture zkeys rewritten, real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_zkey_points import G1_RAW, G2_RAW, mont, off_curve, point_outside_subgroup, present, sections

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "circom"
ZKEY = FIX / "linear" / "linear.zkey"
WITNESS = FIX / "linear" / "witness_1.wtns"
pytestmark = pytest.mark.slow


@pytest.fixture
def raytmp():
    """A fresh, short RAY_TMPDIR (Ray's sockets must fit in 107 bytes): a Ray start leaves ray/ there."""
    d = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def job(tmp_path, raytmp, zkey, *extra, witness=WITNESS, timeout=600):
    """prove.py on one witness with engine=ray (engine=auto would run it in process: these tests
    check that Ray does not start before the key is checked), with Ray's session files in
    ``raytmp`` wherever Ray's temp root is put (RAY_TMPDIR and TMPDIR, and cache_dir there too: a
    temp root under cache_dir is short)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_TMPDIR"] = env["TMPDIR"] = str(raytmp)
    args = ["circuit=snarkjs", f"circuit.zkey={zkey}", f"circuit.witness=[{witness}]",
            f"output_dir={tmp_path / 'out'}", f"cache_dir={raytmp / 'cache'}",
            *([] if any(e.startswith("engine=") for e in extra) else ["engine=ray"]), *extra]
    return subprocess.run([sys.executable, str(ROOT / "jobs" / "prove.py"), *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def write(tmp_path, edit) -> Path:
    data = bytearray(ZKEY.read_bytes())
    edit(data, sections(bytes(data)))
    out = tmp_path / "bad.zkey"
    out.write_bytes(bytes(data))
    return out


def outside_subgroup(d, s):
    x, y = point_outside_subgroup()
    i = present(bytes(d), s[5], G1_RAW, 9)[1]
    d[s[5] + i * G1_RAW : s[5] + (i + 1) * G1_RAW] = mont(x) + mont(y)
    outside_subgroup.index = i


def last_line(res) -> str:
    return res.stderr.strip().splitlines()[-1]


def ray_sessions(raytmp) -> list[Path]:
    """Ray's session directories (session_<date>_<pid>) under raytmp: one exists once Ray started."""
    return [p for p in raytmp.rglob("session_*") if p.is_dir()]


def cache_entries(raytmp) -> list[Path]:
    d = raytmp / "cache" / "zkeys"
    return [p for p in d.iterdir() if not p.name.startswith(".")] if d.exists() else []


BAD_POINTS = {
    "A off the curve": (off_curve(5, G1_RAW), "section 5 (A) point {i}: expected a point on the G1 curve in its "
                        "subgroup of order r, found one that is not on the G1 curve"),
    "B2 off the curve": (off_curve(7, G2_RAW), "section 7 (B2) point {i}: expected a point on the G2 curve in its "
                         "subgroup of order r, found one that is not on the G2 curve"),
    "H off the curve": (off_curve(9, G1_RAW), "section 9 (H) point {i}: expected a point on the G1 curve in its "
                        "subgroup of order r, found one that is not on the G1 curve"),
    "A outside the subgroup": (outside_subgroup, "section 5 (A) point {i}: expected a point on the G1 curve in its "
                               "subgroup of order r, found one that is not in the correct G1 subgroup"),
}  # {i}: the index of the point the edit changed (set by the edit)


@pytest.mark.parametrize("case", sorted(BAD_POINTS))
def test_bad_point_is_refused_before_ray_starts(tmp_path, raytmp, case):
    edit, fragment = BAD_POINTS[case]
    zkey = write(tmp_path, edit)
    res = job(tmp_path, raytmp, zkey)  # engine=ray: Ray would start after the key is read
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert last_line(res) == last_line(res).strip() and last_line(res).startswith(f"error: {zkey}: ")
    assert last_line(res).endswith(fragment.format(i=edit.index)), last_line(res)
    assert "provers:" not in res.stdout and ray_sessions(raytmp) == []
    out = tmp_path / "out"
    assert not (out / "verification_key.json").exists() and not (out / "proofs").exists()
    assert not list(out.glob("manifest*.json")) and cache_entries(raytmp) == []


def test_good_key_starts_ray_and_caches_the_checked_conversion(tmp_path, raytmp):
    """The twin: the same job on the real key starts Ray (a session dir appears in raytmp: the
    negative tests' check can see one), proves, and caches the checked key."""
    res = job(tmp_path, raytmp, ZKEY)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "manifest:" in res.stdout.strip().splitlines()[-1]
    assert ray_sessions(raytmp)
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["complete"] is True
    (entry,) = cache_entries(raytmp)
    meta = json.loads((entry / "manifest.json").read_text())["meta"]
    assert meta["points_checked"] == "on the curve and in the subgroup of order r"


def changed_coefficient(d, s):
    """The first record of section 4 (an A or B coefficient of constraint 0, not a binding row):
    its value (c * R^2 mod r, 32 bytes after u32 matrix, row, wire) plus one."""
    off = s[4] + 4 + 12
    v = int.from_bytes(d[off : off + 32], "little")
    d[off : off + 32] = (v + 1).to_bytes(32, "little")
    assert struct.unpack_from("<I", d, s[4] + 4 + 4)[0] == 0  # row 0: a constraint's row


def test_changed_coefficient_names_the_key_and_the_witness(tmp_path, raytmp):
    zkey = write(tmp_path, changed_coefficient)
    res = job(tmp_path, raytmp, zkey, "engine=local")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    last = last_line(res)
    assert last.startswith(f"error: witness {WITNESS}: ") and (
        "partition 0: the proof does not verify with bad.zkey: the witness does not satisfy the circuit, "
        "or the key is not this circuit's") in last, last
    out = tmp_path / "out"
    assert not (out / "manifest.json").exists() and not (out / "proofs").exists()
    assert json.loads((out / "manifest.partial.json").read_text())["complete"] is False
