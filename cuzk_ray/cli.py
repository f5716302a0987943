"""The ``cuzk-ray`` command: snarkjs's verbs for Groth16 over BLS12-381, and the batch job.

    cuzk-ray groth16 prove CIRCUIT.zkey WITNESS.wtns PROOF.json PUBLIC.json [key=value ...]
    cuzk-ray groth16 prove CIRCUIT.zkey W1.wtns W2.wtns ... | DIR | 'GLOB' [-o OUT] [key=value ...]
    cuzk-ray groth16 verify VK.json PUBLIC.json PROOF.json      (or --manifest OUT/manifest.json)
    cuzk-ray zkey export verificationkey CIRCUIT.zkey VK.json
    cuzk-ray prove [key=value ...]                              (= python jobs/prove.py [key=value ...])
    cuzk-ray filecoin VERB ...                                  (Filecoin PoRep: cuzk-ray filecoin --help)

``groth16 prove`` with one witness and two .json paths writes exactly those two files, as
snarkjs does (the job runs in a temporary folder beside PROOF.json, removed at the end). With
several witnesses, a folder of .wtns files or a glob it is the batch job: one proof per witness
into the output dir (``-o``, or ``output_dir=``; default outputs/prove), each named after its
witness file (``OUT/proofs/<witness name>/partition-0/proof.json``), with verification_key.json,
the manifest and prove.log. Anything written ``key=value`` is a Hydra override of the job's
config (conf/config.yaml: ``engine=ray``, ``backend=cuda``, ``resume=true``, ...); unknown keys,
and ``+key=value``, are refused in one line. ``--verbose`` shows everything (Ray's own lines too).

Exit codes: 0 done (verify: every proof valid), 1 verify: a proof invalid, 2 bad input or a
failed proof (one line ``error: ...``), 130 interrupted (one line; finished proofs kept).
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile
from pathlib import Path

from .job import OVERRIDE

USAGE = __doc__.split("\n\n")[1]


def split_overrides(args: list[str]) -> tuple[list[str], list[str]]:
    """(positionals, ``key=value`` overrides): an argument is an override when it reads as one
    (``key=``, ``+key=``, ``key.sub=``) and is not the name of an existing file."""
    pos, over = [], []
    for a in args:
        (over if OVERRIDE.match(a) and not os.path.exists(a) else pos).append(a)
    return pos, over


def is_single(witnesses: list[str]) -> bool:
    """``WITNESS PROOF.json PUBLIC.json``: snarkjs's form (one witness file, two outputs)."""
    return (len(witnesses) == 3 and all(w.endswith(".json") for w in witnesses[1:])
            and not os.path.isdir(witnesses[0]) and not glob.has_magic(witnesses[0]))


def run_job(overrides: list[str], verbose: bool, zkey: str | None = None, witness: list[str] | None = None,
            output_dir: str | None = None, scratch: bool = False) -> int:
    """The prove job (cuzk_ray.job.run) with the config composed from conf/ and ``overrides``;
    a circom circuit's zkey and witnesses set directly (paths need no Hydra quoting)."""
    from .console import Console
    from .errors import Interrupted, exit_with_error
    from .job import compose, expand_powers, refuse_additions, run

    console = None
    try:
        refuse_additions(overrides)
        overrides = expand_powers(overrides)
        extra = ["circuit=snarkjs"] if zkey is not None else []
        cfg = compose(extra + overrides)
        if zkey is not None:
            cfg["circuit"]["zkey"], cfg["circuit"]["witness"] = zkey, list(witness or [])
        if output_dir is not None:
            cfg["output_dir"] = output_dir
        cfg["verbose"] = bool(cfg.get("verbose")) or verbose
        console = Console(verbose=cfg["verbose"])
        return run(cfg, console, scratch)
    except KeyboardInterrupt:  # before run() took over: nothing was written
        print("interrupted: before any proof was written", file=sys.stderr)
        return 130
    except Interrupted as e:
        if scratch:  # what run() kept is in the folder about to be removed: say what the user has
            print("interrupted: no proof written (the output files were not touched)", file=sys.stderr)
            return 130
        return exit_with_error(e)
    except Exception as e:  # noqa: BLE001  known errors: one line; a bug keeps its traceback
        return exit_with_error(e)
    finally:
        if console is not None:
            console.close()


