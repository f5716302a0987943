"""Proofs made on the H200 with backend=cuda (docs/gpu-runs/), brought back and verified here by
snarkjs and by our verifier; a tampered copy is rejected by both."""

import json
from pathlib import Path


from conftest import snarkjs_verify
from cuzk_ray.formats.snarkjs_json import read_proof, read_public, read_verification_key
from cuzk_ray.groth16.verifier import verify

RUN = Path(__file__).resolve().parent.parent / "docs" / "gpu-runs" / "2026-11-29" / "prove-cuda-16384"


def test_gpu_made_proofs_verify_here(tmp_path, snarkjs):
    manifest = json.loads((RUN / "manifest.json").read_text())
    assert manifest["backend"] == "cuda" and len(manifest["proofs"]) == 10
    vk = read_verification_key(RUN / "verification_key.json")
    for e in manifest["proofs"]:
        assert verify(vk, read_public(RUN / e["public"]), read_proof(RUN / e["proof"]))
    for e in manifest["proofs"][::3]:
        assert snarkjs_verify(snarkjs, RUN / e["verification_key"], RUN / e["public"], RUN / e["proof"])
    e = manifest["proofs"][0]
    public = json.loads((RUN / e["public"]).read_text())
    public[0] = str(int(public[0]) + 1)
    (tmp_path / "public.json").write_text(json.dumps(public))
    assert not snarkjs_verify(snarkjs, RUN / e["verification_key"], tmp_path / "public.json", RUN / e["proof"])
    assert not verify(vk, read_public(tmp_path / "public.json"), read_proof(RUN / e["proof"]))
