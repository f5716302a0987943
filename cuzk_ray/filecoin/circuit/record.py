"""A recorded Filecoin circuit as the project's constraint system (cuzk's PCE, FILECOIN.md 3.4).

``record`` turns a finished bellpepper-semantics synthesis (``cs.R1cs``) into the project's
``r1cs.ConstraintSystem``:

* columns: ONE and the other inputs first (input i is column i), then aux j at column
  ``num_inputs + j``, in allocation order. The aux column is only known once the final input count
  is, because ``alloc_input`` interleaves with aux allocations (FILECOIN.md 2.1);
* rows: the circuit's constraints in ``enforce`` order, then one ``input_i * 0 = 0`` per input
  (``cs.ConstraintSystem.finish`` appended them);
* terms whose coefficient cancelled to 0 are not entries (they neither enter the matrices nor
  count for density, as cuzk's ``recording_cs.rs``).

Beside the matrices it computes bellperson's densities (``density.rs`` in cuzk-pce; the prover's
``ProvingAssignment`` trackers): ``a_aux`` (aux in some A row), ``b_input`` and ``b_aux`` (inputs
and aux in some B row). The a query holds every input plus the aux of ``a_aux``; the b queries the
inputs of ``b_input`` plus the aux of ``b_aux`` (FILECOIN.md 2.4). ``CircuitShape`` carries the
counts cuzk publishes for the 32 GiB circuit (FILECOIN.md 1.6).

A recording is saved as an ``.npz`` (matrices in the key bundle's ``CodedCsr`` layout, densities,
shape) and found again by a key (circuit name and sector size): ``cached_recording`` synthesizes
once; later proofs only compute a witness (``witness_only``), which is checked against the shape.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...formats.native import matrix_arrays
from ...r1cs import CodedCsr, ConstraintSystem, CsrMatrix
from .cs import ConstraintSystem as RecordingCS
from .cs import R1cs, Row, column

FORMAT = "cuzk-ray filecoin recording"
VERSION = 1
MATRICES = ("A", "B", "C")


@dataclass(frozen=True)
class CircuitShape:
    """The counts of a recorded circuit, named as cuzk's PCE reports them (FILECOIN.md 1.6).
    ``num_constraints`` includes the input constraints; the density fields are popcounts."""

    num_inputs: int
    num_aux: int
    num_constraints: int
    nnz_a: int
    nnz_b: int
    nnz_c: int
    a_aux_density: int
    b_input_density: int
    b_aux_density: int


@dataclass(frozen=True)
class Densities:
    """bellperson's density trackers as masks: ``a_aux`` and ``b_aux`` over aux, ``b_input`` over inputs."""

    a_aux: np.ndarray  # bool[num_aux]
    b_input: np.ndarray  # bool[num_inputs]
    b_aux: np.ndarray  # bool[num_aux]

    def a_wires(self) -> np.ndarray:
        """The columns with an a-query point: every input, then the aux of ``a_aux``."""
        n = len(self.b_input)
        return np.concatenate([np.arange(n), n + np.flatnonzero(self.a_aux)])

    def b_wires(self) -> np.ndarray:
        """The columns with b-query points: the inputs of ``b_input``, then the aux of ``b_aux``."""
        return np.concatenate([np.flatnonzero(self.b_input), len(self.b_input) + np.flatnonzero(self.b_aux)])


@dataclass(frozen=True)
class Recording:
    """A circuit recorded once: its constraint system (project columns), densities and counts."""

    cs: ConstraintSystem
    densities: Densities
    shape: CircuitShape

    @property
    def num_inputs(self) -> int:
        return self.shape.num_inputs


def _matrix(rows: tuple[Row, ...], num_inputs: int, n_wires: int) -> CsrMatrix:
    """CSR of recorded rows; a row's terms are inputs then aux, each by index: columns ascend."""
    counts = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    cols = [column(v, num_inputs) for r in rows for v, _ in r]
    coeffs = [c for r in rows for _, c in r]
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    return CsrMatrix.from_coo(row_of, cols, coeffs, len(rows), n_wires)


