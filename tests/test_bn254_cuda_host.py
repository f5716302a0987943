"""The host side of backend=cuda for BN254 keys (issue 31), without a GPU: the pieces that pick
the curve's r, groups, domain and kernels, each with a negative twin that BLS12-381's would get
wrong. The device half is tests/test_bn254_cuda_backend.py (gpu).

  coefficient_codes / csr_layout   -1 and the small negatives of the circuit's r (BN254's r - 1 is
                                    not BLS12-381's), read back by a model of spmv_csr
  checked_fr / first_not_below_r   range checks below the key's r
  cuda.msm.groups_of               the MSM groups of a key's curve
  cuda.spmv.curve_of_system        the kernels' curve from cs.modulus; bellperson's H refused
  check_backend_curve / _qap       both backends prove BN254; refusals in one line naming the curve
  prover -> backend.stage          the key's r reaches stage (where cuda checks raw limbs)
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest

from cuzk_ray import backends
from cuzk_ray.backends import check_backend_curve
from cuzk_ray.backends.cpu import CpuBackend
from cuzk_ray.cuda import msm as cuda_msm
from cuzk_ray.cuda import spmv as cuda_spmv
from cuzk_ray.cuda.ntt import _r_of
from cuzk_ray.cuda.spmv import csr_layout
from cuzk_ray.curves import BLS12_381, BN254
from cuzk_ray.domain import Domain
from cuzk_ray.field import R_MOD, checked_fr, first_not_below_r, fr_to_limbs, limbs_to_ints
from cuzk_ray.formats.snarkjs import read_r1cs, read_wtns, read_zkey
from cuzk_ray.groth16.prover import check_backend_qap, prove
from cuzk_ray.groth16.verifier import verify
from cuzk_ray.r1cs import CODE_MINUS_ONE, CODE_ONE, ConstraintSystem, CsrMatrix, coefficient_codes

FIX = Path(__file__).parent / "fixtures" / "circom"
R = BN254.r


def spmv_model(indptr, entries, table, x, modulus: int, fast: bool) -> list[int]:
    """What kernels/spmv.cu's spmv_csr computes per row, in Python ints mod ``modulus``."""
    coef = limbs_to_ints(table)
    out = []
    for i in range(len(indptr) - 1):
        acc = 0
        for col, code in entries[indptr[i] : indptr[i + 1]].tolist():
            if fast and code == CODE_ONE:
                acc += x[col]
            elif fast and code == CODE_MINUS_ONE:
                acc -= x[col]
            else:
                acc += x[col] * coef[code]
        out.append(acc % modulus)
    return out


@pytest.mark.parametrize("fast", [True, False])
def test_bn254_layout_codes_minus_one_and_small_negatives_of_its_r(fast):
    rng = random.Random(31)
    vals = [1, R - 1, 2, R - 2, R - 2**31, 2**31, rng.randrange(R), R - 1, 5]
    rows, cols = [0, 0, 1, 1, 2, 2, 3, 4, 4], [0, 1, 1, 2, 0, 3, 3, 2, 4]
    m = CsrMatrix.from_coo(rows, cols, fr_to_limbs(vals), 5, 5)
    indptr, entries, table = csr_layout(m, modulus=R)
    assert limbs_to_ints(table[:2]).tolist() == [1, R - 1]
    codes = {v: c for v, c in zip(limbs_to_ints(m.data).tolist(), entries[:, 1].tolist())}
    assert codes[1] == CODE_ONE and codes[R - 1] == CODE_MINUS_ONE and codes[R - 2] < len(table)
    assert limbs_to_ints(table[entries[:, 1]]).tolist() == limbs_to_ints(m.data).tolist()
    x = np.array([rng.randrange(R) for _ in range(5)], dtype=object)
    assert spmv_model(indptr, entries, table, x, R, fast) == list(m.matvec(x, modulus=R))
    # negative twin: BLS12-381's codes (the default) do not know BN254's -1, and their table's
    # row 1 is BLS12-381's r - 1, which read as a BN254 coefficient is not -1
    _, bls_entries, bls_table = csr_layout(m)
    assert CODE_MINUS_ONE not in bls_entries[:, 1].tolist()
    assert limbs_to_ints(bls_table[1:2])[0] % R != R - 1
    if not fast:  # the slow path reads row 1 for -1: BLS12-381's r - 1 there gives other sums
        wrong = table.copy()
        wrong[1] = fr_to_limbs([R_MOD - 1])[0]
        assert spmv_model(indptr, entries, wrong, x, R, fast) != list(m.matvec(x, modulus=R))


def test_coefficient_codes_default_is_bls12_381():
    codes, table = coefficient_codes(fr_to_limbs([R_MOD - 1, R - 1]))
    assert codes.tolist()[0] == CODE_MINUS_ONE and codes.tolist()[1] != CODE_MINUS_ONE
    codes, table = coefficient_codes(fr_to_limbs([R_MOD - 1 - R, R - 1]), modulus=R)
    assert codes.tolist()[1] == CODE_MINUS_ONE and limbs_to_ints(table[1:2])[0] == R - 1


def test_checked_fr_and_first_not_below_r_take_the_curve_r():
    limbs = fr_to_limbs([0, R - 1, R, R_MOD - 1])  # R .. R_MOD - 1: Fr values of BLS12-381 only
    assert first_not_below_r(limbs) == -1 and first_not_below_r(limbs, modulus=R) == 2
    assert checked_fr(limbs[:3], "w").limbs is not None  # BLS12-381's r (the default) lets R through
    with pytest.raises(ValueError, match=r"w: element 2 is not a reduced Fr value"):
        checked_fr(limbs, "w", R)
    assert limbs_to_ints(checked_fr([R + 5, 3], "w", R).limbs).tolist() == [5, 3]
    assert limbs_to_ints(checked_fr([R + 5, 3], "w").limbs).tolist() == [R + 5, 3]  # twin: BLS12-381 keeps it


