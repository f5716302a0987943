"""What an embedded Ray needs decided before Ray is imported or started, kept apart from the
executor so it can run first: token authentication (said explicitly, so Ray keeps it on without
its start-up WARNING) and whether the package must be shipped to the workers.

This module must not import Ray at load time: ``RAY_AUTH_MODE`` is read once, when ``ray`` is
first imported (setting it later makes the driver and the cluster it starts disagree)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AUTH_MODE_ENV = "RAY_AUTH_MODE"


def prepare_embedded_auth(address: str | None, verbose: bool = False) -> bool:
    """Before an embedded Ray starts: keep Ray 2.60's default (token auth on) but say it explicitly
    (``RAY_AUTH_MODE=token``), which is what makes Ray skip its "Token authentication is enabled
    ... Set RAY_AUTH_MODE=disabled to opt out" WARNING. Only when no cluster is given (a cluster's
    own mode must be left to the cluster's config), the user has not set the variable, and Ray is
    not imported yet; ``verbose`` leaves Ray to say what it says. Returns True when it set the variable."""
    if verbose or address or AUTH_MODE_ENV in os.environ or "ray" in sys.modules:
        return False
    os.environ[AUTH_MODE_ENV] = "token"
    return True


def ship_package(ray_cfg: dict, address: str | None) -> bool:
    """Whether to send this cuzk_ray package to the workers (runtime_env py_modules).
    ``ray.ship_package`` true/false decides; unset (None): to a cluster, yes (its workers may run a
    different checkout or none); to an embedded Ray, only when its workers would not import this
    very package by themselves. Shipping zips the package and sets up a runtime environment for
    every worker: seconds of start-up for nothing when they would."""
    setting = ray_cfg.get("ship_package")
    if setting is not None:
        return bool(setting)
    return bool(address) or not workers_import_this_package()


def workers_import_this_package() -> bool:
    """Would a fresh interpreter with this environment and working directory (what an embedded Ray
    starts its workers with) find the cuzk_ray being run? Not when it was found through a
    sys.path entry the job inserted itself (jobs/*.py run from elsewhere); yes from the checkout,
    with PYTHONPATH, or installed (editable or not). Asked of a real interpreter (find_spec only:
    nothing is imported), ~30 ms."""
    import cuzk_ray

    mine = Path(cuzk_ray.__file__).resolve().parent
    code = "import importlib.util as u; s = u.find_spec('cuzk_ray'); print(s.origin if s and s.origin else '')"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                             cwd=os.getcwd(), env=dict(os.environ))
    except (OSError, subprocess.SubprocessError):
        return False
    found = out.stdout.strip()
    return bool(found) and Path(found).resolve().parent == mine
