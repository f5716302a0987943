"""The prove job, shared by ``python jobs/prove.py`` (Hydra's main) and the ``cuzk-ray`` command
(Hydra's compose API): ``run(cfg)`` proves a batch into output_dir and says what it did.

What happens, in order: settings checked; ``output_dir`` locked (fresh, resume or overwrite);
the engine chosen (``engine=auto``: engines.choice, one line saying which and why); preflight
(built-in circuits); the key loaded; every partition proved, verified and written as it verifies,
with a progress bar (a terminal) or plain periodic lines; the stage table; the manifest last.
Every line the job prints is also in ``output_dir/prove.log``, with a timestamp.

Also here, for both entry points: the checks of the command line made before Hydra writes
anything (``refuse_additions``: ``+key=value`` adds keys the schema does not have, so it is
refused like an unknown key; ``precheck_output_dir``), and ``compose`` for the command.
"""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import Field, fields, is_dataclass
from pathlib import Path

from .console import LOG_FILE, Console, Progress
from .signals import STOP_SIGNALS, signal_name, sigterm_interrupts

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"  # the checkout's (an editable install's) conf/


def run(cfg: dict, console: Console | None = None, scratch: bool = False) -> int:
    """Prove the batch ``cfg`` describes (a plain dict: OmegaConf.to_container of conf/config.yaml);
    returns the exit code. Known failures raise errors.* / ValueError (errors.exit_with_error turns
    them into one line), SIGINT and SIGTERM raise errors.Interrupted after the partial manifest is
    written. ``scratch``: output_dir is the command's temporary folder (removed after): not named at
    the end."""
    console = console or Console(verbose=bool(cfg.get("verbose")))
    check_output_dir_value(cfg["output_dir"])
    with sigterm_interrupts():  # SIGTERM (timeout, systemd, `ray job stop`) stops the job as Ctrl-C does
        if (cfg.get("service") or {}).get("url"):  # the batch goes to a running service (same outputs)
            from .service.client import run_client

            return run_client(cfg, console, scratch)
        return run_local(cfg, console, scratch)


def run_local(cfg: dict, console: Console, scratch: bool = False) -> int:
    """run() for a batch proved here (this process or Ray), not by a service."""
    from . import outputs
    from .backends import resolve_backend_name
    from .circuits import make_circuit
    from .circuits.filecoin import SealProofWriter
    from .config import check_job_values
    from .engines import EngineSettings
    from .errors import Interrupted, OutputError

    settings = EngineSettings.from_config(cfg)  # a bad engine, backend or size fails here, before any work
    check_job_values(cfg)  # proofs, seeds: refused out of range, never clamped
    circuit = make_circuit(cfg["circuit"])
    resolve_backend_name(cfg["setup_backend"], "setup_backend")
    # The lock is taken before the key is made (minutes for a big dev key): a second job into the
    # same directory, or a rerun into a used one, is refused at once.
    out = outputs.OutputDir.open(cfg["output_dir"], resume=cfg["resume"], overwrite=cfg["overwrite"])
    with out:
        console.log_to(out.path / LOG_FILE)
        seals = SealProofWriter(circuit, out.path) if circuit.kind == "filecoin" else None  # each C1's MultiProof
        try:
            return prove(cfg, settings, circuit, out, console, scratch, seals)
        except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (signals.Terminated)
            raise Interrupted(stopped(out, signal_name(e), "interrupted", seals)) from None
        except OutputError as e:
            raise OutputError(f"{e}; {stopped(out, str(e), 'stopped', seals)}" if out.started else str(e)) from None
        except Exception as e:  # a bug or a lost cluster: keep the partial manifest, and the traceback
            if out.started and out.manifest_path is None:
                stopped(out, f"{type(e).__name__}: {e}", "stopped", seals)
            raise


