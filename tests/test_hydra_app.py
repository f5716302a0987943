"""cuzk_ray.hydra_app: jobs/prove.py's plain run skips hydra.main's mode-only compose and writes
the same output_dir/.hydra/ as hydra.main; other command lines go to hydra.main."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cuzk_ray.hydra_app import plain_run

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "circom" / "bn_k10"


def test_plain_run_is_overrides_only():
    assert plain_run(["circuit=snarkjs", "engine=local", "+x=1"])
    # negative twins: a flag or a hydra.* key is hydra.main's to handle
    assert not plain_run(["circuit=snarkjs", "--cfg", "job"])
    assert not plain_run(["-cn", "config"])
    assert not plain_run(["hydra.mode=RUN"]) and not plain_run(["+hydra.job.chdir=true"])


def prove(out: Path, cache: Path, *extra: str) -> dict[str, str]:
    cmd = [sys.executable, str(ROOT / "jobs" / "prove.py"), "circuit=snarkjs", f"circuit.zkey={FIX / 'bn_k10.zkey'}",
           f"circuit.witness=[{FIX / 'witness_1.wtns'}]", f"output_dir={out}", "engine=local", f"cache_dir={cache}"]
    subprocess.run([*cmd, *extra], cwd=ROOT, check=True, capture_output=True, timeout=600)
    return {p.name: p.read_text().replace(str(out), "OUT") for p in sorted((out / ".hydra").iterdir())}


def test_the_plain_run_writes_hydra_s_record_as_hydra_main_does(tmp_path):
    fast = prove(tmp_path / "a", tmp_path / "cache")
    # the twin: --config-name (the same config) makes jobs/prove.py hand the run to hydra.main
    main = prove(tmp_path / "b", tmp_path / "cache", "--config-name", "config")
    assert sorted(fast) == ["config.yaml", "hydra.yaml", "overrides.yaml"]
    assert "mode: RUN" in fast["hydra.yaml"] and "- hydra.mode=RUN" in fast["hydra.yaml"]
    for name in fast:
        assert fast[name] == main[name], name
