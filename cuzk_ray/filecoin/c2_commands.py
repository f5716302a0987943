"""The C2 verb of ``cuzk-ray filecoin``: ``c2 C1.json [--params DIR] -o PROOF`` (docs/FILECOIN.md).

The prove job with ``circuit=filecoin`` (cuzk_ray/circuits/filecoin.py) run into a temporary
folder beside PROOF: the same engine, key handling and checks; every partition verified, the
MultiProof verified against the C1's public inputs, then PROOF written (temporary name, rename)
and the folder removed. Without ``--params`` the key is a development key (INSECURE, said so).
``cuzk-ray filecoin verify PROOF --vk ...`` accepts the result. Registered in ``commands.VERBS``
as ``C2_VERBS``; bad input is one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from .c2 import VARIANTS


def add_c2_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("c1", metavar="C1", help="the C1 JSON (SealCommitPhase1Output)")
    ap.add_argument("--params", metavar="DIR", help="the folder of Filecoin's published .params/.vk (parameters.json "
                                                    "names, digests checked); default: a development key (INSECURE)")
    ap.add_argument("-o", "--out", required=True, metavar="PROOF", help="where the MultiProof goes (192 bytes per "
                                                                        "partition)")
    ap.add_argument("--variant", choices=VARIANTS, default="stacked",
                    help="stacked: the real circuit; inputs: a stand-in with the same public inputs (demos, tests)")
    ap.add_argument("--cache-dir", metavar="DIR", help="recordings and development keys (default: the job's cache_dir)")
    ap.add_argument("--setup-seed", type=int, default=0, metavar="N", help="the development key's seed (default 0)")
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "auto"), help="default cpu")
    ap.add_argument("-v", "--verbose", action="store_true")


def c2_config(args: argparse.Namespace, work: Path) -> dict:
    """The prove job's config for this C2 (composed from conf/, paths set directly: no quoting)."""
    from ..job import compose

    cfg = compose(["circuit=filecoin", f"backend={args.backend}", f"setup_backend={args.backend}",
                   f"setup_seed={args.setup_seed}"])
    cfg["circuit"].update(c1=[args.c1], params=args.params, variant=args.variant)
    if args.cache_dir:
        cfg["cache_dir"] = args.cache_dir
    cfg["output_dir"], cfg["verbose"] = str(work), args.verbose
    return cfg


def run_c2(args: argparse.Namespace) -> int:
    """Prove the C1 and write the verified MultiProof to --out."""
    from ..console import Console
    from ..formats.snarkjs_json import write_bytes_atomic
    from ..job import run
    from ..outputs import SEAL_PROOF

    out = Path(args.out)
    if not os.path.isfile(args.c1):  # (the job would take a folder or glob as many C1s: one -o PROOF is one)
        raise ValueError(f"{args.c1}: not a file (c2 proves one C1 file; python jobs/prove.py circuit=filecoin "
                         f"circuit.c1=DIR proves every C1 of a folder)")
    if not out.resolve().parent.is_dir():
        raise ValueError(f"-o {args.out}: no such directory {out.resolve().parent}")
    work = Path(tempfile.mkdtemp(prefix=".cuzk-ray-c2-", dir=out.resolve().parent))  # same file system
    console = Console(verbose=args.verbose)
    try:
        code = run(c2_config(args, work), console, scratch=True)
        if code != 0:
            return code
        (proof,) = work.glob(f"proofs/*/{SEAL_PROOF}")
        write_bytes_atomic(out, proof.read_bytes(), fsync=True)
        print(f"wrote {out} ({proof.stat().st_size} bytes, verified)")
        return 0
    finally:
        console.close()
        shutil.rmtree(work, ignore_errors=True)


C2_VERBS = {
    "c2": ("prove a C1 file (SealCommitPhase2): the MultiProof, 192 bytes per partition", add_c2_arguments, run_c2),
}

