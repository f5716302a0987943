"""Elliptic-curve MSM kernels in numba, written once over a coordinate field (templates below),
instantiated per group by fast/limb_arith.py's ``instantiate``: BN254's G1 over Fp (4 limbs)
and G2 over Fp2 = Fp[i]/(i^2 + 1), for fast/bn254_msm.py.

The group templates call the coordinate field through the names f_mul, f_sqr, f_add, f_sub,
f_neg, f_is_zero, f_load, f_store and the constants F_ZERO, F_ONE (Montgomery one); a group's
namespace binds them to Fp's tuple operations (limb_arith.field_namespace) or to the Fp2
templates here. Elements are limb tuples (Fp) or pairs of them (Fp2), in Montgomery form.

Points: affine bases as flat rows (``uint64[n, 2 k]``, k the u64s of a coordinate: x then y;
all zero = infinity), accumulators in XYZZ (x = X/ZZ, y = Y/ZZZ, ZZ = 0 for infinity; EFD
shortw/xyzz with a = 0: add-2008-s, dbl-2008-s-1, madd-2008-s, mdbl-2008-s-1, the formulas of
ref/bn254_xyzz.py), stored as rows of 4 k u64s.

MSM (Pippenger, signed windows of c bits): scalar digits in [-2^(c-1), 2^(c-1)], buckets
2^(c-1) per window; a negative digit adds the negated base. Windows run one after another in a
kernel that releases the GIL: the CPU backend runs several MSMs at once on its threads.
"""

# ruff: noqa: F821 (the templates' field operations and constants are their namespace's globals)

from __future__ import annotations

import numpy as np
from numba import njit

from .limb_arith import KERNEL_OPTIONS

# ------------------------------------------------------------------------------------------------
# Fp2 = Fp[i]/(i^2 + 1) over an Fp namespace (mul, add, sub, neg, is_zero of limb_arith)


def fp2_mul(a, b):
    """Karatsuba: 3 Fp products."""
    t0, t1 = mul(a[0], b[0]), mul(a[1], b[1])
    cross = mul(add(a[0], a[1]), add(b[0], b[1]))
    return sub(t0, t1), sub(sub(cross, t0), t1)


def fp2_sqr(a):
    """(a0 + a1)(a0 - a1) + 2 a0 a1 i: 2 Fp products."""
    return mul(add(a[0], a[1]), sub(a[0], a[1])), mul(add(a[0], a[0]), a[1])


def fp2_add(a, b):
    return add(a[0], b[0]), add(a[1], b[1])


def fp2_sub(a, b):
    return sub(a[0], b[0]), sub(a[1], b[1])


def fp2_neg(a):
    return neg(a[0]), neg(a[1])


def fp2_is_zero(a):
    return is_zero(a[0]) and is_zero(a[1])


def fp_sqr(a):
    return mul(a, a)


def fp_load(arr, i, k):
    """Coordinate k (4 u64s from 4 k) of row i."""
    b = 4 * k
    return arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3]


def fp_store(arr, i, k, v):
    b = 4 * k
    arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3] = v


def fp2_load(arr, i, k):
    """Coordinate k (c0 then c1: 8 u64s from 8 k) of row i."""
    b = 8 * k
    return ((arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3]),
            (arr[i, b + 4], arr[i, b + 5], arr[i, b + 6], arr[i, b + 7]))


def fp2_store(arr, i, k, v):
    b = 8 * k
    arr[i, b], arr[i, b + 1], arr[i, b + 2], arr[i, b + 3] = v[0]
    arr[i, b + 4], arr[i, b + 5], arr[i, b + 6], arr[i, b + 7] = v[1]


def fp_inv(a):
    """a^(p - 2) (a != 0): INV_BITS, the exponent's bits from the top, are the namespace's."""
    r = MONT_ONE
    for k in range(len(INV_BITS)):
        r = mul(r, r)
        if INV_BITS[k]:
            r = mul(r, a)
    return r


def fp2_inv(a):
    """(a0 - a1 i) / (a0^2 + a1^2)."""
    t = fp_inv(add(mul(a[0], a[0]), mul(a[1], a[1])))
    return mul(a[0], t), neg(mul(a[1], t))


