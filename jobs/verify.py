"""Verify snarkjs-format Groth16 proofs (BLS12-381) with cuzk-ray's verifier.

  python jobs/verify.py VERIFICATION_KEY PUBLIC PROOF      one proof
  python jobs/verify.py --manifest OUTPUT_DIR/manifest.json every proof of a prove.py run

Prints OK or INVALID per proof; with --manifest also CHANGED for each listed file (proof,
public inputs, verification key, witness) whose SHA-256 is not the one the manifest records.
Exit 0 when every proof is valid, 1 when one is not (or a file changed, or the manifest records
failed proofs), 2 for bad input: a one-line error naming the file and the field (invalid JSON,
NaN/Infinity, nesting too deep, a number where snarkjs wants a decimal string, a value >= the
field modulus).

The code lives in cuzk_ray/verify_files.py (shared with `cuzk-ray groth16 verify`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too

from cuzk_ray.verify_files import main  # noqa: E402  (the code is shared with `cuzk-ray groth16 verify`)

if __name__ == "__main__":
    sys.exit(main())
