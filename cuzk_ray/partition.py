"""A partition's witness as an Arrow RecordBatch, viewed by numpy
without copies. Field vectors are ``fixed_size_binary(32)`` columns of standard-form Fr limbs;
proof id, partition index, circuit id and sizes travel in the schema metadata."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .field import FR_BYTES, FR_LIMBS, FrVector


@dataclass
class Partition:
    proof_id: str
    partition: int
    circuit_id: str
    witness: FrVector  # uint64[n_wires, 4] standard-form limbs, every value < r
    extra: dict = field(default_factory=dict)  # e.g. {"synthesis_node": ..., "synthesis_s": ...}

    @property
    def nbytes(self) -> int:
        return self.witness.nbytes


def _column(limbs: np.ndarray) -> pa.Array:
    limbs = np.ascontiguousarray(limbs, dtype="<u8").reshape(-1, FR_LIMBS)
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(FR_BYTES), len(limbs), [None, pa.py_buffer(limbs)])


def _limbs(col: pa.Array) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    buf = col.buffers()[1]
    start = col.offset * FR_BYTES
    return np.frombuffer(buf, dtype="<u8", count=len(col) * FR_LIMBS, offset=start).reshape(-1, FR_LIMBS)


def to_record_batch(p: Partition) -> pa.RecordBatch:
    """Zero-copy: the batch's buffers are the witness limbs' memory."""
    meta = {"proof_id": p.proof_id, "partition": str(p.partition), "circuit_id": p.circuit_id,
            "n_wires": str(len(p.witness))}
    meta.update({k: str(v) for k, v in p.extra.items()})
    return pa.RecordBatch.from_arrays([_column(p.witness.limbs)], names=["witness"]).replace_schema_metadata(meta)


def from_record_batch(batch: pa.RecordBatch) -> Partition:
    """Numpy views of the batch's buffers (read-only when the batch came from the object store).
    The witness is not range-checked again: batches come from our own synthesis, checked there."""
    meta = {k.decode(): v.decode() for k, v in (batch.schema.metadata or {}).items()}
    w = _limbs(batch.column("witness"))
    if int(meta["n_wires"]) != len(w):
        raise ValueError(f"partition {meta.get('proof_id')}:{meta.get('partition')}: metadata says "
                         f"{meta['n_wires']} wires, the witness column has {len(w)}")
    extra = {k: v for k, v in meta.items() if k not in ("proof_id", "partition", "circuit_id", "n_wires")}
    return Partition(meta["proof_id"], int(meta["partition"]), meta["circuit_id"], FrVector(w), extra)
