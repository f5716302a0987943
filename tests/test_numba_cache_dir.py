"""Every numba kernel of the package is cached in one folder per user (cuzk_ray.NUMBA_CACHE_DIR),
whichever module imports numba first and also when numba was imported before cuzk_ray: each case
in a fresh interpreter, as a Ray worker starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# the modules whose cached kernels are defined at import (feistel compiles its one on first use,
# limb_arith's instances are made by their callers)
MODULES = ["cuzk_ray.filecoin.circuit.replay", "cuzk_ray.filecoin.poseidon_batch", "cuzk_ray.fast.fr_kernels",
           "cuzk_ray.fast.ec_kernels"]

PROBE = """
import importlib, json, sys
if sys.argv[2] == "numba-first":
    import numba  # noqa: F401
mod = importlib.import_module(sys.argv[1])
paths = sorted({v._cache._cache_path for v in vars(mod).values()
                if hasattr(v, "_cache") and hasattr(v._cache, "_cache_path")})
print(json.dumps(paths))
"""


def cache_folders(module: str, order: str, home: Path) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(HOME=str(home), PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-c", PROBE, module, order], env=env, cwd=home,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("order", ["package-first", "numba-first"])
@pytest.mark.parametrize("module", MODULES)
def test_kernels_are_cached_in_the_user_cache_dir(module, order, tmp_path):
    folders = cache_folders(module, order, tmp_path)
    assert folders, f"{module} defines no cached kernel"
    want = str(tmp_path / ".cache" / "cuzk-ray" / "numba")
    assert all(f.startswith(want + os.sep) for f in folders), folders