def test_cuda_msm_groups_of_a_curve():
    g1, g2 = cuda_msm.groups_of(BN254.name)
    assert (g1, g2) == (cuda_msm.BN254_G1, cuda_msm.BN254_G2)
    assert g1.elem == (4,) and g2.elem == (2, 4) and g1.fr_modulus == g2.fr_modulus == R
    assert g1.curve == g2.curve == "bn254" and g1.fp_modulus == BN254.p
    assert cuda_msm.groups_of(BLS12_381.name) == (cuda_msm.G1, cuda_msm.G2)
    assert cuda_msm.G1.fr_modulus == R_MOD and cuda_msm.G1.elem == (6,)
    # the H query's table of window multiples is sized by the curve's limbs: 4 against 6
    assert 3 * cuda_msm.table_bytes(g1, 1 << 16) == 2 * cuda_msm.table_bytes(cuda_msm.G1, 1 << 16)
    with pytest.raises(ValueError) as info:
        cuda_msm.groups_of("secp256k1")
    assert "\n" not in str(info.value) and "secp256k1" in str(info.value) and "bn254" in str(info.value)


def test_spmv_curve_of_system_and_the_bellperson_refusal():
    bn = read_r1cs(FIX / "bn254" / "bn254.r1cs")
    assert bn.modulus == R and cuda_spmv.curve_of_system(bn) == "bn254"
    bls = dataclasses.replace(bn, modulus=R_MOD)
    assert cuda_spmv.curve_of_system(bls) == "bls12381"
    with pytest.raises(ValueError, match="no supported curve's r"):
        cuda_spmv.curve_of_system(dataclasses.replace(bn, modulus=101))
    with pytest.raises(ValueError, match="no supported curve's r"):
        cuda_spmv.curve_of_system(dataclasses.replace(bn, modulus=BN254.p))  # the base field is no r
    cuda_spmv.check_qap_curve("snarkjs", "bn254")
    cuda_spmv.check_qap_curve("bellperson", "bls12381")
    with pytest.raises(ValueError) as info:
        cuda_spmv.check_qap_curve("bellperson", "bn254")
    assert "\n" not in str(info.value) and "BLS12-381" in str(info.value) and "bn254" in str(info.value)


def test_device_checks_take_the_domain_r():
    assert _r_of(Domain.of(64, "snarkjs", "bn254")) == R
    assert _r_of(None) == _r_of("snarkjs") == _r_of(Domain.of(64)) == R_MOD


def test_both_backends_prove_bn254_and_other_curves_are_refused_in_one_line(monkeypatch):
    for backend in ("cpu", "cuda"):
        for curve in (BLS12_381.name, BN254.name):
            check_backend_curve(backend, curve)
    with pytest.raises(ValueError) as info:
        check_backend_curve("cuda", "secp256k1")
    assert "\n" not in str(info.value) and "no backend has them" in str(info.value)
    # a backend without a curve's kernels names the backend that has them
    monkeypatch.setitem(backends.BACKEND_CURVES, "cuda", (BLS12_381.name,))
    with pytest.raises(ValueError) as info:
        check_backend_curve("cuda", BN254.name)
    msg = str(info.value)
    assert "\n" not in msg and "backend=cpu" in msg and "bn254" in msg


def test_a_bellperson_bn254_key_is_refused_in_one_line_on_both_backends():
    pk, _cs = read_zkey(FIX / "bn254" / "bn254.zkey")

    class Named:  # what check_backend_qap reads of a backend
        def __init__(self, name):
            self.name, self.qaps = name, ("snarkjs", "bellperson")

    for name in ("cpu", "cuda"):
        check_backend_qap(pk, Named(name))  # snarkjs's H: fine
        bad = dataclasses.replace(pk, meta={**pk.meta, "qap": "bellperson"})
        with pytest.raises(ValueError) as info:
            check_backend_qap(bad, Named(name))
        msg = str(info.value)
        assert "\n" not in msg and f"backend={name}" in msg and "bn254" in msg and "BLS12-381" in msg


def test_the_prover_stages_with_the_key_r():
    """prove and prove_from_h hand the key's r to backend.stage (the cuda backend checks raw limbs
    below it); the proof still verifies, and a BLS12-381 modulus would be the wrong one."""
    pk, cs = read_zkey(FIX / "bn254" / "bn254.zkey")
    w = read_wtns(FIX / "bn254" / "witness_1.wtns", pk.n_wires, BN254)
    seen = []

    class Spy(CpuBackend):
        def stage(self, witness, modulus=None):
            seen.append(modulus)
            return super().stage(witness, modulus)

    proof = prove(pk, cs, np.asarray(w.limbs), 3, 5, Spy(threads=1))
    assert seen and set(seen) == {R}
    public = limbs_to_ints(np.asarray(w.limbs)[1 : pk.n_public + 1]).tolist()
    assert verify(pk.vk, public, proof)
    assert not verify(pk.vk, [(public[0] + 1) % R] + public[1:], proof)


def test_a_system_of_the_default_modulus_is_bls12_381s():
    """ConstraintSystem's default modulus is BLS12-381's r: such a system's kernels stay BLS12-381's."""
    one = CsrMatrix.from_coo([0], [1], [1], 1, 2)
    cs = ConstraintSystem(2, 0, one, one, None)
    assert cuda_spmv.curve_of_system(cs) == BLS12_381.name
