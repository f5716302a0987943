"""CPU side of the witness -> h API and of the refactored development setup (no GPU needed)."""

import hashlib

import numpy as np
import pytest

from cuzk_ray.backends import cuda_available
from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.circuits.porep import build_circuit, public_inputs, synthesize
from cuzk_ray.field import R_MOD, fr_to_limbs, limbs_to_ints
from cuzk_ray.groth16 import setup
from cuzk_ray.groth16.prover import prove
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.ref import qap
from cuzk_ray.timing import StageTimes


def test_cpu_h_from_witness_equals_evaluate_then_h():
    cs = build_circuit(256, 4)
    w = synthesize(256, 4, seed=9)
    be = CpuBackend()
    times = StageTimes()
    h = be.compute_h_from_witness(cs, w, times)
    a, b, c = qap.evaluations(cs, limbs_to_ints(w))
    assert h.dtype == np.uint64 and h.shape == (256, 4)
    assert np.array_equal(h, be.compute_h(a, b, c))
    assert set(times) == {"abc", "h"}
    assert be.load_cs(cs) is cs
    bad = w.copy()  # negative: another witness gives another h
    bad[10, 0] ^= np.uint64(1)
    assert not np.array_equal(h, be.compute_h_from_witness(cs, bad))


def test_prove_records_abc_and_h_on_cpu_and_checks_sizes():
    cs = build_circuit(64, 1)
    pk = setup.dev_setup(cs, seed=3)
    w = synthesize(64, 1, seed=2)
    times = StageTimes()
    proof = prove(pk, cs, w, 5, 6, CpuBackend(), times)
    assert {"abc", "h", "msm_h"} <= set(times)
    assert verify(pk.vk, public_inputs(w, 1), proof)
    with pytest.raises(ValueError, match="witness has 3 values"):
        prove(pk, cs, w[:3], 5, 6, CpuBackend())
    with pytest.raises(ValueError, match="does not match the key"):
        prove(pk, build_circuit(128, 1), w, 5, 6, CpuBackend())


def _key_digest(pk) -> str:
    pk = pk.to_dense()  # the digests are of dense keys: a key stored by density spread back out
    h = hashlib.sha256()
    for name in ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query", "beta_g1", "delta_g1"):
        h.update(getattr(pk, name).tobytes())
    for name in ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic"):
        h.update(getattr(pk.vk, name).tobytes())
    return h.hexdigest()


# Digests of the keys made by main's dev_setup (commit 2678214, before the scalar side was split
# out) for porep circuits (constraints, public) and seed constraints + 7.
MAIN_DIGESTS = {
    (64, 1): "db7ced1d70750542d8b4a9d00911b37610e96ce1e852ab4269198662c1aed408",
    (256, 4): "d8c4c8f2cf080871e1954bb969a5793e9bb9325d1132892f86f3134594feecba",
    (2048, 3): "9b838f04007a636e76262f952b258c156ff56892b5ef17d7b87795b24a95c050",
}


@pytest.mark.parametrize("constraints,public", list(MAIN_DIGESTS))
def test_dev_setup_key_bytes_unchanged(constraints, public):
    """The dense key is main's, bit for bit; the key by density (the default) is that key with
    its points at infinity dropped, and is not the dense one."""
    cs = build_circuit(constraints, public)
    pk = setup.dev_setup(cs, seed=constraints + 7, density=False)
    assert pk.dense and _key_digest(pk) == MAIN_DIGESTS[(constraints, public)]
    by_density = setup.dev_setup(cs, seed=constraints + 7)
    want = pk.by_density()
    for name in pk.QUERIES + pk.DENSITIES:
        a, b = getattr(by_density, name), getattr(want, name)
        assert (a is None and b is None) or np.array_equal(a, b), name
    # spread back out (to_dense in _key_digest) it is main's key again, yet it stores fewer points
    assert _key_digest(by_density) == MAIN_DIGESTS[(constraints, public)]
    assert not by_density.dense and by_density.nbytes < pk.nbytes
    if constraints == 64:  # negative: another seed, another key
        assert _key_digest(setup.dev_setup(build_circuit(64, 1), seed=1, density=False)) != MAIN_DIGESTS[(64, 1)]


