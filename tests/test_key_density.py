"""Proving keys stored by density (groth16.keys: a_wires / b_wires, issue 13 item 2): the density
key proves and verifies (built-in circuits of both shapes, snarkjs zkeys, checked by snarkjs too),
a wrong index is refused or gives a proof that does not verify, bundles keep the indices, and the
preflight's KeyShape counts the built key's points and bytes exactly. CPU only, except the last
test (marked gpu: the CUDA gather and MSMs against the CPU's)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest
from conftest import snarkjs_verify
from py_arkworks_bls12381 import G1Point

from cuzk_ray.backends import cuda_available
from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.circuits.porep import public_inputs, synthesize
from cuzk_ray.curve import g1_array, g1_points
from cuzk_ray.field import R_MOD, FrVector, fr_to_limbs, limbs_to_ints
from cuzk_ray.formats.native import KeyBundleError, load_bundle, save_bundle
from cuzk_ray.formats.snarkjs import read_wtns, read_zkey
from cuzk_ray.formats.snarkjs_json import proof_json, public_json, verification_key_json, write_json_atomic
from cuzk_ray.groth16 import prover
from cuzk_ray.groth16.keys import WIRE_INDEX_DTYPE, Proof, present_points
from cuzk_ray.groth16.prover import prove
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.preflight import KeyShape
from cuzk_ray.timing import StageTimes

FIX = Path(__file__).parent / "fixtures" / "circom"
# (shape, constraints, public): small circuits of both shapes
CIRCUITS = [("default", 256, 4), ("default", 1024, 3), ("filecoin", 1024, 3), ("filecoin", 2048, 9)]
_BUILT: dict = {}


@pytest.fixture(scope="module")
def backend():
    return CpuBackend(threads=2)


def built(shape: str, constraints: int, public: int, circuit_seed: int = 0):
    """(circuit, cs, density key) made once per module."""
    k = (shape, constraints, public, circuit_seed)
    if k not in _BUILT:
        circ = PorepCircuit(constraints=constraints, public=public, shape=shape, circuit_seed=circuit_seed)
        cs = circ.build()
        _BUILT[k] = (circ, cs, dev_setup(cs, seed=constraints + 1))
    return _BUILT[k]


def witness(circ: PorepCircuit, seed: int = 1) -> np.ndarray:
    return synthesize(circ.constraints, circ.public, seed=seed, circuit_seed=circ.circuit_seed, shape=circ.shape)


def tampered(proof: Proof) -> Proof:
    a = g1_points(proof.a)[0] + G1Point()  # A + G: still on the curve, wrong proof
    return Proof(a=g1_array([a]), b=proof.b, c=proof.c)


def points(pk, wires: str) -> int:
    idx = getattr(pk, wires)
    return pk.n_wires if idx is None else len(idx)


# ---------------------------------------------------------------------------------------------
# The density key of the dev setup proves and verifies


@pytest.mark.parametrize("shape,constraints,public", CIRCUITS)
def test_density_key_proves_and_verifies(backend, shape, constraints, public):
    circ, cs, pk = built(shape, constraints, public)
    assert pk.b_wires is not None and pk.b_wires.dtype == WIRE_INDEX_DTYPE and len(pk.b_wires) < pk.n_wires
    assert pk.n_wires == cs.n_wires and len(pk.b_g1_query) == len(pk.b_g2_query) == len(pk.b_wires)
    assert all(present_points(q).all() for q in (pk.a_query, pk.b_g1_query, pk.b_g2_query))  # no infinity kept
    if shape == "default":
        assert pk.a_wires is not None and len(pk.a_wires) < pk.n_wires
    else:  # the filecoin shape's A touches every wire: no index, no gather
        assert pk.a_wires is None and len(pk.a_query) == pk.n_wires
    w = witness(circ)
    pub = public_inputs(w, public)
    proof = prove(pk, cs, w, 11, 22, backend)
    assert verify(pk.vk, pub, proof)
    # negatives: a tampered proof, a wrong public input
    assert not verify(pk.vk, pub, tampered(proof))
    wrong = list(pub)
    wrong[0] = (wrong[0] + 1) % R_MOD
    assert not verify(pk.vk, wrong, proof)


def test_density_key_split_g2_over_the_gathered_scalars(backend, monkeypatch):
    """The CPU's G2 MSM in two halves (start offsets into the density-stored b_g2_query) gives
    the same proof as one whole G2 MSM; the split threshold lowered so a small key splits."""
    circ, cs, pk = built("default", 1024, 3)
    w = witness(circ, seed=4)
    whole = prove(pk, cs, w, 5, 6, backend)
    monkeypatch.setattr(prover, "G2_SPLIT_MIN", 8)
    times = StageTimes()
    halves = prove(pk, cs, w, 5, 6, backend, times)
    assert "msm_b_g2_hi" in times and "gather" in times
    assert all(np.array_equal(getattr(whole, k), getattr(halves, k)) for k in "abc")
    assert verify(pk.vk, public_inputs(w, 3), halves)
    # negative: each half's scalars paired with the bases one further on (a wrong start): invalid
    real_msm_g2 = backend.msm_g2
    monkeypatch.setattr(backend, "msm_g2", lambda key, q, s, start=None: real_msm_g2(key, q, s[:-1], (start or 0) + 1))
    bad = prove(pk, cs, w, 5, 6, backend)
    assert not verify(pk.vk, public_inputs(w, 3), bad)


def test_split_h_msm_gives_the_same_proof(backend, monkeypatch):
    """The CPU's H MSM in two halves (the second from start = half) gives the same proof as one
    whole H MSM; the split threshold lowered so a small key splits. The GPU runs it whole."""
    circ, cs, pk = built("default", 1024, 3)
    w = witness(circ, seed=7)
    whole = prove(pk, cs, w, 5, 6, backend)
    monkeypatch.setattr(prover, "H_SPLIT_MIN", 8)
    times = StageTimes()
    halves = prove(pk, cs, w, 5, 6, backend, times)
    assert ("msm_h_hi" in times) == backend.split_g2
    assert all(np.array_equal(getattr(whole, k), getattr(halves, k)) for k in "abc")
    assert verify(pk.vk, public_inputs(w, 3), halves)
    if backend.split_g2:  # negative: the second half read from the bases one further on: invalid
        real_msm_g1 = backend.msm_g1
        monkeypatch.setattr(backend, "msm_g1", lambda key, q, s, start=None: real_msm_g1(
            key, q, s[:-1] if start else s, start + 1 if start else start))
        assert not verify(pk.vk, public_inputs(w, 3), prove(pk, cs, w, 5, 6, backend))


@pytest.mark.parametrize("shape,constraints,public", [CIRCUITS[1], CIRCUITS[2]])
def test_by_density_of_a_dense_key_gives_the_same_proofs(backend, shape, constraints, public):
    circ, cs, pk = built(shape, constraints, public)
    dense = pk.to_dense()
    assert dense.dense and len(dense.a_query) == len(dense.b_g2_query) == pk.n_wires
    assert dense.nbytes > pk.nbytes
    w = witness(circ, seed=2)
    p_dense, p_density = prove(dense, cs, w, 7, 8, backend), prove(pk, cs, w, 7, 8, backend)
    assert verify(dense.vk, public_inputs(w, public), p_dense)
    assert all(np.array_equal(getattr(p_dense, k), getattr(p_density, k)) for k in "abc")
    again = dense.by_density()
    for name in ("a_query", "b_g1_query", "b_g2_query"):
        assert np.array_equal(getattr(again, name), getattr(pk, name)), name
    assert (again.a_wires is None) == (pk.a_wires is None) and np.array_equal(again.b_wires, pk.b_wires)
    # negative twin: one b_g1 point changed in the density key: another proof, which does not verify
    b1 = pk.b_g1_query.copy()
    b1[0] = pk.b_g1_query[1]
    other = prove(dataclasses.replace(pk, b_g1_query=b1), cs, w, 7, 8, backend)
    assert not np.array_equal(other.c, p_density.c)
    assert not verify(pk.vk, public_inputs(w, public), other)


def test_by_density_refuses_b_g1_and_b_g2_that_disagree():
    _, _, pk = built("default", 256, 4)
    dense = pk.to_dense()
    wire = int(pk.b_wires[3])
    b1 = dense.b_g1_query.copy()
    b1[wire] = 0  # at infinity in b_g1 only
    msg = rf"b_g1_query and b_g2_query disagree .*\(wire {wire} at infinity in b_g1_query only; 1 wires"
    with pytest.raises(ValueError, match=msg):
        dataclasses.replace(dense, b_g1_query=b1).by_density()
    # twin: at infinity in both, the wire is simply left out of b_wires
    b2 = dense.b_g2_query.copy()
    b2[wire] = 0
    k = dataclasses.replace(dense, b_g1_query=b1, b_g2_query=b2).by_density()
    assert wire not in k.b_wires and len(k.b_wires) == len(pk.b_wires) - 1


# ---------------------------------------------------------------------------------------------
# A wrong density index: refused by validate, or a proof that does not verify


def test_validate_refuses_an_index_that_does_not_match_the_points():
    _, _, pk = built("default", 256, 4)
    pk.validate()
    bw, aw = pk.b_wires, pk.a_wires
    cases = [
        (dict(b_wires=bw[1:]), r"b_g1_query has \d+ points, expected \d+ \(one per wire of b_wires\)"),
        (dict(a_wires=None), r"a_query has \d+ points, expected \d+ \(one per wire\)"),
        (dict(b_wires=bw[::-1].copy()), "b_wires is not sorted and unique"),
        (dict(b_wires=np.concatenate([bw[:1], bw[:-1]])), "b_wires is not sorted and unique"),
        (dict(a_wires=np.concatenate([aw[:-1], np.array([pk.n_wires], WIRE_INDEX_DTYPE)])),
         rf"a_wires holds wire {pk.n_wires}, the key has {pk.n_wires} wires"),
        (dict(b_wires=bw.astype(np.int64)), "b_wires is int64.*expected a 1-d uint32 array"),
    ]
    for change, msg in cases:
        with pytest.raises(ValueError, match=msg):
            dataclasses.replace(pk, **change).validate()


def test_an_index_missing_a_wire_makes_proofs_that_do_not_verify(backend):
    """A wire dropped from b_wires with its points (consistent sizes: validate passes) or replaced
    by a wire outside B: the proof no longer verifies. Twin: the untouched key's proof does."""
    circ, cs, pk = built("default", 256, 4)
    w = witness(circ, seed=3)
    pub = public_inputs(w, 4)
    assert verify(pk.vk, pub, prove(pk, cs, w, 1, 2, backend))
    vals = limbs_to_ints(w[pk.b_wires])
    k = next(i for i in range(1, len(vals)) if vals[i] != 0)  # a B wire whose value counts
    keep = np.ones(len(pk.b_wires), dtype=bool)
    keep[k] = False
    dropped = dataclasses.replace(pk, b_wires=pk.b_wires[keep], b_g1_query=pk.b_g1_query[keep],
                                  b_g2_query=pk.b_g2_query[keep])
    dropped.validate()
    assert not verify(pk.vk, pub, prove(dropped, cs, w, 1, 2, backend))
    # the last B wire (a field input) replaced by the last wire (a packed word, outside B): the
    # index stays sorted and unique, so only the proof can tell
    last = pk.n_wires - 1
    assert last not in pk.b_wires and limbs_to_ints(w[last:])[0] != vals[-1]
    moved = pk.b_wires.copy()
    moved[-1] = last
    assert not verify(pk.vk, pub, prove(dataclasses.replace(pk, b_wires=moved), cs, w, 1, 2, backend))


