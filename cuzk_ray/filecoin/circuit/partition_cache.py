"""A StackedDRG partition's recording AND witness tape from ONE blank synthesis, cached together.

``partition_record.synthesize_blocks`` (the constraint matrices) and ``tape.record_tape`` (how each
variable is computed) each synthesize the blank circuit of the prefix and of one challenge: at
32 GiB a pass is minutes of Python, so making both separately costs twice. Here one constraint
system (``RecordingTapeCS``: compact rows as they are enforced, and a tape attached) is synthesized
for the prefix alone (cheap) and for the prefix and one challenge; the rows become the recording
(partition_record's on-disk format, replicated to every challenge), the tape is folded to the
prefix and one block (tape.py). Both are the same arrays the separate paths make (tested).

On disk, under ``<cache_dir>/partitions``, by sector size:

    stacked-<bytes>.recording/   the matrices (partition_record.save_blocks: hashed .npy files)
    stacked-<bytes>.tape.npz     the witness tape (tape.save_tape)
    stacked-<bytes>.plan/        the tape in replay form (replay.plan), .npy files and plan.json
                                 (their SHA-256 and the tape's): made from the tape when missing
    stacked-<bytes>.json         written last: marks the pair complete, holds the tape's SHA-256

A cache whose manifest is missing is recorded again (a crash half way); a file that does not match
its recorded digest is refused in one line (it is never silently replaced: something altered it).
Synthesis workers need only the plan (``cached_plan``): the 9 GB of matrices stay with the driver.
They map its arrays from disk (copy-on-write; the replay only reads them), so the workers of a
machine share one copy in the page cache: 0.67 GB at 32 GiB. Planning the tape in each worker
instead would hold 1.25 GB per worker (tape and plan) and take ~2 s of its first task.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...formats.native import file_sha256
from ...formats.snarkjs_json import write_bytes_atomic
from ...locks import waiting_lock
from ..registry import PoRepConfig
from .blocks import layout_from_counts, no_gc
from .compact_cs import CompactCS
from .partition_record import BlockRecording, load_partition_recording, save_blocks
from .record import Recording
from .replay import ReplayPlan, plan
from .stacked import blank_stacked_circuit, synthesize_stacked, tree_shape
from .tape import FR_OPS, Counts, TapeLayout, TapeRecorder, WitnessTape, counts, fold, load_tape, save_tape

FORMAT = "cuzk-ray filecoin partition cache"
VERSION = 1
SUBDIR = "partitions"
CIRCUIT = "stacked"
PLAN_FORMAT = "cuzk-ray filecoin replay plan"
PLAN_VERSION = 1
OP_COLUMNS = 10  # ReplayPlan.ops: op ... term count, one row per op; then t_ref, t_flag, t_coeff, one per term
PLAN_FILES = ("op_columns.npy", "term_columns.npy", "slot.npy", "consts_mont.npy")


class RecordingTapeCS(CompactCS):
    """CompactCS (rows kept as arrays) with a witness tape attached: the gadgets report every
    allocation to ``tape`` while ``enforce`` keeps the rows, so one pass yields both."""

    def __init__(self):
        super().__init__()
        self.tape = TapeRecorder(constraints=False)


@dataclass(frozen=True)
class PartitionPaths:
    """The files of one sector size's cache."""

    recording: Path
    tape: Path
    manifest: Path
    plan: Path


@dataclass(frozen=True, eq=False)
class PartitionCache:
    """One sector size's blank partition: the recorded matrices and the witness tape."""

    recording: Recording
    tape: WitnessTape
    paths: PartitionPaths

    @functools.cached_property
    def plan(self) -> ReplayPlan:
        """The tape in replay form (checked once, then kept)."""
        return plan(self.tape)


def cache_paths(cache_dir, config: PoRepConfig) -> PartitionPaths:
    """Where ``config``'s partition cache lives under ``cache_dir``."""
    base = Path(cache_dir).expanduser() / SUBDIR
    stem = f"{CIRCUIT}-{int(config.sector_size)}"
    return PartitionPaths(base / f"{stem}.recording", base / f"{stem}.tape.npz", base / f"{stem}.json",
                          base / f"{stem}.plan")


