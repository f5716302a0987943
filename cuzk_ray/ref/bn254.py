"""BN254 arithmetic on Python ints: Fp2, G1 and G2 points, the optimal ate pairing (the reference).

Small and plain, as the rest of ref/: the CPU prover's assembly (a few additions and scalar
multiplications), the verifier's pairing check, on-curve and subgroup checks and the oracle of
the fast MSM (fast/bn254_msm.py). Points are affine: G1 ``(x, y)`` ints, G2 ``((x0, x1), (y0, y1))``
Fp2 pairs, the point at infinity ``None``.

The pairing (one Miller loop over all pairs, one final exponentiation) works in
Fp12 = Fp[w] / (w^12 - 18 w^6 + 82), where w^6 = xi = 9 + i, i = w^6 - 9: an Fp2 value a + b i is
(a - 9 b) + b w^6. A G2 point (x, y) of the D-type twist is (x w^2, y w^3) on the curve over
Fp12, so a line through twist points evaluated at P = (xP, yP) is
    yP - lambda xP w + (lambda xT - yT) w^3          (lambda the slope on the twist)
which has five non-zero coefficients. ``gt_tower`` writes a value in snarkjs's tower
Fp12 = Fp6[w]/(w^2 - v), Fp6 = Fp2[v]/(v^3 - xi) (vk_alphabeta_12).
"""

from __future__ import annotations

from ..curves import BN254

P = BN254.p
R = BN254.r
U = 4965661367192848881  # the BN parameter: p = 36u^4 + 36u^3 + 24u^2 + 6u + 1
ATE_LOOP = 6 * U + 2
B2 = BN254.b2
G1_GEN = BN254.g1
G2_GEN = ((BN254.g2[0], BN254.g2[1]), (BN254.g2[2], BN254.g2[3]))

# ---------------------------------------------------------------------------------------------
# Fp2 = Fp[i] / (i^2 + 1)


def f2_add(a, b):
    return (a[0] + b[0]) % P, (a[1] + b[1]) % P


def f2_sub(a, b):
    return (a[0] - b[0]) % P, (a[1] - b[1]) % P