def fp2_eq(a, b):
    return eq(a[0], b[0]) and eq(a[1], b[1])


def fp2_conj(a):
    return a[0], neg(a[1])


def fp_conj(a):
    return a


FP_HELPERS = (fp_sqr, fp_load, fp_store, fp_inv, fp_conj)
FP2_HELPERS = (fp2_mul, fp2_sqr, fp2_add, fp2_sub, fp2_neg, fp2_is_zero, fp2_load, fp2_store, fp2_inv, fp2_eq, fp2_conj)


def to_mont(x):
    """x[i] <- x[i] * 2^256 (standard -> Montgomery form), x ``uint64[m, 4]`` of Fp elements."""
    for i in range(x.shape[0]):
        fp_store(x, i, 0, mul(fp_load(x, i, 0), MONT_R2))


def from_mont(x):
    """x[i] <- x[i] / 2^256 (Montgomery -> standard form)."""
    for i in range(x.shape[0]):
        fp_store(x, i, 0, mul(fp_load(x, i, 0), (ONE, Z, Z, Z)))


FP_KERNELS = (to_mont, from_mont)

# ------------------------------------------------------------------------------------------------
# the group templates (f_* and F_*: the coordinate field of a group's namespace)


def xyzz_inf():
    return F_ZERO, F_ZERO, F_ZERO, F_ZERO


def xyzz_dbl(p):
    """2 p: 6M + 3S (dbl-2008-s-1)."""
    X1, Y1, ZZ1, ZZZ1 = p
    if f_is_zero(ZZ1):
        return p
    U = f_add(Y1, Y1)
    V = f_sqr(U)
    W = f_mul(U, V)
    S = f_mul(X1, V)
    X1s = f_sqr(X1)
    M = f_add(f_add(X1s, X1s), X1s)
    X3 = f_sub(f_sqr(M), f_add(S, S))
    Y3 = f_sub(f_mul(M, f_sub(S, X3)), f_mul(W, Y1))
    return X3, Y3, f_mul(V, ZZ1), f_mul(W, ZZZ1)


def xyzz_mdbl(x, y):
    """2 (x, y) for an affine point: 4M + 2S (mdbl-2008-s-1)."""
    U = f_add(y, y)
    V = f_sqr(U)
    W = f_mul(U, V)
    S = f_mul(x, V)
    xs = f_sqr(x)
    M = f_add(f_add(xs, xs), xs)
    X3 = f_sub(f_sqr(M), f_add(S, S))
    return X3, f_sub(f_mul(M, f_sub(S, X3)), f_mul(W, y)), V, W


def xyzz_add(p, q):
    """p + q: 12M + 2S (add-2008-s); equal inputs double, opposite ones give infinity."""
    X1, Y1, ZZ1, ZZZ1 = p
    X2, Y2, ZZ2, ZZZ2 = q
    if f_is_zero(ZZ1):
        return q
    if f_is_zero(ZZ2):
        return p
    U1, U2 = f_mul(X1, ZZ2), f_mul(X2, ZZ1)
    S1, S2 = f_mul(Y1, ZZZ2), f_mul(Y2, ZZZ1)
    P, R = f_sub(U2, U1), f_sub(S2, S1)
    if f_is_zero(P):
        if f_is_zero(R):
            return xyzz_dbl(p)
        return xyzz_inf()
    PP = f_sqr(P)
    PPP = f_mul(P, PP)
    Q = f_mul(U1, PP)
    X3 = f_sub(f_sub(f_sqr(R), PPP), f_add(Q, Q))
    Y3 = f_sub(f_mul(R, f_sub(Q, X3)), f_mul(S1, PPP))
    return X3, Y3, f_mul(f_mul(ZZ1, ZZ2), PP), f_mul(f_mul(ZZZ1, ZZZ2), PPP)


def xyzz_madd(p, x, y):
    """p + (x, y) for an affine (x, y): 8M + 2S (madd-2008-s)."""
    X1, Y1, ZZ1, ZZZ1 = p
    if f_is_zero(ZZ1):
        return x, y, F_ONE, F_ONE
    P = f_sub(f_mul(x, ZZ1), X1)
    R = f_sub(f_mul(y, ZZZ1), Y1)
    if f_is_zero(P):
        if f_is_zero(R):
            return xyzz_mdbl(x, y)
        return xyzz_inf()
    PP = f_sqr(P)
    PPP = f_mul(P, PP)
    Q = f_mul(X1, PP)
    X3 = f_sub(f_sub(f_sqr(R), PPP), f_add(Q, Q))
    Y3 = f_sub(f_mul(R, f_sub(Q, X3)), f_mul(Y1, PPP))
    return X3, Y3, f_mul(ZZ1, PP), f_mul(ZZZ1, PPP)


