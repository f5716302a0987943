"""Filecoin PoRep: inputs, keys, proofs and the circuit's primitives."""
