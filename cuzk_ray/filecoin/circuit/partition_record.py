"""A whole StackedDRG partition recorded from its prefix and ONE challenge block (issue 30 item 1).

``record.record`` needs every row as Python objects: fine at 2 KiB (2.7 M rows), impossible at
32 GiB (130 M rows) on a 24 GiB host. A partition is a prefix and ``challenges`` identical blocks
(blocks.py), so only the prefix and one challenge are synthesized (``CompactCS``: rows as arrays as
they are enforced) and the matrices are assembled by replication. In block j, a variable the block
allocated moves by j blocks (aux by ``j * block_aux``, inputs by ``j * block_inputs``) and a prefix
variable stays; after the last block come the input constraints (``input_i * 1`` in A, B and C
empty). Each row's columns ascend and stay so, since the shift is monotone.

Output: record.py's ``Recording`` with ``CodedCsr`` matrices (the key layout). The coefficient table
is canonical: code 0 is 1, code 1 is r - 1, then every other distinct coefficient of the matrix in
ascending order. That makes the arrays a function of the matrix alone (a replicated and a direct
recording compare array for array), and keeps the table tiny: a 32 GiB matrix has a few thousand
distinct coefficients (bit packing's 2^k, Poseidon's constants) where ``coefficient_codes`` would
store one 32-byte row per large coefficient (~100 M rows).

On disk a recording is a directory of ``.npy`` files and a manifest (formats.native's bundle
writer: written chunk by chunk, hashed on the way, renamed into place). Not an ``.npz``: at 32 GiB
the arrays are ~9 GB, which ``np.load(mmap_mode="r")`` maps from ``.npy`` files without reading
them, while an archive member has to be read into memory whole (and written from memory whole).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...field import R_MOD, fr_to_limbs
from ...formats.native import BundleWriter, KeyBundleError, load_arrays, read_manifest
from ...r1cs import CodedCsr, ConstraintSystem
from ..registry import PoRepConfig
from .blocks import BlockLayout, counts_of, layout_from_counts, no_gc
from .compact_cs import AUX_KEY, CompactCS, CompactRows
from .record import CircuitShape, Densities, Recording, densities, shape_of
from .stacked import blank_stacked_circuit, synthesize_stacked, tree_shape

FORMAT = "cuzk-ray filecoin partition recording"
VERSION = 1
MATRICES = ("A", "B", "C")


@dataclass(frozen=True)
class BlockRecording:
    """The compact rows of A, B, C of a blank synthesis of ``recorded`` challenges, and the layout
    the partition is assembled by: its prefix and first block, replicated (later rows unused)."""

    rows: tuple[CompactRows, CompactRows, CompactRows]
    layout: BlockLayout
    name: str
    recorded: int = 1

    def direct(self) -> BlockRecording:
        """The same rows assembled as they are, without replication (the oracle of the tests)."""
        whole = self.layout.with_challenges(self.recorded)
        return BlockRecording(self.rows, whole_layout(whole.num_inputs, whole.num_aux, whole.num_circuit_constraints),
                              self.name, self.recorded)


def synthesize_blocks(shape, layers: int, challenges: int, name: str, recorded: int = 1) -> BlockRecording:
    """Blank syntheses: the prefix counted alone, then the prefix and ``recorded`` challenges (one
    is all the partition needs; tests record more to compare) recorded compactly."""
    if recorded < 1:
        raise ValueError(f"recorded: need at least one challenge to replicate, have {recorded}")
    prefix = counts_of(shape, layers, 0)
    cs = CompactCS()
    with no_gc():
        synthesize_stacked(cs, blank_stacked_circuit(shape, layers, recorded))
    total = (cs.num_inputs, cs.num_aux, cs.num_constraints)
    one = tuple(p + (t - p) // recorded for p, t in zip(prefix, total))  # periodicity: checked by the tests
    return BlockRecording(cs.rows(), layout_from_counts(prefix, one, challenges), name, recorded)


def whole_layout(num_inputs: int, num_aux: int, num_constraints: int) -> BlockLayout:
    """A layout that is all prefix: assembling with it records a synthesis as it is (no replication)."""
    return BlockLayout(num_inputs, num_aux, num_constraints, 0, 0, 0, 0)


def direct_blocks(cs: CompactCS, name: str) -> BlockRecording:
    """Everything ``cs`` recorded, to be assembled as it is."""
    return BlockRecording(cs.rows(), whole_layout(cs.num_inputs, cs.num_aux, cs.num_constraints), name, 0)


def check_periodic(rec: BlockRecording) -> None:
    """Every recorded challenge block is block 0 with its own variables shifted by whole blocks:
    the same row lengths, coefficients and variables (ValueError naming the first difference)."""
    layout = rec.layout
    p, b = layout.prefix_constraints, layout.block_constraints
    for name, rows in zip(MATRICES, rec.rows):
        first = rows.span(p, p + b)
        for j in range(1, rec.recorded):
            other = rows.span(p + j * b, p + (j + 1) * b)
            what = f"{name}: challenge {j}"
            if not np.array_equal(other.lengths, first.lengths):
                row = int(np.flatnonzero(other.lengths != first.lengths)[0])
                raise ValueError(f"{what} row {row} has {other.lengths[row]} terms, challenge 0's has "
                                 f"{first.lengths[row]}")
            shifted = _shift_keys(first.keys, layout, j)
            same = (other.keys == shifted) & (other.ids == first.ids)
            if not same.all():
                e = int(np.flatnonzero(~same)[0])
                row = int(np.searchsorted(first.offsets, e, side="right")) - 1
                raise ValueError(f"{what} row {row} differs from challenge 0's shifted by {j} blocks (term {e})")


def _shift_keys(keys: np.ndarray, layout: BlockLayout, j: int) -> np.ndarray:
    """Block 0's variable keys as block j's: its own inputs and aux moved by j blocks."""
    is_aux = keys >= AUX_KEY
    index = np.where(is_aux, keys - AUX_KEY, keys)
    own = index >= np.where(is_aux, layout.prefix_aux, layout.prefix_inputs)
    return keys + own * j * np.where(is_aux, layout.block_aux, layout.block_inputs)


# --- coefficients -----------------------------------------------------------------------------------


def canonical_values(values) -> list[int]:
    """1, r - 1, then the other distinct values ascending: code k is the k-th."""
    rest = sorted(set(values) - {1, R_MOD - 1})
    return [1, R_MOD - 1, *rest]


def coefficient_table(rows: CompactRows, with_one: bool) -> tuple[np.ndarray, np.ndarray]:
    """(code of each coefficient id, table uint64[k, 4]) of one matrix; ``with_one``: the input
    constraints add coefficient 1."""
    table = canonical_values([*rows.values, *([1] if with_one else [])])
    code = {v: k for k, v in enumerate(table)}
    return np.array([code[v] for v in rows.values], dtype=np.uint32), fr_to_limbs(table)


# --- assembly ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Columns:
    """Where a span's terms go: the column in copy 0 and the step per copy (0 for a prefix variable)."""

    base: np.ndarray  # int64[terms]
    step: np.ndarray  # int64[terms]