def xyzz_load(arr, i):
    return f_load(arr, i, 0), f_load(arr, i, 1), f_load(arr, i, 2), f_load(arr, i, 3)


def xyzz_store(arr, i, p):
    for k in range(4):
        f_store(arr, i, k, p[k])


def flush_batch(points, buckets, bp, bb, bs, prefix, cnt, acc):
    """Add the batch's points to their (distinct) affine buckets with one inversion (Montgomery's
    trick): prefix[j] = prod of the first j denominators x_p - x_b, acc the product of all."""
    inv = f_inv(acc)
    for j in range(cnt - 1, -1, -1):
        i, b = bp[j], bb[j]
        x, y = f_load(points, i, 0), f_load(points, i, 1)
        if bs[j]:
            y = f_neg(y)
        bx, by = f_load(buckets, b, 0), f_load(buckets, b, 1)
        den = f_sub(x, bx)
        inv_j = f_mul(inv, f_load(prefix, j, 0))  # 1 / den
        inv = f_mul(inv, den)
        lam = f_mul(f_sub(y, by), inv_j)
        x3 = f_sub(f_sub(f_sqr(lam), bx), x)
        f_store(buckets, b, 0, x3)
        f_store(buckets, b, 1, f_sub(f_mul(lam, f_sub(bx, x3)), by))


GROUP_HELPERS = (xyzz_inf, xyzz_dbl, xyzz_mdbl, xyzz_add, xyzz_madd, xyzz_load, xyzz_store, flush_batch)


def window_sum(points, digits, w, buckets, windows):
    """windows[w] = sum_i digits[w, i] * points[i] (buckets: scratch of 2^(c-1) XYZZ rows)."""
    buckets[:] = 0
    for i in range(points.shape[0]):
        d = digits[w, i]
        if d == 0:
            continue
        x, y = f_load(points, i, 0), f_load(points, i, 1)
        if f_is_zero(x) and f_is_zero(y):  # infinity (no affine point of BN254 has x = y = 0)
            continue
        if d < 0:
            y = f_neg(y)
            d = -d
        xyzz_store(buckets, d - 1, xyzz_madd(xyzz_load(buckets, d - 1), x, y))
    running, total = xyzz_inf(), xyzz_inf()
    for b in range(buckets.shape[0] - 1, -1, -1):  # total = sum_b (b + 1) bucket_b
        running = xyzz_add(running, xyzz_load(buckets, b))
        total = xyzz_add(total, running)
    xyzz_store(windows, w, total)


def window_sum_affine(points, digits, w, buckets, filled, busy, xbuckets, bp, bb, bs, prefix, windows):
    """windows[w] as window_sum, with affine buckets updated in batches of len(bp) additions that
    share one inversion (6 products an addition against madd's 10). A point whose bucket is
    already in the open batch (or whose x is the bucket's: a doubling or a cancellation) goes to
    that bucket's XYZZ twin in xbuckets instead: skewed digits (many equal scalars) stay linear."""
    batch = bp.shape[0]
    filled[:] = 0
    busy[:] = 0
    xbuckets[:] = 0
    epoch, cnt, acc = 1, 0, F_ONE
    for i in range(points.shape[0]):
        d = digits[w, i]
        if d == 0:
            continue
        x, y = f_load(points, i, 0), f_load(points, i, 1)
        if f_is_zero(x) and f_is_zero(y):  # infinity
            continue
        if d < 0:
            y = f_neg(y)
        b = abs(d) - 1
        if filled[b] == 0:
            f_store(buckets, b, 0, x)
            f_store(buckets, b, 1, y)
            filled[b] = 1
            continue
        den = f_sub(x, f_load(buckets, b, 0))
        if busy[b] == epoch or f_is_zero(den):
            xyzz_store(xbuckets, b, xyzz_madd(xyzz_load(xbuckets, b), x, y))
            continue
        busy[b] = epoch
        bp[cnt], bb[cnt], bs[cnt] = i, b, d < 0
        f_store(prefix, cnt, 0, acc)
        acc = f_mul(acc, den)
        cnt += 1
        if cnt == batch:
            flush_batch(points, buckets, bp, bb, bs, prefix, cnt, acc)
            epoch, cnt, acc = epoch + 1, 0, F_ONE
    if cnt > 0:
        flush_batch(points, buckets, bp, bb, bs, prefix, cnt, acc)
    running, total = xyzz_inf(), xyzz_inf()
    for b in range(filled.shape[0] - 1, -1, -1):  # total = sum_b (b + 1) bucket_b
        if filled[b]:
            running = xyzz_madd(running, f_load(buckets, b, 0), f_load(buckets, b, 1))
        running = xyzz_add(running, xyzz_load(xbuckets, b))
        total = xyzz_add(total, running)
    xyzz_store(windows, w, total)


