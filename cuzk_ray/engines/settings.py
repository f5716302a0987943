"""Engine settings: built from the job's config once and validated there, before any work (every
later piece trusts them). Plain values only: they travel to Ray tasks and actors as they are."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..backends import resolve_backend_name
from .admission import parse_bytes

ENGINES = ("auto", "ray", "local")
PLACEMENTS = ("auto", "gpu", "cpu")
# the job's top-level keys passed through as they are (conf/config.yaml: faults and retries)
FAULT_KEYS = ("max_restarts", "watchdog_s", "retry_backoff_s", "retry_backoff_max_s", "restart_wait_s")


@dataclass(frozen=True)
class EngineSettings:
    """How proofs are run. ``backend`` is stored resolved ("auto" -> "cpu" | "cuda").

    engine: auto (engines.choice: local for a small batch and no cluster, else ray) | ray (embedded
    or the cluster at ray.address) | local (this process, no Ray). The Engine itself needs ray or
    local: ``open_engine`` resolves auto.
    pw: partitions in flight; None: 2 with CPU provers, pw_per_gpu x GPUs with GPU provers.
    provers: prover actors (None: one per GPU x gpu_workers_per_device, or one CPU prover per node).
    placement: where prover actors go: gpu (one per GPU), cpu (one per node), auto (follows the
    backend); placement=gpu with backend=cpu exercises GPU placement on Ray logical GPUs.
    gpu_concurrency: partitions one GPU prover works on at once (threads of the actor).
    watchdog_s: with no completion for this long and the executor naming work that cannot run (a
    resource no node has free, every prover dead), the batch stops with that one line.
    retry_backoff_s, retry_backoff_max_s: a failed attempt is retried after backoff x 2^(n-1)
    seconds (n: its failed attempts), at most the cap. An attempt cut short by its prover actor
    (restarting, or its node lost) is no failed attempt: it is resubmitted to a prover that is up.
    restart_wait_s: how long a prover actor may take to come back before it is given up as dead."""

    engine: str = "ray"
    backend: str = "auto"
    pw: int | None = None
    pw_per_gpu: int = 8
    provers: int | None = None
    cpu_threads: int = 2
    host_budget: int | None = None
    gpu_workers_per_device: int = 1
    gpu_concurrency: int = 2
    max_attempts: int = 3
    max_restarts: int = 3
    placement: str = "auto"
    watchdog_s: float = 60.0
    retry_backoff_s: float = 1.0
    retry_backoff_max_s: float = 30.0
    restart_wait_s: float = 120.0
    ray: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"engine={self.engine!r} is not one of {', '.join(ENGINES)}")
        object.__setattr__(self, "backend", resolve_backend_name(self.backend))
        # a count below 1 is refused, never clamped (issue 15: pw=0 and provers=-1 ran or crashed)
        for name in ("gpu_concurrency", "max_attempts", "cpu_threads", "gpu_workers_per_device", "pw_per_gpu"):
            _at_least(name, getattr(self, name), 1)
        for name in ("pw", "provers"):  # None: the default
            if getattr(self, name) is not None:
                _at_least(name, getattr(self, name), 1)
        for name in ("num_cpus", "num_gpus"):  # embedded Ray; None: all the machine has
            if self.ray.get(name) is not None:
                _at_least(f"ray.{name}", self.ray[name], 1 if name == "num_cpus" else 0)
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts={self.max_restarts}: must be at least 0")
        for name in ("watchdog_s", "restart_wait_s", "retry_backoff_max_s"):
            if not float(getattr(self, name)) > 0:
                raise ValueError(f"{name}={getattr(self, name)}: must be above 0")
        if not float(self.retry_backoff_s) >= 0:
            raise ValueError(f"retry_backoff_s={self.retry_backoff_s}: must be at least 0")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement={self.placement!r} is not one of {', '.join(PLACEMENTS)}")

    @classmethod
    def from_config(cls, cfg: dict) -> EngineSettings:
        """From the job's config (a plain dict: OmegaConf.to_container of conf/config.yaml)."""
        return cls(engine=cfg["engine"], backend=cfg["backend"], pw=cfg["pw"], pw_per_gpu=cfg["pw_per_gpu"],
                   provers=cfg["provers"], cpu_threads=cfg["cpu_threads"],
                   host_budget=parse_bytes(cfg["memory"]["host_budget"], "memory.host_budget"),
                   gpu_workers_per_device=cfg["gpu_workers_per_device"], gpu_concurrency=cfg["gpu_concurrency"],
                   max_attempts=cfg["max_attempts"], ray=dict(_ray_dict(cfg), verbose=bool(cfg.get("verbose", False))),
                   **{k: cfg[k] for k in FAULT_KEYS if cfg.get(k) is not None})

    @property
    def prover_placement(self) -> str:
        """"gpu" or "cpu": where prover actors go ("auto" follows the backend)."""
        if self.placement != "auto":
            return self.placement
        return "gpu" if self.backend == "cuda" else "cpu"


def _ray_dict(cfg: dict) -> dict:
    """The ray section, with the embedded Ray's temp dir under cache_dir unless ray.temp_dir says."""
    ray = dict(cfg.get("ray") or {})
    if not ray.get("temp_dir") and cfg.get("cache_dir"):
        ray["temp_dir"] = os.path.join(os.path.expanduser(cfg["cache_dir"]), "ray")
    return ray


def _at_least(name: str, value, low: int) -> None:
    if int(value) < low:
        raise ValueError(f"{name}={value}: must be at least {low}")
