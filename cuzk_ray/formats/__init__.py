"""File formats: snarkjs/circom readers (.wtns, .r1cs, .zkey) and JSON, the native key bundle, the zkey cache."""
