"""A converted-key cache for snarkjs zkeys, keyed by the file's SHA-256.

The first load parses the zkey (cuzk_ray.formats.snarkjs.read_zkey) and stores every array as a
``.npy`` file plus ``manifest.json`` under ``cache_dir/<sha256>/``; later loads of a file with the
same bytes memory-map the arrays (read-only) and skip the parse. Entries are written to a temporary
directory and renamed into place, so a crash or a concurrent writer never leaves a half entry.

Version 2: the key is stored by density (read_zkey drops the points at infinity and keeps the
a_wires / b_wires indices). An entry of version 1 (a dense conversion) is not loaded: it is
removed and the zkey converted again, so dense and density entries are never mixed.

Version 3: every point was checked on its curve and in the subgroup of order r when the entry was
converted (read_zkey; ``meta["points_checked"]`` in its manifest says so, with the seconds it
took), so loads of the entry skip the check. An entry of version 2 was not checked: converted again.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile

import numpy as np

from ..curves import key_curve
from ..groth16.keys import ProvingKey, VerifyingKey
from ..r1cs import ConstraintSystem, CsrMatrix
from .native import file_sha256
from .snarkjs import read_zkey
from .snarkjs_json import remember_alphabeta, vk_alphabeta

CACHE_VERSION = 3  # 3: points checked; 2: stored by density, unchecked; 1: dense (both converted again)
VK_FIELDS = ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic")
PK_FIELDS = ("beta_g1", "delta_g1") + ProvingKey.QUERIES
CSR_FIELDS = ("indptr", "indices", "data")
ALPHABETA = "alphabeta.json"  # e(alpha, beta) for verification_key.json: a pairing in Python ints, once per key

log = logging.getLogger(__name__)


def load_zkey_cached(path, cache_dir) -> tuple[ProvingKey, ConstraintSystem]:
    """``read_zkey(path)``, from ``cache_dir`` when this exact file was converted before.

    ``meta["cache"]`` says "hit" or "miss"; ``meta["sha256"]`` is the zkey's hash.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        read_zkey(path)  # raises the reader's FormatError for a missing file
    digest = zkey_digest(path)
    entry = os.path.join(os.fspath(cache_dir), digest)
    cached = _load_entry(entry, digest)
    if cached is not None:
        pk, cs = cached
        pk.meta.update(source=os.path.abspath(path), cache="hit")
        load_alphabeta(entry, pk.vk)
        return pk, cs
    if os.path.isdir(entry):  # entries appear by rename, complete: this one is damaged or stale
        shutil.rmtree(entry, ignore_errors=True)
    pk, cs = read_zkey(path)
    pk.meta.update(sha256=digest)
    _store_entry(entry, pk, cs)
    pk.meta["cache"] = "miss"
    return pk, cs


def zkey_cached(path, cache_dir) -> bool:
    """True when this exact file has a complete entry of the current version in ``cache_dir``
    (its conversion and point check will not run again; the preflight then needs no disk for it)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return False
    try:
        with open(os.path.join(os.fspath(cache_dir), zkey_digest(path), "manifest.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("version") == CACHE_VERSION


_DIGESTS: dict[tuple, str] = {}  # (path, size, mtime_ns, inode) -> SHA-256: the preflight and the load hash once


def zkey_digest(path: str) -> str:
    """The file's SHA-256, computed once per process for the same file (path, size, mtime, inode)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_sha256(path)
    return _DIGESTS[key]


def _arrays(pk: ProvingKey, cs: ConstraintSystem) -> dict[str, np.ndarray]:
    out = {f"vk.{k}": getattr(pk.vk, k) for k in VK_FIELDS}
    out.update({f"pk.{k}": getattr(pk, k) for k in PK_FIELDS})
    out.update({f"pk.{k}": getattr(pk, k) for k in ProvingKey.DENSITIES if getattr(pk, k) is not None})
    for m in ("A", "B"):
        out.update({f"cs.{m}.{k}": getattr(getattr(cs, m), k) for k in CSR_FIELDS})
    return out


def _store_entry(entry: str, pk: ProvingKey, cs: ConstraintSystem) -> None:
    parent = os.path.dirname(entry)
    tmp = None
    try:
        os.makedirs(parent, exist_ok=True)  # inside the try: a read-only or full cache only loses caching
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
        files = {}
        for name, arr in _arrays(pk, cs).items():
            np.save(os.path.join(tmp, name + ".npy"), np.ascontiguousarray(arr), allow_pickle=False)
            files[name] = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
        manifest = {"version": CACHE_VERSION, "sha256": pk.meta["sha256"], "meta": pk.meta,
                    "cs": {"n_wires": cs.n_wires, "n_public": cs.n_public, "name": cs.name,
                           "n_cols": {m: getattr(cs, m).n_cols for m in ("A", "B")}},
                    "arrays": files}
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)
        with open(os.path.join(tmp, ALPHABETA), "w") as f:
            json.dump(vk_alphabeta(pk.vk), f)
        os.rename(tmp, entry)
    except OSError as e:
        # Another process won the race (entry exists) or the cache is unwritable: the key in
        # memory is still good, so only the caching is lost (said in one line when it is not a race).
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.isdir(entry):
            log.warning("the converted key is not cached: %s: %s", e.filename or parent, e.strerror)


def load_alphabeta(entry: str, vk: VerifyingKey) -> bool:
    """Hand the entry's stored e(alpha, beta) to the verification_key.json writer (True); an entry
    converted before it was stored, or a damaged file, gets it computed and written now (False)."""
    path = os.path.join(entry, ALPHABETA)
    try:
        with open(path) as f:
            if remember_alphabeta(vk, json.load(f)):
                return True
    except (OSError, ValueError):
        pass
    value, tmp = vk_alphabeta(vk), None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=entry)
        with os.fdopen(fd, "w") as f:
            json.dump(value, f)
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache: computed again by the next process
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return False


def _load_entry(entry: str, digest: str):
    try:
        with open(os.path.join(entry, "manifest.json")) as f:
            manifest = json.load(f)
        if manifest.get("version") != CACHE_VERSION or manifest.get("sha256") != digest:
            return None
        arrs = {}
        for name, info in manifest["arrays"].items():
            arr = np.load(os.path.join(entry, name + ".npy"), mmap_mode="r", allow_pickle=False)
            if list(arr.shape) != info["shape"] or str(arr.dtype) != info["dtype"]:
                return None
            arrs[name] = arr
        vk = VerifyingKey(**{k: arrs[f"vk.{k}"] for k in VK_FIELDS})
        pk = ProvingKey(vk=vk, meta=dict(manifest["meta"]), **{k: arrs[f"pk.{k}"] for k in PK_FIELDS},
                        **{k: arrs.get(f"pk.{k}") for k in ProvingKey.DENSITIES})
        c = manifest["cs"]
        mats = [CsrMatrix(*(arrs[f"cs.{m}.{k}"] for k in CSR_FIELDS), n_cols=c["n_cols"][m]) for m in ("A", "B")]
        # the circuit's field is the key's curve's r: a BN254 entry must not come back over BLS12-381's
        cs = ConstraintSystem(c["n_wires"], c["n_public"], mats[0], mats[1], None, name=c["name"],
                              modulus=key_curve(pk.meta).r)
        pk.validate()
        return pk, cs
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no entry, or a damaged one: parse again (the rename refuses to overwrite)
