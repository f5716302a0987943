"""Groth16 over BLS12-381: keys, the development setup, the prover (layered entry points), the verifier."""
