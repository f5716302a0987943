"""Starting and stopping the whole service (jobs/serve.py): Ray (embedded on 127.0.0.1, or the
cluster at ray.address / RAY_ADDRESS), the engine actor pinned to this node (the store and the
results are this machine's files), and the Serve application on service.host:service.port.

The token: service.tokens (``service.token``, or a 0600 file made at the first start)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from ..engines.admission import parse_bytes
from ..engines.choice import cluster_address
from .checks import ServiceLocks
from .engine_actor import ACTOR_NAME, NAMESPACE, EngineActor
from .service import ServicePaths, service_settings
from .tokens import service_token

READY_TIMEOUT_S = 900  # the config's key may be made by the dev setup first (minutes at 2^24 and above)


def check_port(host: str, port: int) -> None:
    """One line when service.host:service.port cannot be bound (in use, or not an address here)."""
    if not 0 < int(port) < 65536:
        raise ValueError(f"service.port={port}: must be 1..65535")
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, int(port)))
    except OSError as e:
        raise RuntimeError(f"service.host={host} service.port={port}: cannot listen there "
                           f"({e.strerror or e})") from None


@dataclass
class RunningService:
    url: str
    token_file: Path | None
    actor: object
    started_ray: bool

    def wait_ready(self, timeout: float = READY_TIMEOUT_S, say=None) -> None:
        """Until /healthz would answer 200 (the config's key resident, its provers up); RuntimeError
        with the service's own line when its start failed."""
        import ray

        deadline, said = time.monotonic() + timeout, None
        while time.monotonic() < deadline:
            reply = ray.get(self.actor.health.remote(), timeout=60)
            if reply.status == 200:
                return
            err = reply.body.get("error", "")
            if err.startswith("not ready"):
                raise RuntimeError(f"service: {err}")
            if say and err != said:
                say(f"service: {err}")
                said = err
            time.sleep(0.5)
        raise RuntimeError(f"service: not ready after {timeout:g} s")

    def stop(self) -> None:
        """Serve, then the engine actor (its loop and provers first), then the Ray this started."""
        import ray
        from ray import serve

        try:
            serve.shutdown()
        finally:
            try:
                ray.get(self.actor.stop.remote(), timeout=120)
            except Exception:  # noqa: BLE001  already gone: killed below anyway
                pass
            ray.kill(self.actor, no_restart=True)
            if self.started_ray:
                ray.shutdown()


def absolute_paths(cfg: dict) -> dict:
    """The config with the service's paths made absolute here, where jobs/serve.py runs (the
    engine actor's working directory is Ray's): cache_dir, service.db, service.output_dir,
    service.input_roots (their default, cache_dir and this working directory, spelled out)."""
    paths = ServicePaths.from_config(cfg)
    service = dict(cfg["service"], db=str(paths.db), output_dir=str(paths.output_dir),
                   input_roots=[str(r) for r in paths.input_roots])
    return dict(cfg, cache_dir=os.path.abspath(os.path.expanduser(cfg["cache_dir"])), service=service)


def start_service(cfg: dict) -> RunningService:
    """Start Ray (or connect), the engine actor and the Serve application; returns at once (the
    engine actor loads the config's key in its loop thread: RunningService.wait_ready)."""
    settings = service_settings(cfg)  # a bad setting fails here, before Ray starts
    cfg = absolute_paths(cfg)
    s = cfg["service"]
    parse_bytes(s.get("key_budget"), "service.key_budget")
    ServiceLocks(Path(s["db"]), Path(s["output_dir"])).check()  # another service on them: refused before Ray
    host, port = str(s["host"]), int(s["port"])
    check_port(host, port)
    token, tfile = service_token(cfg)
    from ..engines.ray_env import prepare_env, restore_env
    from ..engines.ray_setup import prepare_embedded_auth

    prepare_embedded_auth(cluster_address(settings), bool(settings.ray.get("verbose")))
    added = prepare_env(settings.ray)
    from ..engines.ray_executor import init_ray

    try:
        store = parse_bytes(settings.ray.get("object_store_memory"), "ray.object_store_memory")
        started = init_ray(settings.ray, store)
    finally:
        restore_env(added)
    from ..engines.ray_lines import quiet_ray_lines

    quiet_ray_lines(bool(settings.ray.get("verbose")))  # Ray's repeated disk warning, once in our words
    import ray
    from ray import serve
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from .app import APP_NAME, Ingress, token_digest

    try:
        # Serve first: /healthz answers (503) while the engine actor starts and loads the key
        serve.start(http_options={"host": host, "port": port}, proxy_location="HeadOnly")
        serve.run(Ingress.bind(token_digest(token), ACTOR_NAME, NAMESPACE), name=APP_NAME, route_prefix="/")
        here = ray.get_runtime_context().get_node_id()
        actor = ray.remote(EngineActor).options(
            name=ACTOR_NAME, namespace=NAMESPACE, num_cpus=0, max_concurrency=16,
            max_restarts=settings.max_restarts, max_task_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote(cfg, os.getcwd())
    except BaseException:
        if started:
            ray.shutdown()
        raise
    shown = f"[{host}]" if ":" in host else host
    return RunningService(f"http://{shown}:{port}", tfile, actor, started)