def synthesize_partition(config: PoRepConfig) -> tuple[BlockRecording, WitnessTape]:
    """The blank partition of ``config`` synthesized once (prefix alone, then prefix + one challenge,
    one constraint system for rows and tape): its block recording and its folded tape."""
    shape, layers = tree_shape(config), config.shape.layers
    head, cs = RecordingTapeCS(), RecordingTapeCS()
    with no_gc():
        synthesize_stacked(head, blank_stacked_circuit(shape, layers, 0))
        synthesize_stacked(cs, blank_stacked_circuit(shape, layers, 1))
    prefix = (head.num_inputs, head.num_aux, head.num_constraints)
    one = (cs.num_inputs, cs.num_aux, cs.num_constraints)
    layout = layout_from_counts(prefix, one, config.challenges_per_partition)
    blocks = BlockRecording(cs.rows(), layout, f"{CIRCUIT}-{config.sector_size}", 1)
    return blocks, fold(cs.tape, counts(head), counts(cs), 1)


def write_partition_cache(paths: PartitionPaths, config: PoRepConfig) -> None:
    """Synthesize and write the pair, then the manifest (the mark of a complete cache). Leftovers
    of an incomplete earlier attempt (no manifest) are removed once the synthesis has succeeded."""
    blocks, tape = synthesize_partition(config)
    shutil.rmtree(paths.recording, ignore_errors=True)
    shutil.rmtree(paths.plan, ignore_errors=True)
    paths.tape.unlink(missing_ok=True)
    paths.manifest.parent.mkdir(parents=True, exist_ok=True)
    save_blocks(paths.recording, blocks)
    del blocks  # the rows: gone before the tape is hashed
    save_tape(paths.tape, tape)
    tape_sha256 = file_sha256(paths.tape)
    save_plan(paths.plan, plan(tape), tape_sha256)
    meta = {"format": FORMAT, "version": VERSION, "sector_size": int(config.sector_size),
            "recording": paths.recording.name, "tape": paths.tape.name, "tape_sha256": tape_sha256}
    write_bytes_atomic(paths.manifest, json.dumps(meta, indent=1).encode())