# ---------------------------------------------------------------------------------------------
# Backend.gather on the CPU


def test_cpu_gather_takes_the_density_wires_and_passes_dense_queries_through(backend):
    _, _, pk = built("default", 256, 4)
    key = backend.load_key(pk)
    w = fr_to_limbs(list(range(pk.n_wires)))
    got = backend.gather(key, "b_wires", FrVector(w))
    assert isinstance(got, FrVector) and limbs_to_ints(got.limbs).tolist() == pk.b_wires.tolist()
    assert limbs_to_ints(backend.gather(key, "a_wires", w)).tolist() == pk.a_wires.tolist()
    dense = backend.load_key(pk.to_dense())
    assert backend.gather(dense, "b_wires", w) is w  # nothing to gather
    with pytest.raises(ValueError, match="'c_wires' is not a density"):
        backend.gather(key, "c_wires", w)
    with pytest.raises(ValueError, match=rf"gather b_wires: 3 scalars, the key has {pk.n_wires} wires"):
        backend.gather(key, "b_wires", w[:3])


# ---------------------------------------------------------------------------------------------
# Bundles keep the indices


def test_bundle_round_trip_with_density_arrays(tmp_path, backend):
    circ, cs, pk = built("default", 256, 4)
    path = save_bundle(tmp_path / "k", pk, cs)
    assert (path / "a_wires.npy").is_file() and (path / "b_wires.npy").is_file()
    pk2, cs2 = load_bundle(path)
    for name in ("a_wires", "b_wires", "a_query", "b_g1_query", "b_g2_query", "l_query", "h_query"):
        assert np.array_equal(getattr(pk2, name), getattr(pk, name)), name
    assert pk2.b_wires.dtype == WIRE_INDEX_DTYPE and pk2.n_wires == pk.n_wires and pk2.nbytes == pk.nbytes
    w = witness(circ, seed=5)
    assert verify(pk2.vk, public_inputs(w, 4), prove(pk2, cs2, w, 3, 4, backend))
    # a dense key (as bundles were before) has no index files and loads dense
    dpath = save_bundle(tmp_path / "dense", pk.to_dense(), cs)
    assert not (dpath / "b_wires.npy").exists() and load_bundle(dpath)[0].dense
    # negatives: a modified index file (written beside and renamed over it: pk2 still maps the
    # old one), and an index dropped from the manifest
    np.save(path / "new.npy", pk.b_wires[1:])
    os.replace(path / "new.npy", path / "b_wires.npy")
    with pytest.raises(KeyBundleError, match="b_wires.npy: SHA-256 does not match"):
        load_bundle(path)
    with pytest.raises(KeyBundleError, match=r"b_g1_query has \d+ points, expected \d+ \(one per wire\)"):
        load_bundle(_without_array(tmp_path, save_bundle(tmp_path / "k2", pk, cs), "b_wires"))


