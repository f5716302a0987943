"""The output contract (scripts and other tools rely on it):

  output_dir/verification_key.json                       snarkjs format
  output_dir/proofs/<proof_id>/partition-<k>/proof.json  snarkjs format
  output_dir/proofs/<proof_id>/partition-<k>/public.json
  output_dir/manifest.json  {"proofs": [{"proof_id", "partition", "proof", "public",
                             "verification_key", "verified", "synthesis_node", "prover_node",
                             "seconds": {stage: s}}], ...}   paths relative to output_dir

Every file is written under a temporary name and renamed. The manifest is written last and only
when every proof of the batch verified, so a manifest always describes a complete, verified batch.
When some proofs failed, the ones that verified are still written, listed in
``manifest.partial.json`` (``"complete": false`` and a ``failed`` map), and the job exits 2.
"""

from __future__ import annotations

from pathlib import Path

from .formats.snarkjs_json import proof_json, public_json, verification_key_json, write_json_atomic

MANIFEST = "manifest.json"
PARTIAL = "manifest.partial.json"


def begin(output_dir) -> Path:
    """Create output_dir and drop a manifest left by an earlier run (it would not describe this one)."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).unlink(missing_ok=True)
    (out / PARTIAL).unlink(missing_ok=True)
    return out


def write_batch(output_dir, vk, results, info: dict | None = None, proof_info=None, complete: bool = True) -> Path:
    """Write every partition's proof and public inputs, the verification key, then the manifest.
    ``proof_info(proof_index)`` adds fields to a proof's entries (e.g. its witness file)."""
    out = Path(output_dir)
    write_json_atomic(out / "verification_key.json", verification_key_json(vk))
    entries = []
    for r in results:
        d = out / "proofs" / r.proof_id / f"partition-{r.partition}"
        d.mkdir(parents=True, exist_ok=True)
        write_json_atomic(d / "proof.json", proof_json(r.proof))
        write_json_atomic(d / "public.json", public_json(r.public))
        entries.append({
            "proof_id": r.proof_id, "partition": r.partition,
            "proof": str((d / "proof.json").relative_to(out)),
            "public": str((d / "public.json").relative_to(out)),
            "verification_key": "verification_key.json",
            "verified": bool(r.verified),
            "synthesis_node": r.synthesis_node, "prover_node": r.prover_node,
            "seconds": {k: round(v, 6) for k, v in r.times.items()},
            **(proof_info(r.proof_index) if proof_info else {}),
        })
    manifest = {"proofs": entries, "complete": complete}
    manifest.update(info or {})
    path = out / (MANIFEST if complete else PARTIAL)
    write_json_atomic(path, manifest)
    return path
