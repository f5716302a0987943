"""A CPU model of sqr_wide (cuzk_ray/kernels/ff/mont32.cuh), the dedicated Montgomery squaring of
the MSM modules, checked against Python ints for Fr and Fp. It mirrors the kernel word for word
(same functions, same chains, the carry flag as state, a carry dropped wherever a non-.cc PTX op
drops one), so a missing carry or product in the kernel's algorithm fails here too: keep the two
in step. Reading a word never written, or a carry flag no .cc op set, is an error; dropped carries
are counted and must be 0 (the bound argument above sqr_wide). The GPU runs the kernel itself
against the same expected values (tests/test_kernels_gpu.py, op raw_sqr_wide)."""

from __future__ import annotations

import random

import pytest

from cuzk_ray.field import Q_MOD, R_MOD

M32 = 0xFFFFFFFF


class Chip:
    """The ops of ff/ptx.cuh on 32-bit words, with CC.CF; counts wide mads and dropped carries."""

    def __init__(self):
        self.cf = None  # None: no .cc op has set it (a non-.cc op leaves it unusable here)
        self.wide = 0
        self.dropped = 0

    def _cc(self, r):
        self.cf = r >> 32
        return r & M32

    def _c(self):
        assert self.cf is not None, "carry read but not set by a .cc op"
        return self.cf

    def _end(self, r):  # a non-.cc op: the carry out is lost
        self.dropped += r >> 32
        self.cf = None
        return r & M32

    @staticmethod
    def _w(*xs):
        assert all(x is not None for x in xs), "word read before it was written"

    def add_cc(self, a, b):
        self._w(a, b)
        return self._cc(a + b)

    def addc_cc(self, a, b):
        self._w(a, b)
        return self._cc(a + b + self._c())

    def addc(self, a, b):
        self._w(a, b)
        return self._end(a + b + self._c())

    def sub_cc(self, a, b):
        self._w(a, b)
        r = a - b
        self.cf = int(r < 0)
        return r & M32

    def subc_cc(self, a, b):
        self._w(a, b)
        r = a - b - self._c()
        self.cf = int(r < 0)
        return r & M32

    def subc(self, a, b):
        self._w(a, b)
        r = (a - b - self._c()) & M32
        self.cf = None
        return r

    def mad_lo_cc(self, a, b, c):
        self._w(a, b, c)
        self.wide += 1  # the lo half of a pair: one IMAD.WIDE with its madc.hi
        return self._cc((a * b & M32) + c)

    def madc_lo_cc(self, a, b, c):
        self._w(a, b, c)
        self.wide += 1
        return self._cc((a * b & M32) + c + self._c())

    def madc_hi_cc(self, a, b, c):
        self._w(a, b, c)
        return self._cc((a * b >> 32) + c + self._c())

    def madc_hi(self, a, b, c):
        self._w(a, b, c)
        return self._end((a * b >> 32) + c + self._c())

    def mul_wide(self, a, b):  # (u64)a * b: lo, hi
        self._w(a, b)
        self.wide += 1
        return a * b & M32, a * b >> 32


class Field:
    def __init__(self, p, n):
        self.p, self.N = p, n
        self.INV = -pow(p, -1, 2**32) % 2**32
        self.mod = [(p >> (32 * i)) & M32 for i in range(n)]


# ------------------------------------------------------------------ the kernel, line for line


def cmad_pairs(c, acc, a, bi, n):
    acc[0] = c.mad_lo_cc(a[0], bi, acc[0])
    acc[1] = c.madc_hi_cc(a[0], bi, acc[1])
    for j in range(2, n, 2):
        acc[j] = c.madc_lo_cc(a[j], bi, acc[j])
        acc[j + 1] = c.madc_hi_cc(a[j], bi, acc[j + 1])


def madc_rshift(c, odd, a, bi, n):
    for j in range(0, n - 2, 2):
        odd[j] = c.madc_lo_cc(a[j], bi, odd[j + 2])
        odd[j + 1] = c.madc_hi_cc(a[j], bi, odd[j + 3])
    odd[n - 2] = c.madc_lo_cc(a[n - 2], bi, 0)
    odd[n - 1] = c.madc_hi(a[n - 2], bi, 0)