def densities(cs: ConstraintSystem, num_inputs: int) -> Densities:
    """bellperson's densities from the matrices (cuzk-pce ``density.rs``): a column is dense in A
    (or B) when some row of A (or B) has a non-zero entry there."""
    def present(m) -> np.ndarray:
        mask = np.zeros(cs.n_wires, dtype=bool)
        mask[np.asarray(m.indices, dtype=np.int64)] = True
        return mask

    in_a, in_b = present(cs.A), present(cs.B)
    return Densities(a_aux=in_a[num_inputs:], b_input=in_b[:num_inputs], b_aux=in_b[num_inputs:])


def shape_of(cs: ConstraintSystem, d: Densities) -> CircuitShape:
    num_inputs = cs.n_public + 1
    return CircuitShape(num_inputs=num_inputs, num_aux=cs.n_wires - num_inputs, num_constraints=cs.n_constraints,
                        nnz_a=cs.A.nnz, nnz_b=cs.B.nnz, nnz_c=cs.C.nnz, a_aux_density=int(d.a_aux.sum()),
                        b_input_density=int(d.b_input.sum()), b_aux_density=int(d.b_aux.sum()))


def record(r1cs: R1cs, name: str = "filecoin") -> Recording:
    """The project's constraint system of a finished synthesis, with its densities and counts."""
    if r1cs.num_inputs < 1:
        raise ValueError(f"{name}: a recording needs the ONE input, found {r1cs.num_inputs} inputs")
    n_wires = r1cs.num_inputs + r1cs.num_aux
    a, b, c = (_matrix(rows, r1cs.num_inputs, n_wires) for rows in (r1cs.a, r1cs.b, r1cs.c))
    cs = ConstraintSystem(n_wires, r1cs.num_inputs - 1, a, b, c, name)
    d = densities(cs, r1cs.num_inputs)
    return Recording(cs, d, shape_of(cs, d))


def witness_vector(r1cs: R1cs) -> np.ndarray:
    """The witness in the recording's column order (inputs, then aux) as an int vector; ValueError
    naming the first variable synthesized without a value."""
    return _witness(r1cs.inputs, r1cs.aux)


def _witness(inputs, aux) -> np.ndarray:
    for kind, values in (("input", inputs), ("aux", aux)):
        missing = next((i for i, v in enumerate(values) if v is None), None)
        if missing is not None:
            raise ValueError(f"witness: {kind} {missing} has no value (synthesized without a witness)")
    return np.array([*inputs, *aux], dtype=object)


class WitnessCS(RecordingCS):
    """A constraint system that only allocates (cuzk's ``WitnessCS``): ``enforce`` keeps nothing,
    so a proof against a cached recording pays for the witness alone."""

    def enforce(self, name, a, b, c) -> None:
        return None


def witness_only(synthesize: Callable[[RecordingCS], None], shape: CircuitShape) -> np.ndarray:
    """Run ``synthesize`` on a WitnessCS and return the witness vector, after checking that it
    allocated the recording's number of inputs and aux (ValueError: need vs have)."""
    cs = WitnessCS()
    synthesize(cs)
    for what, have, need in (("inputs", cs.num_inputs, shape.num_inputs), ("aux", cs.num_aux, shape.num_aux)):
        if have != need:
            raise ValueError(f"witness: the circuit allocated {have} {what}, the recording has {need}")
    return _witness(cs.inputs, cs.aux)


# --- the on-disk cache -----------------------------------------------------------------------------


def cache_path(cache_dir, circuit: str, sector_size: int) -> Path:
    """Where the recording of ``circuit`` for ``sector_size`` bytes lives under ``cache_dir``."""
    if not circuit or any(ch in circuit for ch in "/\\\0"):
        raise ValueError(f"recording cache: circuit name {circuit!r} is not a plain file name")
    return Path(cache_dir) / f"{circuit}-{int(sector_size)}.recording.npz"