def _columns(keys: np.ndarray, layout: BlockLayout, what: str) -> _Columns:
    is_aux = keys >= AUX_KEY
    index = np.where(is_aux, keys - AUX_KEY, keys)
    prefix_n = np.where(is_aux, layout.prefix_aux, layout.prefix_inputs)
    block_n = np.where(is_aux, layout.block_aux, layout.block_inputs)
    beyond = index >= prefix_n + block_n
    if beyond.any():
        e = int(np.flatnonzero(beyond)[0])
        kind = "aux" if is_aux[e] else "input"
        raise ValueError(f"{what}: term {e} uses {kind} {int(index[e])}, past the prefix and first block "
                         f"({int(prefix_n[e] + block_n[e])} {kind}s): the layout does not fit the rows")
    base = index + np.where(is_aux, layout.num_inputs, 0)
    return _Columns(base, np.where(index >= prefix_n, block_n, 0))


def _entries(columns: np.ndarray, codes: np.ndarray) -> np.ndarray:
    out = np.empty((len(columns), 2), dtype=np.uint32)
    out[:, 0] = columns
    out[:, 1] = codes
    return out


def entry_chunks(rows: CompactRows, layout: BlockLayout, codes: np.ndarray, is_a: bool) -> Iterator[np.ndarray]:
    """uint32[n, 2] (column, code) chunks: the prefix, each copy of the block, the input rows."""
    prefix = rows.span(0, layout.prefix_constraints)
    cols = _columns(prefix.keys, layout, "prefix")
    if cols.step.any():
        raise ValueError("prefix: a row uses a variable of the challenge block (the prefix is not first)")
    yield _entries(cols.base, codes[prefix.ids])
    if layout.challenges:
        block = rows.span(layout.prefix_constraints, layout.prefix_constraints + layout.block_constraints)
        cols, block_codes = _columns(block.keys, layout, "block"), codes[block.ids]
        for j in range(layout.challenges):
            yield _entries(cols.base + j * cols.step, block_codes)
    if is_a:  # input_i * 1 = 0 for every input (code 0 is the coefficient 1)
        yield _entries(np.arange(layout.num_inputs), np.zeros(layout.num_inputs, dtype=np.uint32))


