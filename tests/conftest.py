import json
import os
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Ray 2.60 turns token authentication on by default, and a process keeps the token state of its
# first Ray session: a later connection to a test cluster started without auth then fails to
# create actors ("Actor creation cancelled"). Every Ray in the tests binds to 127.0.0.1 and runs
# without tokens, in this process and in the clusters and jobs it starts.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


@pytest.fixture
def rng(request):
    """A fresh random.Random per test, seeded from PYTEST_SEED (printed on failure to replay)."""
    seed = int(os.environ.get("PYTEST_SEED", random.randrange(2**32)))
    request.node.user_properties.append(("seed", seed))
    r = random.Random(seed)
    r.seed_value = seed
    return r


def _snarkjs_path():
    local = ROOT / "node_modules" / ".bin" / "snarkjs"
    return str(local) if local.exists() else shutil.which("snarkjs")


@pytest.fixture(scope="session")
def snarkjs():
    """Run snarkjs 0.7.6 (installed by `npm install` in the repository, as .ci/run does)."""
    path = _snarkjs_path()
    if path is None and shutil.which("npm"):
        # package.json pins snarkjs 0.7.6; install it on first use so `pytest` alone works.
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=ROOT, capture_output=True, timeout=600)
        path = _snarkjs_path()
    if path is None:
        pytest.fail("snarkjs not found and `npm install` did not provide it: install Node.js/npm and run "
                    "`npm install` in the repository root")

    def run(*args, check=False):
        return subprocess.run([path, *args], capture_output=True, text=True, timeout=300, check=check)

    return run


def snarkjs_verify(snarkjs, vk, public, proof) -> bool:
    res = snarkjs("groth16", "verify", str(vk), str(public), str(proof))
    out = res.stdout + res.stderr
    if res.returncode == 0 and "OK" in out:
        return True
    assert "Invalid proof" in out, f"snarkjs failed unexpectedly: {out}"
    return False


def snarkjs_verify_many(snarkjs, triples) -> list[bool]:
    """snarkjs's verdict on each (vk, public, proof) of ``triples``: its groth16.verify, the
    function `snarkjs groth16 verify` runs, called in one Node process for all of them
    (tests/snarkjs_verify_many.cjs) instead of one CLI start-up (~0.8 s) per proof. ``snarkjs``
    (the fixture) makes sure it is installed."""
    triples = [[str(x) for x in t] for t in triples]
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(triples, f)
        f.flush()
        res = subprocess.run(["node", str(ROOT / "tests" / "snarkjs_verify_many.cjs"), f.name],
                             capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, f"snarkjs failed unexpectedly: {res.stdout}{res.stderr}"
    answers = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(answers) == len(triples) and all(isinstance(a, bool) for a in answers), res.stdout
    return answers


@pytest.fixture(scope="module")
def ray_local():
    """An embedded 2-CPU Ray for one test module (dashboard on: the scheduler's watchdog confirms
    pending tasks with ray.util.state where it runs), shut down after the module."""
    import os

    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=True, dashboard_host="127.0.0.1",
             _node_ip_address="127.0.0.1", runtime_env={"env_vars": {"PYTHONPATH": os.getcwd()}})
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def partition_cache_2k(tmp_path_factory):
    """A cache dir whose ``partitions/`` holds the real 2 KiB PoRep partition circuit's partition
    cache (recording, witness tape, replay plan of StackedDrg2KiBV1_1, variant "stacked"), made by
    ``c2.circuit_setup`` on an empty dir: the blank synthesis of 2.69M constraints takes ~14 s on
    2 cores, and test_filecoin_c2_real, test_filecoin_partition_cache and test_synthesis_memory each
    need the same one, so it is made once per session. Read-only: take a copy
    (copy_partition_cache) to prove with, add keys beside it or alter its files."""
    from cuzk_ray.filecoin import c2, registry

    folder = tmp_path_factory.mktemp("partition-cache-2k")
    c2.circuit_setup(registry.registered_seal_proof("StackedDrg2KiBV1_1"), folder, "stacked")
    return folder


def copy_partition_cache(partition_cache: Path, cache_dir: Path) -> Path:
    """``cache_dir`` (made if missing) with its own copy of ``partition_cache``'s ``partitions/``
    (0.35 GB, ~0.1 s): what a test may change without touching the session's."""
    shutil.copytree(partition_cache / "partitions", cache_dir / "partitions")
    return cache_dir


@pytest.fixture(scope="session")
def c1s_32g(tmp_path_factory):
    """A folder with two consistent 32 GiB C1 files (c1_synthetic; 38.6 MB of JSON each): a.json of
    sector 77, b.json of sector 78 (prover id 7, zero ticket and seed). ~2.7 s each to make and
    write; test_filecoin_split and test_cluster prove the same pair, so it is made once per session.
    Read-only."""
    import numpy as np

    from cuzk_ray.filecoin import c1_synthetic, registry
    from cuzk_ray.filecoin.c1 import write_c1

    folder = tmp_path_factory.mktemp("c1s-32g")
    proof = registry.registered_seal_proof("StackedDrg32GiBV1_1")
    for name, sector in (("a", 77), ("b", 78)):
        write_c1(c1_synthetic.synthetic_c1(proof, bytes(31) + b"\x07", sector, bytes(32), bytes(32),
                                           np.random.default_rng(sector)), folder / f"{name}.json")
    return folder
