"""Verify snarkjs-format Groth16 proofs (BLS12-381) with cuzk-ray's verifier.

  python jobs/verify.py VERIFICATION_KEY PUBLIC PROOF      one proof
  python jobs/verify.py --manifest OUTPUT_DIR/manifest.json every proof of a prove.py run

Prints OK or INVALID per proof; exit 0 when every proof is valid, 1 when one is not, 2 for bad
input (a one-line error naming the file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout too


def check(vk_path, public_path, proof_path) -> bool:
    from cuzk_ray.formats.snarkjs_json import JsonFormatError, read_proof, read_public, read_verification_key
    from cuzk_ray.groth16.verifier import verify

    vk, public, proof = read_verification_key(vk_path), read_public(public_path), read_proof(proof_path)
    if len(public) != vk.n_public:
        raise JsonFormatError(f"{public_path}: {len(public)} public inputs, {vk_path} expects {vk.n_public}")
    return verify(vk, public, proof)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", metavar="FILE", help="VERIFICATION_KEY PUBLIC PROOF")
    ap.add_argument("--manifest", help="manifest.json written by jobs/prove.py")
    args = ap.parse_args(argv)
    try:
        if args.manifest:
            if args.files:
                ap.error("give either --manifest or VERIFICATION_KEY PUBLIC PROOF, not both")
            root = Path(args.manifest).parent
            try:
                manifest = json.loads(Path(args.manifest).read_text())
                triples = [(root / e["verification_key"], root / e["public"], root / e["proof"])
                           for e in manifest["proofs"]]
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{args.manifest}: not a cuzk-ray manifest ({type(e).__name__}: {e})") from None
            if not triples:
                raise ValueError(f"{args.manifest}: lists no proofs")
            if manifest.get("failed"):
                print(f"note: {args.manifest} records failed proofs: {sorted(manifest['failed'])}", file=sys.stderr)
        elif len(args.files) == 3:
            triples = [tuple(args.files)]
        else:
            ap.error("expected VERIFICATION_KEY PUBLIC PROOF (or --manifest PATH)")
        bad = 0
        for vk, pub, proof in triples:
            ok = check(vk, pub, proof)
            bad += not ok
            print(f"{'OK' if ok else 'INVALID'}  {proof}")
        return 1 if bad or (args.manifest and manifest.get("failed")) else 0
    except ValueError as e:  # JsonFormatError and friends: bad input, one line
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a directory or unreadable file given as an input
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