def cmad_mod_even(c, f, ev, p, m):
    if f.INV == M32:
        ev[0] = c.add_cc(ev[0], m)
        ev[1] = c.addc_cc(ev[1], 0)
        for j in range(2, f.N, 2):
            ev[j] = c.madc_lo_cc(p[j], m, ev[j])
            ev[j + 1] = c.madc_hi_cc(p[j], m, ev[j + 1])
    else:
        cmad_pairs(c, ev, p, m, f.N)


def sqr_row(c, n, top, low, a, i):
    ai = a[i]
    jt, jl = (i + 2, i + 1) if i & 1 else (i + 1, i + 2)
    if jt == n - 1:
        top[i + n - 1], top[i + n] = c.mul_wide(a[n - 1], ai)
    else:
        top[i + jt] = c.mad_lo_cc(a[jt], ai, top[i + jt])
        top[i + jt + 1] = c.madc_hi_cc(a[jt], ai, top[i + jt + 1])
        for j in range(jt + 2, n - 1, 2):
            top[i + j] = c.madc_lo_cc(a[j], ai, top[i + j])
            top[i + j + 1] = c.madc_hi_cc(a[j], ai, top[i + j + 1])
        top[i + n - 1] = c.madc_lo_cc(a[n - 1], ai, 0)
        top[i + n] = c.madc_hi(a[n - 1], ai, 0)
    if jl <= n - 2:
        low[i + jl] = c.mad_lo_cc(a[jl], ai, low[i + jl])
        low[i + jl + 1] = c.madc_hi_cc(a[jl], ai, low[i + jl + 1])
        for j in range(jl + 2, n - 1, 2):
            low[i + j] = c.madc_lo_cc(a[j], ai, low[i + j])
            low[i + j + 1] = c.madc_hi_cc(a[j], ai, low[i + j + 1])
        top[i + n] = c.addc(top[i + n], 0)


def redc_round(c, f, ev, od, first):
    n, p = f.N, f.mod
    if first:
        m = ev[0] * f.INV & M32
        for j in range(0, n, 2):
            od[j], od[j + 1] = c.mul_wide(p[j + 1], m)
    else:
        ev[0] = c.add_cc(ev[0], od[1])
        m = ev[0] * f.INV & M32
        madc_rshift(c, od, p[1:], m, n)
    cmad_mod_even(c, f, ev, p, m)
    od[n - 1] = c.addc(od[n - 1], 0)


def mont_reduce_once(c, f, t, hi):
    n = f.N
    s = [c.sub_cc(t[0], f.mod[0])] + [None] * (n - 1)
    for j in range(1, n):
        s[j] = c.subc_cc(t[j], f.mod[j])
    borrow = c.subc(hi, 0)
    return [t[j] if borrow else s[j] for j in range(n)]