def stopped(out, why: str, word: str, seals=None) -> str:
    """Write the partial manifest of a run that ended early, listing the MultiProofs ``seals``
    (circuits.filecoin.SealProofWriter) wrote before the stop; say what was kept, in one line."""
    import signal

    if not out.started:
        return f"{word} before any proof was written to {out.path}"
    for sig in STOP_SIGNALS:  # a second Ctrl-C or SIGTERM must not cut the manifest in half
        signal.signal(sig, signal.SIG_IGN)
    try:
        path = out.finish(seals.stop() if seals is not None else {}, {}, stopped=why)
        where = f"listed in {path}"
    except Exception as e:  # noqa: BLE001  e.g. the disk is still full: the journal is the record
        where = f"listed in {out.path / 'journal.jsonl'} (no manifest: {e})"
    return (f"{len(out.entries)} verified partition(s) kept in {out.path}, {where}; "
            f"rerun with resume=true to prove the rest")


def known_domain(circuit) -> int | None:
    """The QAP domain size before the key is read: the built-in circuit's from its config, a
    zkey's from its header when the circuit can read it (key_shape); None: known after load_key."""
    if circuit.kind == "porep":
        return circuit.domain_size()
    shape = circuit.key_shape()
    return shape.domain if shape is not None else None


def prove(cfg: dict, settings, circuit, out, console: Console, scratch: bool = False, seals=None) -> int:
    """The run, once output_dir is locked and known to be fresh or resumable; ``seals``: the
    SealProofWriter of a Filecoin run (its C1s' MultiProofs), else None."""
    from . import outputs
    from .config import proof_count
    from .engines import open_engine
    from .engines.admission import check_budget, partition_host_bytes
    from .engines.choice import choose_engine, resolved
    from .engines.ray_env import embedded
    from .engines.ray_lines import warn_full_disk
    from .engines.report import load_line, memory_line, memory_record, stage_table
    from .errors import ProofFailed
    from .formats.native import file_sha256
    from .keystore import insecure_line
    from .preflight import fit_gpu, preflight

    say = console.say
    t_start = time.perf_counter()
    if out.removed:
        say(f"overwrite: removed {out.removed} file(s) of the earlier run in {out.path}")
    proofs = proof_count(cfg, circuit)
    choice, domain = None, known_domain(circuit)
    if domain is not None:  # the engine is chosen before the preflight, which checks what that engine needs
        choice = choose_engine(settings, proofs * circuit.partitions, domain)
        settings = resolved(settings, choice)
    settings = fit_gpu(settings, circuit, cfg["cache_dir"], cfg["setup_seed"], say)
    preflight(settings, circuit, cfg["cache_dir"], cfg["setup_seed"])  # disk, host, object store, VRAM
    if settings.engine == "ray" and settings.ray.get("temp_dir") and embedded(settings.ray):
        warn_full_disk(settings.ray["temp_dir"])  # once, before Ray would say it every 10 s
    # Everything that can reject the input runs before output_dir is written.
    t0 = time.perf_counter()
    pk, cs, key_info = circuit.load_key(cfg["cache_dir"], cfg["setup_seed"], cfg["setup_backend"])
    say(f"key: {key_info['key']} ({key_info['note']}, {time.perf_counter() - t0:.1f} s)")
    if choice is None:
        choice = choose_engine(settings, proofs * circuit.partitions, pk.domain_size)
        settings = resolved(settings, choice)
        # sizes known only now (a Filecoin circuit, recorded by load_key): checked before any prover starts
        settings = fit_gpu(settings, circuit, cfg["cache_dir"], cfg["setup_seed"], say)
        preflight(settings, circuit, cfg["cache_dir"], cfg["setup_seed"])
    insecure = bool(pk.meta.get("insecure_dev_setup"))
    setup_seed = pk.meta.get("seed") if insecure else None
    if insecure:  # on every run that uses such a key, not only the one that made it
        say(insecure_line(key_info["key"], setup_seed))
    check_budget(settings.host_budget, partition_host_bytes(circuit, pk.domain_size, settings.backend),
                 circuit.circuit_id)
    witness = tuple(circuit.witness) if circuit.kind == "snarkjs" else ()
    identity = outputs.RunIdentity.for_key(pk.vk, circuit.circuit_id, cfg["seed"], proofs, circuit.partitions,
                                           witness, insecure, setup_seed)
    todo = out.start(identity, pk.vk, pk.n_public)  # refuses (writing nothing) if the disk is too small
    if out.resume:
        say(f"resume: {len(out.entries)} partition(s) on disk, {proofs - len(todo)} of {proofs} proof(s) complete; "
            f"proving {len(todo)}" + (f" ({len(out.dropped)} changed or missing on disk, proved again)"
                                      if out.dropped else ""))
    # The witness files' hashes, once, before proving: each entry says which bytes it proved.
    witness_sha = {w: file_sha256(w) for w in witness}

    def proof_info(index: int) -> dict:
        info = circuit.proof_info(index)
        if "witness" in info:
            info["witness_sha256"] = witness_sha[info["witness"]]
        return info

    info = {"circuit": circuit.circuit_id, "key": key_info["key"], "engine": settings.engine}
    batch, written, startup_s = None, [], 0.0
    if todo:
        say(choice.line())
        t_engine = time.perf_counter()
        with open_engine(settings, pk, cs, circuit) as engine:
            startup_s = time.perf_counter() - t_engine
            say(f"provers: {len(engine.provers)} x {engine.backend}; pw={engine.pw}; {len(todo)} proof(s) x "
                f"{circuit.partitions} partition(s) of {circuit.circuit_id}")
            what = "Ray started or connected, provers ready" if settings.engine == "ray" else "provers ready"
            say(f"start-up: {startup_s:.1f} s ({what}); {load_line(engine.prover_info)}")
            bar = Progress(console, period=float(cfg.get("progress_s", 10.0)))

            def progress(res, done, total):
                written.append(out.add(res, proof_info(res.proof_index)))  # on disk as soon as it verifies
                if seals is not None:  # its C1's last partition: the MultiProof, in the background
                    seals.partition_done(res.proof_index, out.entries)
                bar.update(done, total)

            batch = engine.run(todo, seed=cfg["seed"], progress=progress, names=circuit.proof_names())
        info.update({"backend": engine.backend, "wall_seconds": round(batch.wall_s, 3),
                     "startup_seconds": round(startup_s, 3), **memory_record(batch),
                     "max_in_flight": batch.max_in_flight})
    failed = {circuit.proof_label(batch.proofs[pid]): why for pid, why in batch.failed.items()} if batch else {}
    if seals is not None:  # each C1's MultiProof, verified against its public inputs, then written
        info.update(seals.finish(out.entries))
        for seal in info.get("seal_proofs", {}).values():
            say(f"seal proof: {out.path / seal['path']} ({circuit.partitions} x 192 bytes, verified)")
    manifest = out.finish(info, failed)
    if batch is not None:
        say(stage_table(batch.results, batch.wall_s, len(todo) - len(batch.failed)))
        say(memory_line(batch))
    total = time.perf_counter() - t_start
    kind = "manifest" if manifest.name == outputs.MANIFEST else "partial manifest (some proofs failed)"
    where = "" if scratch else f"; {kind}: {manifest}"
    say(f"total {total:.1f} s (start-up {startup_s:.1f} s, proving {batch.wall_s if batch else 0.0:.1f} s); "
        f"{len(written)} partitions proved and verified in this run{where}")
    if failed:
        raise ProofFailed("; ".join(f"{label}: {why}" for label, why in sorted(failed.items())))
    return 0