def test_a_mapped_bundle_saved_again_is_hard_linked_not_copied(tmp_path, backend):
    """BundleWriter.add links an array that is a whole .npy file of a directory with a manifest
    (formats.native.mapped_source: how a 32 GiB key bundle shares the recording's matrices), and
    writes every other one: an array in memory, a slice of a mapped one."""
    from cuzk_ray.formats.native import BundleWriter, mapped_source

    circ, cs, pk = built("default", 256, 4)
    first = save_bundle(tmp_path / "first", pk, cs)
    pk1, cs1 = load_bundle(first)
    again = save_bundle(tmp_path / "again", pk1, cs1)
    for name in ("h_query", "a_wires", "A_entries", "B_indptr", "C_table"):
        assert (again / f"{name}.npy").stat().st_ino == (first / f"{name}.npy").stat().st_ino, name
    pk2, cs2 = load_bundle(again)  # every linked file's manifest SHA-256 checked against its bytes
    w = witness(circ, seed=6)
    assert verify(pk2.vk, public_inputs(w, 4), prove(pk2, cs2, w, 3, 4, backend))
    # negatives: what is not a whole mapped file of such a directory is written, a file of its own
    assert mapped_source(pk.h_query) is None and mapped_source(pk1.h_query[1:]) is None
    with BundleWriter(tmp_path / "parts") as wr:
        wr.add("h_tail", pk1.h_query[1:])
        wr.add("h_copy", np.array(pk1.h_query))
        out = wr.commit({})
    for name in ("h_tail", "h_copy"):
        assert (out / f"{name}.npy").stat().st_ino != (first / "h_query.npy").stat().st_ino, name
    assert np.array_equal(np.load(out / "h_tail.npy"), pk.h_query[1:])
    # a file whose manifest lists another shape is not taken for the array
    mf = first / "manifest.json"
    manifest = json.loads(mf.read_text())
    manifest["arrays"]["h_query"]["shape"][0] += 1
    mf.write_text(json.dumps(manifest))
    assert mapped_source(pk1.h_query) is None