def horner(windows, c, out):
    """out[0] = sum_w 2^(c w) windows[w] (from the top window)."""
    nw = windows.shape[0]
    acc = xyzz_load(windows, nw - 1)
    for w in range(nw - 2, -1, -1):
        for _ in range(c):
            acc = xyzz_dbl(acc)
        acc = xyzz_add(acc, xyzz_load(windows, w))
    xyzz_store(out, 0, acc)


def msm_affine(points, digits, c, buckets, filled, busy, xbuckets, bp, bb, bs, prefix, windows, out):
    """msm with window_sum_affine (scratch: see there; buckets affine rows of 2^(c-1))."""
    for w in range(digits.shape[0]):
        window_sum_affine(points, digits, w, buckets, filled, busy, xbuckets, bp, bb, bs, prefix, windows)
    horner(windows, c, out)


def msm(points, digits, c, buckets, windows, out):
    """out[0] = sum_w 2^(c w) windows[w] after every window_sum (Horner, from the top window)."""
    nw = digits.shape[0]
    for w in range(nw):
        window_sum(points, digits, w, buckets, windows)
    acc = xyzz_load(windows, nw - 1)
    for w in range(nw - 2, -1, -1):
        for _ in range(c):
            acc = xyzz_dbl(acc)
        acc = xyzz_add(acc, xyzz_load(windows, w))
    xyzz_store(out, 0, acc)


def precompute(points, c, nw, tmp, prefix, out):
    """out[i nw + j] = 2^(c j) points[i], affine Montgomery rows (infinity all zero): the
    fixed-base tables of bn254_msm (one bucket pass over every (i, j), no Horner). tmp: XYZZ
    rows for a block of points' nw multiples (len(tmp) / nw points a block, their ZZZ inverted
    together), prefix: as many field rows."""
    block = tmp.shape[0] // nw
    n = points.shape[0]
    for lo in range(0, n, block):
        m = 0
        for i in range(lo, min(n, lo + block)):
            x, y = f_load(points, i, 0), f_load(points, i, 1)
            p = xyzz_inf() if f_is_zero(x) and f_is_zero(y) else (x, y, F_ONE, F_ONE)
            for j in range(nw):
                if j > 0:
                    for _ in range(c):
                        p = xyzz_dbl(p)
                xyzz_store(tmp, m, p)
                m += 1
        acc = F_ONE
        for t in range(m):
            f_store(prefix, t, 0, acc)
            zzz = f_load(tmp, t, 3)
            if not f_is_zero(zzz):
                acc = f_mul(acc, zzz)
        inv = f_inv(acc)
        for t in range(m - 1, -1, -1):
            row = lo * nw + t
            zzz = f_load(tmp, t, 3)
            if f_is_zero(zzz):
                f_store(out, row, 0, F_ZERO)
                f_store(out, row, 1, F_ZERO)
                continue
            zi = f_mul(inv, f_load(prefix, t, 0))  # 1 / ZZZ
            inv = f_mul(inv, zzz)
            zz = f_load(tmp, t, 2)
            zzi = f_mul(f_sqr(zi), f_sqr(zz))  # 1 / ZZ = ZZ^2 / ZZZ^2
            f_store(out, row, 0, f_mul(f_load(tmp, t, 0), zzi))
            f_store(out, row, 1, f_mul(f_load(tmp, t, 1), zi))