# -- the command line, before Hydra writes anything ---------------------------------------------

OVERRIDE = re.compile(r"^(\+{0,2})([A-Za-z_][\w.]*)(@[\w.]+)?(=|~)")


def schema_fields(node=None, prefix: str = "") -> dict[str, Field]:
    """Every dotted key of the job's schema (config.ProveConf) with its dataclass field."""
    from .config import ProveConf

    node = node or ProveConf
    out = {}
    for f in fields(node):
        key = f"{prefix}{f.name}"
        out[key] = f
        default = f.default_factory() if callable(f.default_factory) else f.default
        if is_dataclass(default):
            out.update(schema_fields(type(default), f"{key}."))
    return out


def schema_keys(node=None, prefix: str = "") -> list[str]:
    """Every dotted key of the job's schema (config.ProveConf), for "did you mean" hints."""
    return list(schema_fields(node, prefix))


POWER = re.compile(r"^(['\"]?)(\d+)\s*(?:\^|\*\*)\s*(\d+)\1$")  # 2^24, 2**24, '2^24'
INT_TYPES = ("int", "int | None")  # the schema's annotations (strings: from __future__ import annotations)
INT_MAX = 2**63 - 1  # OmegaConf's ints are Python's; the job's sizes and seeds must fit an int64


def expand_powers(argv: list[str], schema=None) -> list[str]:
    """``key=N^K`` and ``key=N**K`` (the README's ``circuit.constraints=2^24``) written as the
    number, for keys the schema types as an int: Hydra's override grammar has no ``^`` (its lexer
    fails with a multi-line LexerNoViableAltException) and would take ``2**24`` as a string that
    is not an int. Other arguments are returned as they are; a power beyond an int64 is refused."""
    ints = {k for k, f in schema_fields(schema).items() if f.type in INT_TYPES}
    out = []
    for a in argv:
        m = OVERRIDE.match(a)
        power = POWER.match(a[m.end():]) if m and m.group(4) == "=" else None
        if power and m.group(2) in ints:
            value = int(power.group(2)) ** int(power.group(3)) if int(power.group(3)) < 64 else INT_MAX + 1
            if value > INT_MAX:
                raise ValueError(f"{a}: {a[m.end():]} is larger than an int64 ({INT_MAX})")
            a = f"{a[:m.end()]}{value}"
        out.append(a)
    return out