def save_recording(path, rec: Recording) -> Path:
    """Write ``rec`` to ``path`` (an .npz) through a temporary file renamed into place."""
    path = Path(path)
    meta = {"format": FORMAT, "version": VERSION, "name": rec.cs.name, "shape": asdict(rec.shape)}
    arrays = matrix_arrays(rec.cs)
    arrays.update(a_aux=np.packbits(rec.densities.a_aux), b_input=np.packbits(rec.densities.b_input),
                  b_aux=np.packbits(rec.densities.b_aux), meta=np.frombuffer(json.dumps(meta).encode(), np.uint8))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _read_meta(path: Path, z) -> dict:
    if "meta" not in z.files:
        raise ValueError(f"{path}: no 'meta' array (not a cuzk-ray recording)")
    try:
        meta = json.loads(bytes(z["meta"]).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: field 'meta' is not JSON ({e})") from None
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{path}: format {meta.get('format')!r} version {meta.get('version')!r}, "
                         f"expected {FORMAT!r} version {VERSION}")
    return meta


def _mask(path: Path, z, name: str, n: int) -> np.ndarray:
    if name not in z.files:
        raise ValueError(f"{path}: field {name!r} is missing")
    packed = z[name]
    if packed.dtype != np.uint8 or packed.shape != ((n + 7) // 8,):
        raise ValueError(f"{path}: field {name!r} holds {packed.shape} {packed.dtype}, need ({(n + 7) // 8},) uint8")
    return np.unpackbits(packed, count=n).astype(bool)


def load_recording(path) -> Recording:
    """A recording saved by ``save_recording``; its counts are recomputed from the arrays and must
    equal the stored shape (ValueError naming the file and field otherwise)."""
    path = Path(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a readable .npz recording ({e})") from None
    with z:
        meta = _read_meta(path, z)
        stored = CircuitShape(**meta["shape"])
        n_wires = stored.num_inputs + stored.num_aux
        missing = [f"{m}_{part}" for m in MATRICES for part in ("indptr", "entries", "table")
                   if f"{m}_{part}" not in z.files]
        if missing:
            raise ValueError(f"{path}: field {missing[0]!r} is missing")
        mats = {m: CodedCsr(z[f"{m}_indptr"], z[f"{m}_entries"], z[f"{m}_table"], n_wires) for m in MATRICES}
        cs = ConstraintSystem(n_wires, stored.num_inputs - 1, mats["A"], mats["B"], mats["C"], meta["name"])
        d = Densities(_mask(path, z, "a_aux", stored.num_aux), _mask(path, z, "b_input", stored.num_inputs),
                      _mask(path, z, "b_aux", stored.num_aux))
    _check_consistent(path, cs, d, stored)
    return Recording(cs, d, stored)


def _check_consistent(path: Path, cs: ConstraintSystem, d: Densities, stored: CircuitShape) -> None:
    """The stored masks are the matrices' densities and the stored counts are theirs."""
    again = densities(cs, stored.num_inputs)
    for name in ("a_aux", "b_input", "b_aux"):
        if not np.array_equal(getattr(d, name), getattr(again, name)):
            raise ValueError(f"{path}: field {name!r} does not match the matrices' density")
    have = asdict(shape_of(cs, d))
    for key, value in asdict(stored).items():
        if have[key] != value:
            raise ValueError(f"{path}: shape {key!r} is {value} in the meta, the arrays give {have[key]}")


def cached_recording(cache_dir, circuit: str, sector_size: int, synthesize: Callable[[RecordingCS], None]
                     ) -> Recording:
    """The recording of ``circuit`` for ``sector_size`` from ``cache_dir``, or, the first time,
    ``synthesize`` run on a recording constraint system (any witness, or none), then saved."""
    path = cache_path(cache_dir, circuit, sector_size)
    if path.is_file():
        return load_recording(path)
    cs = RecordingCS()
    synthesize(cs)
    rec = record(cs.finish(), f"{circuit}-{int(sector_size)}")
    save_recording(path, rec)
    return rec