def sqr_wide(c, f, a):
    n = f.N
    e, o = [None] * (2 * n), [None] * (2 * n)
    for j in range(1, n, 2):
        o[j], o[j + 1] = c.mul_wide(a[j], a[0])
    for j in range(2, n, 2):
        e[j], e[j + 1] = c.mul_wide(a[j], a[0])
    for i in range(1, n - 1):
        if i & 1:
            sqr_row(c, n, e, o, a, i)
        else:
            sqr_row(c, n, o, e, a, i)
    e[2] = c.add_cc(e[2], o[2])
    for k in range(3, 2 * n - 2):
        e[k] = c.addc_cc(e[k], o[k])
    e[2 * n - 2] = c.addc(o[2 * n - 2], 0)
    e[0] = 0
    e[1] = c.add_cc(o[1], o[1])
    for k in range(2, 2 * n - 1):
        e[k] = c.addc_cc(e[k], e[k])
    e[2 * n - 1] = c.addc(0, 0)
    e[0] = c.mad_lo_cc(a[0], a[0], e[0])
    e[1] = c.madc_hi_cc(a[0], a[0], e[1])
    for i in range(1, n - 1):
        e[2 * i] = c.madc_lo_cc(a[i], a[i], e[2 * i])
        e[2 * i + 1] = c.madc_hi_cc(a[i], a[i], e[2 * i + 1])
    e[2 * n - 2] = c.madc_lo_cc(a[n - 1], a[n - 1], e[2 * n - 2])
    e[2 * n - 1] = c.madc_hi(a[n - 1], a[n - 1], e[2 * n - 1])
    for i in range(0, n, 2):
        redc_round(c, f, e, o, i == 0)  # e[0..N-1] in place: the list is the kernel's pointer
        redc_round(c, f, o, e, False)
    t = [None] * n
    t[0] = c.add_cc(e[0], o[1])
    for j in range(1, n - 1):
        t[j] = c.addc_cc(e[j], o[j + 1])
    t[n - 1] = c.addc(e[n - 1], 0)
    t[0] = c.add_cc(t[0], e[n])
    for j in range(1, n):
        t[j] = c.addc_cc(t[j], e[n + j])
    return mont_reduce_once(c, f, t, c.addc(0, 0))


# ------------------------------------------------------------------ checks

FIELDS = {"fr": Field(R_MOD, 8), "fp": Field(Q_MOD, 12)}
WIDE_MADS = {"fr": 28 + 8 + 56, "fp": 66 + 12 + 144}  # the cost note above sqr_wide (mul_wide: 120, 288)


def edge_values(p, n):
    """0, 1, 2, p-1, p-2, p//2, R mod p, R^2 mod p, all-ones limbs below p, around 2^(bits-1)."""
    bits, top = p.bit_length(), 32 * (n - 1)
    ones_below = ((p >> top) - 1) << top | ((1 << top) - 1)  # top limb of p minus 1, then all ones
    vals = [0, 1, 2, 3, p - 1, p - 2, p - 3, p // 2, p // 2 + 1, (1 << 32 * n) % p, (1 << 64 * n) % p, ones_below,
            (1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << (bits - 1)) + 1, M32, 1 << 31]
    vals += [(1 << 32 * k) - 1 for k in range(1, n)] + [1 << 32 * k for k in range(1, n)]
    vals += [p - (1 << 32 * k) for k in range(1, n)]  # limbs of p with one limb lowered
    return [v for v in vals if 0 <= v < p]


def limb_stress(rng, p, n, count):
    """Values below p whose limbs are mostly 0, 1, 2^31 or all ones: the carry chains' worst cases."""
    out = []
    while len(out) < count:
        limbs = [rng.choice((0, 1, 1 << 31, M32, M32, M32, rng.getrandbits(32))) for _ in range(n)]
        v = sum(w << (32 * i) for i, w in enumerate(limbs)) % (1 << p.bit_length())
        if v < p:
            out.append(v)
    return out


def run(f, x):
    c = Chip()
    out = sqr_wide(c, f, [(x >> (32 * i)) & M32 for i in range(f.N)])
    assert c.dropped == 0, f"a carry was dropped for {x:#x}"
    return sum(w << (32 * i) for i, w in enumerate(out)), c.wide


@pytest.mark.parametrize("name", list(FIELDS))
def test_sqr_wide_model_matches_ints(name):
    f = FIELDS[name]
    rng = random.Random(20261207 + f.N)
    r_inv = pow(1 << (32 * f.N), -1, f.p)
    xs = edge_values(f.p, f.N) + limb_stress(rng, f.p, f.N, 1500) + [rng.randrange(f.p) for _ in range(1500)]
    for x in xs:
        got, wide = run(f, x)
        assert got == x * x * r_inv % f.p, f"{name} sqr_wide({x:#x})"
        assert wide == WIDE_MADS[name]
    # negative: the expected values depend on R^-1 (a plain square mod p would not pass)
    assert any(run(f, x)[0] != x * x % f.p for x in xs[:20])