def indptr_chunks(rows: CompactRows, layout: BlockLayout, is_a: bool) -> Iterator[np.ndarray]:
    """int64 chunks of the row pointers: 0, the prefix's, each copy's, the input rows'."""
    prefix_lengths = rows.lengths[:layout.prefix_constraints]
    block_lengths = rows.lengths[layout.prefix_constraints:layout.prefix_constraints + layout.block_constraints]
    if len(block_lengths) != layout.block_constraints * bool(layout.challenges):
        raise ValueError(f"block: {len(block_lengths)} rows recorded after the prefix, the layout needs "
                         f"{layout.block_constraints}")
    end = 0
    for lengths in (prefix_lengths, *(block_lengths,) * layout.challenges,
                    np.full(layout.num_inputs, int(is_a), dtype=np.int64)):
        chunk = end + np.cumsum(lengths)
        end = int(chunk[-1]) if len(chunk) else end
        yield chunk


def matrix_parts(rec: BlockRecording) -> Iterator[tuple[str, str, type, tuple, Iterator[np.ndarray]]]:
    """(matrix, part, dtype, shape, chunks) of every array of the three matrices, in write order."""
    layout = rec.layout
    for name, rows in zip(MATRICES, rec.rows):
        is_a = name == "A"
        codes, table = coefficient_table(rows, is_a)
        nnz = _nnz(rows, layout, is_a)
        yield name, "indptr", np.int64, (layout.num_constraints + 1,), _with_zero(indptr_chunks(rows, layout, is_a))
        yield name, "entries", np.uint32, (nnz, 2), entry_chunks(rows, layout, codes, is_a)
        yield name, "table", np.uint64, table.shape, iter((table,))


