"""``engine=auto``: run in this process when Ray would buy nothing but its start-up, on Ray otherwise.

The rule (checked in this order; the first that applies decides, and its reason is printed):

1. a cluster is given (``ray.address`` or ``RAY_ADDRESS``) -> ray: the work goes where the user sent it;
2. settings only Ray honours are set (``provers``, ``ray.dashboard``, ``ray.metrics_export_port``,
   ``ray.num_cpus``, ``ray.num_gpus``, ``ray.object_store_memory``) -> ray: the user asked for
   what the local engine does not have (``pw`` is no such sign: the hardware profiles set it);
3. more than one GPU would prove (backend=cuda and more than one visible GPU) -> ray: one prover
   actor per GPU; the local engine drives one device;
4. the batch is large: partitions x domain size above ``LOCAL_MAX_CONSTRAINTS`` (2^24) -> ray:
   its synthesis tasks run on every core beside the provers and a GPU prover overlaps one
   partition's host work with another's kernels, which pays back the start-up;
5. otherwise -> local. On one node with CPU provers Ray runs one prover per node too, so for a
   small batch the only difference is Ray's start-up (several seconds: docs/BENCHMARKS.md).

Why 2^24: at or below it the whole batch's synthesis is ~2 s of one core (the built-in circuit
synthesizes ~9M constraints/s; a .wtns file is only read), less than an embedded Ray's start-up;
above it a GPU batch runs long enough for the overlap to win. It is a rule of thumb, not a
measurement of every machine: ``engine=ray`` or ``engine=local`` overrides it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from .settings import EngineSettings

LOCAL_MAX_CONSTRAINTS = 1 << 24
# settings of an embedded Ray: set, they say the user wants Ray
RAY_ONLY = ("dashboard", "metrics_export_port", "num_cpus", "num_gpus", "object_store_memory")


@dataclass(frozen=True)
class EngineChoice:
    """The engine that will run (``local`` or ``ray``) and the one-line reason."""

    engine: str
    reason: str

    def line(self) -> str:
        return f"engine: {self.engine} ({self.reason})"


def cluster_address(settings: EngineSettings) -> str | None:
    """The cluster the run was sent to, if any (``ray.address``, else ``RAY_ADDRESS``)."""
    return settings.ray.get("address") or os.environ.get("RAY_ADDRESS") or None


def choose_engine(settings: EngineSettings, partitions: int, domain_size: int, gpus: int | None = None) -> EngineChoice:
    """The engine for a batch of ``partitions`` partitions of ``domain_size`` each (see the module
    docstring for the rule). ``gpus``: visible GPUs (None: counted when backend=cuda)."""
    if settings.engine != "auto":
        return EngineChoice(settings.engine, f"engine={settings.engine} was asked for")
    address = cluster_address(settings)
    if address:
        return EngineChoice("ray", f"auto: a cluster was given ({address})")
    wanted = [k for k, v in [("provers", settings.provers)] + [(f"ray.{k}", settings.ray.get(k)) for k in RAY_ONLY]
              if v is not None and v is not False]
    if wanted:
        return EngineChoice("ray", f"auto: {', '.join(wanted)} set, which only the Ray engine honours")
    if settings.backend == "cuda":
        if gpus is None:
            from ..backends import visible_gpus

            gpus = visible_gpus()
        if gpus > 1:
            return EngineChoice("ray", f"auto: {gpus} GPUs, one prover each (the local engine drives one)")
    total = partitions * domain_size
    size = f"{partitions} partition(s) x 2^{max(domain_size, 1).bit_length() - 1}"
    if total > LOCAL_MAX_CONSTRAINTS:
        return EngineChoice("ray", f"auto: {size} is above 2^24 constraints in all, where Ray's parallel "
                                   f"synthesis and overlap pay for its start-up")
    return EngineChoice("local", f"auto: no cluster given and {size} fits one process; engine=ray to use Ray")


def resolved(settings: EngineSettings, choice: EngineChoice) -> EngineSettings:
    """``settings`` with the chosen engine in place of ``auto``."""
    return replace(settings, engine=choice.engine)
