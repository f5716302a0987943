"""The development setup's scalars on the CPU (fast/setup_scalars.py, what generate_key uses)
equal the Python-int reference (groth16.setup.setup_scalars_cpu) bit for bit: both H conventions,
CsrMatrix and CodedCsr matrices, several sizes and public-input counts; tau on the domain is
refused as the reference refuses it. (The real 2 KiB PoRep circuit, 2.69 M constraints, is too slow
through the reference for CI: jobs/bench_setup_scalars.py compares the two there, docs/BENCHMARKS.md.)"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cuzk_ray.circuits.porep import build_circuit
from cuzk_ray.domain import Domain, domain_size
from cuzk_ray.fast.setup_scalars import lagrange_values, setup_scalars_fast
from cuzk_ray.field import R_MOD
from cuzk_ray.groth16 import setup
from cuzk_ray.r1cs import CodedCsr, ConstraintSystem
from cuzk_ray.ref import bellperson_qap, bn254
from cuzk_ray.ref.qap import lagrange_at

TOXIC = (1234567, 11, 13, 17, 19)


def coded(cs: ConstraintSystem) -> ConstraintSystem:
    """cs with its matrices in the 8-byte coded layout (a recorded Filecoin circuit's)."""
    return ConstraintSystem(cs.n_wires, cs.n_public, *(CodedCsr.from_csr(m) for m in (cs.A, cs.B, cs.C)), name=cs.name)


@pytest.mark.parametrize("qap", ["snarkjs", "bellperson"])
@pytest.mark.parametrize("constraints, public", [(64, 1), (66, 7), (127, 3), (1000, 7), (4096, 2)])
def test_equals_the_reference(constraints, public, qap):
    cs = build_circuit(constraints, public)
    want = setup.setup_scalars_cpu(cs, *TOXIC, qap=qap)
    for system in (cs, coded(cs)):
        got = setup_scalars_fast(system, *TOXIC, qap=qap)
        assert set(got) == set(want)
        for k in want:
            assert got[k].dtype == np.uint64 and np.array_equal(got[k], want[k]), k
    other = setup_scalars_fast(cs, TOXIC[0] + 1, *TOXIC[1:], qap=qap)  # negative: another tau
    assert not np.array_equal(other["u"], want["u"]) and not np.array_equal(other["h"], want["h"])


def test_lagrange_values_are_the_references():
    d = Domain.of(64, "snarkjs")
    got = lagrange_values(999, d.omega, 1, 64, (pow(999, 64, R_MOD) - 1) * d.n_inv)
    assert [int.from_bytes(r.tobytes(), "little") for r in got] == [int(x) for x in lagrange_at(999, 64)]


@pytest.mark.parametrize("qap", ["snarkjs", "bellperson"])
def test_tau_on_the_domain_is_refused_like_the_reference(qap):
    cs = build_circuit(64, 1)
    n = domain_size(cs.n_constraints, cs.n_public)
    d = bellperson_qap.bellperson_domain(cs.n_constraints) if qap == "bellperson" else Domain.of(n, "snarkjs")
    tau = pow(d.omega, 5, R_MOD)
    with pytest.raises(ZeroDivisionError):
        setup.setup_scalars_cpu(cs, tau, *TOXIC[1:], qap=qap)
    with pytest.raises(ZeroDivisionError, match="tau is the domain point 5"):
        setup_scalars_fast(cs, tau, *TOXIC[1:], qap=qap)


def test_another_curves_system_is_refused():
    cs = dataclasses.replace(build_circuit(64, 1), modulus=bn254.R)
    with pytest.raises(ValueError, match="BLS12-381's"):
        setup_scalars_fast(cs, *TOXIC)
