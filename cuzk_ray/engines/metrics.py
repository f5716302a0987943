"""Engine metrics. ``Metrics`` records nothing (the local executor: no Ray); ``RayMetrics`` goes
through ``ray.util.metrics`` (exported by Ray's Prometheus endpoint as ``ray_cuzk_*`` and shown
on the dashboard). Ray is imported only when a RayMetrics is made; the metric objects are made
once per process."""

from __future__ import annotations

import math
from functools import lru_cache

STAGE_BOUNDARIES = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]


class Metrics:
    """What the scheduler reports; this base records nothing."""

    def in_flight(self, n: int) -> None:
        """Partitions synthesizing, queued or proving."""

    def host_bytes(self, n: int) -> None:
        """Host bytes reserved by in-flight partitions."""

    def partition_failed(self, circuit: str) -> None:
        """One failed attempt (of a partition of ``circuit``)."""

    def partition_done(self, times: dict[str, float], circuit: str) -> None:
        """One verified partition, with its stage seconds."""

    def proof_done(self, circuit: str) -> None:
        """One proof whose partitions all verified."""


class RayMetrics(Metrics):
    """Metrics through ray.util.metrics, the counters tagged with the circuit (the pool serves several)."""

    def __init__(self):
        self.m = engine_metrics()

    def in_flight(self, n: int) -> None:
        self.m["in_flight"].set(n)

    def host_bytes(self, n: int) -> None:
        self.m["host_bytes"].set(n)

    def partition_failed(self, circuit: str) -> None:
        self.m["partitions_failed"].inc(tags={"circuit": circuit})

    def partition_done(self, times: dict[str, float], circuit: str) -> None:
        for st, sec in times.items():
            if math.isfinite(sec):
                self.m["stage_seconds"].observe(sec, tags={"stage": st})
        self.m["partitions_done"].inc(tags={"circuit": circuit})

    def proof_done(self, circuit: str) -> None:
        self.m["proofs_done"].inc(tags={"circuit": circuit})


@lru_cache(maxsize=1)
def engine_metrics() -> dict:
    """The scheduler's ray.util.metrics objects (``cuzk_*``), made once per process."""
    from ray.util.metrics import Counter, Gauge, Histogram

    return {
        "partitions_done": Counter("cuzk_partitions_done", description="partitions proved and verified",
                                   tag_keys=("circuit",)),
        "partitions_failed": Counter("cuzk_partitions_failed", description="partition attempts that failed",
                                     tag_keys=("circuit",)),
        "proofs_done": Counter("cuzk_proofs_done", description="proofs whose partitions all verified",
                               tag_keys=("circuit",)),
        "stage_seconds": Histogram("cuzk_stage_seconds", description="seconds per partition stage",
                                   boundaries=STAGE_BOUNDARIES, tag_keys=("stage",)),
        "in_flight": Gauge("cuzk_partitions_in_flight", description="partitions synthesizing, queued or proving"),
        "host_bytes": Gauge("cuzk_host_bytes_reserved", description="host bytes reserved by in-flight partitions"),
    }


@lru_cache(maxsize=1)
def prover_metrics() -> dict:
    """The prover actors' ray.util.metrics objects, made once per actor process."""
    from ray.util.metrics import Counter

    return {"gpu_busy": Counter("cuzk_gpu_busy_seconds", description="seconds the prover spent in device work",
                                tag_keys=("backend",))}


@lru_cache(maxsize=1)
def service_metrics() -> dict:
    """The proving service's ray.util.metrics objects (``cuzk_service_*``), made once per process
    (the engine actor's): queue depth by priority, proofs by state, seconds per request phase
    (queued, proving, total) and per key load, host memory per node and VRAM per GPU prover.
    Per-stage seconds of the partitions are the scheduler's ``cuzk_stage_seconds``."""
    from ray.util.metrics import Gauge, Histogram

    return {
        "queue_depth": Gauge("cuzk_service_queue_depth", description="proofs accepted and not started, by priority",
                             tag_keys=("priority",)),
        "proofs": Gauge("cuzk_service_proofs", description="proofs in the service's store, by state",
                        tag_keys=("state",)),
        "request_seconds": Histogram("cuzk_service_request_seconds", description="seconds per request phase",
                                     boundaries=STAGE_BOUNDARIES + [300, 900, 3600], tag_keys=("phase",)),
        "key_load_seconds": Histogram("cuzk_service_key_load_seconds",
                                      description="seconds to make a key resident (load or setup, provers ready)",
                                      boundaries=STAGE_BOUNDARIES + [300, 900]),
        "resident_key_bytes": Gauge("cuzk_service_resident_key_bytes", description="bytes of the resident keys"),
        "host_bytes": Gauge("cuzk_service_host_bytes", tag_keys=("node",),
                            description="host memory our processes hold, measured per node"),
        "vram_bytes": Gauge("cuzk_service_vram_bytes", description="device memory in use, per GPU prover",
                            tag_keys=("prover",)),
    }
