"""Native proving-key bundle: one memory-mappable ``.npy`` per array plus ``manifest.json``.

Layout of a bundle directory:
  manifest.json      {"format": "cuzk-ray-key", "version": 1, "form": "standard", sizes, meta,
                      "arrays": {name: {"file", "dtype", "shape", "sha256"}}}
  <name>.npy         alpha_g1 beta_g1 delta_g1 beta_g2 gamma_g2 delta_g2 ic a_query b_g1_query
                     b_g2_query l_query h_query, a_wires b_wires (uint32 wire indices, only in
                     a key stored by density: groth16.keys), and the circuit's CSR matrices
                     A_/B_/C_{indptr,indices,data}
Points are affine, standard form (cuzk_ray.curve); the GPU converts to Montgomery on upload.
A bundle is written into a temporary directory and renamed into place, so a reader never sees a
half-written key.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..groth16.keys import ProvingKey, VerifyingKey
from ..r1cs import ConstraintSystem, CsrMatrix

FORMAT = "cuzk-ray-key"
VERSION = 1
_VK = ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic")
_PK = ("beta_g1", "delta_g1") + ProvingKey.QUERIES


class KeyBundleError(ValueError):
    """A key bundle is missing, incomplete or corrupt; the message names the file."""


def file_sha256(path, chunk: int = 1 << 24) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _hash_files(paths: list) -> list[str]:
    """file_sha256 of each path, on threads (hashlib releases the GIL: a 2^24 key's 15 GB hash in
    a few seconds on many cores instead of ~10 s on one)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(paths)))) as ex:
        return list(ex.map(file_sha256, paths))


def save_bundle(path, pk: ProvingKey, cs: ConstraintSystem | None = None, overwrite: bool = False) -> Path:
    """Write pk (and optionally the circuit's matrices) to directory ``path`` atomically. When
    another process wrote the same bundle first (and not overwrite), its copy is kept."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {name: getattr(pk.vk, name) for name in _VK}
    arrays.update({name: getattr(pk, name) for name in _PK})
    # density indices only where the key has them: a bundle without them is a dense key
    arrays.update({name: getattr(pk, name) for name in ProvingKey.DENSITIES if getattr(pk, name) is not None})
    if cs is not None:
        for mname in ("A", "B", "C"):
            m = getattr(cs, mname)
            if m is not None:
                arrays.update({f"{mname}_indptr": m.indptr, f"{mname}_indices": m.indices, f"{mname}_data": m.data})
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        entries = {}
        for name, arr in arrays.items():
            f = tmp / f"{name}.npy"
            np.save(f, np.ascontiguousarray(arr))
            entries[name] = {"file": f.name, "dtype": str(arr.dtype), "shape": list(arr.shape)}
        for name, digest in zip(entries, _hash_files([tmp / e["file"] for e in entries.values()])):
            entries[name]["sha256"] = digest
        manifest = {
            "format": FORMAT, "version": VERSION, "form": "standard",
            "n_wires": pk.n_wires, "n_public": pk.n_public, "domain_size": pk.domain_size,
            "circuit": None if cs is None else {"name": cs.name, "n_constraints": cs.n_constraints,
                                                 "n_wires": cs.n_wires, "n_public": cs.n_public},
            "meta": pk.meta, "arrays": entries,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
        if overwrite and path.exists():
            shutil.rmtree(path)
        try:
            os.rename(tmp, path)
        except OSError:
            if not (path / "manifest.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)  # a concurrent writer won the race
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def read_manifest(path) -> dict:
    path = Path(path)
    mf = path / "manifest.json"
    try:
        manifest = json.loads(mf.read_text())
    except FileNotFoundError:
        raise KeyBundleError(f"{mf}: missing (not a cuzk-ray key bundle)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise KeyBundleError(f"{mf}: not valid JSON ({e})") from None
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise KeyBundleError(f"{mf}: format {manifest.get('format')!r} version {manifest.get('version')!r}, "
                             f"expected {FORMAT!r} version {VERSION}")
    return manifest


def load_bundle(path, verify_hashes: bool = True, mmap: bool = True) -> tuple[ProvingKey, ConstraintSystem | None]:
    """Load a bundle (memory-mapped by default). Shapes and dtypes are always checked against the
    manifest; SHA-256 too when verify_hashes (reads every byte once)."""
    path = Path(path)
    manifest = read_manifest(path)
    arrays = {}
    for e in manifest["arrays"].values():
        f = path / e["file"]
        if not f.is_file():
            raise KeyBundleError(f"{f}: missing from the key bundle")
    if verify_hashes:
        files = [path / e["file"] for e in manifest["arrays"].values()]
        for f, e, digest in zip(files, manifest["arrays"].values(), _hash_files(files)):
            if digest != e["sha256"]:
                raise KeyBundleError(f"{f}: SHA-256 does not match the manifest (corrupt or modified)")
    for name, e in manifest["arrays"].items():
        f = path / e["file"]
        try:
            arr = np.load(f, mmap_mode="r" if mmap else None)
        except ValueError as err:
            raise KeyBundleError(f"{f}: not a readable .npy file ({err})") from None
        if list(arr.shape) != e["shape"] or str(arr.dtype) != e["dtype"]:
            raise KeyBundleError(f"{f}: shape {list(arr.shape)} dtype {arr.dtype}, "
                                 f"manifest says {e['shape']} {e['dtype']}")
        arrays[name] = arr
    missing = [n for n in _VK + _PK if n not in arrays]
    if missing:
        raise KeyBundleError(f"{path / 'manifest.json'}: arrays missing: {', '.join(missing)}")
    vk = VerifyingKey(**{n: arrays[n] for n in _VK})
    meta = dict(manifest.get("meta", {}), bundle_path=str(path.resolve()))  # where it is mapped from
    pk = ProvingKey(vk=vk, meta=meta, **{n: arrays[n] for n in _PK},
                    **{n: arrays.get(n) for n in ProvingKey.DENSITIES})
    try:
        pk.validate()
    except ValueError as e:
        raise KeyBundleError(f"{path}: {e}") from None
    cs = None
    c = manifest.get("circuit")
    if c is not None and "A_indptr" in arrays:
        mats = {}
        for mname in ("A", "B", "C"):
            if f"{mname}_indptr" in arrays:
                mats[mname] = CsrMatrix(arrays[f"{mname}_indptr"], arrays[f"{mname}_indices"],
                                        arrays[f"{mname}_data"], c["n_wires"])
        cs = ConstraintSystem(c["n_wires"], c["n_public"], mats["A"], mats["B"], mats.get("C"), c["name"])
    return pk, cs
