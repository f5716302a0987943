"""Word-for-word CPU model of cuzk_ray/kernels/ff/mont_f64.cuh (mul_f64: the a*b limb products on
FP64 FMAs, the Montgomery reduction on 32-bit words), with exact IEEE-754 double semantics.

Python floats are IEEE doubles with round-to-nearest-even, so DADD/DSUB are `+`/`-`. Python 3.11
has no math.fma: `fma` rounds the exact rational a*b + c once (int / int true division is
correctly rounded, ties to even). Every step of the kernel is mirrored in order, on the same bit
patterns, and the model asserts the invariants the kernel relies on (each accumulator stays in its
binade, the carries are non-negative), so a bound violated by some input fails loudly here.

`broken` selects a deliberately wrong variant, for the test that shows the checks can fail:
  "no_fma": the low half as round(x*y) + d (two roundings) instead of one FMA;
  "bias": the accumulators start at 1.5 * 2^100 (without the offsets that cancel the carry bias).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from cuzk_ray.field import Q_MOD, R_MOD

M32, M48, M64 = (1 << 32) - 1, (1 << 48) - 1, (1 << 64) - 1
TWO52 = 2.0**52
LO0 = 1.5 * 2.0**52
ACC0_FIRST = 1.5 * 2.0**100 - (8.0 + 0x4330) * 2.0**48
ACC0 = 1.5 * 2.0**100 - (8.0 + 0x8968) * 2.0**48
EXP52 = 0x43300000

FIELDS = {"fp": (Q_MOD, 12), "fr": (R_MOD, 8)}


def fma(a: float, b: float, c: float) -> float:
    """IEEE fma, round to nearest even: the exact a*b + c rounded once."""
    if hasattr(math, "fma"):  # Python >= 3.13
        return math.fma(a, b, c)
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def from_words(hi: int, lo: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", (hi << 32) | lo))[0]


def byte_perm(x: int, y: int, s: int) -> int:
    """CUDA __byte_perm: result byte i = byte (nibble i of s) of the 8 bytes y:x (x is bytes 0-3)."""
    src = x | (y << 32)
    return sum(((src >> (8 * ((s >> (4 * i)) & 7))) & 0xFF) << (8 * i) for i in range(4))


def to_words(x: int, n: int) -> list[int]:
    return [(x >> (32 * i)) & M32 for i in range(n)]


def from_words_int(w: list[int]) -> int:
    return sum(v << (32 * i) for i, v in enumerate(w))


def nlimbs(n: int) -> int:
    return (32 * n + 47) // 48


def to_f64(words: list[int]) -> list[float]:
    """to_f64: 48-bit limbs as exact doubles, by the kernel's byte permutes."""
    n = len(words)
    out = []
    for q in range(nlimbs(n) // 2):
        w0 = words[3 * q]
        w1 = words[3 * q + 1] if 3 * q + 1 < n else 0
        w2 = words[3 * q + 2] if 3 * q + 2 < n else 0
        out.append(from_words(byte_perm(w1, EXP52, 0x7610), w0) - TWO52)
        out.append(from_words(byte_perm(w2, EXP52, 0x7632), byte_perm(w1, w2, 0x5432)) - TWO52)
    return out


def column(a: list[float], b: list[float], k: int, broken: str | None = None) -> tuple[float, float]:
    """f64_detail::column: (acc, lo) of column k."""
    nl = len(a)
    acc0 = 1.5 * 2.0**100 if broken == "bias" else ACC0_FIRST if k == 0 else ACC0
    kc = acc0 + LO0
    assert kc - LO0 == acc0, "acc0 + LO0 must be exact"
    i0, i1 = (0, k) if k < nl else (k - nl + 1, nl - 1)
    acc = fma(a[i0], b[k - i0], acc0)
    lo = fma(a[i0], b[k - i0], kc - acc)
    assert 2.0**100 <= acc < 2.0**101, "acc left its binade"
    for i in range(i0 + 1, i1 + 1):
        x, y = a[i], b[k - i]
        nacc = fma(x, y, acc)
        d = acc - nacc
        lo = lo + (x * y + d if broken == "no_fma" else fma(x, y, d))
        acc = nacc
        assert 2.0**100 <= acc < 2.0**101, "acc left its binade"
    assert 2.0**52 <= lo < 2.0**53, "lo left its binade"
    return acc, lo


def product_f64(a: list[float], b: list[float], n: int, broken: str | None = None) -> list[int]:
    """product_f64: T = a*b as 2n words."""
    nl = len(a)
    nc = 2 * nl
    limbs, rc, acc_prev = [], 0, 0.0
    for k in range(nc):
        acc, lo = column(a, b, k, broken) if k < nc - 1 else (0.0, 0.0)
        if k == 0:
            s = bits(lo)
        elif k < nc - 1:
            s = (bits(lo) + bits(acc_prev) + rc) % 2**64
        else:
            s = (bits(acc_prev) + rc) % 2**64
        rc = s >> 48
        if broken is None:  # the constant in bits 48.. and a carry' = carry + 8 in 0..15
            base = 0x4330 if k == 0 else 0x8968 if k < nc - 1 else 0x4638
            assert base <= rc < base + (16 if k < nc - 1 else 1), f"column {k}: raw carry {rc:#x}"
        limbs.append(s)
        acc_prev = acc
    t = []
    for q in range(nl):
        l0, h0 = limbs[2 * q] & M32, limbs[2 * q] >> 32
        l1, h1 = limbs[2 * q + 1] & M32, limbs[2 * q + 1] >> 32
        t += [l0, byte_perm(h0 & M32, l1, 0x5410), byte_perm(l1, h1, 0x5432)]
    return t[: 2 * n]


def redc_words(t: list[int], p: int, n: int) -> list[int]:
    """redc_words: n word-by-word Montgomery rounds (m = t_i * INV mod 2^32) on T, then one
    conditional subtraction (mul_wide's rounds: the ev/od split is a register layout only)."""
    inv = (-pow(p, -1, 2**32)) % 2**32
    T = from_words_int(t)
    for i in range(n):
        m = (((T >> (32 * i)) & M32) * inv) & M32
        T += (m * p) << (32 * i)
    assert T & ((1 << (32 * n)) - 1) == 0
    T >>= 32 * n
    assert T < 2 * p
    return to_words(T - p if T >= p else T, n)


def mul_f64(a: int, b: int, field: str, broken: str | None = None) -> int:
    """a * b * R^-1 mod p (R = 2^(32N)), as the kernel computes it; a, b < p."""
    p, n = FIELDS[field]
    t = product_f64(to_f64(to_words(a, n)), to_f64(to_words(b, n)), n, broken)
    return from_words_int(redc_words(t, p, n))


def product(a: int, b: int, n: int, broken: str | None = None) -> int:
    """The FP64 part alone: a * b for any a, b < 2^(32n)."""
    return from_words_int(product_f64(to_f64(to_words(a, n)), to_f64(to_words(b, n)), n, broken))
