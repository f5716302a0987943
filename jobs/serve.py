"""The proving service: `python jobs/serve.py [key=value ...]` (Hydra overrides, the batch job's
config plus the `service` group: conf/service/default.yaml; docs/SERVICE.md).

Starts Ray (embedded on 127.0.0.1, or the cluster at ray.address / RAY_ADDRESS), the engine
actor (the durable store, resident keys, prover actors, the scheduler) and the Ray Serve HTTP API
on service.host:service.port; prints the URL and where the token is, then "ready" once the
config's key is resident. SIGINT or SIGTERM stop it: Serve, the engine actor and its provers, and
the embedded Ray it started. Accepted proofs stay in service.db and are completed on the next start.
"""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from cuzk_ray.config import register  # noqa: E402

register()


def _interrupt(signum, frame):
    """The first SIGINT or SIGTERM stops the service; later ones are ignored (they must not cut
    the shutdown short: a Ctrl-C reaches the whole process group, `timeout` forwards its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    import time

    from cuzk_ray.errors import exit_with_error

    logging.raiseExceptions = False
    plain = OmegaConf.to_container(cfg, resolve=True)
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    running = None
    try:
        from cuzk_ray.service.server import start_service

        running = start_service(plain)
        # again: ray.init installs its own SIGTERM handler in the driver (a log line, then exit)
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGINT, _interrupt)
        where = f"token in {running.token_file}" if running.token_file else "token: service.token"
        print(f"service: {running.url} ({where}); starting", flush=True)
        running.wait_ready(say=lambda line: print(line, flush=True))
        print(f"service: ready at {running.url}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("service: stopping", flush=True)
        code = 0
    except Exception as e:  # noqa: BLE001  known errors become one line; others keep the traceback
        code = exit_with_error(e)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if running is not None:
        running.stop()
        print("service: stopped", flush=True)
    sys.exit(code)


if __name__ == "__main__":
    import os

    from cuzk_ray.errors import exit_with_error
    from cuzk_ray.job import refuse_additions

    os.umask(os.umask(0) | 0o022)
    try:
        refuse_additions(sys.argv[1:])
    except Exception as _e:  # noqa: BLE001  one line, exit 2
        sys.exit(exit_with_error(_e))
    # no output_dir of its own: Hydra writes no run directory for the service
    sys.argv += [a for a in ("hydra.output_subdir=null", "hydra.run.dir=.") if a.split("=")[0] not in
                 " ".join(sys.argv)]
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted: before the service started", file=sys.stderr)
        sys.exit(130)