def check_output_dir_value(value) -> None:
    """Refuse an empty output_dir (``output_dir=``): the run would be written into the working
    directory, mixed with whatever is there."""
    if value is None or not str(value).strip():
        raise ValueError("output_dir= is empty: name a folder for the run (default outputs/prove); an empty "
                         "one would write it into the current directory")


def refuse_additions(argv: list[str], schema=None) -> None:
    """Keys the job does not have, refused in one line before Hydra runs (its own refusal is a
    multi-line error with exit 1, and ``+key=value`` / ``++key=value`` make it *add* the key,
    which the structured schema then accepts and the job ignores: ``+proof=2`` ran one proof).
    ``hydra.*`` keys are Hydra's own and pass; ``schema``: config.ProveConf unless given."""
    keys = set(schema_keys(schema))
    for a in argv:
        m = OVERRIDE.match(a)
        if not m or m.group(2).split(".")[0] == "hydra":
            continue
        plus, key = m.group(1), m.group(2)
        if key in keys:
            if plus:
                raise ValueError(f"{a}: '{plus}' adds a key, and {key} exists: set it as {a.lstrip('+')}")
            continue
        near = difflib.get_close_matches(key, sorted(keys), n=1)
        hint = f"; did you mean {near[0]}=...?" if near else ""
        raise ValueError(f"{a}: {key} is not a key of the job (cuzk_ray/config.py lists them){hint}")


def output_dir_override(argv: list[str]) -> str | None:
    """The plain ``output_dir=PATH`` override, if given (the last one wins, as in Hydra)."""
    found = None
    for a in argv:
        key, sep, value = a.lstrip("+").partition("=")
        if sep and key == "output_dir" and "${" not in value:
            found = value
    return found