def prove_single(zkey: str, witness: str, proof: str, public: str, overrides: list[str], verbose: bool) -> int:
    """snarkjs's ``groth16 prove``: exactly PROOF and PUBLIC written (verified first)."""
    from .circuits import witness_names
    from .formats.snarkjs_json import write_bytes_atomic

    if any(OVERRIDE.match(o) and o.lstrip("+").startswith(("output_dir=", "resume=")) for o in overrides):
        print("error: groth16 prove ZKEY WITNESS PROOF PUBLIC writes PROOF and PUBLIC only; output_dir= and "
              "resume= belong to the batch form (give the witness alone and -o DIR)", file=sys.stderr)
        return 2
    parent = Path(proof).resolve().parent
    if not parent.is_dir():
        print(f"error: {parent}: no such directory (for {proof})", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix=".cuzk-ray-", dir=parent))  # same file system: the rename is atomic
    try:
        code = run_job(overrides, verbose, zkey, [witness], str(work), scratch=True)
        if code == 130:
            return code
        if code == 0:
            part = work / "proofs" / witness_names([witness])[0] / "partition-0"
            write_bytes_atomic(proof, (part / "proof.json").read_bytes(), fsync=True)
            write_bytes_atomic(public, (part / "public.json").read_bytes(), fsync=True)
            print(f"wrote {proof} and {public}")
        return code
    finally:
        shutil.rmtree(work, ignore_errors=True)


def export_vk(zkey: str, out: str) -> int:
    """``zkey export verificationkey``: the zkey's verification key as snarkjs writes it (the same
    bytes: JSON indented by one space, no final newline)."""
    import json

    from .formats.snarkjs import read_zkey
    from .formats.snarkjs_json import verification_key_json, write_bytes_atomic

    pk, _ = read_zkey(zkey)
    write_bytes_atomic(out, json.dumps(verification_key_json(pk.vk), indent=1).encode(), fsync=True)
    print(f"wrote {out}")
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="cuzk-ray", usage="\n" + USAGE,
                                 description=__doc__.split("\n\n")[0].replace("``", ""),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verbose", action="store_true", help="show everything (Ray's own log lines too)")
    ap.add_argument("-o", "--output-dir", default=None, help="batch form: where the proofs go")
    ap.add_argument("verb", nargs=argparse.REMAINDER, help="groth16 prove|verify, zkey export verificationkey, prove")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["filecoin"]:  # argparse verbs of their own (their -o is theirs; no Hydra overrides)
        from .filecoin.commands import main as filecoin_main

        return filecoin_main(argv[1:])
    verbose = "--verbose" in argv
    argv = [a for a in argv if a != "--verbose"]
    out_dir = None
    for flag in ("-o", "--output-dir"):  # anywhere on the line, as snarkjs users write it
        while flag in argv:
            i = argv.index(flag)
            if i + 1 >= len(argv):
                print(f"error: {flag} needs a folder", file=sys.stderr)
                return 2
            out_dir = argv[i + 1]
            del argv[i : i + 2]
    if not argv or argv[0] in ("-h", "--help", "help"):
        parser().print_help()
        return 0 if argv else 2
    words, overrides = split_overrides(argv)
    try:
        if words[:2] == ["groth16", "prove"]:
            args = words[2:]
            if len(args) < 2:
                raise ValueError("groth16 prove needs CIRCUIT.zkey and at least one witness (a file, a folder, a glob)")
            zkey, rest = args[0], args[1:]
            if is_single(rest):
                if out_dir is not None:
                    raise ValueError("-o goes with the batch form; with PROOF.json PUBLIC.json the proof goes there")
                return prove_single(zkey, rest[0], rest[1], rest[2], overrides, verbose)
            json_args = [a for a in rest if a.endswith(".json")]
            if json_args:
                raise ValueError(f"{json_args[0]}: with several witnesses (or a folder, a glob) the proofs go into "
                                 f"an output dir (-o DIR); PROOF.json PUBLIC.json follow one witness file only")
            return run_job(overrides, verbose, zkey, rest, out_dir)
        if words[:2] == ["groth16", "verify"]:
            from .verify_files import main as verify_main

            return verify_main(words[2:] + overrides, prog="cuzk-ray groth16 verify")
        if words[:3] == ["zkey", "export", "verificationkey"]:
            if len(words) != 5:
                raise ValueError("zkey export verificationkey needs CIRCUIT.zkey VK.json")
            return export_vk(words[3], words[4])
        if words[:1] == ["prove"] and len(words) == 1:
            return run_job(overrides, verbose, output_dir=out_dir)
        raise ValueError(f"unknown command {' '.join(words[:3]) or '(none)'!r}; cuzk-ray --help lists them")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError) as e:  # bad input: one line (an unexpected OSError keeps its traceback)
        from .errors import exit_with_error

        return exit_with_error(e)


if __name__ == "__main__":
    sys.exit(main())
