"""The proving engine: typed records (types), host budgets (admission), the one scheduling loop
(scheduler), executors that only submit work (local: in-process; ray_executor: synthesis tasks and
prover actors), the Ray-free per-partition worker and its thin actors, settings built once from
the config, and ``open_engine``, the wiring every job uses. Importing this package does not
import Ray; only engine=ray does."""

from .engine import Engine, LocalEngine, ProvingEngine, open_engine
from .settings import EngineSettings
from .types import BatchResult, PartitionResult, Priority, ProofState

__all__ = ["BatchResult", "Engine", "EngineSettings", "LocalEngine", "PartitionResult", "Priority", "ProofState",
           "ProvingEngine", "open_engine"]
