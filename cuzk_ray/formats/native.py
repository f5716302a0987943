"""Native proving-key bundle: one memory-mappable ``.npy`` per array plus ``manifest.json``.

Layout of a bundle directory:
  manifest.json      {"format": "cuzk-ray-key", "version": 2, "form": "standard", sizes, meta,
                      "arrays": {name: {"file", "dtype", "shape", "sha256"}}}
  <name>.npy         alpha_g1 beta_g1 delta_g1 beta_g2 gamma_g2 delta_g2 ic a_query b_g1_query
                     b_g2_query l_query h_query, a_wires b_wires (uint32 wire indices, only in
                     a key stored by density: groth16.keys), and the circuit's matrices A_/B_/C_
                     {indptr,entries,table} in the GPU kernel's layout (r1cs.CodedCsr: 8 bytes per
                     non-zero; version 1 bundles stored {indptr,indices,data}, 40 bytes, still read)
Points are affine, standard form (cuzk_ray.curve); the GPU converts to Montgomery on upload.
A bundle is written into a temporary directory and renamed into place, so a reader never sees a
half-written key.
"""

from __future__ import annotations

import hashlib
import io as io_module
import json
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..groth16.keys import ProvingKey
from ..r1cs import CodedCsr, ConstraintSystem, CsrMatrix
from .regular import open_regular

FORMAT = "cuzk-ray-key"
VERSION = 2  # 2: matrices in the device layout (r1cs.CodedCsr); 1: CsrMatrix (still read)
READABLE_VERSIONS = (1, 2)
_VK = ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic")
_PK = ("beta_g1", "delta_g1") + ProvingKey.QUERIES


class KeyBundleError(ValueError):
    """A key bundle is missing, incomplete or corrupt; the message names the file."""


