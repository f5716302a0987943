"""Verifying snarkjs-format Groth16 proofs from files, shared by ``jobs/verify.py`` and
``cuzk-ray groth16 verify``: one (vk, public, proof) triple, or every proof a manifest lists with
the SHA-256 of each listed file checked against what the manifest records."""

from __future__ import annotations

from pathlib import Path


def check(vk_path, public_path, proof_path) -> bool:
    """Whether the proof verifies (bad input: JsonFormatError naming the file and field)."""
    from .formats.snarkjs_json import JsonFormatError, read_proof, read_public, read_verification_key
    from .groth16.verifier import verify

    vk, public, proof = read_verification_key(vk_path), read_public(public_path), read_proof(proof_path)
    if len(public) != vk.n_public:
        raise JsonFormatError(f"{public_path}: {len(public)} public inputs, {vk_path} expects {vk.n_public}")
    return verify(vk, public, proof)


HASHED = (("proof", "proof_sha256"), ("public", "public_sha256"))


def manifest_checks(path) -> tuple[dict, list[tuple[Path, Path, Path]], list[str]]:
    """(manifest, (vk, public, proof) per entry, files that differ from what the manifest records).
    Every listed file must lie inside the manifest's directory and have the recorded SHA-256 (a
    file swapped or edited after the run is named); a witness file still on disk is checked too."""
    from .formats.native import file_sha256
    from .formats.snarkjs_json import JsonFormatError, load_json

    manifest = load_json(path)
    root = Path(path).resolve().parent

    def inside(entry_no: int, name: str, rel) -> Path:
        if not isinstance(rel, str) or Path(rel).is_absolute() or not (root / rel).resolve().is_relative_to(root):
            raise JsonFormatError(f"{path}: proofs[{entry_no}].{name} = {rel!r} is not a path inside {root}")
        return root / rel

    if not isinstance(manifest, dict) or not isinstance(manifest.get("proofs"), list):
        raise JsonFormatError(f"{path}: not a cuzk-ray manifest (no list of proofs)")
    if not manifest["proofs"]:
        raise JsonFormatError(f"{path}: lists no proofs")
    changed = []
    vk_sha = manifest.get("verification_key_sha256")
    triples = []
    for n, e in enumerate(manifest["proofs"]):
        if not isinstance(e, dict):
            raise JsonFormatError(f"{path}: proofs[{n}] is not an object")
        for name, sha in (("verification_key", None),) + HASHED:
            if name not in e or (sha and not isinstance(e.get(sha), str)):
                raise JsonFormatError(f"{path}: proofs[{n}] has no {sha or name} (not a cuzk-ray manifest, or "
                                      f"one written before files were hashed)")
        vk, pub, proof = (inside(n, k, e[k]) for k in ("verification_key", "public", "proof"))
        for name, sha in HASHED:
            f = inside(n, name, e[name])
            if f.is_file() and file_sha256(f) != e[sha]:
                changed.append(f"{f}: SHA-256 differs from the {sha} that {path} records")
        if isinstance(vk_sha, str) and vk.is_file() and file_sha256(vk) != vk_sha:
            changed.append(f"{vk}: SHA-256 differs from the verification_key_sha256 that {path} records")
        w, w_sha = e.get("witness"), e.get("witness_sha256")
        if isinstance(w, str) and isinstance(w_sha, str) and Path(w).is_file() and file_sha256(w) != w_sha:
            changed.append(f"{w}: the witness file's SHA-256 differs from the witness_sha256 that {path} records")
        triples.append((vk, pub, proof))
    return manifest, triples, sorted(set(changed))


def main(argv=None, prog: str | None = None) -> int:
    """``VK PUBLIC PROOF`` or ``--manifest M``: OK/INVALID per proof, CHANGED per altered file;
    exit 0 all valid, 1 one is not (or a file changed, or failed proofs are recorded), 2 bad input."""
    import argparse
    import sys

    ap = argparse.ArgumentParser(prog=prog, description="Verify snarkjs-format Groth16 proofs (BLS12-381).")
    ap.add_argument("files", nargs="*", metavar="FILE", help="VERIFICATION_KEY PUBLIC PROOF")
    ap.add_argument("--manifest", help="manifest.json (or manifest.partial.json) written by a prove run")
    args = ap.parse_args(argv)
    manifest, changed = {}, []
    try:
        if args.manifest:
            if args.files:
                ap.error("give either --manifest or VERIFICATION_KEY PUBLIC PROOF, not both")
            manifest, triples, changed = manifest_checks(args.manifest)
            if manifest.get("failed"):
                print(f"note: {args.manifest} records failed proofs: {sorted(manifest['failed'])}", file=sys.stderr)
            if manifest.get("complete") is False:
                print(f"note: {args.manifest} is partial (complete: false)", file=sys.stderr)
        elif len(args.files) == 3:
            triples = [tuple(args.files)]
        else:
            ap.error("expected VERIFICATION_KEY PUBLIC PROOF (or --manifest PATH)")
        if manifest.get("insecure_dev_setup"):
            print(f"note: the key of {args.manifest} comes from an INSECURE development setup "
                  f"(setup_seed={manifest.get('setup_seed')})", file=sys.stderr)
        bad = 0
        for vk, pub, proof in triples:
            ok = check(vk, pub, proof)
            bad += not ok
            print(f"{'OK' if ok else 'INVALID'}  {proof}")
        for line in changed:  # last: the verdict on the manifest as a whole
            print(f"CHANGED  {line}")
        return 1 if bad or changed or manifest.get("failed") else 0
    except ValueError as e:  # JsonFormatError and friends: bad input, one line
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a directory or unreadable file given as an input
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
