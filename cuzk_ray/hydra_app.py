"""A Hydra job's plain run without the config composed once more only to read its mode.

For a plain run (a command line of overrides only), Hydra 1.3's ``@hydra.main`` composes the
config twice: first in multirun mode only to read ``hydra.mode`` (``Hydra.get_mode``), then for
the run. The job's config never sets ``hydra.mode``, so the first compose (~70 ms of a 2 s BN254
proof on two cores) always answers "none set", and hydra.main then runs with the override
``hydra.mode=RUN``. ``run_app`` does that run directly, the way hydra.main does it (the same
search path, task name, override and ``Hydra.run``: output_dir/.hydra/ is written alike); any
other command line (``--help``, ``--cfg``, ``--multirun``, ``-cn``, ...) goes to hydra.main as it is.
"""

from __future__ import annotations

from collections.abc import Callable


def plain_run(argv: list[str]) -> bool:
    """True for a command line of the job's overrides only: no flag (nothing but a run) and no
    ``hydra.*`` key (``hydra.mode`` among them: hydra.main decides those)."""
    return not any(a.startswith("-") or a.lstrip("+~").split("=")[0].split(".")[0] == "hydra" for a in argv)


def run_app(decorated_main: Callable, config_path: str, config_name: str, argv: list[str]) -> None:
    """Run ``decorated_main`` (a function under ``@hydra.main(config_path=..., config_name=...)``,
    the same two values given here) with ``argv``'s overrides, as hydra.main would."""
    if not plain_run(argv):
        decorated_main()
        return
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import (
        create_automatic_config_search_path,
        detect_calling_file_or_module_from_task_function,
        detect_task_name,
        run_and_report,
    )
    from hydra.core.global_hydra import GlobalHydra

    task_function = decorated_main.__wrapped__  # the job's own function (functools.wraps)
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task_function)
    search_path = create_automatic_config_search_path(calling_file, calling_module, config_path)
    hydra = run_and_report(lambda: Hydra.create_main_hydra2(
        task_name=detect_task_name(calling_file, calling_module), config_search_path=search_path))
    try:
        overrides = [*argv, "hydra.mode=RUN"]  # what hydra.main adds when the config sets no mode
        run_and_report(lambda: hydra.run(config_name=config_name, task_function=task_function,
                                          overrides=overrides))
    finally:
        GlobalHydra.instance().clear()
