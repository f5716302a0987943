"""A CPU model of the lazily reduced Fp2 products (mul_lazy, mul_sub_lazy in
cuzk_ray/kernels/ff/bls12_381.cuh), checked against Python ints. The word ops of the new code
(add_words, sub_words, add_pR_if) run on test_sqr_model's Chip (carry flag as state, every carry a
non-.cc op drops counted); the two pieces it reuses stand in as ints with their preconditions
asserted: mul_rows (a 24-word product of 12-word operands: < 2^768) and redc_words (needs
0 <= T < p R, gives T R^-1 mod p; its words are modelled in test_sqr_model, the GPU tests mul_kara
that uses both). So a bound in the cost note that does not hold, or a missing correction, fails
here. The GPU runs the kernels on the same kind of values (tests/test_kernels_gpu.py, test_fp2)."""

from __future__ import annotations

import random

import pytest
from test_sqr_model import Chip, edge_values, limb_stress

from cuzk_ray.field import Q_MOD

N, W = 12, 24
R = 1 << (32 * N)
M32 = 0xFFFFFFFF


def words(x: int, k: int) -> list[int]:
    assert 0 <= x < 1 << (32 * k), "value does not fit its words"
    return [(x >> (32 * i)) & M32 for i in range(k)]


def value(w: list[int]) -> int:
    return sum(v << (32 * i) for i, v in enumerate(w))


# ------------------------------------------------------------------ the kernel, line for line


def add_words(c: Chip, x, y, k):
    r = [c.add_cc(x[0], y[0])]
    r += [c.addc_cc(x[i], y[i]) for i in range(1, k - 1)]
    return r + [c.addc(x[k - 1], y[k - 1])]


def sub_words(c: Chip, x, y, k):
    r = [c.sub_cc(x[0], y[0])]
    r += [c.subc_cc(x[i], y[i]) for i in range(1, k)]
    return r, c.subc(0, 0) & 1


def add_pr_if(c: Chip, t, neg, wraps: list):
    """t + p R mod 2^768 when neg: the carry out of the top word is dropped on purpose (the 2^768
    of a negative two's complement t); recorded in wraps so the test can require it was that."""
    mask = (0 - neg) & M32
    p = words(Q_MOD, N)
    t = list(t)
    before = c.dropped
    t[N] = c.add_cc(t[N], p[0] & mask)
    for k in range(1, N - 1):
        t[N + k] = c.addc_cc(t[N + k], p[k] & mask)
    t[W - 1] = c.addc(t[W - 1], p[N - 1] & mask)
    wraps.append(c.dropped - before)
    c.dropped = before
    return t


def mul_rows(x, y):
    return words(value(x) * value(y), W)  # x, y < 2^384: the product fits 24 words


def redc_words(t):
    T = value(t)
    assert 0 <= T < Q_MOD * R, "redc_words needs T < p R"
    return T * pow(R, -1, Q_MOD) % Q_MOD


def mul_lazy(c: Chip, a, b, wraps, broken=None):
    (a0, a1), (b0, b1) = a, b
    t0, t1 = mul_rows(a0, b0), mul_rows(a1, b1)
    s = add_words(c, t0, t1, W)
    t0, borrow = sub_words(c, t0, t1, W)
    if broken != "no_pR":
        t0 = add_pr_if(c, t0, borrow, wraps)
    c0 = redc_words(t0)
    t1 = mul_rows(add_words(c, a0, a1, N), add_words(c, b0, b1, N))
    t1, _ = sub_words(c, t1, s, W)
    return c0, redc_words(t1)


def mul_sub_lazy(c: Chip, a, b, cc, d, wraps, broken=None):
    (a0, a1), (b0, b1), (c0, c1), (d0, d1) = a, b, cc, d
    x, y = mul_rows(a0, b0), mul_rows(a1, b1)
    st = add_words(c, x, y, W)
    dt, _ = sub_words(c, x, y, W)
    x, y = mul_rows(c0, d0), mul_rows(c1, d1)
    su = add_words(c, x, y, W)
    du, _ = sub_words(c, x, y, W)
    dt, _ = sub_words(c, dt, du, W)
    neg = dt[W - 1] >> 31
    if broken == "sign_by_borrow":  # the borrow of dt - du is not re's sign (dt, du are signed)
        neg = int(value(dt) < value(du))
    dt = add_pr_if(c, dt, neg, wraps)
    r0 = redc_words(dt)
    x = mul_rows(add_words(c, a0, a1, N), add_words(c, b0, b1, N))
    x, _ = sub_words(c, x, st, W)
    y = mul_rows(add_words(c, c0, c1, N), add_words(c, d0, d1, N))
    y, _ = sub_words(c, y, su, W)
    x, borrow = sub_words(c, x, y, W)
    x = add_pr_if(c, x, borrow, wraps)
    return r0, redc_words(x)


