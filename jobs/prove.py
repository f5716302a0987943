"""Prove a batch with cuzk-ray: `python jobs/prove.py [key=value ...]` (Hydra overrides).

With no arguments: the built-in PoRep-shaped circuit (10 partitions), a cached development key
(made on first use), one proof on an embedded Ray (CPU when there is no GPU), every partition
verified, outputs and manifest.json in output_dir, and a per-stage table. On a cluster:
`ray job submit --working-dir . -- python jobs/prove.py pw=12` (or set RAY_ADDRESS).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from cuzk_ray.config import check_job_values, register  # noqa: E402

register()
log = logging.getLogger("cuzk_ray.prove")


def run(cfg: dict) -> int:
    from cuzk_ray import outputs
    from cuzk_ray.backends import resolve_backend_name
    from cuzk_ray.circuits import make_circuit
    from cuzk_ray.engines import EngineSettings
    from cuzk_ray.errors import Interrupted, OutputError

    settings = EngineSettings.from_config(cfg)  # a bad engine, backend or size fails here, before any work
    check_job_values(cfg)  # proofs, seeds: refused out of range, never clamped
    circuit = make_circuit(cfg["circuit"])
    resolve_backend_name(cfg["setup_backend"], "setup_backend")
    # The lock is taken before the key is made (minutes for a big dev key): a second job into the
    # same directory, or a rerun into a used one, is refused at once.
    out = outputs.OutputDir.open(cfg["output_dir"], resume=cfg["resume"], overwrite=cfg["overwrite"])
    with out:
        try:
            return prove(cfg, settings, circuit, out)
        except KeyboardInterrupt:
            raise Interrupted(_stopped(out, "SIGINT", "interrupted")) from None
        except OutputError as e:
            raise OutputError(f"{e}; {_stopped(out, str(e), 'stopped')}" if out.started else str(e)) from None
        except Exception as e:  # a bug or a lost cluster: keep the partial manifest, and the traceback
            if out.started and out.manifest_path is None:
                _stopped(out, f"{type(e).__name__}: {e}", "stopped")
            raise


def _stopped(out, why: str, word: str) -> str:
    """Write the partial manifest of a run that ended early; say what was kept, in one line."""
    import signal

    if not out.started:
        return f"{word} before any proof was written to {out.path}"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the manifest in half
    try:
        path = out.finish({}, {}, stopped=why)
        where = f"listed in {path}"
    except Exception as e:  # noqa: BLE001  e.g. the disk is still full: the journal is the record
        where = f"listed in {out.path / 'journal.jsonl'} (no manifest: {e})"
    return (f"{len(out.entries)} verified partition(s) kept in {out.path}, {where}; "
            f"rerun with resume=true to prove the rest")


def prove(cfg: dict, settings, circuit, out) -> int:
    """The run, once output_dir is locked and known to be fresh or resumable."""
    from cuzk_ray import outputs
    from cuzk_ray.engines import open_engine
    from cuzk_ray.engines.admission import check_budget, partition_host_bytes
    from cuzk_ray.engines.report import load_line, stage_table
    from cuzk_ray.errors import ProofFailed
    from cuzk_ray.formats.native import file_sha256
    from cuzk_ray.preflight import preflight

    t_start = time.perf_counter()
    if out.removed:
        print(f"overwrite: removed {out.removed} file(s) of the earlier run in {out.path}")
    preflight(settings, circuit, cfg["cache_dir"], cfg["setup_seed"])  # disk, host, object store, VRAM
    # Everything that can reject the input runs before output_dir is written.
    t0 = time.perf_counter()
    pk, cs, key_info = circuit.load_key(cfg["cache_dir"], cfg["setup_seed"], cfg["setup_backend"])
    print(f"key: {key_info['key']} ({key_info['note']}, {time.perf_counter() - t0:.1f} s)")
    insecure = bool(pk.meta.get("insecure_dev_setup"))
    setup_seed = pk.meta.get("seed") if insecure else None
    if insecure:  # on every run that uses such a key, not only the one that made it
        print(f"INSECURE: {key_info['key']} comes from the development setup (setup_seed={setup_seed}): anyone "
              f"who knows the seed can forge its proofs; use a ceremony key (circuit=snarkjs) for anything real")
    check_budget(settings.host_budget, partition_host_bytes(circuit, pk.domain_size, settings.backend),
                 circuit.circuit_id)
    proofs = len(circuit.witness) if circuit.kind == "snarkjs" else cfg["proofs"]
    witness = tuple(circuit.witness) if circuit.kind == "snarkjs" else ()
    identity = outputs.RunIdentity.for_key(pk.vk, circuit.circuit_id, cfg["seed"], proofs, circuit.partitions,
                                           witness, insecure, setup_seed)
    todo = out.start(identity, pk.vk, pk.n_public)  # refuses (writing nothing) if the disk is too small
    if out.resume:
        print(f"resume: {len(out.entries)} partition(s) on disk, {proofs - len(todo)} of {proofs} proof(s) complete; "
              f"proving {len(todo)}" + (f" ({len(out.dropped)} changed or missing on disk, proved again)"
                                        if out.dropped else ""))
    # The witness files' hashes, once, before proving: each entry says which bytes it proved.
    witness_sha = {w: file_sha256(w) for w in witness}

    def proof_info(index: int) -> dict:
        info = circuit.proof_info(index)
        if "witness" in info:
            info["witness_sha256"] = witness_sha[info["witness"]]
        return info

    info = {"circuit": circuit.circuit_id, "key": key_info["key"]}
    batch, written = None, []
    if todo:
        with open_engine(settings, pk, cs, circuit) as engine:
            print(f"provers: {len(engine.provers)} x {engine.backend}; pw={engine.pw}; {len(todo)} proof(s) x "
                  f"{circuit.partitions} partition(s) of {circuit.circuit_id}")
            print(load_line(engine.prover_info))

            def progress(res, done, total):
                written.append(out.add(res, proof_info(res.proof_index)))  # on disk as soon as it verifies
                print(f"\r  {done}/{total} partitions verified", end="" if done < total else "\n", flush=True)

            batch = engine.run(todo, seed=cfg["seed"], progress=progress)
        info.update({"backend": engine.backend, "wall_seconds": round(batch.wall_s, 3),
                     "host_budget": batch.host_budget, "host_peak_reserved": batch.host_peak,
                     "max_in_flight": batch.max_in_flight})
    failed = {circuit.proof_label(batch.proofs[pid]): why for pid, why in batch.failed.items()} if batch else {}
    manifest = out.finish(info, failed)
    if batch is not None:
        print(stage_table(batch.results, batch.wall_s))
    print(f"total {time.perf_counter() - t_start:.1f} s; {len(written)} partitions proved and verified in this run; "
          f"{'manifest' if manifest.name == outputs.MANIFEST else 'partial manifest (some proofs failed)'}: {manifest}")
    if failed:
        raise ProofFailed("; ".join(f"{label}: {why}" for label, why in sorted(failed.items())))
    return 0


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from cuzk_ray.errors import exit_with_error

    logging.getLogger("cuzk_ray").setLevel(logging.INFO)
    # Hydra logs to output_dir/prove.log too: once that disk is full, every log line would print a
    # "--- Logging error ---" traceback; the console handler still shows the line.
    logging.raiseExceptions = False
    plain = OmegaConf.to_container(cfg, resolve=True)
    try:
        code = run(plain)
    except Exception as e:  # noqa: BLE001  known errors become one line; others keep the traceback
        code = exit_with_error(e)
    sys.exit(code)


def output_dir_override(argv: list[str]) -> str | None:
    """The plain ``output_dir=PATH`` override, if given (the last one wins, as in Hydra)."""
    found = None
    for a in argv:
        key, sep, value = a.lstrip("+").partition("=")
        if sep and key == "output_dir" and "${" not in value:
            found = value
    return found


if __name__ == "__main__":
    # Hydra creates output_dir and writes its record there (.hydra/) before the job runs, with a
    # traceback when it cannot: an output_dir given on the command line that is unusable, or locked
    # by a running job (whose record Hydra would overwrite), is refused here first, in one line.
    _out = output_dir_override(sys.argv[1:])
    if _out is not None:
        from cuzk_ray.errors import OutputError
        from cuzk_ray.outputs import OutputDir, ensure_dir

        try:
            OutputDir.check_not_locked(_out)
            ensure_dir(_out)
        except OutputError as _e:
            print(f"error: {_e}", file=sys.stderr)
            sys.exit(2)
    try:
        main()
    except KeyboardInterrupt:  # before run() took over (Hydra starting): nothing was written
        print("interrupted: before any proof was written", file=sys.stderr)
        sys.exit(130)
