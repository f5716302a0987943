"""The key's path at scale (issue 13 item 3) on the CPU: constraint matrices in the device layout
(r1cs.CodedCsr, 8 bytes per non-zero) in the bundle, the bundle written array by array and chunk
by chunk (formats.native.BundleWriter, hashed as written), and the dev setup streamed into it
(groth16.setup.dev_setup_bundle) giving the same key as the in-memory dev_setup."""

import json
import shutil

import numpy as np
import pytest

from cuzk_ray.circuits import porep
from cuzk_ray.formats.native import BundleWriter, KeyBundleError, file_sha256, load_bundle
from cuzk_ray.groth16 import setup
from cuzk_ray.r1cs import CodedCsr, CsrMatrix


def _cs(shape: str):
    return porep.build_circuit(1 << 11, 4 if shape == "default" else 9, 0.05, 0, shape)


def test_coded_csr_equals_csr(rng):
    cs = _cs("default")  # built as CsrMatrix: coded here
    w = np.array([rng.randrange(1 << 64) for _ in range(cs.n_wires)], dtype=object)
    for m in (cs.A, cs.B, cs.C):
        coded = CodedCsr.from_csr(m)
        assert isinstance(m, CsrMatrix) and coded.nbytes < m.nbytes / 3
        assert coded.entries.dtype == np.uint32 and coded.entries.shape == (m.nnz, 2)
        assert np.array_equal(coded.data, m.data) and np.array_equal(coded.indices, m.indices)
        assert list(coded.matvec(w)) == list(m.matvec(w))
        back = coded.to_csr()
        assert np.array_equal(back.data, m.data) and np.array_equal(back.indptr, m.indptr)
    # negative twin: another code changes the product
    coded = CodedCsr.from_csr(cs.A)
    bad = coded.entries.copy()
    bad[0, 1] = 1 - bad[0, 1] if bad[0, 1] in (0, 1) else 0
    assert list(CodedCsr(coded.indptr, bad, coded.table, coded.n_cols).matvec(w)) != list(coded.matvec(w))


def test_filecoin_shape_is_built_coded():
    cs = _cs("filecoin")
    assert all(isinstance(m, CodedCsr) for m in (cs.A, cs.B, cs.C))
    assert cs.A.table.shape[0] <= 257  # 1, -1 and the powers of two: no row per non-zero
    assert cs.nbytes < 9 * (cs.A.nnz + cs.B.nnz + cs.C.nnz) + 3 * 8 * (cs.n_constraints + 1) + 3 * 257 * 32


def test_bundle_writer_streams_and_hashes(tmp_path):
    a = np.arange(1000 * 4, dtype=np.uint64).reshape(1000, 4)
    with BundleWriter(tmp_path / "b") as w:
        with w.stream("a", np.uint64, a.shape) as out:
            for beg in range(0, 1000, 300):
                out.write(a[beg : beg + 300])
        w.add("small", np.array([1, 2, 3], dtype=np.uint32))
        w.commit({"note": "x"})
    m = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert np.array_equal(np.load(tmp_path / "b" / "a.npy"), a)
    for name in ("a", "small"):
        assert m["arrays"][name]["sha256"] == file_sha256(tmp_path / "b" / f"{name}.npy")
    assert [p.name for p in tmp_path.iterdir()] == ["b"]  # the temporary directory is gone


@pytest.mark.parametrize("rows", [999, 1001])
def test_bundle_writer_refuses_a_wrong_row_count_and_leaves_nothing(tmp_path, rows):
    a = np.zeros((rows, 4), dtype=np.uint64)
    with pytest.raises(ValueError, match="rows"):
        with BundleWriter(tmp_path / "b") as w:
            with w.stream("a", np.uint64, (1000, 4)) as out:
                out.write(a)
            w.commit({})
    assert list(tmp_path.iterdir()) == []  # no bundle, no temporary directory


