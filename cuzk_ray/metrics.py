"""Engine metrics through ``ray.util.metrics`` (exported by Ray's Prometheus endpoint as
``ray_cuzk_*`` and shown on the dashboard). Created lazily, once per process."""

from __future__ import annotations

from functools import lru_cache

STAGE_BOUNDARIES = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]


@lru_cache(maxsize=1)
def engine_metrics():
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
def prover_metrics():
    from ray.util.metrics import Counter

    return {"gpu_busy": Counter("cuzk_gpu_busy_seconds", description="seconds the prover spent in device work",
                                tag_keys=("backend",))}
