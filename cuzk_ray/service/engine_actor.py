"""The engine actor: a thin, long-lived Ray actor (named ``cuzk-engine``, so it shows by name on
the dashboard) around service.ProvingService, which owns the store, the resident keys with their
prover actors and schedulers, and the loop thread. Created with ``ray.remote(EngineActor)`` at
the call site (server.start_engine), so this module does not import Ray at load time.

Every method answers a models.Reply (HTTP status and JSON body): the ingress passes it on as it
is. Expected refusals are ServiceErrors; anything else is a bug, logged with its traceback and
answered 500 in one line."""

from __future__ import annotations

import logging
import os

from .models import Reply, ServiceError
from .service import ProvingService

ACTOR_NAME = "cuzk-engine"
NAMESPACE = "cuzk"
log = logging.getLogger("cuzk_ray.service")


class EngineActor:
    def __init__(self, cfg: dict, cwd: str | None = None):
        """``cfg``: the job's config (paths made absolute by server.start_service); ``cwd``: the
        working directory of jobs/serve.py, where a request's relative paths are taken from (a Ray
        worker starts elsewhere on a cluster)."""
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        logging.getLogger("cuzk_ray").setLevel(logging.INFO)
        self.service = ProvingService(cfg)
        self.service.start()

    def _answer(self, fn, *args) -> Reply:
        try:
            return fn(*args)
        except ServiceError as e:
            return Reply.error(e)
        except Exception as e:  # noqa: BLE001  a bug: the traceback in the actor's log, one line to the client
            log.exception("handler %s", getattr(fn, "__name__", fn))
            return Reply(500, {"error": f"internal error: {type(e).__name__}: {e}"[:500]})

    def health(self) -> Reply:
        return self._answer(self.service.health)

    def submit(self, body) -> Reply:
        return self._answer(self.service.submit, body)

    def proof(self, proof_id: str) -> Reply:
        return self._answer(self.service.proof, proof_id)

    def proofs(self, ids: str) -> Reply:
        return self._answer(self.service.proofs, ids)

    def result(self, proof_id: str) -> Reply:
        return self._answer(self.service.result, proof_id)

    def cancel(self, proof_id: str) -> Reply:
        return self._answer(self.service.cancel, proof_id)

    def status(self) -> Reply:
        return self._answer(self.service.status)

    def preload(self, body) -> Reply:
        return self._answer(self.service.preload, body)

    def evict(self, key_id: str) -> Reply:
        return self._answer(self.service.evict, key_id)

    def stop(self) -> None:
        """Stop the loop and the provers (before the actor is killed)."""
        self.service.stop()