def msm_table(table, digits, buckets, filled, busy, xbuckets, bp, bb, bs, prefix, windows, out):
    """out[0] = sum_k digits[0, k] table[k]: one window_sum_affine over a fixed-base table and its
    digits laid out alike (k = i nw + j)."""
    window_sum_affine(table, digits, 0, buckets, filled, busy, xbuckets, bp, bb, bs, prefix, windows)
    xyzz_store(out, 0, xyzz_load(windows, 0))


def first_invalid(points, psi_check, bad):
    """bad[0] = the index of the first point (affine Montgomery rows; infinity passes) off the curve
    y^2 = x^3 + F_B or, with psi_check, outside the subgroup of order r by the BN test psi(Q) =
    [6u^2] Q (ref.bn254.in_g2; PSI_X, PSI_Y the Frobenius constants, PSI_BITS the bits of 6u^2
    from the top); -1 when every point passes. bad[1]: 1 off the curve, 2 outside the subgroup."""
    bad[0], bad[1] = -1, 0
    for i in range(points.shape[0]):
        x, y = f_load(points, i, 0), f_load(points, i, 1)
        if f_is_zero(x) and f_is_zero(y):
            continue
        if not f_eq(f_sqr(y), f_add(f_mul(f_sqr(x), x), F_B)):
            bad[0], bad[1] = i, 1
            return
        if psi_check:
            px, py = f_mul(f_conj(x), PSI_X), f_mul(f_conj(y), PSI_Y)
            acc = xyzz_inf()
            for k in range(len(PSI_BITS)):
                acc = xyzz_dbl(acc)
                if PSI_BITS[k]:
                    acc = xyzz_madd(acc, x, y)
            X, Y, ZZ, ZZZ = acc
            if f_is_zero(ZZ) or not (f_eq(X, f_mul(px, ZZ)) and f_eq(Y, f_mul(py, ZZZ))):
                bad[0], bad[1] = i, 2
                return


def add_rows(a, b, out):
    """out[i] = a[i] + b[i] (XYZZ rows): tests of the addition law."""
    for i in range(a.shape[0]):
        xyzz_store(out, i, xyzz_add(xyzz_load(a, i), xyzz_load(b, i)))


def madd_rows(a, points, out):
    """out[i] = a[i] + points[i] (XYZZ + affine; affine infinity leaves a[i]): tests."""
    for i in range(a.shape[0]):
        x, y = f_load(points, i, 0), f_load(points, i, 1)
        if f_is_zero(x) and f_is_zero(y):
            xyzz_store(out, i, xyzz_load(a, i))
        else:
            xyzz_store(out, i, xyzz_madd(xyzz_load(a, i), x, y))


def dbl_rows(a, out):
    for i in range(a.shape[0]):
        xyzz_store(out, i, xyzz_dbl(xyzz_load(a, i)))


GROUP_HELPERS += (window_sum_affine, horner)
GROUP_KERNELS = (window_sum, msm, msm_affine, precompute, msm_table, first_invalid, add_rows, madd_rows, dbl_rows)


@njit(**KERNEL_OPTIONS)
def signed_digits(scalars, c, digits):
    """digits[w, i] in [-2^(c-1), 2^(c-1)] with sum_w digits[w, i] 2^(c w) = scalars[i]
    (``uint64[n, 4]`` below 2^(64 * 4 - 1); digits ``int32[nw, n]``, nw c >= the scalars' bits + 1)."""
    nw = digits.shape[0]
    mask = (1 << c) - 1
    half = 1 << (c - 1)
    for i in range(scalars.shape[0]):
        carry = 0
        for w in range(nw):
            s = w * c
            limb, off = s // 64, s % 64
            v = 0
            if limb < 4:
                v = np.int64((scalars[i, limb] >> np.uint64(off)) & np.uint64(mask))
                if off + c > 64 and limb + 1 < 4:
                    v |= np.int64((scalars[i, limb + 1] << np.uint64(64 - off)) & np.uint64(mask))
            v += carry
            if v > half:
                v -= 1 << c
                carry = 1
            else:
                carry = 0
            digits[w, i] = v
