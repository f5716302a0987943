"""cuzk-ray: a Ray-based, cluster-scale Groth16 prover for BLS12-381."""

import os
import sys

__version__ = "0.1.0"

# One numba kernel cache per user, in one place, whichever of our modules imports numba first:
# numba reads NUMBA_CACHE_DIR once, when it is imported (when it already was, its config is set
# here too). numba names a source's cache subfolder by that source's folder, so a Ray worker
# importing a cluster's extracted runtime_env copy still compiles once per node and Ray session.
NUMBA_CACHE_DIR = os.environ.setdefault(
    "NUMBA_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "cuzk-ray", "numba"))
if "numba" in sys.modules:
    sys.modules["numba"].config.CACHE_DIR = NUMBA_CACHE_DIR