def file_sha256(path, chunk: int = 1 << 24) -> str:
    """Hex SHA-256 of a regular file, read in chunks (NotRegularFile for a FIFO, a device, ...)."""
    h = hashlib.sha256()
    with open_regular(path) as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _hash_files(paths: list) -> list[str]:
    """file_sha256 of each path, on threads (hashlib releases the GIL: a 2^24 key's 15 GB hash in
    a few seconds on many cores instead of ~10 s on one)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(paths)))) as ex:
        return list(ex.map(file_sha256, paths))


def mapped_source(arr) -> tuple[Path, dict] | None:
    """(file, its manifest entry) when ``arr`` is a whole ``.npy`` file memory-mapped from a
    directory of arrays with a manifest.json (a bundle, a circuit recording) that lists the file
    with arr's dtype and shape; None otherwise (an array in memory, a slice, a file of no such
    directory)."""
    if not isinstance(arr, np.memmap) or not arr.filename or not arr.flags.c_contiguous:
        return None
    f = Path(arr.filename)
    try:
        if f.stat().st_size != arr.offset + arr.nbytes:
            return None
        manifest = json.loads((f.parent / "manifest.json").read_text())
        entries = manifest["arrays"].values()
    except (OSError, ValueError, KeyError, AttributeError):
        return None
    for e in entries:
        if (isinstance(e, dict) and e.get("file") == f.name and e.get("shape") == list(arr.shape)
                and e.get("dtype") == str(arr.dtype) and e.get("sha256")):
            return f, e
    return None


class BundleWriter:
    """Writes a bundle array by array into a temporary directory beside ``path``, each file hashed
    as it is written (no second read), then ``commit`` writes the manifest and renames the
    directory into place; leaving the ``with`` block without a commit removes it. ``stream``
    appends an array chunk by chunk, so a key larger than the host's memory can be written while
    it is computed (groth16.setup.dev_setup_bundle)."""

    def __init__(self, path, overwrite: bool = False):
        self.path, self.overwrite = Path(path), overwrite
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", dir=self.path.parent))
        self.entries: dict[str, dict] = {}
        self._io = ThreadPoolExecutor(max_workers=2, thread_name_prefix="cuzk-bundle")  # write || hash

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(self, *exc) -> None:
        self._io.shutdown(wait=True)
        shutil.rmtree(self.tmp, ignore_errors=True)  # gone after a commit (renamed), else dropped

    def add(self, name: str, arr: np.ndarray) -> None:
        """One whole array. An array that is a whole ``.npy`` file mapped from another directory of
        arrays (mapped_source: a circuit recording's matrices) is hard-linked, not written: a
        32 GiB PoRep key bundle would otherwise copy the recording's ~9 GB of matrices onto a disk
        that has room for one copy."""
        source = mapped_source(arr)
        if source is not None:
            self.link(name, *source)
            return
        arr = np.ascontiguousarray(arr)
        with self.stream(name, arr.dtype, arr.shape) as out:
            out.write(arr)

    def link(self, name: str, source: Path, entry: dict) -> None:
        """Array ``name`` as a hard link to ``source`` (a copy where the file system has none),
        recorded with ``entry``'s dtype, shape and SHA-256 (checked when its directory was loaded)."""
        target = self.tmp / f"{name}.npy"
        try:
            os.link(source, target)
        except OSError:  # another file system, or none of hard links
            shutil.copyfile(source, target)
        self.entries[name] = {"file": target.name, "dtype": entry["dtype"], "shape": list(entry["shape"]),
                              "sha256": entry["sha256"]}

    @contextmanager
    def stream(self, name: str, dtype, shape: tuple):
        """An ArrayStream for array ``name``; its rows must all be written before the block ends."""
        f = open(self.tmp / f"{name}.npy", "wb")
        out = ArrayStream(f, np.dtype(dtype), tuple(int(x) for x in shape), self._io)
        try:
            yield out
            out.close()
        finally:
            f.close()
        self.entries[name] = {"file": f"{name}.npy", "dtype": str(out.dtype), "shape": list(out.shape),
                              "sha256": out.sha256}

    def commit(self, manifest: dict, form: str = FORMAT, version: int = VERSION) -> Path:
        """Write manifest.json (``manifest`` plus format, version and the arrays) and rename the
        bundle into place. When another process wrote the same bundle first (and not overwrite),
        its copy is kept. ``form``/``version``: another directory of arrays (a circuit recording)."""
        full = dict(manifest, format=form, version=version, arrays=self.entries)
        (self.tmp / "manifest.json").write_text(json.dumps(full, indent=1, sort_keys=True))
        if self.overwrite and self.path.exists():
            shutil.rmtree(self.path)
        try:
            os.rename(self.tmp, self.path)
        except OSError:
            if not (self.path / "manifest.json").is_file():
                raise
        return self.path


class ArrayStream:
    """Appends rows of one .npy file: the header first, then ``write(chunk)`` (each chunk written
    and hashed on two threads while the caller computes the next one)."""

    def __init__(self, f, dtype: np.dtype, shape: tuple, io: ThreadPoolExecutor):
        self.f, self.dtype, self.shape, self.io = f, dtype, shape, io
        self.rows, self.hash, self.pending = 0, hashlib.sha256(), ()
        header = io_module.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                      "fortran_order": False, "shape": shape})
        self._put(header.getvalue())

    def _put(self, data) -> None:
        for fut in self.pending:  # the previous chunk is on disk and in the hash
            fut.result()
        self.pending = (self.io.submit(self.f.write, data), self.io.submit(self.hash.update, data))

    def write(self, chunk: np.ndarray) -> None:
        chunk = np.ascontiguousarray(chunk, dtype=self.dtype)
        if chunk.shape[1:] != self.shape[1:] or self.rows + len(chunk) > self.shape[0]:
            raise ValueError(f"{self.f.name}: chunk of shape {chunk.shape} after {self.rows} rows does not fit "
                             f"shape {self.shape}")
        self.rows += len(chunk)
        self._put(memoryview(chunk).cast("B"))

    def close(self) -> None:
        self._put(b"")
        for fut in self.pending:
            fut.result()
        if self.rows != (self.shape[0] if self.shape else 1):
            raise ValueError(f"{self.f.name}: {self.rows} rows written, shape {self.shape}")

    @property
    def sha256(self) -> str:
        return self.hash.hexdigest()


def matrix_arrays(cs: ConstraintSystem) -> dict[str, np.ndarray]:
    """The constraint matrices as the bundle stores them: the device layout (r1cs.CodedCsr)."""
    out = {}
    for mname in ("A", "B", "C"):
        m = getattr(cs, mname)
        if m is not None:
            m = CodedCsr.from_csr(m)
            out.update({f"{mname}_indptr": m.indptr, f"{mname}_entries": m.entries, f"{mname}_table": m.table})
    return out


def bundle_manifest(pk_meta: dict, n_wires: int, n_public: int, domain_size: int,
                    cs: ConstraintSystem | None) -> dict:
    """The manifest's fields beside the arrays."""
    return {"form": "standard", "n_wires": n_wires, "n_public": n_public, "domain_size": domain_size,
            "circuit": None if cs is None else {"name": cs.name, "n_constraints": cs.n_constraints,
                                                 "n_wires": cs.n_wires, "n_public": cs.n_public},
            "meta": pk_meta}