@pytest.mark.parametrize("shape", ["default", "filecoin"])
def test_streamed_setup_equals_in_memory_setup(tmp_path, shape):
    cs = _cs(shape)
    pk = setup.dev_setup(cs, 5)
    sizes = []

    class Recorder(setup.MemorySink):  # records the chunk sizes the setup hands its sink
        def stream(self, name, dtype, shp):
            cm = super().stream(name, dtype, shp)

            class Wrap:
                def __enter__(self_inner):
                    filler = cm.__enter__()
                    orig = filler.write
                    filler.write = lambda c: (sizes.append(len(c)), orig(c))[1]
                    return filler

                def __exit__(self_inner, *exc):
                    return cm.__exit__(*exc)
            return Wrap()

    sink = Recorder()
    setup.generate_key(sink, cs, 5, chunk=700)
    assert max(sizes) <= 700 and sum(sizes) > 3 * 700  # many chunks, none larger than asked
    path = setup.dev_setup_bundle(tmp_path / "k", cs, 5, chunk=700)
    got, cs2 = load_bundle(path)  # hashes checked: they were computed while writing
    for q in pk.QUERIES + pk.DENSITIES + ("beta_g1", "delta_g1"):
        a, b = getattr(pk, q), getattr(got, q)
        assert (a is None and b is None) or np.array_equal(a, b), q
        assert (a is None) or np.array_equal(sink.arrays[q], a), q
    assert np.array_equal(got.vk.ic, pk.vk.ic) and np.array_equal(got.vk.delta_g2, pk.vk.delta_g2)
    assert all(isinstance(m, CodedCsr) for m in (cs2.A, cs2.B, cs2.C))
    assert np.array_equal(cs2.B.data, cs.B.data) and np.array_equal(cs2.C.indptr, cs.C.indptr)
    entries = path / "A_entries.npy"
    assert entries.stat().st_size - 128 == cs.A.nnz * 8  # 8 bytes per non-zero (+ the .npy header)


def test_version_1_bundles_still_load(tmp_path):
    """A bundle written before the coded layout (CsrMatrix: indices + 32-byte data) loads as it is."""
    cs = _cs("default")
    path = setup.dev_setup_bundle(tmp_path / "k", cs, 2)
    pk2, _ = load_bundle(path)
    m = json.loads((path / "manifest.json").read_text())
    for name in ("A", "B", "C"):
        mat = getattr(cs, name)
        for suffix, arr in (("indices", mat.indices), ("data", mat.data)):
            np.save(path / f"{name}_{suffix}.npy", arr)
            m["arrays"][f"{name}_{suffix}"] = {"file": f"{name}_{suffix}.npy", "dtype": str(arr.dtype),
                                               "shape": list(arr.shape),
                                               "sha256": file_sha256(path / f"{name}_{suffix}.npy")}
        for suffix in ("entries", "table"):
            del m["arrays"][f"{name}_{suffix}"]
            (path / f"{name}_{suffix}.npy").unlink()
    m["version"] = 1
    (path / "manifest.json").write_text(json.dumps(m))
    pk, cs1 = load_bundle(path)
    assert isinstance(cs1.A, CsrMatrix) and np.array_equal(cs1.A.data, cs.A.data)
    assert np.array_equal(pk.h_query, pk2.h_query)
    m["version"] = 3  # negative twin: a version this code does not know
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(KeyBundleError, match="version 3"):
        load_bundle(path)
    shutil.rmtree(path)


def test_an_older_dev_key_is_made_again(tmp_path):
    """A cached dev key of bundle version 1 (dense, CSR) is not taken as cached: the keystore
    makes it again in the current layout (and the cached one is used as it is)."""
    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.keystore import dev_key_cached, dev_key_path, ensure_dev_key

    c = PorepCircuit(constraints=1 << 10, public=5, shape="filecoin")
    pk, cs, path, created = ensure_dev_key(c, tmp_path, 0, "cpu")
    assert created and dev_key_cached(c, tmp_path) and path == dev_key_path(c, tmp_path)
    assert ensure_dev_key(c, tmp_path, 0, "cpu")[3] is False  # cached: not made again
    m = json.loads((path / "manifest.json").read_text())
    m["version"] = 1
    (path / "manifest.json").write_text(json.dumps(m))
    assert not dev_key_cached(c, tmp_path)
    pk2, _, _, created = ensure_dev_key(c, tmp_path, 0, "cpu")
    assert created and dev_key_cached(c, tmp_path) and np.array_equal(pk2.h_query, pk.h_query)


def test_release_mapped_pages_drops_resident_pages_and_keeps_the_values(tmp_path):
    """What a GPU actor does once a query is in VRAM: its mapped pages leave the process (RSS),
    the values stay readable from the file; an array in anonymous memory is left alone."""
    from cuzk_ray.formats.native import release_mapped_pages

    def rss_kib() -> int:
        return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0])

    a = np.arange(1 << 22, dtype=np.uint64)  # 32 MiB
    np.save(tmp_path / "a.npy", a)
    m = np.load(tmp_path / "a.npy", mmap_mode="r")
    total = int(m.sum())  # every page touched: resident
    before = rss_kib()
    assert release_mapped_pages(m)
    assert before - rss_kib() > 24 * 1024  # most of the 32 MiB left the process
    assert int(m.sum()) == total  # and reads back from the file
    assert not release_mapped_pages(a)  # anonymous memory: not touched
    assert int(a.sum()) == total
