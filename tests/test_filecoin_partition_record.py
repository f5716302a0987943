"""A partition recorded from its prefix and one challenge block (filecoin/circuit/blocks.py,
compact_cs.py, partition_record.py).

The oracle is ``record.record`` (Python rows, the slow reference) on circuits small enough for it,
then, at 2 KiB, the same compact rows assembled as they are (``direct``) against the replication:
every challenge block must be block 0 shifted, and the replicated matrices equal the direct ones
array for array. The blank 2 KiB partition is synthesized once (both challenges, ~20 s); its
counts are the ones tests/test_filecoin_stacked_circuit.py holds for the sealed 2 KiB partition.
The 32 GiB partition against cuzk's published counts is jobs/record_filecoin.py (minutes, ~10 GB).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from test_filecoin_record import tiny

from cuzk_ray.field import R_MOD, fr_to_limbs
from cuzk_ray.filecoin import registry
from cuzk_ray.filecoin.circuit import partition_record
from cuzk_ray.filecoin.circuit.blocks import BlockLayout, layout_from_counts
from cuzk_ray.filecoin.circuit.compact_cs import CompactCS
from cuzk_ray.filecoin.circuit.cs import ConstraintSystem
from cuzk_ray.filecoin.circuit.partition_record import (
    BlockRecording,
    assemble,
    cached_partition_recording,
    check_periodic,
    direct_blocks,
    load_partition_recording,
    partition_cache_path,
    recorded_layout,
    save_blocks,
    synthesize_blocks,
)
from cuzk_ray.filecoin.circuit.record import record
from cuzk_ray.filecoin.circuit.stacked import blank_stacked_circuit, synthesize_stacked, tree_shape

CONFIG_2K = registry.registered_seal_proof("StackedDrg2KiBV1_1").config
LAYOUT_2K = BlockLayout(prefix_inputs=4, prefix_aux=571, prefix_constraints=571, block_inputs=18,
                        block_aux=1_342_551, block_constraints=1_343_675, challenges=2)
PARTS = ("indptr", "entries", "table")


@pytest.fixture(scope="module")
def blocks_2k() -> BlockRecording:
    """The blank 2 KiB partition with both challenges synthesized (the production path records one)."""
    return synthesize_blocks(tree_shape(CONFIG_2K), CONFIG_2K.shape.layers, CONFIG_2K.challenges_per_partition,
                             "stacked-2048", recorded=2)


@pytest.fixture(scope="module")
def replicated_2k(blocks_2k):
    return assemble(blocks_2k)


def same_arrays(a, b) -> bool:
    return all(np.array_equal(getattr(getattr(a.cs, m), p), getattr(getattr(b.cs, m), p))
               for m in "ABC" for p in PARTS)


# --- the layout ------------------------------------------------------------------------------------


def test_layout_of_the_2kib_partition(blocks_2k):
    layout = blocks_2k.layout
    assert layout == LAYOUT_2K
    # the sealed 2 KiB partition's counts (test_filecoin_stacked_circuit.PARTITION_2K)
    assert (layout.num_circuit_constraints, layout.num_aux, layout.num_inputs) == (2_687_921, 2_685_673, 40)
    assert layout.num_constraints == 2_687_961
    assert layout.input_range(1) == range(22, 40) and layout.aux_range(1) == range(1_343_122, 2_685_673)
    assert layout.constraint_range(0) == range(571, 1_344_246)
    with pytest.raises(ValueError, match="challenge 2: the partition has challenges 0..1"):
        layout.aux_range(2)


def test_layout_from_counts_is_the_difference():
    assert layout_from_counts((4, 571, 571), (22, 1_343_122, 1_344_246), 2) == LAYOUT_2K
    assert layout_from_counts((4, 571, 571), (22, 1_343_122, 1_344_247), 2) != LAYOUT_2K


# --- compact rows against the reference recording ---------------------------------------------------


def prefix_2k(cs) -> None:
    """The 2 KiB partition's prefix: inputs, 255 bits packed, Poseidon's constants as coefficients."""
    synthesize_stacked(cs, blank_stacked_circuit(tree_shape(CONFIG_2K), CONFIG_2K.shape.layers, 0))


@pytest.mark.parametrize("synth", [tiny, prefix_2k], ids=["tiny", "prefix-2kib"])
def test_direct_assembly_equals_record(synth):
    compact, reference = CompactCS(), ConstraintSystem()
    synth(compact)
    synth(reference)
    rec, ref = assemble(direct_blocks(compact, "x")), record(reference.finish(), "x")
    assert rec.shape == ref.shape
    for m in "ABC":
        a, b = getattr(rec.cs, m), getattr(ref.cs, m)
        assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        assert np.array_equal(a.data, b.data)  # the canonical table decodes to the same coefficients
        assert np.array_equal(a.table[:2], fr_to_limbs([1, R_MOD - 1]))  # what the kernel adds or subtracts


def test_a_changed_coefficient_is_seen():
    class Doubling(CompactCS):
        def enforce(self, name, a, b, c):
            if self.num_constraints == 100:
                a = a.copy().add(next(iter(a.terms)), 1)
            super().enforce(name, a, b, c)

    good, bad = CompactCS(), Doubling()
    prefix_2k(good)
    prefix_2k(bad)
    a, b = assemble(direct_blocks(good, "x")).cs.A, assemble(direct_blocks(bad, "x")).cs.A
    assert np.array_equal(a.indptr, b.indptr)
    rows = {j for j in range(a.n_rows) if a.row(j) != b.row(j)}
    assert rows == {100}


def test_canonical_table_pins_one_and_minus_one():
    assert partition_record.canonical_values([5, R_MOD - 1, 3, 1, 5]) == [1, R_MOD - 1, 3, 5]


# --- periodicity and replication at 2 KiB ------------------------------------------------------------


def test_every_challenge_block_is_block_0_shifted(blocks_2k):
    check_periodic(blocks_2k)


def test_a_block_that_differs_is_named(blocks_2k):
    a = blocks_2k.rows[0]
    keys = a.keys.copy()
    p, b = LAYOUT_2K.prefix_constraints, LAYOUT_2K.block_constraints
    e = int(a.offsets[p + b + 7])  # the first term of challenge 1's row 7
    keys[e] += 1
    tampered = replace(blocks_2k, rows=(replace(a, keys=keys), *blocks_2k.rows[1:]))
    with pytest.raises(ValueError, match="A: challenge 1 row 7 differs from challenge 0's shifted by 1 blocks"):
        check_periodic(tampered)


def test_replicated_equals_direct_at_2kib(blocks_2k, replicated_2k):
    replicated, direct = replicated_2k, assemble(blocks_2k.direct())
    assert same_arrays(replicated, direct) and replicated.shape == direct.shape
    assert (replicated.shape.num_constraints, replicated.shape.nnz_a, replicated.shape.b_aux_density) == (
        2_687_961, 6_421_005, 685_521)


def test_a_changed_block_0_or_a_wrong_layout_does_not_replicate(blocks_2k):
    a = blocks_2k.rows[0]
    ids = a.ids.copy()
    ids[int(a.offsets[LAYOUT_2K.prefix_constraints + 3])] ^= 1  # a coefficient of challenge 0's row 3
    changed = replace(blocks_2k, rows=(replace(a, ids=ids), *blocks_2k.rows[1:]))
    assert not same_arrays(assemble(changed), assemble(changed.direct()))  # challenge 1 still has the old one
    short = replace(blocks_2k, layout=replace(LAYOUT_2K, block_aux=LAYOUT_2K.block_aux - 1))
    with pytest.raises(ValueError, match="block: term .* uses aux 1343121, past the prefix and first block"):
        assemble(short)


# --- on disk -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved_2k(blocks_2k, tmp_path_factory):
    return save_blocks(partition_cache_path(tmp_path_factory.mktemp("rec"), "stacked", 2048), blocks_2k)


def test_cache_round_trip(replicated_2k, saved_2k, monkeypatch):
    loaded = load_partition_recording(saved_2k)
    assert isinstance(loaded.cs.A.entries, np.memmap)  # mapped, not read
    assert same_arrays(loaded, replicated_2k) and loaded.shape == replicated_2k.shape
    assert not [p for p in saved_2k.parent.iterdir() if p.name.startswith(".")]  # no temporary left
    assert recorded_layout(saved_2k) == LAYOUT_2K
    monkeypatch.setattr(partition_record, "synthesize_blocks", lambda *a: pytest.fail("synthesized again"))
    assert cached_partition_recording(saved_2k.parent, CONFIG_2K).shape == loaded.shape


def test_cache_miss_records_once(blocks_2k, tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(partition_record, "synthesize_blocks", lambda *a: calls.append(a) or blocks_2k)
    first = cached_partition_recording(tmp_path, CONFIG_2K)
    again = cached_partition_recording(tmp_path, CONFIG_2K)
    assert len(calls) == 1 and (tmp_path / "stacked-2048.recording" / "manifest.json").is_file()
    assert same_arrays(first, again)


def copy_of(saved, tmp_path):
    import shutil

    return shutil.copytree(saved, tmp_path / "copy.recording")


def test_corrupted_cache_is_refused_in_one_line(saved_2k, tmp_path):
    bad = copy_of(saved_2k, tmp_path)
    raw = bytearray((bad / "B_entries.npy").read_bytes())
    raw[-5] ^= 0x80  # the last entry's column (its top byte), now past the last wire
    (bad / "B_entries.npy").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"B_entries.npy: SHA-256 does not match the manifest") as e:
        load_partition_recording(bad)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"field 'B_entries' has column \d+ at entry 2689005, need < 2685713"):
        load_partition_recording(bad, verify_hashes=False)


def test_tampered_manifest_is_named(saved_2k, tmp_path):
    bad = copy_of(saved_2k, tmp_path)
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["shape"]["nnz_c"] += 1
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="shape 'nnz_c' is 5824683 in the manifest, the arrays give 5824682"):
        load_partition_recording(bad)
    (bad / "A_table.npy").unlink()
    with pytest.raises(ValueError, match="A_table.npy: missing"):
        load_partition_recording(bad)
    del manifest["layout"]
    (bad / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="field 'layout' is missing"):
        recorded_layout(bad)
    (bad / "manifest.json").write_text("{")
    with pytest.raises(ValueError, match="manifest.json: not valid JSON"):
        load_partition_recording(bad)
