"""A partition's witness as an Arrow RecordBatch, viewed by numpy without copies. Proof id,
partition index, circuit id, n_wires and the form travel in the schema metadata
(``witness_form``: "compact" or "full"). Two layouts:

compact (a CompactWitness, cuzk_ray.witness; what synthesis makes): one row, three columns
    full    large_binary                        the packed bitmap of wires holding a field element
    bits    large_binary                        the packed bitmap of the 0/1 wires' values
    values  large_list<fixed_size_binary(32)>   the full wires' standard-form limbs, in wire order
  (one row because the three have different lengths; large_ types: 64-bit offsets, so a witness
  of more than 2 GiB of field elements fits); metadata ``n_full`` = len(values).
full (an FrVector): one column ``witness`` of ``fixed_size_binary(32)``, one row per wire.

Either way numpy reads the batch's buffers in place (read-only when the batch came from the
object store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .field import FR_BYTES, FR_LIMBS, FrVector
from .witness import CompactWitness, Witness

if TYPE_CHECKING:  # pyarrow is imported where a batch is made or read (~17 ms): a local prove never does
    import pyarrow as pa


@dataclass
class Partition:
    """One partition of one proof: who it is (proof id, index, circuit id), its witness in either
    form, and what synthesis reported (``extra``: strings in the batch's metadata)."""

    proof_id: str
    partition: int
    circuit_id: str
    witness: Witness  # CompactWitness (from synthesis), or FrVector: uint64[n_wires, 4] standard form, < r
    extra: dict = field(default_factory=dict)  # e.g. {"synthesis_node": ..., "synthesis_s": ...}

    @property
    def nbytes(self) -> int:
        return self.witness.nbytes


def _column(limbs: np.ndarray) -> pa.Array:
    import pyarrow as pa

    limbs = np.ascontiguousarray(limbs, dtype="<u8").reshape(-1, FR_LIMBS)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(FR_BYTES), len(limbs), [None, pa.py_buffer(limbs)])


def _limbs(col: pa.Array) -> np.ndarray:
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    buf = col.buffers()[1]
    start = col.offset * FR_BYTES
    return np.frombuffer(buf, dtype="<u8", count=len(col) * FR_LIMBS, offset=start).reshape(-1, FR_LIMBS)


def _binary(data: np.ndarray) -> pa.Array:
    """One large_binary value over ``data``'s memory (no copy)."""
    import pyarrow as pa

    offsets = np.array([0, data.nbytes], dtype=np.int64)
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _binary_view(col: pa.Array) -> np.ndarray:
    """The first value of a large_binary column as a uint8 view of its buffer."""
    import pyarrow as pa

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    lo, hi = np.frombuffer(col.buffers()[1], dtype=np.int64, count=2, offset=8 * col.offset)
    return np.frombuffer(col.buffers()[2], dtype=np.uint8, count=int(hi - lo), offset=int(lo))


def _compact_arrays(w: CompactWitness) -> list[pa.Array]:
    import pyarrow as pa

    values = pa.LargeListArray.from_arrays(pa.array([0, w.n_full], type=pa.int64()), _column(w.values))
    return [_binary(w.full), _binary(w.bits), values]


def to_record_batch(p: Partition) -> pa.RecordBatch:
    """Zero-copy: the batch's buffers are the witness's memory (either form; see the module docstring)."""
    import pyarrow as pa

    meta = {"proof_id": p.proof_id, "partition": str(p.partition), "circuit_id": p.circuit_id,
            "n_wires": str(len(p.witness))}
    meta.update({k: str(v) for k, v in p.extra.items()})
    if isinstance(p.witness, CompactWitness):
        meta.update(witness_form="compact", n_full=str(p.witness.n_full))
        batch = pa.RecordBatch.from_arrays(_compact_arrays(p.witness), names=["full", "bits", "values"])
    else:
        meta.update(witness_form="full")
        batch = pa.RecordBatch.from_arrays([_column(p.witness.limbs)], names=["witness"])
    return batch.replace_schema_metadata(meta)


_META = ("proof_id", "partition", "circuit_id", "n_wires", "witness_form", "n_full")


def from_record_batch(batch: pa.RecordBatch) -> Partition:
    """Numpy views of the batch's buffers (read-only when the batch came from the object store).
    The witness is not range-checked again: batches come from our own synthesis, checked there.
    A batch without ``witness_form`` is read as the full form (batches made before it existed)."""
    meta = {k.decode(): v.decode() for k, v in (batch.schema.metadata or {}).items()}
    where = f"partition {meta.get('proof_id')}:{meta.get('partition')}"
    n = int(meta["n_wires"])
    form = meta.get("witness_form", "full")
    if form == "compact":
        values = batch.column("values")
        limbs = _limbs(values.flatten())
        if int(meta["n_full"]) != len(limbs):
            raise ValueError(f"{where}: metadata says {meta['n_full']} full field elements, the values column has "
                             f"{len(limbs)}")
        try:
            w = CompactWitness(n, _binary_view(batch.column("full")), _binary_view(batch.column("bits")), limbs)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
    elif form == "full":
        w = FrVector(_limbs(batch.column("witness")))
        if n != len(w):
            raise ValueError(f"{where}: metadata says {n} wires, the witness column has {len(w)}")
    else:
        raise ValueError(f"{where}: witness_form={form!r} in the batch metadata; need 'compact' or 'full'")
    extra = {k: v for k, v in meta.items() if k not in _META}
    return Partition(meta["proof_id"], int(meta["partition"]), meta["circuit_id"], w, extra)