# ------------------------------------------------------------------ checks


def fp2_values(rng, count):
    edges = edge_values(Q_MOD, N)
    singles = edges + limb_stress(rng, Q_MOD, N, count) + [rng.randrange(Q_MOD) for _ in range(count)]
    pairs = [(rng.choice(singles), rng.choice(singles)) for _ in range(count)]
    return pairs + [(e, f) for e in edges[:8] for f in edges[:8]]


def mont(x):
    return x * R % Q_MOD


def fp2_mul(a, b):
    return ((a[0] * b[0] - a[1] * b[1]) % Q_MOD, (a[0] * b[1] + a[1] * b[0]) % Q_MOD)


def as_words(a):
    return (words(mont(a[0]), N), words(mont(a[1]), N))


def check_wraps(wraps, negs):
    """Each add_pR_if dropped a carry exactly when it added p R (a negative value) and then left a
    value below p R: the 2^768 of the two's complement, nothing else."""
    assert wraps == negs


def test_mul_lazy_model_matches_ints():
    rng = random.Random(20261202)
    vals = fp2_values(rng, 600)
    for a, b in zip(vals, vals[::-1]):
        c, wraps = Chip(), []
        got = mul_lazy(c, as_words(a), as_words(b), wraps)
        assert c.dropped == 0, (a, b)
        want = fp2_mul(a, b)
        assert got == (mont(want[0]), mont(want[1])), (a, b)
        check_wraps(wraps, [int(mont(a[0]) * mont(b[0]) < mont(a[1]) * mont(b[1]))])


def test_mul_sub_lazy_model_matches_ints():
    rng = random.Random(20261203)
    vals = fp2_values(rng, 400)
    seen_neg = set()
    for i in range(len(vals)):
        a, b, cc, d = vals[i], vals[-1 - i], vals[(7 * i) % len(vals)], vals[(13 * i + 5) % len(vals)]
        c, wraps = Chip(), []
        got = mul_sub_lazy(c, *map(as_words, (a, b, cc, d)), wraps)
        assert c.dropped == 0, (a, b, cc, d)
        ab, cd = fp2_mul(a, b), fp2_mul(cc, d)
        assert got == (mont(ab[0] - cd[0]), mont(ab[1] - cd[1])), (a, b, cc, d)
        ma, mb, mc, md = (tuple(mont(v) for v in x) for x in (a, b, cc, d))
        re = ma[0] * mb[0] - ma[1] * mb[1] - mc[0] * md[0] + mc[1] * md[1]
        im = ma[0] * mb[1] + ma[1] * mb[0] - mc[0] * md[1] - mc[1] * md[0]
        check_wraps(wraps, [int(re < 0), int(im < 0)])
        seen_neg.add((re < 0, im < 0))
    assert len(seen_neg) == 4  # every sign combination of the two coefficients was exercised


@pytest.mark.parametrize("broken", ["no_pR", "sign_by_borrow"])
def test_broken_twins_fail(broken):
    """Without the + p R of a negative c0, or with re's sign taken from the last borrow, values
    go wrong or break redc_words' precondition: the checks above can fail."""
    rng = random.Random(7)
    vals = fp2_values(rng, 100)
    bad = 0
    for i in range(len(vals)):
        a, b = vals[i], vals[-1 - i]
        try:
            if broken == "no_pR":
                got = mul_lazy(Chip(), as_words(a), as_words(b), [], broken)
                want = fp2_mul(a, b)
            else:
                cc, d = vals[(7 * i) % len(vals)], vals[(13 * i + 5) % len(vals)]
                got = mul_sub_lazy(Chip(), *map(as_words, (a, b, cc, d)), [], broken)
                ab, cd = fp2_mul(a, b), fp2_mul(cc, d)
                want = (ab[0] - cd[0], ab[1] - cd[1])
            bad += got != (mont(want[0]), mont(want[1]))
        except AssertionError:
            bad += 1
    assert bad > 0
