"""The process environment an embedded Ray needs to stay on loopback, set before ``ray`` is
imported (this module does not import it).

Ray 2.60 turns ``ray.init(_node_ip_address="127.0.0.1")`` into the machine's address (it
"resolves" localhost to a remotely reachable IP), so its gRPC servers (GCS, raylet, core workers,
object manager) listen on every interface and the agents on the machine's address. It keeps
127.0.0.1 only where it believes the platform runs one-node Rays (macOS, Windows), which
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 declares; Ray reads it once, when it is imported. With it,
every listener of the embedded Ray is on 127.0.0.1 (docs/SECURITY.md, tests/test_security.py).
"""

from __future__ import annotations

import os

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def embedded(ray_cfg: dict) -> bool:
    """Whether engine=ray starts its own Ray (no ray.address, no RAY_ADDRESS)."""
    return not (ray_cfg.get("address") or os.environ.get("RAY_ADDRESS"))


def loopback_env(ray_cfg: dict) -> None:
    """For an embedded Ray: declare a one-node Ray so it advertises and binds 127.0.0.1 (a value
    the user set is kept). Connecting to a cluster leaves the environment alone."""
    if embedded(ray_cfg):
        os.environ.setdefault(LOOPBACK_ENV, "0")