def _with_zero(chunks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    yield np.zeros(1, dtype=np.int64)
    yield from chunks


def _nnz(rows: CompactRows, layout: BlockLayout, is_a: bool) -> int:
    off = rows.offsets
    p, b = layout.prefix_constraints, layout.block_constraints
    return int(off[p]) + layout.challenges * int(off[p + b] - off[p]) + is_a * layout.num_inputs


class _Marks:
    """Which columns of A and B have an entry (bellperson's densities), seen as entries stream by."""

    def __init__(self, n_wires: int):
        self.in_a, self.in_b = np.zeros(n_wires, dtype=bool), np.zeros(n_wires, dtype=bool)

    def watch(self, matrix: str, chunks: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
        mask = {"A": self.in_a, "B": self.in_b}.get(matrix)
        for chunk in chunks:
            if mask is not None:
                mask[chunk[:, 0]] = True
            yield chunk

    def densities(self, num_inputs: int) -> Densities:
        return Densities(a_aux=self.in_a[num_inputs:], b_input=self.in_b[:num_inputs], b_aux=self.in_b[num_inputs:])


def assemble(rec: BlockRecording) -> Recording:
    """The partition's recording in memory (small sectors, tests)."""
    arrays = {}
    for matrix, part, _, shape, chunks in matrix_parts(rec):
        arrays[f"{matrix}_{part}"] = np.concatenate(list(chunks)).reshape(shape)
    return _recording(arrays, rec.layout, rec.name)


def _recording(arrays: dict, layout: BlockLayout, name: str, d: Densities | None = None) -> Recording:
    n_wires = layout.num_inputs + layout.num_aux
    mats = {m: CodedCsr(arrays[f"{m}_indptr"], arrays[f"{m}_entries"], arrays[f"{m}_table"], n_wires)
            for m in MATRICES}
    cs = ConstraintSystem(n_wires, layout.num_inputs - 1, mats["A"], mats["B"], mats["C"], name)
    d = densities(cs, layout.num_inputs) if d is None else d
    return Recording(cs, d, shape_of(cs, d))


# --- on disk ----------------------------------------------------------------------------------------


def partition_cache_path(cache_dir, circuit: str, sector_size: int) -> Path:
    """The directory of ``circuit``'s recording for ``sector_size`` bytes under ``cache_dir``."""
    if not circuit or any(ch in circuit for ch in "/\\\0"):
        raise ValueError(f"recording cache: circuit name {circuit!r} is not a plain file name")
    return Path(cache_dir) / f"{circuit}-{int(sector_size)}.recording"


def save_blocks(path, rec: BlockRecording) -> Path:
    """Assemble ``rec`` straight into a recording directory (chunk by chunk: the 32 GiB matrices are
    never in memory whole), with its densities, shape and layout; renamed into place when complete."""
    layout = rec.layout
    marks = _Marks(layout.num_inputs + layout.num_aux)
    nnz = {}
    with BundleWriter(path) as w:
        for matrix, part, dtype, shape, chunks in matrix_parts(rec):
            with w.stream(f"{matrix}_{part}", dtype, shape) as out:
                for chunk in marks.watch(matrix, chunks) if part == "entries" else chunks:
                    out.write(chunk)
            if part == "entries":
                nnz[matrix] = shape[0]
        d = marks.densities(layout.num_inputs)
        for field in ("a_aux", "b_input", "b_aux"):
            w.add(field, np.packbits(getattr(d, field)))
        shape = CircuitShape(layout.num_inputs, layout.num_aux, layout.num_constraints, nnz["A"], nnz["B"],
                             nnz["C"], int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum()))
        return w.commit({"name": rec.name, "shape": asdict(shape), "layout": asdict(layout)}, FORMAT, VERSION)


def load_partition_recording(path, verify_hashes: bool = True, check_density: bool = True) -> Recording:
    """A recording saved by ``save_blocks``, memory-mapped. Always checked: the arrays' shapes and
    dtypes, the row pointers' ends and the stored counts; the SHA-256 of every file when
    ``verify_hashes``; the density masks against the matrices when ``check_density`` (at 32 GiB a
    pass over the non-zeros). ValueError naming the file and field otherwise."""
    path = Path(path)
    try:
        manifest = read_manifest(path, FORMAT, (VERSION,))
        arrays = load_arrays(path, manifest, verify_hashes)
        stored, layout = CircuitShape(**manifest["shape"]), BlockLayout(**manifest["layout"])
        name = manifest["name"]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{path / 'manifest.json'}: field {e} is missing or malformed") from None
    except KeyBundleError as e:
        raise ValueError(str(e)) from None
    _check_arrays(path, arrays, stored, layout)
    d = Densities(*(np.unpackbits(arrays[f], count=n).astype(bool) for f, n in
                    (("a_aux", stored.num_aux), ("b_input", stored.num_inputs), ("b_aux", stored.num_aux))))
    rec = _recording(arrays, layout, name, d)
    if check_density:
        _check_columns(path, rec.cs)
        again = densities(rec.cs, stored.num_inputs)
        for field in ("a_aux", "b_input", "b_aux"):
            if not np.array_equal(getattr(d, field), getattr(again, field)):
                raise ValueError(f"{path}: field {field!r} does not match the matrices' density")
    if rec.shape != stored:
        have = asdict(rec.shape)
        key = next(k for k, v in asdict(stored).items() if have[k] != v)
        raise ValueError(f"{path}: shape {key!r} is {getattr(stored, key)} in the manifest, "
                         f"the arrays give {have[key]}")
    return rec


def recorded_layout(path) -> BlockLayout:
    """The block layout a saved recording was assembled by (its manifest only: no synthesis)."""
    try:
        return BlockLayout(**read_manifest(path, FORMAT, (VERSION,))["layout"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"{Path(path) / 'manifest.json'}: field 'layout' is missing or malformed ({e})") from None
    except KeyBundleError as e:
        raise ValueError(str(e)) from None


def _check_arrays(path: Path, arrays: dict, stored: CircuitShape, layout: BlockLayout) -> None:
    """What a reader relies on before touching an entry: present, sized by the counts, in range."""
    want = {"a_aux": (stored.num_aux + 7) // 8, "b_input": (stored.num_inputs + 7) // 8,
            "b_aux": (stored.num_aux + 7) // 8}
    want.update({f"{m}_indptr": stored.num_constraints + 1 for m in MATRICES})
    for field, n in want.items():
        if field not in arrays or len(arrays[field]) != n:
            have = len(arrays[field]) if field in arrays else "none"
            raise ValueError(f"{path}: field {field!r} has {have} elements, need {n}")
    for m in MATRICES:
        ip, nnz = arrays[f"{m}_indptr"], len(arrays[f"{m}_entries"])
        if int(ip[0]) != 0 or int(ip[-1]) != nnz:
            raise ValueError(f"{path}: field '{m}_indptr' runs {int(ip[0])}..{int(ip[-1])}, need 0..{nnz}")
    if (stored.num_inputs, stored.num_aux) != (layout.num_inputs, layout.num_aux):
        raise ValueError(f"{path}: the manifest's shape and layout disagree on the inputs and aux")


def _check_columns(path: Path, cs: ConstraintSystem) -> None:
    for m in MATRICES:
        cols = getattr(cs, m).indices
        if len(cols) and int(cols.max()) >= cs.n_wires:
            e = int(np.argmax(cols >= cs.n_wires))
            raise ValueError(f"{path}: field '{m}_entries' has column {int(cols[e])} at entry {e}, "
                             f"need < {cs.n_wires}")


def cached_partition_recording(cache_dir, config: PoRepConfig, circuit: str = "stacked") -> Recording:
    """The blank partition circuit of ``config`` from ``cache_dir``, or, the first time, recorded from
    its prefix and one challenge (``synthesize_blocks``) and saved."""
    path = partition_cache_path(cache_dir, circuit, config.sector_size)
    if not path.is_dir():
        rec = synthesize_blocks(tree_shape(config), config.shape.layers, config.challenges_per_partition,
                                f"{circuit}-{config.sector_size}")
        save_blocks(path, rec)
    return load_partition_recording(path)
