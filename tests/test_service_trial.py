"""jobs/service_trial.py at 2 KiB (the filecoin-c2 kind, the inputs stand-in, CPU): the operator's
trial that bash jobs/gpu_service32g.sh runs at 32 GiB, so that a broken script is found here and
not in a device call. A real service: 3 requests, each naming its own copy of a sealed sector's C1
(--c1-copies), then 3 more with a SIGKILL after the first and a restart; every partition verified
again, nothing proved twice. The timings are the trial's to print, not asserted."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from cuzk_ray.filecoin import fr32, registry, seal
from cuzk_ray.filecoin.c1 import write_c1

REPO = Path(__file__).resolve().parent.parent


def test_the_filecoin_c2_trial_with_c1_copies_survives_a_kill(tmp_path):
    piece = bytearray(fr32.unpadded_size(2048))
    piece[0] = 5
    proof = registry.registered_seal_proof("StackedDrg2KiBV1_1")
    sector = seal.seal_sector(bytes(piece), proof, bytes(31) + b"\x07", 9, bytes([1]) * 32)
    c1 = tmp_path / "c1.json"  # inside the trial's folder: the service's input roots
    write_c1(seal.commit_phase1(sector, bytes([2]) * 32), c1)
    r = subprocess.run([sys.executable, str(REPO / "jobs" / "service_trial.py"), "--kind", "filecoin-c2",
                        "--c1-copies", "--make-key", "--proofs", "3", "--kill-after", "1", "--circom", "1",
                        "--out", str(tmp_path), "--", "circuit=filecoin", f"circuit.c1={c1}",
                        "circuit.variant=inputs", "backend=cpu", "setup_backend=cpu", "pw=2", "ray.num_cpus=2"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    table = json.loads((tmp_path / "trial.json").read_text())
    assert table["A: filecoin-c2 proofs done"] == "3" and table["B: filecoin-c2 proofs done"] == "3"
    # the kill lands mid-batch: after the first proof, before the last (two proofs can finish in one
    # step of the service's loop, their MultiProofs made side by side: then 2 are done at the kill)
    assert 1 <= int(table["B: proofs done at the kill"]) < 3
    assert table["A: every partition verified again (jobs/verify.py)"] == "True 3/3 partitions OK"
    assert table["B: every partition verified again (jobs/verify.py)"] == "True 3/3 partitions OK"
    assert table["proofs with a partition proved twice"] == "none"
    assert len(table["A: POST seconds, each filecoin-c2 request"].split()) == 3
    with sqlite3.connect(tmp_path / "cache" / "service" / "service.db") as con:
        named = sorted(json.loads(c)["c1"] for (c,) in con.execute("SELECT circuit FROM proofs")
                       if json.loads(c)["kind"] == "filecoin-c2")
    assert named == [str(tmp_path / "c1" / f"{p}-{i}.json") for p in "ab" for i in range(3)]