def save_bundle(path, pk: ProvingKey, cs: ConstraintSystem | None = None, overwrite: bool = False) -> Path:
    """Write pk (and optionally the circuit's matrices) to directory ``path`` atomically. When
    another process wrote the same bundle first (and not overwrite), its copy is kept."""
    arrays = {name: getattr(pk.vk, name) for name in _VK}
    arrays.update({name: getattr(pk, name) for name in _PK})
    # density indices only where the key has them: a bundle without them is a dense key
    arrays.update({name: getattr(pk, name) for name in ProvingKey.DENSITIES if getattr(pk, name) is not None})
    if cs is not None:
        arrays.update(matrix_arrays(cs))
    with BundleWriter(path, overwrite) as w:
        for name, arr in arrays.items():
            w.add(name, arr)
        return w.commit(bundle_manifest(pk.meta, pk.n_wires, pk.n_public, pk.domain_size, cs))


def release_mapped_pages(arr) -> bool:
    """Drop this process's resident pages of an array memory-mapped from a bundle (madvise
    MADV_DONTNEED on its read-only file mapping): once a GPU actor has uploaded a query to VRAM,
    its 44 GiB (2^27) no longer count in the actor's memory; the page cache keeps the file's pages
    (reclaimable) and a later read faults them back in from it. True when pages were dropped;
    an array not mapped from a file is left alone (False)."""
    if not isinstance(arr, np.memmap) or arr.nbytes == 0:
        return False
    import ctypes
    import mmap

    libc = ctypes.CDLL(None, use_errno=True)
    start = arr.ctypes.data & ~(mmap.PAGESIZE - 1)
    length = arr.ctypes.data + arr.nbytes - start
    return libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(length), mmap.MADV_DONTNEED) == 0


def read_manifest(path, form: str = FORMAT, versions: tuple[int, ...] = READABLE_VERSIONS) -> dict:
    """The manifest.json of a bundle directory, checked to be of format ``form``, one of ``versions``."""
    path = Path(path)
    mf = path / "manifest.json"
    try:
        manifest = json.loads(mf.read_text())
    except FileNotFoundError:
        raise KeyBundleError(f"{mf}: missing (not a {form} directory)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise KeyBundleError(f"{mf}: not valid JSON ({e})") from None
    if manifest.get("format") != form or manifest.get("version") not in versions:
        raise KeyBundleError(f"{mf}: format {manifest.get('format')!r} version {manifest.get('version')!r}, "
                             f"expected {form!r} version {' or '.join(map(str, versions))}")
    return manifest


def load_bundle(path, verify_hashes: bool = True, mmap: bool = True) -> tuple[ProvingKey, ConstraintSystem | None]:
    """Load a bundle (memory-mapped by default). Shapes and dtypes are always checked against the
    manifest; SHA-256 too when verify_hashes (reads every byte once)."""
    path = Path(path)
    manifest = read_manifest(path)
    arrays = load_arrays(path, manifest, verify_hashes, mmap)
    missing = [n for n in _VK + _PK if n not in arrays]
    if missing:
        raise KeyBundleError(f"{path / 'manifest.json'}: arrays missing: {', '.join(missing)}")
    meta = dict(manifest.get("meta", {}), bundle_path=str(path.resolve()))  # where it is mapped from
    pk = ProvingKey.from_arrays(arrays, meta)
    try:
        pk.validate()
    except ValueError as e:
        raise KeyBundleError(f"{path}: {e}") from None
    return pk, _matrices(manifest.get("circuit"), arrays)


def load_arrays(path, manifest: dict, verify_hashes: bool = True, mmap: bool = True) -> dict[str, np.ndarray]:
    """The arrays a manifest lists, from directory ``path`` (memory-mapped by default), each checked
    against the manifest's shape and dtype, and its SHA-256 when verify_hashes (KeyBundleError
    naming the file otherwise)."""
    path = Path(path)
    arrays = {}
    for e in manifest["arrays"].values():
        f = path / e["file"]
        if not f.is_file():
            raise KeyBundleError(f"{f}: missing from the bundle")
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
    return arrays


def _matrices(c: dict | None, arrays: dict) -> ConstraintSystem | None:
    """The bundle's constraint system: CodedCsr matrices (version 2) or CsrMatrix (version 1)."""
    if c is None or "A_indptr" not in arrays:
        return None
    mats = {}
    for mname in ("A", "B", "C"):
        if f"{mname}_entries" in arrays:
            mats[mname] = CodedCsr(arrays[f"{mname}_indptr"], arrays[f"{mname}_entries"], arrays[f"{mname}_table"],
                                   c["n_wires"])
        elif f"{mname}_indptr" in arrays:
            mats[mname] = CsrMatrix(arrays[f"{mname}_indptr"], arrays[f"{mname}_indices"], arrays[f"{mname}_data"],
                                    c["n_wires"])
    return ConstraintSystem(c["n_wires"], c["n_public"], mats["A"], mats["B"], mats.get("C"), c["name"])
