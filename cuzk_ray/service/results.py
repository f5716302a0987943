"""A done proof's result, read back from its output directory (the batch output contract,
outputs.py) for GET /v1/proofs/{id}/result: the manifest, then each partition's proof.json and
public.json and the verification key it names.

Those files sit on the service's disk and can be changed under it: a file that is gone answers
410 (models.Gone), a file that is not what the service wrote (not JSON, not a manifest, a path
that leads out of the proof's directory) answers 500 (models.Damaged); both name the file."""

from __future__ import annotations

import os
from pathlib import Path

from ..formats.snarkjs_json import JsonFormatError, load_json
from ..outputs import MANIFEST
from .models import Damaged, Gone

ENTRY_KEYS = ("partition", "proof", "public", "seconds", "synthesis_node", "prover_node")


def read_result(d: Path, proof_id: str) -> dict:
    """The result body of the done proof whose files are in ``d`` (Gone / Damaged naming the file)."""
    manifest = _json(d, MANIFEST, proof_id)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("proofs"), list) \
            or not isinstance(manifest.get("verification_key"), str):
        raise Damaged(f"proof {proof_id}: {d / MANIFEST} is not its manifest (no \"proofs\" list or "
                      f"\"verification_key\")")
    entries = manifest["proofs"]
    if not all(isinstance(e, dict) and all(k in e for k in ENTRY_KEYS) and type(e["partition"]) is int
               for e in entries):
        raise Damaged(f"proof {proof_id}: {d / MANIFEST}: an entry lacks one of {', '.join(ENTRY_KEYS)} (partition: "
                      f"an integer)")
    parts = [{"proof": _json(d, e["proof"], proof_id), "public": _json(d, e["public"], proof_id),
              "seconds": e["seconds"], "synthesis_node": e["synthesis_node"], "prover_node": e["prover_node"]}
             for e in sorted(entries, key=lambda e: e["partition"])]
    return {"partitions": parts, "verification_key": _json(d, manifest["verification_key"], proof_id),
            "run": manifest.get("run"), "key": manifest.get("key")}


def _json(d: Path, name, proof_id: str):
    """The JSON file ``name`` (relative to ``d``, as the manifest names it) of the proof."""
    path = d / str(name)
    real, root = os.path.realpath(path), os.path.realpath(d)
    if not isinstance(name, str) or os.path.commonpath([real, root]) != root:
        raise Damaged(f"proof {proof_id}: {d / MANIFEST} names {name!r}, outside {d}")
    if not path.exists():
        raise Gone(f"proof {proof_id} is done but {path} is gone (its results were removed)")
    try:
        return load_json(path)
    except JsonFormatError as e:  # names the file: not JSON, too deep, unreadable
        raise Damaged(f"proof {proof_id}: its result file {e} (changed on disk since it was written)") from None
