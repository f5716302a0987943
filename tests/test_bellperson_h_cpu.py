"""bellperson's H on the CPU backend (fast/bellperson_qap.py, backends/cpu.py) and the engine's
prover path with a bellperson-convention key (groth16.prover.prove, engines.worker).

Oracle: ref/bellperson_qap.py (FILECOIN.md 2.3), itself checked against the divisibility
A B - C = H Z in tests/test_filecoin_record.py. Bit for bit at several sizes; a tampered input
gives another H. The engine's proof equals ``prove_bellperson``'s (same r, s), verifies, and a
tampered public input does not; a backend without bellperson's H refuses such a key in one line.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cuzk_ray.backends import cuda_backend_class
from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.domain import Domain
from cuzk_ray.engines.worker import PartitionProver
from cuzk_ray.fast import bellperson_qap as fast
from cuzk_ray.field import R_MOD, FrVector, fr_to_limbs
from cuzk_ray.filecoin.circuit.cs import ONE, ConstraintSystem, LinearCombination
from cuzk_ray.filecoin.circuit.record import record, witness_vector
from cuzk_ray.groth16.prover import check_backend_qap, prove, prove_bellperson
from cuzk_ray.groth16.setup import dev_setup
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.partition import Partition
from cuzk_ray.ref import bellperson_qap as ref


def random_vectors(m: int, seed: int):
    rng = random.Random(seed)
    return [np.array([rng.randrange(R_MOD) for _ in range(m)], dtype=object) for _ in range(3)]


@pytest.mark.parametrize("m", [2, 8, 256, 4096])
def test_fast_h_equals_the_reference_bit_for_bit(m):
    d = ref.bellperson_domain(m)
    a, b, c = random_vectors(m, m)
    want = fr_to_limbs(ref.compute_h(a, b, c, d))
    for threads in (1, 2):
        got = fast.compute_h(a, b, c, d, threads=threads)
        assert got.shape == (m - 1, 4) and np.array_equal(got, want), threads
    c[m // 2] = (c[m // 2] + 1) % R_MOD  # negative twin: another c, another H
    assert not np.array_equal(fast.compute_h(a, b, c, d), want)


@pytest.mark.parametrize("m", [1, 2, 4, 8, 64, 512])
def test_h_from_the_product_in_six_transforms_is_bellpersons_when_c_is_ab(m):
    """The reference of the device's six-transform H (cuda.ntt.SIX_TRANSFORM_H): for c = a b on
    the domain it equals compute_h; for another c (a witness that does not satisfy) it does not,
    which is why the device takes it only where it computed c from a and b."""
    d = ref.bellperson_domain(m)
    a, b, _ = random_vectors(m, 7 * m)
    c = a * b % R_MOD
    assert list(ref.compute_h_from_product(a, b, c, d)) == list(ref.compute_h(a, b, c, d))
    if m > 1:
        c[0] = (c[0] + 1) % R_MOD
        assert list(ref.compute_h_from_product(a, b, c, d)) != list(ref.compute_h(a, b, c, d))


def test_fast_h_refuses_a_snarkjs_domain_and_ragged_vectors():
    a, b, c = random_vectors(8, 1)
    with pytest.raises(ValueError, match="need 'native'"):
        fast.compute_h(a, b, c, Domain.of(8, "snarkjs"))
    with pytest.raises(ValueError, match="one length"):
        fast.compute_h(a, b, c[:4], ref.bellperson_domain(8))


def chain(x: int | None, rounds: int = 40):
    """(R1cs, public) of a small circuit: x cubed and added ``rounds`` times, two public inputs."""
    cs = ConstraintSystem()
    lc = lambda *t: LinearCombination(t)  # noqa: E731
    v = x
    var = cs.alloc(v, "x")
    inp = cs.alloc_input(v, "x public")
    cs.enforce("x pub", lc((inp, 1)), lc((ONE, 1)), lc((var, 1)))
    for i in range(rounds):
        sq = None if v is None else v * v % R_MOD
        s = cs.alloc(sq, f"sq{i}")
        cs.enforce(f"sq{i}", lc((var, 1)), lc((var, 1)), lc((s, 1)))
        nv = None if v is None else (sq * v + i) % R_MOD
        n = cs.alloc(nv, f"cube{i}")
        cs.enforce(f"cube{i}", lc((s, 1)), lc((var, 1)), lc((n, 1), (ONE, -i % R_MOD)))
        var, v = n, nv
    out = cs.alloc_input(v, "out")
    cs.enforce("out", lc((out, 1)), lc((ONE, 1)), lc((var, 1)))
    return cs.finish(), [x, v]


@pytest.fixture(scope="module")
def chain_key():
    r1cs, _ = chain(3)
    rec = record(r1cs, "chain")
    return rec.cs, dev_setup(rec.cs, seed=21, qap="bellperson")


@pytest.mark.parametrize("fast_min", [0, None])  # the fast H (numba) and the reference below 2^14
def test_engine_path_equals_prove_bellperson(chain_key, fast_min):
    cs, pk = chain_key
    r1cs, public = chain(5)
    w = witness_vector(r1cs)
    backend = CpuBackend(threads=2, fast_h_min_size=fast_min)
    want = prove_bellperson(pk, cs, w, 7, 9, backend)
    got = prove(pk, cs, w, 7, 9, backend)
    assert all(np.array_equal(getattr(got, f), getattr(want, f)) for f in ("a", "b", "c"))
    assert verify(pk.vk, public, got)
    assert not verify(pk.vk, [public[0], (public[1] + 1) % R_MOD], got)


def test_partition_prover_with_a_bellperson_key(chain_key):
    cs, pk = chain_key
    r1cs, public = chain(11)
    w = FrVector(fr_to_limbs(witness_vector(r1cs)))
    out = PartitionProver("cpu", pk, cs, threads=2).prove(Partition("p", 0, "chain", w), 3, 4)
    assert out.public == public and verify(pk.vk, public, out.proof)
    bad = fr_to_limbs(witness_vector(r1cs))
    bad[5] = fr_to_limbs([12345])[0]  # an aux value tampered: the proof does not verify
    out = PartitionProver("cpu", pk, cs, threads=2).prove(Partition("p", 0, "chain", FrVector(bad)), 3, 4)
    assert not verify(pk.vk, public, out.proof)


def test_a_backend_without_bellperson_h_refuses_the_key_in_one_line(chain_key):
    cs, pk = chain_key
    cuda = object.__new__(cuda_backend_class())  # the class only: no GPU needed to ask what it computes
    check_backend_qap(pk, cuda)  # both backends compute bellperson's H: no error
    check_backend_qap(pk, CpuBackend(threads=1))
    snarkjs_only = CpuBackend(threads=1)
    snarkjs_only.qaps = ("snarkjs",)  # a backend that computes snarkjs's H only
    with pytest.raises(ValueError, match=r"^backend=cpu: this key needs bellperson's H, .*\(snarkjs only\)$"):
        check_backend_qap(pk, snarkjs_only)
    check_backend_qap(dev_setup(cs, seed=22), snarkjs_only)  # and it keeps the snarkjs keys
