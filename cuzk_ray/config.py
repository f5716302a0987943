"""The job's configuration schema (Hydra structured config): unknown keys and values of the wrong
type are rejected before anything runs (`pww=3`, `pw=abc`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore


@dataclass
class CircuitConf:
    kind: str = "porep"
    partitions: int = 10
    constraints: int = 8192
    public: int = 4
    field_share: float = 0.05
    circuit_seed: int = 0
    shape: str = "default"  # default | filecoin (the proportions of Filecoin's PoRep partition; circuit=porep32g)
    zkey: str | None = None  # circuit=snarkjs: the Groth16 BLS12-381 .zkey
    # circuit=snarkjs: .wtns files, one proof each: a path, a list, a folder or a glob (circuits.expand_witnesses);
    # Any, not list[str], so that a single unbracketed `circuit.witness=w.wtns` is accepted too
    witness: Any = field(default_factory=list)
    r1cs: str | None = None  # circuit=snarkjs: optional .r1cs to cross-check the zkey against
    # circuit=filecoin: C1 JSON files (SealCommitPhase1Output), one proof each: a path, a list, a folder or a glob
    c1: Any = None
    params: str | None = None  # circuit=filecoin: the folder of Filecoin's .params/.vk; null: a dev key (INSECURE)
    variant: str = "stacked"  # circuit=filecoin: stacked (the real circuit) | inputs (a plumbing stand-in)


@dataclass
class RayConf:
    address: str | None = None  # connect here (RAY_ADDRESS works too); else an embedded Ray
    num_cpus: int | None = None  # embedded Ray only
    num_gpus: int | None = None  # embedded Ray only
    dashboard: bool = False  # embedded Ray only, bound to 127.0.0.1
    ship_package: bool | None = None  # runtime_env py_modules; None: only when connecting to a cluster
    metrics_export_port: int | None = None  # embedded Ray only: Prometheus endpoint
    object_store_memory: str | None = None  # embedded Ray only, e.g. 64GiB; null: sized for the key
    temp_dir: str | None = None  # embedded Ray only: its session files; null: <cache_dir>/ray (mode 0700)


@dataclass
class MemoryConf:
    host_budget: str | None = None  # e.g. 64GiB; bytes of in-flight partitions on the host (estimated and measured)


@dataclass
class ServiceConf:
    """The proving service (jobs/serve.py, docs/SERVICE.md) and the batch job's client mode."""

    url: str | None = None  # jobs/prove.py: submit the batch to the service here instead of proving it
    token: str | None = None  # the bearer token; null: generated once into token_file (serve), read from it (client)
    token_file: str | None = None  # null: <cache_dir>/service/token (mode 0600)
    host: str = "127.0.0.1"  # where the HTTP API listens; beyond loopback only by explicit choice
    port: int = 8000
    db: str | None = None  # the durable queue (SQLite); null: <cache_dir>/service/service.db
    output_dir: str | None = None  # results, one batch output contract per proof; null: <cache_dir>/service/proofs
    input_roots: list[str] = field(default_factory=list)  # paths requests may name; empty: cache_dir and the cwd
    key_budget: str | None = None  # bytes of resident keys (LRU eviction beyond it), e.g. 64GiB; null: no limit
    preload: bool = True  # make the config's circuit key resident at start (/healthz is 200 once its provers are up)
    priority: str = "normal"  # client: the priority of the proofs it submits
    poll_s: float = 0.5  # client: seconds between status polls
    reconnect_s: float = 300.0  # client: how long a service that stops answering (a restart) is waited for


