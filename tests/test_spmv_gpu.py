"""a, b, c by sparse mat-vec on the GPU (kernels/spmv.cu), h from the witness, and the setup
scalars on the GPU, against the CPU code, bit for bit. Run on a GPU machine:
``pytest -m gpu tests/test_spmv_gpu.py``; skipped elsewhere."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
from gpu import require_gpu

cp = require_gpu()

from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize  # noqa: E402
from cuzk_ray.cuda import ntt as cuda  # noqa: E402
from cuzk_ray.cuda import spmv as cuda_spmv  # noqa: E402
from cuzk_ray.cuda.setup import setup_scalars  # noqa: E402
from cuzk_ray.field import R_MOD, fr_to_limbs, limbs_to_ints  # noqa: E402
from cuzk_ray.groth16 import setup  # noqa: E402
from cuzk_ray.r1cs import CsrMatrix, UnsatisfiedConstraint  # noqa: E402
from cuzk_ray.ref import qap  # noqa: E402

pytestmark = pytest.mark.gpu
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
FIX = Path(__file__).parent / "fixtures" / "circom"


@pytest.fixture(scope="module")
def backend():
    from cuzk_ray.backends.cuda import CudaBackend

    return CudaBackend()


def random_matrix(rng, n_rows, n_cols, nnz, empty_share=0.3):
    """Random rows (about empty_share of them empty), duplicate columns within rows, coefficients
    0, 1, -1, small +-, 2^31 edges and uniform."""
    live = [j for j in range(n_rows) if rng.random() >= empty_share] or ([0] if n_rows else [])
    rows = [rng.choice(live) for _ in range(nnz)] if n_rows else []
    cols = [rng.randrange(n_cols) for _ in rows]
    pick = [lambda: 0, lambda: 1, lambda: -1, lambda: rng.choice([2, 4, 1 << 30, -7]),
            lambda: rng.choice([1 << 32, -(1 << 32), (1 << 32) - 1, -(1 << 31) - 1, 1 << 33]),
            lambda: rng.randrange(R_MOD)]
    vals = [rng.choice(pick)() % R_MOD for _ in rows]
    return CsrMatrix.from_coo(rows, cols, vals, n_rows, n_cols)


@pytest.mark.parametrize("n_rows,n_cols,nnz", [(1, 1, 1), (0, 5, 0), (100, 40, 0), (37, 50, 300),
                                               (1000, 300, 5000), (5, 3, 60), (3000, 2000, 1)])
@pytest.mark.parametrize("fast", [True, False])
def test_spmv_matches_matvec(n_rows, n_cols, nnz, fast):
    rng = random.Random(SEED + n_rows * 7 + nnz)
    m = random_matrix(rng, n_rows, n_cols, nnz)
    xs = [rng.randrange(R_MOD) for _ in range(n_cols)]
    xs[: min(3, n_cols)] = [0, R_MOD - 1, 1][: min(3, n_cols)]
    x = np.array(xs, dtype=object)
    dm = cuda_spmv.DeviceCsr.upload(m)
    copy = min(4, n_cols)
    n = n_rows + copy + 5
    out = cp.full((n, 4), 7, dtype=cp.uint64)  # garbage: every row must be written
    dm.matvec_into(out, cp.asarray(fr_to_limbs(xs)), copy_rows=copy, fast=fast)
    got = list(limbs_to_ints(cp.asnumpy(out)))
    assert got[:n_rows] == list(m.matvec(x)), f"spmv {n_rows}x{n_cols} nnz={nnz} fast={fast}, seed {SEED}"
    assert got[n_rows:] == xs[:copy] + [0] * 5
    if nnz > 1:  # negative: another vector gives another product
        x2 = list(xs)
        x2[int(m.indices[0])] = (x2[int(m.indices[0])] + 1) % R_MOD
        out2 = cp.zeros((n, 4), dtype=cp.uint64)
        dm.matvec_into(out2, cp.asarray(fr_to_limbs(x2)), copy_rows=copy, fast=fast)
        if int(m.coefficients()[0]) != 0:
            assert not cp.array_equal(out, out2)


@pytest.mark.parametrize("long_row", [None, 0, 16])
@pytest.mark.parametrize("fast", [True, False])
def test_long_rows_summed_by_a_warp_match_matvec(long_row, fast, monkeypatch):
    """Rows of 0-2000 terms, those above long_row summed a warp each (spmv_csr_long), the rest a
    thread each, bit for bit the CPU matvec; None: every row a thread (the kernel as it was)."""
    monkeypatch.setattr(cuda_spmv, "LONG_ROW", long_row)
    monkeypatch.setattr(cuda_spmv, "LONG_ROWS_CHUNK", 1000)  # the listing across chunk edges
    rng = random.Random(SEED + 2000 + (long_row or 0))
    lengths = [rng.choice([0, 1, 2, 3, 16, 17, 31, 32, 33, 64, 65, 255, 929, 2000]) for _ in range(3000)]
    rows, cols, vals = [], [], []
    pick = [lambda: 1, lambda: R_MOD - 1, lambda: 1 << rng.randrange(255), lambda: rng.randrange(R_MOD)]
    for i, k in enumerate(lengths):
        rows += [i] * k
        cols += [rng.randrange(700) for _ in range(k)]
        vals += [rng.choice(pick)() for _ in range(k)]
    m = CsrMatrix.from_coo(rows, cols, vals, len(lengths), 700)
    xs = [rng.randrange(R_MOD) for _ in range(700)]
    dm = cuda_spmv.DeviceCsr.upload(m)
    want_long = [] if long_row is None else [i for i, k in enumerate(lengths) if k > long_row]
    assert cp.asnumpy(dm.long_rows).tolist() == want_long
    out = cp.full((len(lengths) + 3, 4), 7, dtype=cp.uint64)  # garbage: every row must be written
    dm.matvec_into(out, cp.asarray(fr_to_limbs(xs)), copy_rows=2, fast=fast)
    got = list(limbs_to_ints(cp.asnumpy(out)))
    assert got == list(m.matvec(np.array(xs, dtype=object))) + xs[:2] + [0], f"seed {SEED}"
    x2 = list(xs)  # negative: a changed input changes a long row's sum
    x2[int(m.indices[m.indptr[lengths.index(2000)]])] += 1
    out2 = cp.zeros_like(out)
    dm.matvec_into(out2, cp.asarray(fr_to_limbs([v % R_MOD for v in x2])), copy_rows=2, fast=fast)
    assert not cp.array_equal(out, out2)


def test_spmv_rejects_short_buffers():
    m = random_matrix(random.Random(1), 10, 10, 20)
    dm = cuda_spmv.DeviceCsr.upload(m)
    with pytest.raises(ValueError, match="too short"):
        dm.matvec_into(cp.zeros((9, 4), dtype=cp.uint64), cp.zeros((10, 4), dtype=cp.uint64))
    with pytest.raises(ValueError, match="not a reduced"):
        bad = CsrMatrix(m.indptr, m.indices, m.data.copy(), 10)
        bad.data[0] = fr_to_limbs([R_MOD - 1])[0]
        bad.data[0, 3] += np.uint64(1)
        cuda_spmv.DeviceCsr.upload(bad)


def _cpu_abc(cs, w):
    return [fr_to_limbs(x) for x in qap.evaluations(cs, limbs_to_ints(w))]


def _fixture(circuit: str, k: int, with_c: bool):
    from cuzk_ray.formats.snarkjs import read_r1cs, read_wtns, read_zkey

    d = FIX / circuit
    pk, zcs = read_zkey(d / f"{circuit}.zkey")
    cs = read_r1cs(d / f"{circuit}.r1cs") if with_c else zcs
    return pk, cs, read_wtns(d / f"witness_{k}.wtns", pk.n_wires)


CIRCUITS = [("porep", 64, 1), ("porep", 1000, 3), ("porep", 4096, 4), ("porep", 1 << 16, 7),
            ("linear", 1, True), ("linear", 2, False), ("pow2", 1, True), ("pow2", 2, False)]


def _circuit(kind, a, b):
    if kind == "porep":
        return None, build_circuit(a, b), synthesize(a, b, seed=SEED % 1000)
    return _fixture(kind, a, b)


@pytest.mark.parametrize("kind,a,b", CIRCUITS)
def test_abc_and_h_from_witness(backend, kind, a, b):
    _, cs, w = _circuit(kind, a, b)
    dcs = backend.load_cs(cs)
    assert backend.load_cs(cs) is dcs  # memoized
    want = _cpu_abc(cs, w)
    abc = cuda_spmv.evaluate_abc(dcs, w)
    for i, name in enumerate("abc"):
        assert np.array_equal(cp.asnumpy(abc[i]), want[i]), f"{name} of {kind} {a} {b}, seed {SEED}"
    h = backend.compute_h_from_witness(cs, w)
    assert isinstance(h.limbs, cp.ndarray) and h.shape == (dcs.domain, 4)  # an FrVector on the device
    want_h = cuda.compute_h(*want)  # the GPU H already checked against qap.compute_h
    if dcs.domain <= 4096:
        want_ref = fr_to_limbs(qap.compute_h(*[limbs_to_ints(x) for x in want]))
        assert np.array_equal(want_h, want_ref)
    assert np.array_equal(cp.asnumpy(h.limbs), want_h), f"h of {kind} {a} {b}, seed {SEED}"
    # a cupy witness is used in place and gives the same h; a changed witness another h
    wd = cp.asarray(w)
    assert cp.array_equal(backend.compute_h_from_witness(cs, wd).limbs, h.limbs)
    assert cp.array_equal(wd, cp.asarray(w))
    wd[1, 0] ^= cp.uint64(1)
    assert not cp.array_equal(backend.compute_h_from_witness(cs, wd).limbs, h.limbs)


@pytest.mark.parametrize("kind,a,b", [("linear", 2, False), ("pow2", 2, False), ("porep", 1000, 3)])
def test_c_over_r_is_c_divided_by_r_and_gives_the_same_h(backend, kind, a, b):
    """Without C, evaluate_abc(c_over_r=True) leaves c / R (one Montgomery product) and
    compute_h_device(c_over_r=True) folds the R back: the same h as from c itself; the twin: that
    c read as c itself gives another h. C on the device (c_from_ab=False) is refused."""
    _, cs, w = _circuit(kind, a, b)
    dcs = backend.load_cs(cs)
    assert dcs.C is None  # C_FROM_AB: c = a * b whether or not cs stores C
    if cs.C is not None:
        with pytest.raises(ValueError, match="C is on the device"):
            cuda_spmv.evaluate_abc(cuda_spmv.DeviceConstraintSystem(cs, c_from_ab=False), w, c_over_r=True)
    abc = cuda_spmv.evaluate_abc(dcs, w)
    abc_r = cuda_spmv.evaluate_abc(dcs, w, c_over_r=True)
    assert cp.array_equal(abc_r[:2], abc[:2])
    c, c_r = limbs_to_ints(cp.asnumpy(abc[2])), limbs_to_ints(cp.asnumpy(abc_r[2]))
    r_inv = pow(2**256, -1, R_MOD)
    assert [int(x) for x in c_r] == [int(x) * r_inv % R_MOD for x in c]
    want = cuda.compute_h_device(abc.copy())
    assert cp.array_equal(cuda.compute_h_device(abc_r.copy(), c_over_r=True), want)
    assert not cp.array_equal(cuda.compute_h_device(abc_r.copy()), want)


@pytest.mark.parametrize("kind,a,b", [("porep", 1000, 3), ("linear", 1, True), ("pow2", 1, True)])
def test_c_from_ab_equals_c_times_w_for_a_satisfying_witness(kind, a, b):
    """C_FROM_AB: c = a * b gives the same a, b, c and h as C.w for a witness that satisfies the
    constraints, with C neither uploaded nor counted; the twin: a witness that breaks a
    constraint makes C.w and a * b differ (the two are different computations)."""
    _, cs, w = _circuit(kind, a, b)
    assert cs.C is not None
    with_c = cuda_spmv.DeviceConstraintSystem(cs, c_from_ab=False)
    from_ab = cuda_spmv.DeviceConstraintSystem(cs, c_from_ab=True)
    assert with_c.C is not None and from_ab.C is None and from_ab.nbytes < with_c.nbytes
    assert (cuda_spmv.DeviceConstraintSystem.estimate_bytes(cs, c_from_ab=True)[0]
            < cuda_spmv.DeviceConstraintSystem.estimate_bytes(cs, c_from_ab=False)[0])
    abc_c, abc_ab = cuda_spmv.evaluate_abc(with_c, w), cuda_spmv.evaluate_abc(from_ab, w)
    assert cp.array_equal(abc_c, abc_ab), f"{kind} {a} {b}, seed {SEED}"
    assert cp.array_equal(cuda_spmv.h_from_witness(with_c, w), cuda_spmv.h_from_witness(from_ab, w))
    cs.check(w)
    bad = np.array(getattr(w, "limbs", w), copy=True)
    j = int(cs.C.indices[-1])  # the wire of C's last non-zero, plus 1
    bad[j] = fr_to_limbs([(int(limbs_to_ints(bad[j : j + 1])[0]) + 1) % R_MOD])[0]
    with pytest.raises(UnsatisfiedConstraint):
        cs.check(bad)
    bc, bab = cuda_spmv.evaluate_abc(with_c, bad), cuda_spmv.evaluate_abc(from_ab, bad)
    assert cp.array_equal(bc[:2], bab[:2]) and not cp.array_equal(bc[2], bab[2])


def test_fast_path_equals_multiplication_path(backend):
    cs = build_circuit(4096, 4)
    w = synthesize(4096, 4, seed=1)
    dcs = backend.load_cs(cs)
    assert cp.array_equal(cuda_spmv.evaluate_abc(dcs, w, fast=True), cuda_spmv.evaluate_abc(dcs, w, fast=False))


def test_h_from_witness_rejects_bad_witness(backend):
    cs = build_circuit(64, 1)
    w = synthesize(64, 1, seed=1)
    with pytest.raises(ValueError, match="wires"):
        backend.compute_h_from_witness(cs, w[:-1])
    bad = w.copy()
    bad[5] = np.uint64(2**64 - 1)
    with pytest.raises(ValueError, match="not a reduced"):
        backend.compute_h_from_witness(cs, bad)
    with pytest.raises(TypeError):
        backend.compute_h_from_witness(cs, w.astype(np.int64))


def test_load_cs_memory_error(monkeypatch):
    from cuzk_ray.backends import cuda as gpu_mod

    monkeypatch.setattr(gpu_mod, "VRAM_MARGIN", 1 << 50)
    with pytest.raises(MemoryError, match="constraint matrices of porep-64"):
        gpu_mod.CudaBackend().load_cs(build_circuit(64, 1))


def test_msm_g1_takes_cupy_scalars(backend):
    cs = build_circuit(256, 4)
    pk = setup.dev_setup(cs, seed=4)
    key = backend.load_key(pk)
    h = backend.compute_h_from_witness(cs, synthesize(256, 4, seed=2))
    on_device = backend.msm_g1(key, "h_query", h)
    assert on_device == backend.msm_g1(key, "h_query", cp.asnumpy(h.limbs))
    with pytest.raises(ValueError, match="uint64"):
        backend.msm_g1(key, "h_query", h.limbs.astype(cp.int64))


@pytest.mark.parametrize("constraints,public", [(64, 1), (4096, 4), (1 << 16, 7)])
def test_prove_with_cuda_backend_verifies(backend, constraints, public):
    from cuzk_ray.backends.cpu import CpuBackend
    from cuzk_ray.groth16.prover import prove
    from cuzk_ray.groth16.verifier import verify
    from cuzk_ray.timing import StageTimes

    cs = build_circuit(constraints, public)
    pk = setup.dev_setup(cs, seed=constraints, backend="cuda")
    w = synthesize(constraints, public, seed=5)
    times = StageTimes()
    proof = prove(pk, cs, w, 111, 222, backend, times)
    assert "h" in times and "abc" not in times
    pub = public_inputs(w, public)
    assert verify(pk.vk, pub, proof)
    assert not verify(pk.vk, [(pub[0] + 1) % R_MOD] + pub[1:], proof)
    if constraints <= 4096:  # the CPU reference H is slow beyond (no numba on the GPU machine)
        ref = prove(pk, cs, w, 111, 222, CpuBackend())
        assert all(np.array_equal(getattr(proof, k), getattr(ref, k)) for k in "abc")


@pytest.mark.parametrize("circuit,k", [("linear", 1), ("pow2", 2)])
def test_prove_snarkjs_fixture_with_cuda_backend(backend, circuit, k):
    from cuzk_ray.groth16.prover import prove
    from cuzk_ray.groth16.verifier import verify

    pk, cs, w = _fixture(circuit, k, with_c=False)
    proof = prove(pk, cs, w, 3, 4, backend)
    pub = [int(x) for x in limbs_to_ints(w[1 : 1 + pk.n_public])]
    assert verify(pk.vk, pub, proof)
    assert not verify(pk.vk, [(pub[0] + 1) % R_MOD] + pub[1:], proof)


@pytest.mark.parametrize("constraints,public", [(64, 1), (1000, 3), (4096, 4), (1 << 14, 5)])
def test_setup_scalars_match_cpu(constraints, public):
    rng = random.Random(SEED + constraints)
    cs = build_circuit(constraints, public)
    toxic = [rng.randrange(1, R_MOD) for _ in range(5)]
    got = setup_scalars(cs, *toxic)
    want = setup.setup_scalars_cpu(cs, *toxic)
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == np.uint64 and np.array_equal(got[k], want[k]), f"{k} at {constraints}, seed {SEED}"
    other = setup_scalars(cs, toxic[0] + 1, *toxic[1:])  # negative: another tau
    assert not np.array_equal(other["u"], want["u"]) and not np.array_equal(other["h"], want["h"])


def test_setup_scalars_reject_tau_on_domain():
    from cuzk_ray.field import root_of_unity

    cs = build_circuit(64, 1)
    with pytest.raises(ZeroDivisionError):
        setup_scalars(cs, root_of_unity(128), 1, 2, 3, 4)


def test_dev_setup_cuda_same_key_bytes():
    from test_h_from_witness_cpu import MAIN_DIGESTS, _key_digest

    pk = setup.dev_setup(build_circuit(256, 4), seed=256 + 7, backend="cuda", density=False)
    assert _key_digest(pk) == MAIN_DIGESTS[(256, 4)]
