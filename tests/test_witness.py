"""Compact witnesses (cuzk_ray.witness): exact round trips on random witnesses and edge cases,
the canonical form, partial reads, packing segment by segment, the Arrow layout, the filecoin
shape compacted from its parts, and the checks that refuse a malformed one."""

import numpy as np
import pyarrow as pa
import pytest

from cuzk_ray.field import R_MOD, FrVector, fr_to_limbs
from cuzk_ray.partition import Partition, from_record_batch, to_record_batch
from cuzk_ray.witness import CompactWitness, compact, compact_bytes, pack_bits, read_wires, small_mask

EDGE = [0, 1, 2, R_MOD - 1, 2**64, 2**64 + 1, R_MOD - 2]


def random_witness(rng, n: int, full_share: float) -> np.ndarray:
    """uint64[n, 4]: bits, with a share of full field elements (edge values among them: 0 and 1
    written as full-width limbs are still bits, which compact() must notice)."""
    w = np.zeros((n, 4), dtype=np.uint64)
    w[:, 0] = rng.integers(0, 2, n)
    idx = np.flatnonzero(rng.random(n) < full_share)
    vals = [EDGE[j] if j < len(EDGE) else int(rng.integers(0, 2**63)) * int(rng.integers(0, 2**63)) % R_MOD
            for j in rng.integers(0, 2 * len(EDGE), len(idx))]
    if len(idx):
        w[idx] = fr_to_limbs(vals)
    return w