@dataclass
class ProveConf:
    output_dir: str = "outputs/prove"
    verbose: bool = False  # everything: cuzk_ray's debug lines, Ray's own log lines and start-up warnings
    resume: bool = False  # output_dir holds an interrupted run: prove only what it lacks (same run only)
    overwrite: bool = False  # output_dir holds an earlier run: remove its files (only the contract's names)
    engine: str = "auto"  # auto (local for a small batch and no cluster, else ray: engines/choice.py) | ray | local
    backend: str = "auto"
    proofs: int = 1
    pw: int | None = None  # partitions in flight; None: 2 with CPU provers, pw_per_gpu x GPUs with GPU ones
    pw_per_gpu: int = 8
    gpu_workers_per_device: int = 1
    gpu_concurrency: int = 2  # partitions one GPU prover actor works on at once (threads)
    provers: int | None = None
    cpu_threads: int = 2
    max_attempts: int = 3
    max_restarts: int = 3  # restarts of a prover actor (its attempts in flight are resubmitted, not counted)
    watchdog_s: float = 60.0  # no progress this long and work that cannot run: one line naming the resource, exit 2
    retry_backoff_s: float = 1.0  # a failed attempt waits backoff x 2^(n-1) s before the next (capped)
    retry_backoff_max_s: float = 30.0
    restart_wait_s: float = 120.0  # how long a restarting prover actor is waited for before it counts as dead
    progress_s: float = 10.0  # seconds between plain progress lines when stdout is not a terminal (0: every partition)
    seed: int = 0
    setup_seed: int = 0
    setup_backend: str = "auto"  # where the development setup runs: auto (cuda when usable), cpu, cuda
    cache_dir: str = "~/.cache/cuzk-ray"
    circuit: CircuitConf = field(default_factory=CircuitConf)
    ray: RayConf = field(default_factory=RayConf)
    memory: MemoryConf = field(default_factory=MemoryConf)
    service: ServiceConf = field(default_factory=ServiceConf)
    hardware: Any = None  # name of the hardware profile in use (set by conf/hardware/*.yaml)


@dataclass
class BenchConf(ProveConf):
    output_dir: str = "outputs/bench"
    engine: str = "ray"  # the steady state of the Ray engine is what is measured (auto would pick local when small)
    proofs: int = 3  # measured proofs (steady state), after the warm-up
    warmup: int = 1  # proofs run first and not measured (actors warm, kernels compiled)
    plots: bool = True  # timeline.png and stages.png (needs matplotlib: pip install -e '.[bench]')
    sample_s: float = 0.25  # host memory sampling period


SCHEMAS = {"prove_schema": ProveConf, "bench_schema": BenchConf}


def register() -> None:
    """Put the job schemas into Hydra's ConfigStore, once per store: storing converts each
    dataclass with OmegaConf.structured (~15 ms a schema), and a prove command calls this twice
    (jobs/prove.py's import, precheck_argv's compose)."""
    cs = ConfigStore.instance()
    stored = set(cs.list("/"))
    for name, node in SCHEMAS.items():
        if f"{name}.yaml" not in stored:
            cs.store(name=name, node=node)


def proof_count(cfg: dict, circuit) -> int:
    """Proofs in the batch, for the batch job and its service client alike: one per witness file for
    circom circuits, one per C1 file for Filecoin's (``proofs`` is not read), else ``proofs``."""
    if circuit.kind == "filecoin":
        return len(circuit.c1_files)
    return len(circuit.witness) if circuit.kind == "snarkjs" else cfg["proofs"]


def check_job_values(cfg: dict) -> None:
    """Refuse the job-level values out of range, one line each, never clamped (issue 15): the
    engine's are EngineSettings', the circuit's its from_config's. Seeds are non-negative (numpy's
    seed sequences take no negatives: seed=-1 failed every partition three times, after the key)."""
    if cfg["proofs"] < 1:
        raise ValueError(f"proofs={cfg['proofs']}: must be at least 1")
    for name in ("seed", "setup_seed"):
        if cfg[name] < 0:
            raise ValueError(f"{name}={cfg[name]}: must be at least 0")
    reconnect = (cfg.get("service") or {}).get("reconnect_s")
    if reconnect is not None and not reconnect >= 0:
        raise ValueError(f"service.reconnect_s={reconnect}: must be at least 0 (seconds a restarting service is "
                         f"waited for)")
    if cfg.get("warmup") is not None and cfg["warmup"] < 0:  # bench only
        raise ValueError(f"warmup={cfg['warmup']}: must be at least 0")
    if cfg.get("sample_s") is not None and not cfg["sample_s"] > 0:  # bench only
        raise ValueError(f"sample_s={cfg['sample_s']}: must be above 0 (seconds between host memory samples)")
