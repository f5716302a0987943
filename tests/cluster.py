"""A real multi-node Ray cluster on this machine for tests: `ray start --head` plus workers, each
in its own process group bound to 127.0.0.1, stopped by process group id (never `ray stop`)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    def __init__(self, tmp: Path, nodes: int = 2, cpus: int = 2, gpus: int = 0, metrics_port: int | None = None,
                 dashboard: bool = False):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen] = []
        self.env = dict(os.environ, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0",
                        RAY_metrics_report_interval_ms="1000")  # metrics reach Prometheus within ~1 s
        self.env.pop("RAY_ADDRESS", None)
        self.env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)  # =0 makes `ray start` refuse to form a cluster
        ray_bin = str(Path(sys.executable).with_name("ray"))
        common = ["--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", f"--num-gpus={gpus}", "--block",
                  "--disable-usage-stats"]
        self.dashboard_port = free_port() if dashboard else None
        dash = (["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}"]
                if dashboard else ["--include-dashboard=false"])
        head = [ray_bin, "start", "--head", f"--port={self.port}", *dash,
                f"--ray-client-server-port={free_port()}", *common]
        if metrics_port:
            head.append(f"--metrics-export-port={metrics_port}")
        self._spawn(head, tmp / "head.log")
        self._wait_nodes(1)
        self.worker_cmd = [ray_bin, "start", f"--address={self.address}", *common]
        self.tmp = tmp
        for i in range(nodes - 1):
            self._spawn(self.worker_cmd, tmp / f"worker{i}.log")
        self._wait_nodes(nodes)

    def add_node(self) -> subprocess.Popen:
        """Start one more worker node (its own process group, stopped with the others); returns
        its `ray start` process without waiting for it to join."""
        self._spawn(self.worker_cmd, self.tmp / f"worker{len(self.procs) - 1}.log")
        return self.procs[-1]

    def raylet_pid(self, node: subprocess.Popen) -> int:
        """The raylet of a node: in the process group of its `ray start`."""
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.getpgid(int(d)) == node.pid and "raylet/raylet" in Path(f"/proc/{d}/cmdline").read_text():
                        return int(d)
                except OSError:
                    continue
        raise RuntimeError(f"no raylet in the process group {node.pid}")

    def _spawn(self, cmd, log: Path):
        f = open(log, "w")
        self.procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=self.env,
                                           start_new_session=True))

    def alive_nodes(self) -> int:
        code = (f"import ray;ray.init(address='{self.address}',logging_level='ERROR');"
                "print('alive_nodes=%d' % sum(n['Alive'] for n in ray.nodes()))")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=self.env, timeout=60)
        # Ray may print its own lines to stdout too (e.g. "raylet has lagging heartbeats" under load)
        found = re.findall(r"^alive_nodes=(\d+)$", res.stdout, re.M) if res.returncode == 0 else []
        return int(found[-1]) if found else 0

    def _wait_nodes(self, n: int, timeout: float = 90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError("a `ray start` process exited; see its log in the test's tmp dir")
            if self.alive_nodes() >= n:
                return
            time.sleep(1)
        raise RuntimeError(f"cluster did not reach {n} nodes in {timeout} s")

    def stop(self):
        """SIGTERM each node's process group, then SIGKILL whatever is left after 3 s: the raylets
        exit within a second of SIGTERM, but the head's gcs_server, its autoscaler monitor and
        `ray start --block` itself linger ~20 s (measured 2026-12-01, Ray 2.60), and no test needs
        them to exit by themselves (a 15 s grace here cost ~15 s per cluster in the suite)."""
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.time() + 3
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


# Another driver that holds one CPU on every node (an actor with num_cpus=1 per alive node) until
# it is stopped: what the watchdog tests take away from synthesis.
HOLD_ONE_CPU_PER_NODE = """
import sys, time, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address=sys.argv[1], logging_level="ERROR")

@ray.remote(num_cpus=1)
class Hog:
    def ping(self):
        return 1

hogs = [Hog.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
        for n in ray.nodes() if n["Alive"]]
ray.get([h.ping.remote() for h in hogs])
print("ready", flush=True)
time.sleep(3600)
"""


def hold_one_cpu_per_node(cluster: LocalCluster) -> subprocess.Popen:
    """Start that driver (its own process group: stop it with os.killpg) and return once it holds
    the CPUs."""
    p = subprocess.Popen([sys.executable, "-c", HOLD_ONE_CPU_PER_NODE, cluster.address], env=cluster.env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    line = p.stdout.readline().strip()
    if line != "ready":
        os.killpg(p.pid, signal.SIGKILL)
        raise RuntimeError(f"the CPU-holding driver did not start (said {line!r})")
    return p
