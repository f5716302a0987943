"""The FP64 Montgomery multiplication (ff/mont_f64.cuh) as a word-for-word CPU model
(tests/f64_model.py) against Python big-int Montgomery multiplication: random inputs and edge
cases, the FP64 product alone at its limits, and deliberately broken variants that must fail."""

from __future__ import annotations

import pytest
from f64_model import FIELDS, fma, mul_f64, product

EDGE_EXTRA = 40


def edges(p: int, nbits: int) -> list[int]:
    """0, 1, p-1, p-2, R and R^2 mod p, all-ones 32- and 48-bit limbs, p minus them, top bits."""
    vals = [0, 1, 2, 3, p - 1, p - 2, p - 3, p // 2, (1 << nbits) % p, (1 << 2 * nbits) % p,
            ((1 << nbits) - 1) % p, 1 << (p.bit_length() - 1), (1 << (p.bit_length() - 1)) - 1]
    for w in (32, 48):
        vals += [(1 << k) - 1 for k in range(w, nbits, w)] + [p - (1 << k) for k in range(w, nbits, w)]
        vals += [p - ((1 << k) - 1) for k in range(w, nbits, w)]
    return sorted({v for v in vals if 0 <= v < p})


def mont_ref(a: int, b: int, p: int, nbits: int) -> int:
    return a * b * pow(1 << nbits, -1, p) % p


def test_fma_is_one_rounding():
    # (2^52 + 1)(2^52 - 1) - 2^104 = -1 exactly; a product rounded first gives 0
    x, y = 2.0**52 + 1, 2.0**52 - 1
    assert fma(x, y, -(2.0**104)) == -1.0
    assert x * y - 2.0**104 == 0.0  # negative: two roundings lose it
    # ties to even: 2^53 + 1 rounds to 2^53, 2^53 + 3 to 2^53 + 4
    assert fma(2.0**53, 1.0, 1.0) == 2.0**53 and fma(2.0**53, 1.0, 3.0) == 2.0**53 + 4


@pytest.mark.parametrize("field", list(FIELDS))
def test_mul_f64_matches_montgomery(field, rng):
    p, n = FIELDS[field]
    nbits = 32 * n
    e = edges(p, nbits)
    pairs = [(x, y) for x in e for y in e[:: max(1, len(e) // 12)]]
    pairs += [(rng.randrange(p), rng.randrange(p)) for _ in range(300)]
    pairs += [(rng.choice(e), rng.randrange(p)) for _ in range(EDGE_EXTRA)]
    bad = [(x, y) for x, y in pairs if mul_f64(x, y, field) != mont_ref(x, y, p, nbits)]
    assert not bad, (f"{field}: {len(bad)} of {len(pairs)} wrong, first a={bad[0][0]:#x} b={bad[0][1]:#x}, "
                     f"seed {rng.seed_value}")


@pytest.mark.parametrize("n", [8, 12])
def test_product_exact_at_the_limits(n, rng):
    """The FP64 part is exact for any a, b < 2^(32n): all-ones inputs fill every column."""
    top = (1 << (32 * n)) - 1
    vals = [0, 1, top, top - 1, top >> 1, 1 << (32 * n - 1)] + [(1 << k) - 1 for k in range(48, 32 * n, 48)]
    vals += [sum(0xFFFFFFFFFFFF << (96 * j) for j in range(n // 3 + 1)) & top]  # even limbs all ones
    vals += [rng.randrange(1 << (32 * n)) for _ in range(20)]
    for x in vals:
        for y in vals[:8]:
            assert product(x, y, n) == x * y, f"n={n} a={x:#x} b={y:#x}"


@pytest.mark.parametrize("broken", ["no_fma", "bias"])
@pytest.mark.parametrize("field", list(FIELDS))
def test_broken_variants_fail(field, broken, rng):
    """Negative: the comparison catches a product rounded twice and a wrong bias constant."""
    p, n = FIELDS[field]
    pairs = [(rng.randrange(p), rng.randrange(p)) for _ in range(20)] + [(p - 1, p - 1)]
    wrong = 0
    for x, y in pairs:
        try:
            wrong += mul_f64(x, y, field, broken) != mont_ref(x, y, p, 32 * n)
        except AssertionError:  # the model's own invariant checks fired: also a detection
            wrong += 1
    assert wrong >= len(pairs) - 1, f"{broken}: only {wrong} of {len(pairs)} detected"