def f2_mul(a, b):
    return (a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P


def f2_sqr(a):
    return (a[0] + a[1]) * (a[0] - a[1]) % P, 2 * a[0] * a[1] % P


def f2_inv(a):
    t = pow(a[0] * a[0] + a[1] * a[1], -1, P)
    return a[0] * t % P, -a[1] * t % P


def f2_conj(a):
    return a[0], -a[1] % P


def f2_pow(a, e: int):
    out = (1, 0)
    for bit in bin(e)[2:]:
        out = f2_sqr(out)
        if bit == "1":
            out = f2_mul(out, a)
    return out


XI = BN254.xi
# Frobenius on the twist: pi(x, y) = (conj(x) g12, conj(y) g13), pi^2(x, y) = (x g22, y g23)
G12, G13 = f2_pow(XI, (P - 1) // 3), f2_pow(XI, (P - 1) // 2)
G22, G23 = f2_pow(XI, (P * P - 1) // 3), f2_pow(XI, (P * P - 1) // 2)

# ---------------------------------------------------------------------------------------------
# Points, generic over the field of their coordinates (Fp: ints; Fp2: pairs)


class _Ops:
    def __init__(self, add, sub, mul, sqr, inv, b, zero, three):
        self.add, self.sub, self.mul, self.sqr, self.inv, self.b = add, sub, mul, sqr, inv, b
        self.zero, self.three = zero, three


G1_OPS = _Ops(lambda a, b: (a + b) % P, lambda a, b: (a - b) % P, lambda a, b: a * b % P,
              lambda a: a * a % P, lambda a: pow(a, -1, P), BN254.b, 0, 3)
G2_OPS = _Ops(f2_add, f2_sub, f2_mul, f2_sqr, f2_inv, B2, (0, 0), (3, 0))


def on_curve(pt, ops) -> bool:
    if pt is None:
        return True
    x, y = pt
    return ops.sqr(y) == ops.add(ops.mul(ops.sqr(x), x), ops.b)


def neg(pt, ops):
    return None if pt is None else (pt[0], ops.sub(ops.zero, pt[1]))


def add(p1, p2, ops):
    """p1 + p2 (affine, with an inversion: ~3-10 us)."""
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2:
        if y1 != y2 or y1 == ops.zero:
            return None
        lam = ops.mul(ops.mul(ops.three, ops.sqr(x1)), ops.inv(ops.add(y1, y1)))
    else:
        lam = ops.mul(ops.sub(y2, y1), ops.inv(ops.sub(x2, x1)))
    x3 = ops.sub(ops.sub(ops.sqr(lam), x1), x2)
    return x3, ops.sub(ops.mul(lam, ops.sub(x1, x3)), y1)


def mul(pt, k: int, ops):
    """k * pt by double-and-add (k reduced mod r first: every point used here has order r)."""
    k %= R
    out = None
    for bit in bin(k)[2:] if k else "":
        out = add(out, out, ops)
        if bit == "1":
            out = add(out, pt, ops)
    return out


def mul_raw(pt, k: int, ops):
    """k * pt for any k >= 0, not reduced (subgroup checks multiply by r itself)."""
    out = None
    for bit in bin(k)[2:] if k else "":
        out = add(out, out, ops)
        if bit == "1":
            out = add(out, pt, ops)
    return out


def in_g1(pt) -> bool:
    """On the curve (G1's cofactor is 1: every point of E(Fp) has order r)."""
    return on_curve(pt, G1_OPS)


def psi(pt):
    """The untwist-Frobenius-twist endomorphism of E'(Fp2) (pi of the twist)."""
    (x, y) = pt
    return f2_mul(f2_conj(x), G12), f2_mul(f2_conj(y), G13)


def in_g2(pt) -> bool:
    """On the twist and of order r: psi(Q) = [6u^2] Q (El Housni, Guillevic, Piellard 2022,
    section 4 for BN curves: a 127-bit multiplication instead of a 254-bit one by r)."""
    if pt is None:
        return True
    if not on_curve(pt, G2_OPS):
        return False
    return psi(pt) == mul_raw(pt, 6 * U * U, G2_OPS)


def msm(points, scalars, ops):
    """sum s_i * P_i, one scalar multiplication per term (a reference for tests and small sums)."""
    acc = None
    for pt, s in zip(points, scalars):
        if pt is not None and int(s) % R:
            acc = add(acc, mul(pt, int(s), ops), ops)
    return acc


# ---------------------------------------------------------------------------------------------
# Fp12 = Fp[w] / (w^12 - 18 w^6 + 82): lists of 12 ints


def f12_mul(a, b):
    out = [0] * 23
    for i, ai in enumerate(a):
        if ai:
            for j, bj in enumerate(b):
                if bj:
                    out[i + j] += ai * bj
    for k in range(22, 11, -1):  # w^k = 18 w^(k-6) - 82 w^(k-12)
        c = out[k]
        if c:
            out[k - 6] += 18 * c
            out[k - 12] -= 82 * c
    return [v % P for v in out[:12]]


def f12_from_f2(a, shift: int) -> dict:
    """(a0 + a1 i) w^shift as {power: coefficient} (i = w^6 - 9), shift < 6."""
    return {shift: (a[0] - 9 * a[1]) % P, shift + 6: a[1]}


def _line(lam, xt, yt, pt_p) -> list:
    """yP - lam xP w + (lam xT - yT) w^3 as a dense Fp12 element (see the module docstring)."""
    xp, yp = pt_p
    out = [0] * 12
    out[0] = yp
    for k, v in f12_from_f2((lam[0] * -xp % P, lam[1] * -xp % P), 1).items():
        out[k] = (out[k] + v) % P
    for k, v in f12_from_f2(f2_sub(f2_mul(lam, xt), yt), 3).items():
        out[k] = (out[k] + v) % P
    return out


def _step(t, q, pt_p):
    """(t + q, the line through t and q at P); q = t doubles (tangent)."""
    (xt, yt), (xq, yq) = t, q
    if t == q:
        lam = f2_mul(f2_mul((3, 0), f2_sqr(xt)), f2_inv(f2_add(yt, yt)))
    else:
        lam = f2_mul(f2_sub(yq, yt), f2_inv(f2_sub(xq, xt)))
    x3 = f2_sub(f2_sub(f2_sqr(lam), xt), xq)
    y3 = f2_sub(f2_mul(lam, f2_sub(xt, x3)), yt)
    return (x3, y3), _line(lam, xt, yt, pt_p)


def miller_loop(pairs) -> list:
    """prod f_(6u+2, Q)(P) * l_(T, pi(Q))(P) * l_(T + pi(Q), -pi^2(Q))(P) over (P, Q) pairs
    (pairs with a point at infinity contribute 1 and are skipped)."""
    pairs = [(p, q) for p, q in pairs if p is not None and q is not None]
    f = [1] + [0] * 11
    ts = [q for _, q in pairs]
    for bit in bin(ATE_LOOP)[3:]:
        f = f12_mul(f, f)
        for k, (p, q) in enumerate(pairs):
            ts[k], line = _step(ts[k], ts[k], p)
            f = f12_mul(f, line)
            if bit == "1":
                ts[k], line = _step(ts[k], q, p)
                f = f12_mul(f, line)
    for k, (p, q) in enumerate(pairs):
        q1 = psi(q)
        q2 = (f2_mul(q[0], G22), f2_sub((0, 0), f2_mul(q[1], G23)))  # -pi^2(Q)
        ts[k], line = _step(ts[k], q1, p)
        f = f12_mul(f, line)
        _, line = _step(ts[k], q2, p)
        f = f12_mul(f, line)
    return f


def _w_powers(e: int) -> list:
    """(w^(e - 1))^j for j < 12 as Fp12 elements: the Frobenius x -> x^e of Fp12 (e = p^k) maps
    sum c_j w^j to sum c_j (w^(e-1))^j w^j, and w^(e-1) = xi^((e-1)/6) lies in Fp2."""
    g = f2_pow(XI, (e - 1) // 6)
    out, acc = [], (1, 0)
    for _ in range(12):
        el = [0] * 12
        for k, v in f12_from_f2(acc, 0).items():
            el[k] = v
        out.append(el)
        acc = f2_mul(acc, g)
    return out


_FROB = {k: _w_powers(P**k) for k in (1, 2, 3, 6)}


def f12_frobenius(a, k: int) -> list:
    """a^(p^k) for k in (1, 2, 3, 6)."""
    out = [0] * 12
    for j, c in enumerate(a):
        if c:
            term = f12_mul(_FROB[k][j], [0] * j + [c] + [0] * (11 - j))
            out = [(x + y) % P for x, y in zip(out, term)]
    return out


def f12_pow(a, e: int) -> list:
    out = [1] + [0] * 11
    for bit in bin(e)[2:]:
        out = f12_mul(out, out)
        if bit == "1":
            out = f12_mul(out, a)
    return out


HARD = (P**4 - P**2 + 1) // R
# HARD in base p with coefficients polynomials in u (Devegili, Scott, Dahab 2007): HARD = L0 + L1 p
# + L2 p^2 + p^3, |L0|, |L1| < 2^192, L2 < 2^127; checked when the module loads.
HARD_P_DIGITS = (-36 * U**3 - 30 * U**2 - 18 * U - 2, -36 * U**3 - 18 * U**2 - 12 * U + 1, 6 * U**2 + 1)
assert sum(d * P**k for k, d in enumerate(HARD_P_DIGITS)) + P**3 == HARD
# The hard part as snarkjs (wasmcurves' bn128 __finalExponentiationLastChunk) and arkworks compute
# it (Fuentes-Castaneda, Knapp, Rodriguez-Henriquez's chain): exponent LAMBDA = 2u(6u^2 + 3u + 1) h
# mod r, a fixed power of the reduced pairing. The same value as theirs is what makes
# vk_alphabeta_12 byte-identical to snarkjs's export.
LAMBDA = ((12 * U**3 + 12 * U**2 + 6 * U + 1) + (12 * U**3 + 6 * U**2 + 4 * U) * P
          + (12 * U**3 + 6 * U**2 + 6 * U) * P**2 + (12 * U**3 + 6 * U**2 + 4 * U - 1) * P**3)


def final_exponentiation(f) -> list:
    """f^((p^6 - 1)(p^2 + 1) LAMBDA): the reduced pairing to the fixed power snarkjs uses."""
    g = f12_mul(f12_frobenius(f, 6), f12_inv(f))  # f^(p^6 - 1)
    g = f12_mul(f12_frobenius(g, 2), g)  # ^(p^2 + 1)
    return f12_pow(g, LAMBDA)


def f12_inv(a) -> list:
    """a^-1 = a^(p^6) * n^-1 with n = a^(p^6 + 1), which lies in Fp6 = Fp[w^2] (fixed by x -> x^(p^6)).
    n is inverted through its norm to Fp2, m = n^(1 + p^2 + p^4) (the product of its conjugates
    over Fp2): n^-1 = n^(p^2) n^(p^4) m^-1, and m^-1 is one Fp2 inversion. ~25 Fp12 products
    against ~2,300 for the power n^(p^6 - 2) it replaces (f12_inv_pow, kept as the test's oracle)."""
    conj = f12_frobenius(a, 6)
    n = f12_mul(a, conj)
    n2 = f12_frobenius(n, 2)
    n4 = f12_frobenius(n2, 2)
    n24 = f12_mul(n2, n4)
    m = f12_mul(n, n24)  # in Fp2: c0 + c1 i = (c0 - 9 c1) + c1 w^6 (i = w^6 - 9)
    if any(m[k] for k in range(12) if k not in (0, 6)) or not (m[0] or m[6]):
        raise ZeroDivisionError("Fp12 inverse of zero (or a norm outside Fp2: not a field element)")
    m_inv = [0] * 12
    for k, v in f12_from_f2(f2_inv(((m[0] + 9 * m[6]) % P, m[6])), 0).items():
        m_inv[k] = v
    return f12_mul(conj, f12_mul(n24, m_inv))


def f12_inv_pow(a) -> list:
    """a^-1 as a^(p^6) * (a^(p^6 + 1))^(p^6 - 2): slow and plainly right (the oracle for f12_inv)."""
    conj = f12_frobenius(a, 6)
    n = f12_mul(a, conj)  # in Fp6: a power p^6 - 2 inverts it
    return f12_mul(conj, f12_pow(n, P**6 - 2))


ONE12 = [1] + [0] * 11


def cyclotomic_pow_hard(m) -> list:
    """m^HARD for m in the cyclotomic subgroup (m^(p^6 + 1) = 1: after the easy part), from HARD's
    base-p digits: m^HARD = prod_k (m^(p^k))^(L_k) * m^(p^3), the three powers sharing their
    squarings (Straus: ~192 squarings and ~192 products against f12_pow's ~760 and ~380). A
    negative digit raises m^(p^6) (the inverse there) instead."""
    bases = []
    for k, d in enumerate(HARD_P_DIGITS):
        b = f12_frobenius(m, k) if k else m
        bases.append(f12_frobenius(b, 6) if d < 0 else b)
    exps = [abs(d) for d in HARD_P_DIGITS]
    table = {0: ONE12}  # products of every subset of the bases, by bit mask
    for mask in range(1, 8):
        low = mask & -mask
        table[mask] = f12_mul(table[mask ^ low], bases[low.bit_length() - 1])
    out = ONE12
    for bit in range(max(e.bit_length() for e in exps) - 1, -1, -1):
        out = f12_mul(out, out)
        mask = sum(1 << k for k, e in enumerate(exps) if e >> bit & 1)
        if mask:
            out = f12_mul(out, table[mask])
    return f12_mul(out, f12_frobenius(m, 3))


def pairing_check(pairs) -> bool:
    """True when prod e(P_k, Q_k) = 1: the Groth16 verification equation. One Miller loop for all
    pairs, f its value; the product is f^((p^6 - 1)(p^2 + 1) HARD): the easy part (one inversion,
    two Frobenius maps) puts m = f^((p^6 - 1)(p^2 + 1)) in the cyclotomic subgroup, where the hard
    part is cyclotomic_pow_hard's (~3x cheaper than a plain power by HARD)."""
    f = miller_loop(pairs)
    try:
        m = f12_mul(f12_frobenius(f, 6), f12_inv(f))  # f^(p^6 - 1)
    except ZeroDivisionError:  # f = 0: no pairing product is 0; refused rather than taken as 1
        return False
    m = f12_mul(f12_frobenius(m, 2), m)  # ^(p^2 + 1)
    return cyclotomic_pow_hard(m) == ONE12


def pairing(p1, q2) -> list:
    """e(P, Q) in the flat Fp12 representation, the value snarkjs computes (final_exponentiation)."""
    return final_exponentiation(miller_loop([(p1, q2)]))


def gt_tower(a) -> list:
    """A flat Fp12 value in snarkjs's tower nesting [[c0.c0, c0.c1, c0.c2], [c1.c0, c1.c1, c1.c2]],
    each an Fp2 [re, im]: sum_(j<6) ((c_j + 9 c_(j+6)) + c_(j+6) i) w^j with w^2 = v."""
    fp2 = [((a[j] + 9 * a[j + 6]) % P, a[j + 6]) for j in range(6)]
    return [[list(fp2[0]), list(fp2[2]), list(fp2[4])], [list(fp2[1]), list(fp2[3]), list(fp2[5])]]