@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 64, 1000, 4099])
@pytest.mark.parametrize("full_share", [0.0, 0.3, 1.0])
def test_round_trip_is_exact_and_canonical(rng, n, full_share):
    g = np.random.default_rng(rng.seed_value)
    w = random_witness(g, n, full_share)
    c = compact(w)
    assert np.array_equal(c.expand().limbs, w)
    full = np.unpackbits(c.full, count=n, bitorder="little").astype(bool)
    assert np.array_equal(full, ~small_mask(w))  # exactly the wires >= 2 are full
    assert c.n_full == int((~small_mask(w)).sum()) and c.nbytes == compact_bytes(n, c.n_full)
    assert np.array_equal(c.values, w[full])
    assert compact(c.expand()) == c  # canonical: compact(expand(c)) is c
    a, b = n // 3, n - n // 4
    assert np.array_equal(c.wires(a, b), w[a:b]) and np.array_equal(c.wires(0, n), w)
    assert np.array_equal(read_wires(c, a, b), read_wires(FrVector(w), a, b))
    # the negative twin: another value in one wire is another compact witness, and expands to it
    w2 = w.copy()
    w2[n // 2] = (1, 0, 0, 0) if not w2[n // 2].any() else (0, 0, 0, 0)
    c2 = compact(w2)
    assert c2 != c and not np.array_equal(c2.expand().limbs, w)


def test_edge_cases_all_bits_no_bits_one_wire():
    ones = np.zeros((9, 4), dtype=np.uint64)
    ones[:, 0] = 1
    c = compact(ones)
    assert c.n_full == 0 and c.values.shape == (0, 4) and c.nbytes == 4
    assert np.array_equal(c.expand().limbs, ones)
    big = fr_to_limbs([R_MOD - 1] * 9)
    c = compact(big)
    assert c.n_full == 9 and not c.bits.any() and np.array_equal(c.expand().limbs, big)
    one = compact(fr_to_limbs([2]))
    assert (one.n_wires, one.n_full, list(one.full)) == (1, 1, [1])
    assert list(compact(fr_to_limbs([1])).bits) == [1] and compact(fr_to_limbs([1])).n_full == 0
    assert compact(fr_to_limbs([0])).expand().limbs.tolist() == [[0, 0, 0, 0]]


def test_compact_checks_raw_limbs_and_the_record_checks_its_arrays():
    bad = fr_to_limbs([3, 5])
    bad[1] = fr_to_limbs([R_MOD])[0]  # r itself is not reduced
    with pytest.raises(ValueError, match="witness: element 1 is not a reduced Fr value"):
        compact(bad)
    c = compact(fr_to_limbs([0, 7, 1, 9, 1]))
    with pytest.raises(ValueError, match=r"CompactWitness.values: need uint64\[2, 4\].*have uint64\[1, 4\]"):
        CompactWitness(5, c.full, c.bits, c.values[:1])
    with pytest.raises(ValueError, match=r"CompactWitness.full: need uint8\[1\]"):
        CompactWitness(5, np.zeros(2, dtype=np.uint8), c.bits, c.values)
    padded = c.bits.copy()
    padded[0] |= 1 << 6  # wire 6 of a 5-wire witness
    with pytest.raises(ValueError, match="CompactWitness.bits: padding bits past wire 4 must be 0"):
        CompactWitness(5, c.full, padded, c.values)
    with pytest.raises(IndexError, match=r"wires\(0, 6\): the witness has 5 wires"):
        c.wires(0, 6)
    assert CompactWitness(5, c.full, c.bits, c.values) == c  # the same arrays pass


def test_pack_bits_packs_unaligned_segments_as_packbits_of_the_whole(rng):
    g = np.random.default_rng(rng.seed_value)
    n = 1000
    segments, whole, o = [], np.zeros(n, dtype=np.uint8), 0
    while o < n:
        o = min(n, o + int(g.integers(0, 13)))  # gaps of unset bits, odd offsets
        length = min(n - o, int(g.integers(0, 40)))
        v = g.integers(0, 2, length).astype(np.uint8)
        segments.append((o, v))
        whole[o : o + length] = v
        o += length
    assert np.array_equal(pack_bits(n, segments), np.packbits(whole, bitorder="little"))
    whole[3] ^= 1  # the twin: a different bit is a different bitmap
    assert not np.array_equal(pack_bits(n, segments), np.packbits(whole, bitorder="little"))
    with pytest.raises(ValueError, match=r"pack_bits: segment \[995, 1005\) is outside \[0, 1000\)"):
        pack_bits(n, [(995, np.ones(10, dtype=np.uint8))])


@pytest.mark.parametrize("full_share", [0.0, 0.2])
def test_arrow_round_trip_is_zero_copy_and_survives_ipc(rng, full_share):
    w = random_witness(np.random.default_rng(rng.seed_value), 1001, full_share)
    c = compact(w)
    batch = to_record_batch(Partition("proof-001", 2, "porep-x", c, {"synthesis_node": "n1"}))
    assert batch.num_rows == 1 and batch.schema.names == ["full", "bits", "values"]
    assert batch.schema.field("values").type == pa.large_list(pa.binary(32))
    assert batch.schema.metadata[b"witness_form"] == b"compact"
    back = from_record_batch(batch)
    assert (back.proof_id, back.partition, back.circuit_id, back.extra) == ("proof-001", 2, "porep-x",
                                                                             {"synthesis_node": "n1"})
    assert back.witness == c and back.nbytes == c.nbytes
    for name in ("full", "bits", "values"):
        assert np.shares_memory(getattr(back.witness, name), getattr(c, name)) or not getattr(c, name).size
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as out:  # how it crosses processes (as Ray's store holds it)
        out.write_batch(batch)
    again = from_record_batch(pa.ipc.open_stream(sink.getvalue()).read_next_batch())
    assert again.witness == c and np.array_equal(again.witness.expand().limbs, w)
    assert not again.witness.values.flags.writeable or not c.n_full  # a view of the stream's buffer


def test_arrow_batch_that_lies_is_refused():
    c = compact(fr_to_limbs([1, 5, 0, 9]))
    batch = to_record_batch(Partition("p", 0, "c", c))
    meta = batch.schema.metadata
    with pytest.raises(ValueError, match="partition p:0: metadata says 3 full field elements, the values column has 2"):
        from_record_batch(batch.replace_schema_metadata({**meta, b"n_full": b"3"}))
    with pytest.raises(ValueError, match=r"partition p:0: CompactWitness.full: need uint8\[2\]"):
        from_record_batch(batch.replace_schema_metadata({**meta, b"n_wires": b"9"}))
    with pytest.raises(ValueError, match="witness_form='sparse'"):
        from_record_batch(batch.replace_schema_metadata({**meta, b"witness_form": b"sparse"}))
    assert from_record_batch(batch).witness == c


def test_full_form_batches_still_work():
    w = fr_to_limbs([1, 2, 3])
    batch = to_record_batch(Partition("p", 0, "c", FrVector(w)))
    assert batch.schema.metadata[b"witness_form"] == b"full"
    back = from_record_batch(batch)
    assert isinstance(back.witness, FrVector) and np.array_equal(back.witness.limbs, w)
    old = batch.replace_schema_metadata({k: v for k, v in batch.schema.metadata.items() if k != b"witness_form"})
    assert np.array_equal(from_record_batch(old).witness.limbs, w)  # a batch from before the compact form


def emulate_device_expansion(c: CompactWitness, word_dtype: str = "<u4") -> np.ndarray:
    """What kernels/witness.cu computes, in numpy: wire i is bit i & 31 of word i >> 5 of the
    zero-padded bitmaps read as 32-bit words; a full wire's value is values[rank] with rank =
    incl[w] - popc(word) + popc(word & the bits below i)."""
    from cuzk_ray.cuda.witness import bitmap_words, padded_bitmap

    n = c.n_wires
    full = padded_bitmap(c.full, n).view(word_dtype).astype(np.uint32)
    bits = padded_bitmap(c.bits, n).view(word_dtype).astype(np.uint32)
    assert len(full) == bitmap_words(n)
    i = np.arange(n)
    w, b = i >> 5, (i & 31).astype(np.uint32)
    fw = full[w]
    is_full = ((fw >> b) & 1).astype(bool)
    incl = np.cumsum(np.bitwise_count(full), dtype=np.uint64)
    rank = incl[w] - np.bitwise_count(fw) + np.bitwise_count(fw & ((np.uint32(1) << b) - np.uint32(1)))
    out = np.zeros((n, 4), dtype=np.uint64)
    out[:, 0] = (bits[w] >> b) & 1
    out[is_full] = c.values[rank[is_full].astype(np.int64)]
    return out


@pytest.mark.parametrize("n", [1, 7, 8, 9, 31, 32, 33, (1 << 10) + 3])
def test_the_device_kernels_word_layout_and_ranks_expand_exactly(rng, n):
    """The CPU twin of the GPU test: the layout and rank formula the kernel relies on (little-endian
    words of np.packbits(bitorder="little")) give the host expansion; big-endian words do not."""
    w = random_witness(np.random.default_rng(rng.seed_value), n, 0.3)
    c = compact(w)
    assert np.array_equal(emulate_device_expansion(c), w)
    big = random_witness(np.random.default_rng(rng.seed_value), 1000, 0.3)
    assert not np.array_equal(emulate_device_expansion(compact(big), ">u4"), big)