def precheck_output_dir(argv: list[str]) -> None:
    """Hydra creates output_dir and writes its record there (.hydra/) before the job runs, with a
    traceback when it cannot: an output_dir given on the command line that is unusable, or locked
    by a running job (whose record Hydra would overwrite), is refused here first (OutputError)."""
    path = output_dir_override(argv)
    if path is not None:
        check_output_dir_value(path)
        from .outputs import OutputDir, ensure_dir

        OutputDir.check_not_locked(path)
        ensure_dir(path)


# Hydra's flags that take a value (the value is not an override), and those that make a run of
# another kind (help, multirun sweeps, another config), whose overrides Hydra checks itself.
VALUE_FLAGS = frozenset({"--cfg", "-c", "--package", "-p", "--info", "-i"})
OTHER_RUNS = frozenset({"--help", "-h", "--hydra-help", "--multirun", "-m", "--config-name", "-cn",
                        "--config-path", "-cp", "--config-dir", "-cd", "--run", "-r", "--shell-completion",
                        "-sc", "--experimental-rerun"})


def command_overrides(argv: list[str]) -> list[str] | None:
    """The ``key=value`` overrides of a Hydra app's command line (flags and their values left out),
    or None for a run of another kind (OTHER_RUNS) or ``hydra.*`` keys (Hydra's own)."""
    if any(a.split("=")[0] in OTHER_RUNS for a in argv):
        return None
    out, skip = [], False
    for a in argv:
        if skip or a.startswith("-"):
            skip = not skip and a in VALUE_FLAGS
            continue
        if a.lstrip("+~").split(".")[0].split("=")[0] != "hydra":
            out.append(a)
    return out


def precheck_argv(argv: list[str], config_name: str = "config") -> list[str]:
    """A Hydra job's command line checked before Hydra parses it (it exits 1 with a multi-line
    error for a bad override, after writing .hydra/): keys the schema lacks and ``+key`` refused
    (refuse_additions), ``2^k`` written as the number (expand_powers), every override composed
    once (bad syntax, wrong types: ValueError, one line), output_dir checked (precheck_output_dir).
    Returns the command line to give Hydra."""
    refuse_additions(argv)
    argv = expand_powers(argv)
    overrides = command_overrides(argv)
    if overrides is not None:
        cfg = compose(overrides, config_name)
        check_output_dir_value(cfg["output_dir"])
    precheck_output_dir(argv)
    return argv


def compose(overrides: list[str], config_name: str = "config") -> dict:
    """The job's config from conf/ with Hydra ``key=value`` overrides, as jobs/prove.py would see
    it (schema checked: unknown keys and bad types raise), as a plain dict. Without Hydra's run
    directory and its .hydra/ record: the command writes only the output contract and prove.log."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from .config import register

    if not (CONF_DIR / f"{config_name}.yaml").is_file():
        raise FileNotFoundError(f"{CONF_DIR / (config_name + '.yaml')}: the job's config is not there (cuzk-ray "
                                f"reads conf/ from the checkout it is installed from: pip install -e CHECKOUT)")
    register()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3", job_name="prove"):
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
        plain = OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as e:
        raise ValueError(f"bad override: {hydra_error_line(e)}") from None
    plain.pop("hydra", None)
    return plain


def hydra_error_line(e: BaseException) -> str:
    """One line for Hydra's error ``e``: its first line, the character its caret line points at
    (a syntax error), and the first line of its cause (a wrong type: "Value 'abc' ... Integer")."""
    lines = [ln for ln in str(e).splitlines() if ln.strip()] or [type(e).__name__]
    line = lines[0].strip()
    caret = next((ln for ln in lines[1:] if ln.strip() == "^"), None)
    if caret is not None and caret.index("^") < len(lines[0]):
        line += f" (unexpected {lines[0][caret.index('^')]!r}; quote such a value: key='...')"
    if e.__cause__ is not None:
        line += f": {next((ln.strip() for ln in str(e.__cause__).splitlines() if ln.strip()), '')}"
    return line