def _without_array(tmp_path, path, name: str):
    import json

    mf = path / "manifest.json"
    manifest = json.loads(mf.read_text())
    del manifest["arrays"][name]
    mf.write_text(json.dumps(manifest))
    (path / f"{name}.npy").unlink()
    return path


# ---------------------------------------------------------------------------------------------
# KeyShape from the layout = the built key


@pytest.mark.parametrize("shape,constraints,public,circuit_seed",
                         [(s, c, p, 0) for s, c, p in CIRCUITS] + [("default", 1024, 3, 5), ("filecoin", 2048, 9, 4)])
def test_key_shape_counts_the_density_key_exactly(shape, constraints, public, circuit_seed):
    circ, cs, pk = built(shape, constraints, public, circuit_seed)
    ks = circ.key_shape()
    assert (ks.n_wires, ks.n_public, ks.domain) == (pk.n_wires, pk.n_public, pk.domain_size)
    assert (ks.a_points, ks.b_points) == (points(pk, "a_wires"), points(pk, "b_wires"))
    assert ks.key_bytes == pk.nbytes
    assert ks.index_bytes == sum(x.nbytes for x in (pk.a_wires, pk.b_wires) if x is not None)
    # negative twin: the dense shape of the same circuit is the dense key's size, not this one's
    dense = KeyShape(ks.n_wires, ks.n_public, ks.domain, ks.nnz_a, ks.nnz_b, ks.nnz_c)
    assert dense.key_bytes == pk.to_dense().nbytes != pk.nbytes