def read_manifest(paths: PartitionPaths, config: PoRepConfig) -> dict:
    """The cache's manifest, checked (ValueError naming the file and field)."""
    try:
        meta = json.loads(paths.manifest.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{paths.manifest}: not a readable partition cache manifest ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{paths.manifest}: field 'format'/'version' is not {FORMAT!r} version {VERSION}")
    if meta.get("sector_size") != int(config.sector_size):
        raise ValueError(f"{paths.manifest}: field 'sector_size' is {meta.get('sector_size')}, need "
                         f"{config.sector_size}")
    if not isinstance(meta.get("tape_sha256"), str):
        raise ValueError(f"{paths.manifest}: field 'tape_sha256' is missing")
    return meta


def ensure_partition_cache(cache_dir, config: PoRepConfig) -> PartitionPaths:
    """The cache's paths, recorded now when it is not complete on disk."""
    paths = cache_paths(cache_dir, config)
    if not paths.manifest.is_file():
        write_partition_cache(paths, config)
    return paths


def cached_tape(cache_dir, config: PoRepConfig) -> WitnessTape:
    """The witness tape of ``config``'s partition (recorded with the recording the first time), its
    SHA-256 checked against the manifest: what a synthesis worker needs, without the matrices."""
    paths = ensure_partition_cache(cache_dir, config)
    want = read_manifest(paths, config)["tape_sha256"]
    if not paths.tape.is_file():
        raise ValueError(f"{paths.tape}: missing, the manifest {paths.manifest.name} lists it (delete "
                         f"{paths.manifest} to record again)")
    have = file_sha256(paths.tape)
    if have != want:
        raise ValueError(f"{paths.tape}: SHA-256 {have[:16]}..., the manifest says {want[:16]}...: the file was "
                         f"altered or damaged (delete {paths.manifest} to record again)")
    return load_tape(paths.tape)


def save_plan(folder: Path, pl: ReplayPlan, tape_sha256: str) -> None:
    """Write ``pl`` (made from the tape of SHA-256 ``tape_sha256``) as ``folder``: its arrays as .npy
    files, then plan.json (format, layout, field slots, each file's SHA-256, the tape's), all under a
    temporary name renamed at the end, so a reader finds the whole plan or none (an older one at
    ``folder`` is replaced)."""
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    arrays = (np.stack(pl.ops[:OP_COLUMNS]), np.stack(pl.ops[OP_COLUMNS:]), pl.slot, pl.consts_mont)
    for name, arr in zip(PLAN_FILES, arrays):
        np.save(tmp / name, np.ascontiguousarray(arr))
    meta = {"format": PLAN_FORMAT, "version": PLAN_VERSION, "tape_sha256": tape_sha256,
            "prefix": dataclasses.asdict(pl.layout.prefix), "block": dataclasses.asdict(pl.layout.block),
            "p_fr": pl.p_fr, "b_fr": pl.b_fr, "sha256": {name: file_sha256(tmp / name) for name in PLAN_FILES}}
    (tmp / "plan.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    os.rename(tmp, folder)


def plan_meta(folder: Path) -> dict | None:
    """The plan.json of ``folder``, None when there is none (ValueError naming it when it is not one)."""
    path = folder / "plan.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable replay plan ({e}; delete {folder} to make it again)") from None
    if not isinstance(meta, dict) or meta.get("format") != PLAN_FORMAT or meta.get("version") != PLAN_VERSION:
        raise ValueError(f"{path}: field 'format'/'version' is not {PLAN_FORMAT!r} version {PLAN_VERSION} (delete "
                         f"{folder} to make it again)")
    return meta


def load_plan(folder: Path, meta: dict) -> ReplayPlan:
    """The plan saved in ``folder`` (``meta``: its plan_meta), each file's SHA-256 checked, the arrays
    mapped copy-on-write (the replay only reads them: every process on the machine shares the pages)."""
    arrays = []
    for name in PLAN_FILES:
        path, want = folder / name, str(meta.get("sha256", {}).get(name, "absent from plan.json"))
        have = file_sha256(path) if path.is_file() else "missing"
        if have != want:
            raise ValueError(f"{path}: SHA-256 {have[:16]}..., plan.json says {want[:16]}...: the file was altered "
                             f"or damaged (delete {folder} to make it again)")
        arrays.append(np.asarray(np.load(path, mmap_mode="c", allow_pickle=False)))
    op_cols, term_cols, slot, consts = arrays
    layout = TapeLayout(Counts(**meta["prefix"]), Counts(**meta["block"]))
    n_ops = layout.prefix.ops + layout.block.ops
    if op_cols.shape != (OP_COLUMNS, n_ops) or term_cols.shape[0] != 3 or slot.shape != (layout.p + layout.b,):
        raise ValueError(f"{folder}: arrays of shapes {op_cols.shape}, {term_cols.shape}, {slot.shape} for a tape "
                         f"of {n_ops} ops and {layout.p + layout.b} local ids (delete {folder} to make it again)")
    return ReplayPlan(layout, tuple(op_cols) + tuple(term_cols), slot, int(meta["p_fr"]), int(meta["b_fr"]), consts)


def cached_plan(cache_dir, config: PoRepConfig) -> ReplayPlan:
    """``config``'s partition witness tape in replay form, read from the cache (made from the tape
    the first time, by one process while the others wait): what a synthesis worker loads."""
    paths = ensure_partition_cache(cache_dir, config)
    tape_sha256 = read_manifest(paths, config)["tape_sha256"]

    def current() -> dict | None:  # the plan's meta, None when there is none or it is another tape's
        meta = plan_meta(paths.plan)
        return meta if meta is not None and meta.get("tape_sha256") == tape_sha256 else None

    meta = current()
    if meta is None:
        with waiting_lock(paths.plan.with_name(paths.plan.name + ".lock")):
            meta = current()  # made by another process while this one waited?
            if meta is None:
                save_plan(paths.plan, plan(cached_tape(cache_dir, config)), tape_sha256)
                meta = plan_meta(paths.plan)
    return load_plan(paths.plan, meta)


def cached_partition(cache_dir, config: PoRepConfig, verify_hashes: bool = True) -> PartitionCache:
    """Recording and tape of ``config``'s partition: read from ``<cache_dir>/partitions`` (every
    file's digest checked), or, the first time, synthesized once and written there."""
    tape = cached_tape(cache_dir, config)
    paths = cache_paths(cache_dir, config)
    rec = load_partition_recording(paths.recording, verify_hashes=verify_hashes)
    if (rec.shape.num_inputs, rec.shape.num_aux) != tape.layout.partition(config.challenges_per_partition):
        raise ValueError(f"{paths.recording}: {rec.shape.num_inputs} inputs and {rec.shape.num_aux} aux, the tape "
                         f"{paths.tape.name} gives {tape.layout.partition(config.challenges_per_partition)}")
    return PartitionCache(rec, tape, paths)


def field_wires(tape: WitnessTape, blocks: int) -> int:
    """An upper bound of the wires of a ``blocks``-challenge partition's CompactWitness that hold full
    field elements: the variables the tape computes as field elements (the bit ops' outputs are 0
    or 1, which the compact form keeps in its bitmap). At 32 GiB a few % of the 130M wires: what
    admission and Ray's object store are sized by, instead of every wire."""
    op, n = tape.arrays["op"], tape.arrays["n"]
    fr = np.isin(op, FR_OPS) * n
    p = tape.layout.prefix.ops
    return int(fr[:p].sum()) + blocks * int(fr[p:].sum())
