"""The scaled store's tables and index math (cuda.ntt.fold_tables / fold_factor, which mirror
kernels/ntt.cu fold_block_factor) against plain bit reversal and pow, on the CPU: the factor of
the element a last DIF pass of k bits stores from pass position idx is f_y * g^bitrev(idx)."""

from __future__ import annotations

import random

import pytest

from cuzk_ray.cuda.ntt import fold_factor, fold_tables
from cuzk_ray.domain import Domain
from cuzk_ray.field import FR_R, R_MOD
from cuzk_ray.ref.ntt import bit_reverse_permutation


def bitrev(i: int, bits: int) -> int:
    return int(format(i, f"0{bits}b")[::-1], 2) if bits else 0


CASES = [(log_n, k) for log_n in range(1, 11) for k in range(1, min(log_n, 9) + 1)] + [(18, 6), (20, 7), (27, 6)]


@pytest.mark.parametrize(("log_n", "k"), CASES)
def test_fold_factor_is_coset_power(log_n, k):
    d = Domain.of(1 << log_n)
    factors = (d.n_inv, d.n_inv * FR_R % R_MOD, 5)
    tables = fold_tables(d.omega_2n, log_n, k, factors)
    assert len(tables[0]) == 3 << k
    rng = random.Random(log_n * 100 + k)
    n = 1 << log_n
    idxs = range(n) if n <= 1024 else [0, 1, n - 1, (1 << k) - 1, 1 << k] + [rng.randrange(n) for _ in range(40)]
    for idx in idxs:
        power = pow(d.omega_2n, bitrev(idx, log_n), R_MOD)
        for y, f in enumerate(factors):
            assert fold_factor(tables, log_n, k, y, idx) == power * f % R_MOD, f"log_n={log_n} k={k} y={y} idx={idx}"


def test_fold_single_factor_serves_every_vector():
    """One factor (ntt_device's 1/n): the kernel's stride is 0, every vector reads the same rows."""
    g, log_n, k = 7, 9, 4
    tables = fold_tables(g, log_n, k, (3,))
    assert len(tables[0]) == 1 << k
    for idx in (0, 5, 300, 511):
        want = 3 * pow(g, bitrev(idx, log_n), R_MOD) % R_MOD
        assert fold_factor(tables, log_n, k, 0, idx) == want


def test_fold_negative_twins():
    """The check can fail: another factor, another g, the rows of st in natural order (not
    bit-reversed) or the power at idx itself (no bit reversal) give other factors."""
    g, log_n, k, idx = Domain.of(256).omega_2n, 8, 3, 0b10110110  # row j = 6: bitrev_3(6) = 3
    want = 2 * pow(g, bitrev(idx, log_n), R_MOD) % R_MOD
    tables = fold_tables(g, log_n, k, (2,))
    assert fold_factor(tables, log_n, k, 0, idx) == want
    assert fold_factor(fold_tables(g, log_n, k, (3,)), log_n, k, 0, idx) != want
    assert fold_factor(fold_tables(g * g % R_MOD, log_n, k, (2,)), log_n, k, 0, idx) != want
    natural_rows = (tables[0][bit_reverse_permutation(1 << k)],) + tables[1:]
    assert fold_factor(natural_rows, log_n, k, 0, idx) != want
    assert want != 2 * pow(g, idx, R_MOD) % R_MOD


def test_fold_tables_reject_bad_k():
    with pytest.raises(ValueError, match="k"):
        fold_tables(5, 4, 0, (1,))
    with pytest.raises(ValueError, match="k"):
        fold_tables(5, 4, 5, (1,))
