"""cuzk-ray: a Ray-based, cluster-scale Groth16 prover for BLS12-381."""

__version__ = "0.1.0"