def test_setup_scalars_cpu_formulas():
    cs = build_circuit(128, 2)
    tau, alpha, beta, gamma, delta = 1234567, 11, 13, 17, 19
    sc = setup.setup_scalars_cpu(cs, tau, alpha, beta, gamma, delta)
    assert set(sc) == {"u", "v", "w", "ic", "l", "h"}
    assert all(x.dtype == np.uint64 and x.shape[1] == 4 for x in sc.values())
    u, v, w = (limbs_to_ints(sc[k]) for k in "uvw")
    lc = (beta * u + alpha * v + w) % R_MOD
    assert list(limbs_to_ints(sc["ic"]) * gamma % R_MOD) == list(lc[:3])
    assert list(limbs_to_ints(sc["l"]) * delta % R_MOD) == list(lc[3:])
    n = qap.domain_size(cs.n_constraints, 2)
    assert list(limbs_to_ints(sc["h"]) * delta % R_MOD) == list(qap.h_query_scalars(tau, n))
    # u_i(tau) by definition: sum_j A[j, i] L_j(tau) + L_(m+i)(tau) for the public wires
    lag = qap.lagrange_at(tau, n)
    coeffs = cs.A.coefficients()
    want0 = sum(int(coeffs[e]) * int(lag[j]) for j in range(cs.n_constraints)
                for e in range(cs.A.indptr[j], cs.A.indptr[j + 1]) if cs.A.indices[e] == 0) + lag[cs.n_constraints]
    assert int(u[0]) == want0 % R_MOD and int(u[1]) != want0 % R_MOD


@pytest.mark.skipif(cuda_available(), reason="checks the message shown without a GPU")
def test_dev_setup_cuda_without_gpu_says_so():
    with pytest.raises(RuntimeError, match="CuPy|GPU"):
        setup.dev_setup(build_circuit(64, 1), seed=1, backend="cuda")
    assert setup.dev_setup(build_circuit(64, 1), seed=1, backend="auto").meta["seed"] == 1  # auto: the CPU here


def test_fr_to_limbs_round_trip_for_setup_constants():
    assert list(limbs_to_ints(fr_to_limbs([R_MOD - 1, 0, 1]))) == [R_MOD - 1, 0, 1]


def test_host_bytes_estimate_cuda_holds_the_synthesis_then_only_the_compact_witness_twice():
    from cuzk_ray.circuits import PorepCircuit
    from cuzk_ray.engines.admission import partition_host_bytes

    c = PorepCircuit(constraints=1 << 16)
    cpu, cuda = partition_host_bytes(c, 1 << 16), partition_host_bytes(c, 1 << 16, "cuda")
    synthesis = c.synthesis_bytes()  # the task's heap (tests/test_synthesis_memory.py), on both backends
    assert cuda == synthesis + 2 * c.partition_batch_bytes()  # the compact Arrow batch and its pinned staging copy
    assert cuda - synthesis < c.witness_bytes() / 2  # far below the full witness: most wires are bits
    assert cpu - synthesis > 2 * (cuda - synthesis)  # a, b, c as ints and the witness as ints as well on the CPU path


def test_cpu_backend_without_numba_falls_back_to_the_reference_h(monkeypatch):
    """A machine without numba (the GPU machine here) still proves on the CPU backend: the
    reference H, same values."""
    import sys

    import numpy as np

    from cuzk_ray.backends.cpu import CpuBackend

    rng = np.random.default_rng(1)
    a, b, c = (rng.integers(0, 2**60, size=(16, 4), dtype=np.uint64) for _ in range(3))
    want = CpuBackend(fast_h_min_size=0).compute_h(a, b, c)  # numba path
    monkeypatch.setitem(sys.modules, "cuzk_ray.fast.ntt", None)  # import now raises ImportError
    be = CpuBackend(fast_h_min_size=0)
    be.warm_up()
    assert be.fast_h_min_size == float("inf")
    assert np.array_equal(be.compute_h(a, b, c), want)


@pytest.mark.parametrize("shape,m,public", [("default", 1000, 3), ("filecoin", 1 << 12, 32)])
def test_c_is_a_times_b_on_the_whole_domain_for_a_satisfying_witness(shape, m, public):
    """The premise of cuda.spmv.C_FROM_AB (the GPU computes c = a * b instead of C.w): for a
    satisfying witness a_i b_i = c_i on every row of the domain, the public-input rows above m
    (a = w_s, b = 0, c = 0) and the zero padding included. Negative twin: a witness with one wire
    of C changed satisfies neither the constraints nor c = a * b."""
    cs = build_circuit(m, public, shape=shape)
    w = synthesize(m, public, seed=4, shape=shape)
    cs.check(w)
    a, b, c = qap.evaluations(cs, limbs_to_ints(w))
    assert len(c) > cs.n_constraints  # the rows above m are part of the check
    assert all((int(x) * int(y) - int(z)) % R_MOD == 0 for x, y, z in zip(a, b, c))
    bad = limbs_to_ints(w)
    j = int(cs.C.indices[-1])
    bad[j] = (int(bad[j]) + 1) % R_MOD
    a, b, c = qap.evaluations(cs, bad)
    assert any((int(x) * int(y) - int(z)) % R_MOD for x, y, z in zip(a, b, c))
