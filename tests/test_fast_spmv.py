"""fast/spmv.py: a, b, c by numba's sparse products, bit for bit ref/qap.py's evaluations over
BN254's and BLS12-381's r, for both matrix layouts (CsrMatrix, CodedCsr), with and without a
stored C, on the fixtures' witnesses and on random, unreduced wire values; negatives next to them."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.curves import curve_of_prime
from cuzk_ray.fast import spmv
from cuzk_ray.field import as_fr_limbs, ints_to_limbs, limbs_to_ints
from cuzk_ray.formats.snarkjs import read_r1cs, read_wtns, read_zkey
from cuzk_ray.r1cs import CodedCsr
from cuzk_ray.ref import qap
from cuzk_ray.timing import StageTimes

FIX = Path(__file__).parent / "fixtures" / "circom"
CIRCUITS = ["bn_k10", "pow2"]  # BN254 (bench_snarkjs's circuit at 2^10), BLS12-381


def _systems(name: str):
    """The zkey's system (no C) and the .r1cs's (with C), each also with A, B (and C) coded."""
    pk, zcs = read_zkey(FIX / name / f"{name}.zkey")
    rcs = read_r1cs(FIX / name / f"{name}.r1cs")
    out = []
    for cs in (zcs, rcs):
        out.append(cs)
        coded = {k: CodedCsr.from_csr(getattr(cs, k)) for k in "ABC" if getattr(cs, k) is not None}
        out.append(dataclasses.replace(cs, **coded))
    return pk, out


def _same(fast, ref) -> bool:
    return all(limbs_to_ints(f).tolist() == [int(x) for x in r] for f, r in zip(fast, ref))


@pytest.mark.parametrize("name", CIRCUITS)
def test_evaluations_match_the_reference_bit_for_bit(name):
    pk, systems = _systems(name)
    curve = curve_of_prime(systems[0].modulus)
    w = as_fr_limbs(read_wtns(FIX / name / "witness_1.wtns", pk.n_wires, curve))
    rng = random.Random(31)
    # random wire values, some at or above r (an unreduced input must give the reduced answer)
    vals = [rng.randrange(curve.r) + (curve.r if k % 7 == 0 else 0) for k in range(pk.n_wires)]
    vals[0] = 1
    wild = ints_to_limbs(vals, 4)
    for cs in systems:
        for wit in (w, wild):
            fast = spmv.evaluations(cs, wit)
            ref = qap.evaluations(cs, [v % curve.r for v in limbs_to_ints(wit).tolist()])
            assert all(f.shape == (pk.domain_size, 4) for f in fast)
            assert _same(fast, ref)
        other = w.copy()  # negative twin: a private wire changed changes a, b or c
        other[-1, 0] ^= 1
        assert not _same(spmv.evaluations(cs, other), qap.evaluations(cs, limbs_to_ints(w).tolist()))


def test_a_witness_of_the_wrong_length_is_refused():
    _, systems = _systems("bn_k10")
    w = np.zeros((systems[0].n_wires - 1, 4), dtype=np.uint64)
    with pytest.raises(ValueError, match="wires"):
        spmv.evaluations(systems[0], w)


def test_the_cpu_backend_takes_the_fast_path_from_its_threshold_only(monkeypatch):
    pk, systems = _systems("bn_k10")
    w = as_fr_limbs(read_wtns(FIX / "bn_k10" / "witness_1.wtns", pk.n_wires, curve_of_prime(pk.curve.r)))
    real = CpuBackend(fast_h_min_size=0).compute_h_from_witness(systems[0], w, StageTimes())
    calls = []
    monkeypatch.setattr(spmv, "evaluations", lambda *a: calls.append(1) or qap.evaluations(a[0], limbs_to_ints(a[1])))
    want = CpuBackend(fast_h_min_size=1 << 20).compute_h_from_witness(systems[0], w, StageTimes())
    assert calls == []  # the reference below the threshold
    got = CpuBackend(fast_h_min_size=0).compute_h_from_witness(systems[0], w, StageTimes())
    assert calls == [1] and np.array_equal(np.asarray(got.limbs), np.asarray(want.limbs))
    assert np.array_equal(np.asarray(real.limbs), np.asarray(want.limbs))  # numba's a, b, c and H: the same h
