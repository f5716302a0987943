"""The host memory a synthesis task uses (``circuit.synthesis_bytes()``, which admission and the
preflight count for every partition in flight) against what a fresh process's first task really
allocates, traced by tracemalloc (the Python and numpy heap: every array the task makes, the
caches its process keeps, the Arrow batch it returns), at two sizes per synthesis path.

The estimate must bound the measured peak (an undercount lets a run past its memory budget) and
stay within twice it (an estimate that bounds everything by being huge refuses runs that fit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import copy_partition_cache

from cuzk_ray.circuits import PorepCircuit, SnarkjsCircuit
from cuzk_ray.field import R_MOD

REPO = Path(__file__).resolve().parent.parent

# One synthesis task in a fresh process, as a Ray worker runs its first one: imports first
# (not the task's), then the task traced from its start to the batch it hands back.
TASK = """
import json, sys, tracemalloc
from cuzk_ray.circuits import synthesize
from cuzk_ray.partition import Partition, to_record_batch
spec = json.loads(sys.argv[1])
tracemalloc.start()
batch = to_record_batch(Partition("p", spec["partition"], "c", synthesize(spec), {}))
print(tracemalloc.get_traced_memory()[1])
"""


def traced_peak(spec: dict) -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run([sys.executable, "-c", TASK, json.dumps(spec)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    return int(run.stdout.split()[-1])


def check_bounds(estimate: int, peak: int) -> None:
    assert peak <= estimate <= 2 * peak, f"estimate {estimate} B, traced peak {peak} B"


@pytest.mark.parametrize("shape,log_n", [("default", 14), ("default", 18), ("filecoin", 16), ("filecoin", 20)])
def test_porep_synthesis_bytes_bound_a_fresh_task(shape, log_n):
    c = PorepCircuit(constraints=1 << log_n, shape=shape)
    check_bounds(c.synthesis_bytes(), traced_peak(c.synth_spec(3, 0, 1)))


def write_wtns(path: Path, values: np.ndarray) -> None:
    """A snarkjs .wtns (version 2: the field's prime, then the values, 32 bytes each)."""
    n8 = 32
    header = n8.to_bytes(4, "little") + R_MOD.to_bytes(n8, "little") + len(values).to_bytes(4, "little")
    body = np.ascontiguousarray(values, dtype="<u8").tobytes()
    with open(path, "wb") as f:
        f.write(b"wtns" + (2).to_bytes(4, "little") + (2).to_bytes(4, "little"))
        for sid, data in ((1, header), (2, body)):
            f.write(sid.to_bytes(4, "little") + len(data).to_bytes(8, "little") + data)


@pytest.mark.parametrize("n", [1 << 14, 1 << 18])
def test_snarkjs_synthesis_bytes_bound_a_fresh_task(tmp_path, n):
    """A witness of 0/1 wires and full field elements (one in eight), read from its .wtns."""
    rng = np.random.default_rng(n)
    values = np.zeros((n, 4), dtype=np.uint64)
    values[:, 0] = rng.integers(0, 2, n)
    full = rng.random(n) < 1 / 8
    values[full] = rng.integers(0, 2**63, (int(full.sum()), 4), dtype=np.uint64) >> np.uint64(2)  # < 2^254 < r
    values[0] = (1, 0, 0, 0)
    write_wtns(tmp_path / "w.wtns", values)
    c = SnarkjsCircuit(str(tmp_path / "k.zkey"), (str(tmp_path / "w.wtns"),))
    c.meta.update(n_wires=n, domain=n)  # what load_key records (no zkey is needed to synthesize)
    check_bounds(c.synthesis_bytes(), traced_peak(c.synth_spec(0, 0, 0)))


def test_filecoin_synthesis_bytes_bound_a_fresh_task(tmp_path, partition_cache_2k):
    """The real 2 KiB circuit's fast witness (the replay of its partition cache, a copy of the
    session's) from a consistent synthetic C1; the sizes load_key records, taken from the same setup."""
    from cuzk_ray.circuits.filecoin import FilecoinCircuit
    from cuzk_ray.filecoin import c1_synthetic, c2, registry
    from cuzk_ray.filecoin.c1 import write_c1

    proof = registry.registered_seal_proof("StackedDrg2KiBV1_1")
    c1 = c1_synthetic.synthetic_c1(proof, bytes(31) + b"\x07", 1, bytes(32), bytes(32), np.random.default_rng(0))
    write_c1(c1, tmp_path / "c1.json")
    copy_partition_cache(partition_cache_2k, tmp_path)
    setup = c2.circuit_setup(proof, tmp_path, "stacked")  # read from the cache (digests checked)
    c = FilecoinCircuit((str(tmp_path / "c1.json"),), None, "stacked", proof.name)
    c.meta.update(cache_dir=str(tmp_path), n_wires=setup.recording.cs.n_wires, full_wires=c2.full_wires(setup))
    check_bounds(c.synthesis_bytes(), traced_peak(c.synth_spec(0, 0, 0)))