def test_key_shape_of_porep32g_is_filecoin_sized():
    """circuit=porep32g (filecoin shape, 2^27, 327 public): from the layout alone; Filecoin's
    parameter file is 44.1 GiB (its h has 2^27 - 1 points and its A skips 0.3 % of the wires)."""
    ks = PorepCircuit(constraints=1 << 27, public=327, shape="filecoin").key_shape()
    assert ks.a_points == ks.n_wires and ks.b_points == 33_063_154
    assert 44.0 * 2**30 < ks.key_bytes < 44.5 * 2**30
    assert KeyShape(ks.n_wires, 327, 1 << 27, 1, 1, 1).key_bytes > 70 * 2**30  # dense: not this


# ---------------------------------------------------------------------------------------------
# A snarkjs zkey read by density: our proof passes snarkjs groth16 verify


@pytest.mark.parametrize("circuit", ["linear", "pow2"])
def test_zkey_density_key_proof_verified_by_snarkjs(tmp_path, backend, snarkjs, circuit):
    pk, cs = read_zkey(FIX / circuit / f"{circuit}.zkey")
    assert pk.b_wires is not None and len(pk.b_wires) < pk.n_wires  # the fixture's B skips wires
    w = read_wtns(FIX / circuit / "witness_1.wtns", pk.n_wires)
    pub = limbs_to_ints(np.asarray(w.limbs)[1 : pk.n_public + 1]).tolist()
    proof = prove(pk, cs, w, 1234, 5678, backend)
    dense_proof = prove(pk.to_dense(), cs, w, 1234, 5678, backend)
    assert all(np.array_equal(getattr(proof, k), getattr(dense_proof, k)) for k in "abc")
    write_json_atomic(tmp_path / "vk.json", verification_key_json(pk.vk))
    write_json_atomic(tmp_path / "public.json", public_json(pub))
    write_json_atomic(tmp_path / "proof.json", proof_json(proof))
    write_json_atomic(tmp_path / "bad.json", proof_json(tampered(proof)))
    wrong = list(pub)
    wrong[0] = (wrong[0] + 1) % R_MOD
    write_json_atomic(tmp_path / "wrong.json", public_json(wrong))
    assert snarkjs_verify(snarkjs, tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "proof.json")
    assert not snarkjs_verify(snarkjs, tmp_path / "vk.json", tmp_path / "public.json", tmp_path / "bad.json")
    assert not snarkjs_verify(snarkjs, tmp_path / "vk.json", tmp_path / "wrong.json", tmp_path / "proof.json")


# ---------------------------------------------------------------------------------------------
# GPU: the CUDA gather and MSMs over a density key equal the CPU's


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="needs CuPy and a CUDA GPU")
@pytest.mark.parametrize("shape,constraints,public", [("default", 1024, 3), ("filecoin", 2048, 9)])
def test_cuda_density_gather_and_msms_equal_cpu(backend, shape, constraints, public):
    import cupy as cp

    from cuzk_ray.backends.cuda import CudaBackend

    circ, cs, pk = built(shape, constraints, public)
    gpu = CudaBackend()
    w = witness(circ, seed=6)
    gkey, ckey = gpu.load_key(pk), backend.load_key(pk)
    staged = gpu.stage(FrVector(w))
    for wires, queries in (("a_wires", ("a_query",)), ("b_wires", ("b_g1_query", "b_g2_query"))):
        got = gpu.gather(gkey, wires, staged)
        want = backend.gather(ckey, wires, FrVector(w))
        assert isinstance(got, FrVector) and got.on_device
        assert np.array_equal(cp.asnumpy(got.limbs), np.asarray(want.limbs)), wires
        raw = gpu.gather(gkey, wires, cp.asarray(w))  # a raw device array: gathered, not trusted
        assert not isinstance(raw, FrVector) and np.array_equal(cp.asnumpy(raw), np.asarray(want.limbs))
        for q in queries:
            msm = gpu.msm_g2 if q == "b_g2_query" else gpu.msm_g1
            cmsm = backend.msm_g2 if q == "b_g2_query" else backend.msm_g1
            assert msm(gkey, q, got) == cmsm(ckey, q, want), q
    # negative: the ungathered witness does not fit the density-stored b query
    with pytest.raises(ValueError, match="bases but"):
        gpu.msm_g1(gkey, "b_g1_query", staged)
    p_gpu, p_cpu = prove(pk, cs, w, 9, 10, gpu), prove(pk, cs, w, 9, 10, backend)
    assert all(np.array_equal(getattr(p_gpu, k), getattr(p_cpu, k)) for k in "abc")
    assert verify(pk.vk, public_inputs(w, public), p_gpu)
    assert not verify(pk.vk, public_inputs(w, public), tampered(p_gpu))
