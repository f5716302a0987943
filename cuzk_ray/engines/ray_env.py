"""The process environment Ray reads when it is imported (this module does not import it): an
embedded Ray that stays on loopback, and a connection to a cluster that gives up in seconds.

Ray 2.60 turns ``ray.init(_node_ip_address="127.0.0.1")`` into the machine's address (it
"resolves" localhost to a remotely reachable IP), so its gRPC servers (GCS, raylet, core workers,
object manager) listen on every interface and the agents on the machine's address. It keeps
127.0.0.1 only where it believes the platform runs one-node Rays (macOS, Windows), which
RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 declares; Ray reads it once, when it is imported. With it,
every listener of the embedded Ray is on 127.0.0.1 (docs/SECURITY.md, tests/test_security.py).
"""

from __future__ import annotations

import os
import socket

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# Ray's fixed Prometheus ports of an embedded Ray's dashboard head (44227) and autoscaler monitor
# (44217): the same on every Ray of a machine, so a second embedded Ray's could not bind them (its
# metrics server failed, logged in its session's files) and the GCS of each named the port the
# other held. Both processes read these variables when they start (ray.dashboard.consts,
# ray.autoscaler._private.constants): an embedded Ray gets free ports of its own. (The dashboard
# agent's HTTP port, 52365, has no such variable and ray.init no argument for it: docs/SECURITY.md.)
METRIC_PORT_ENV = ("DASHBOARD_METRIC_PORT", "AUTOSCALER_METRIC_PORT")
# Connecting a driver to ray.address: Ray tries RAY_gcs_server_port_wait_time_s times (default 20,
# ~1 s apart), each GCS client waiting RAY_py_gcs_connect_timeout_s: minutes for an address where
# something listens but no GCS answers (issue 15: 300+ s). One try, 5 s for the client and 3 s per
# RPC connection: ~12 s measured (a healthy GCS answers in milliseconds).
CONNECT_ENV = {"RAY_gcs_server_port_wait_time_s": "1", "RAY_py_gcs_connect_timeout_s": "5",
               "RAY_gcs_rpc_server_connect_timeout_s": "3"}


def embedded(ray_cfg: dict) -> bool:
    """Whether engine=ray starts its own Ray (no ray.address, no RAY_ADDRESS)."""
    return not (ray_cfg.get("address") or os.environ.get("RAY_ADDRESS"))


def free_ports(n: int) -> list[int]:
    """``n`` different TCP ports free on 127.0.0.1 now (the kernel's picks, held open together so
    they differ; free until something else takes them)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def prepare_env(ray_cfg: dict) -> list[str]:
    """For an embedded Ray: declare a one-node Ray so it advertises and binds 127.0.0.1, and give
    its dashboard head and autoscaler monitor free metrics ports (METRIC_PORT_ENV). For a
    cluster: bound the driver's connection attempts (CONNECT_ENV). Values the user set are kept.
    Returns the names it set, for restore_env once Ray is up."""
    if embedded(ray_cfg):
        names = [k for k in METRIC_PORT_ENV if k not in os.environ]
        wanted = {LOOPBACK_ENV: "0", **{k: str(p) for k, p in zip(names, free_ports(len(names)))}}
    else:
        wanted = CONNECT_ENV
    added = [k for k in wanted if k not in os.environ]
    for k in added:
        os.environ[k] = wanted[k]
    return added


def restore_env(added: list[str]) -> None:
    """Remove what prepare_env set, once Ray has read it (when imported) and started its processes
    (they got it with their environment): a program that goes on to start other Rays or jobs (a
    `ray start` cluster would refuse to form with LOOPBACK_ENV=0) does not inherit it."""
    for k in added:
        os.environ.pop(k, None)
