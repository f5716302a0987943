"""Proofs made on the H200 with backend=cuda (docs/gpu-runs/), brought back and verified here by
snarkjs and by our verifier; a tampered copy is rejected by both."""

import json
from pathlib import Path

import pytest
from conftest import snarkjs_verify, snarkjs_verify_many

from cuzk_ray.formats.snarkjs_json import read_proof, read_public, read_verification_key
from cuzk_ray.groth16.verifier import verify

RUNS = Path(__file__).resolve().parent.parent / "docs" / "gpu-runs"


# first session: G2 and a, b, c on the CPU; second: everything on the GPU (PoRep and a circom
# circuit's zkey + witnesses)
@pytest.mark.parametrize("run,count", [("2026-11-29/prove-cuda-16384", 10), ("2026-11-29-scale/prove-default", 10),
                                       ("2026-11-29-scale/prove-pow2", 2)])
def test_gpu_made_proofs_verify_here(tmp_path, snarkjs, run, count):
    rd = RUNS / run
    manifest = json.loads((rd / "manifest.json").read_text())
    assert manifest["backend"] == "cuda" and len(manifest["proofs"]) == count
    vk = read_verification_key(rd / "verification_key.json")
    for e in manifest["proofs"]:
        assert verify(vk, read_public(rd / e["public"]), read_proof(rd / e["proof"]))
    triples = [(rd / e["verification_key"], rd / e["public"], rd / e["proof"]) for e in manifest["proofs"]]
    assert snarkjs_verify_many(snarkjs, triples) == [True] * len(triples)
    e = manifest["proofs"][0]
    public = json.loads((rd / e["public"]).read_text())
    public[0] = str(int(public[0]) + 1)
    (tmp_path / "public.json").write_text(json.dumps(public))
    assert not snarkjs_verify(snarkjs, rd / e["verification_key"], tmp_path / "public.json", rd / e["proof"])
    assert not verify(vk, read_public(tmp_path / "public.json"), read_proof(rd / e["proof"]))
