"""Prove a batch with cuzk-ray: `python jobs/prove.py [key=value ...]` (Hydra overrides).

With no arguments: the built-in PoRep-shaped circuit (10 partitions), a cached development key
(made on first use), one proof (engine=auto: in this process for a batch this small, on Ray for
a large one or a cluster; the run says which and why; CPU when there is no GPU), every partition
verified, outputs and manifest.json in output_dir, and a per-stage table. On a cluster:
`ray job submit --working-dir . -- python jobs/prove.py pw=12` (or set RAY_ADDRESS). The job
itself is cuzk_ray/job.py, shared with the `cuzk-ray` command.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from cuzk_ray import process_exit  # noqa: E402

# first: its exit handler must run after every other one (the interpreter's teardown is skipped)
process_exit.install()

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from cuzk_ray.config import register  # noqa: E402

register()


CONFIG_PATH, CONFIG_NAME = "../conf", "config"


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name=CONFIG_NAME)
def main(cfg: DictConfig) -> None:
    from cuzk_ray.console import Console
    from cuzk_ray.errors import exit_with_error
    from cuzk_ray.job import run

    # prove.log is written by the job (every line it prints); should that disk fill up, a log line
    # must not print a "--- Logging error ---" traceback: the console still shows the line.
    logging.raiseExceptions = False
    plain = OmegaConf.to_container(cfg, resolve=True)
    if VERBOSE:
        plain["verbose"] = True
    console = Console(verbose=bool(plain["verbose"]))
    try:
        code = run(plain, console)
    except Exception as e:  # noqa: BLE001  known errors become one line; others keep the traceback
        code = exit_with_error(e)
    finally:
        console.close()
    sys.exit(code)


VERBOSE: list[str] = []  # ["--verbose"] when given (taken out of argv before Hydra parses it)

if __name__ == "__main__":
    import os

    from cuzk_ray.errors import exit_with_error
    from cuzk_ray.hydra_app import run_app
    from cuzk_ray.job import precheck_argv

    # Nothing this job writes is group- or world-writable whatever the umask: Hydra's .hydra/ and
    # prove.log as well as the outputs (which write_bytes_atomic makes 0644 by itself).
    os.umask(os.umask(0) | 0o022)
    if "--verbose" in sys.argv[1:]:
        VERBOSE.append("--verbose")
        sys.argv = [a for a in sys.argv if a != "--verbose"]
    try:
        # before Hydra: it would write .hydra/ for a run that cannot start, and say so in many lines
        sys.argv[1:] = precheck_argv(sys.argv[1:])
    except Exception as _e:  # noqa: BLE001  one line, exit 2 (OutputError, ValueError)
        sys.exit(exit_with_error(_e))
    try:
        try:
            # hydra.main's run, less its compose that only reads hydra.mode (cuzk_ray/hydra_app.py)
            run_app(main, CONFIG_PATH, CONFIG_NAME, sys.argv[1:])
        except KeyboardInterrupt:  # before run() took over (Hydra starting): nothing was written
            print("interrupted: before any proof was written", file=sys.stderr)
            sys.exit(130)
    except SystemExit as _exit:  # how the job ended: its exit handlers run, then no teardown (~0.25 s)
        process_exit.exit_code(_exit.code)
        raise
