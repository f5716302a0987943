"""neptune's "optimized static" Poseidon constants, computed as neptune 11 computes them.

Filecoin's Poseidon circuit (``circuit/poseidon.py``) does not use the textbook round constants and
MDS matrix directly: it adds *compressed* round constants after each S-box and mixes with a
*pre-sparse* matrix and one *sparse* matrix per partial round. Which values the S-box outputs hold,
and so every coefficient of the circuit's linear combinations, depends on exactly how neptune derives
them, so this is a line-by-line port of neptune's ``preprocessing.rs`` (``compress_round_constants``
with every partial round preprocessed) and ``mds.rs`` (``derive_mds_matrices``,
``factor_to_sparse_matrices``), not an independent derivation (``poseidon_batch.sparse_plan`` is one:
the same function, different intermediate values).

Conventions kept from neptune's ``matrix.rs``: ``apply_matrix(m, v)[j] = sum_i m[i][j] * v[i]`` (the
state is a row vector multiplied from the left), ``mat_mul`` is the ordinary product. Matrices are
lists of rows of Fr ints.

``hash_optimized_static`` evaluates the permutation in this form outside a circuit (neptune's
``Poseidon::hash_optimized_static``); it equals ``poseidon.permute``'s digest only if the port is right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from ..field import R_MOD
from .poseidon import PoseidonConstants, constants

Matrix = list[list[int]]


def mat_mul(a: Matrix, b: Matrix) -> Matrix:
    """The ordinary product a * b mod r."""
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) % R_MOD for j in range(len(b[0]))] for i in range(len(a))]


def mat_inv(a: Matrix) -> Matrix:
    """The inverse mod r by Gauss-Jordan elimination (an inverse is unique, so any method gives
    neptune's ``invert``); a singular matrix raises ValueError."""
    n = len(a)
    m = [list(row) + [int(i == j) for j in range(n)] for i, row in enumerate(a)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col]), None)
        if pivot is None:
            raise ValueError(f"matrix of size {n} is singular (column {col} has no pivot)")
        m[col], m[pivot] = m[pivot], m[col]
        inv = pow(m[col][col], -1, R_MOD)
        m[col] = [x * inv % R_MOD for x in m[col]]
        for r in range(n):
            if r != col and m[r][col]:
                f = m[r][col]
                m[r] = [(x - f * y) % R_MOD for x, y in zip(m[r], m[col])]
    return [row[n:] for row in m]


def apply_matrix(m: Matrix, v: Sequence[int]) -> list[int]:
    """neptune's ``apply_matrix``: the row vector v times m, ``out[j] = sum_i m[i][j] * v[i]``."""
    return [sum(m[i][j] * v[i] for i in range(len(v))) % R_MOD for j in range(len(v))]


def minor00(m: Matrix) -> Matrix:
    """m without its first row and column (neptune's ``minor(m, 0, 0)``, M-hat)."""
    return [row[1:] for row in m[1:]]


@dataclass(frozen=True)
class SparseMatrix:
    """One partial round's M'': dense first row and column, identity elsewhere (neptune's
    ``SparseMatrix``). ``w_hat`` is the first column, ``v_rest`` the first row without its first entry."""

    w_hat: tuple[int, ...]
    v_rest: tuple[int, ...]


def _m_prime(m: Matrix) -> Matrix:
    """M' = diag(1, M-hat): M's first row and column replaced by those of the identity."""
    t = len(m)
    return [[int(j == 0) for j in range(t)]] + [[0] + list(row[1:]) for row in m[1:]]


def _m_double_prime(m: Matrix) -> Matrix:
    """M'' with M' * M'' = M: first row of M, first column w_hat = (M-hat^-1 applied to M's first
    column below the corner), identity elsewhere (neptune's ``make_double_prime``)."""
    t = len(m)
    w_hat = apply_matrix(mat_inv(minor00(m)), [row[0] for row in m[1:]])
    rows = [[m[0][0], *m[0][1:]]]
    for i in range(1, t):
        rows.append([w_hat[i - 1]] + [int(j == i) for j in range(1, t)])
    return rows


def factor_to_sparse_matrices(base: Matrix, n: int) -> tuple[Matrix, list[SparseMatrix]]:
    """(pre-sparse matrix, n sparse matrices in the order the partial rounds use them).

    Working back from the last partial round: factor the current matrix as M' * M'', keep M'' for
    that round and carry M' into the round before as base * M'; what remains after n rounds is the
    pre-sparse matrix of the last first-half full round."""
    curr, acc = base, []
    for _ in range(n):
        acc.append(_m_double_prime(curr))
        curr = mat_mul(base, _m_prime(curr))
    acc.reverse()
    return curr, [SparseMatrix(tuple(row[0] for row in m), tuple(m[0][1:])) for m in acc]


def compress_round_constants(c: PoseidonConstants) -> list[int]:
    """neptune's ``compress_round_constants`` with all partial rounds preprocessed: R_F * t + R_P
    constants, in the order the optimized hash consumes them.

    The first round's t constants are added before its S-boxes. Every later round's constants are
    pushed back through the MDS matrix (multiplied by M^-1) to be added right after the previous
    round's S-boxes; through the partial rounds they are pushed back from the last one, keeping at
    each step the single constant that meets the S-box (element 0) and carrying the rest."""
    t, half, rp = c.width, c.full_rounds // 2, c.partial_rounds
    m_inv = mat_inv([list(row) for row in c.mds])

    def round_keys(r: int) -> list[int]:
        return list(c.round_constants[r * t : (r + 1) * t])

    res = round_keys(0)
    for i in range(half - 1):
        res += apply_matrix(m_inv, round_keys(i + 1))
    final_round = half + rp
    acc, partial_keys = round_keys(final_round), []
    for i in range(rp):
        inverted = apply_matrix(m_inv, acc)
        partial_keys.append(inverted[0])
        inverted[0] = 0
        acc = [(a + b) % R_MOD for a, b in zip(round_keys(final_round - i - 1), inverted)]
    res += apply_matrix(m_inv, acc)
    res += reversed(partial_keys)
    for i in range(1, half):
        res += apply_matrix(m_inv, round_keys(i + final_round))
    return res


@dataclass(frozen=True)
class OptimizedConstants:
    """What neptune's ``PoseidonConstants`` holds for the optimized hash and circuit, for one arity."""

    base: PoseidonConstants
    compressed_round_constants: tuple[int, ...]
    pre_sparse_matrix: tuple[tuple[int, ...], ...]
    sparse_matrices: tuple[SparseMatrix, ...]

    @property
    def mds(self) -> tuple[tuple[int, ...], ...]:
        return self.base.mds


@cache
def optimized_constants(arity: int) -> OptimizedConstants:
    """The MerkleTree / Standard optimized constants of one arity (built once per process)."""
    c = constants(arity)
    compressed = compress_round_constants(c)
    if len(compressed) != c.full_rounds * c.width + c.partial_rounds:
        raise AssertionError(f"arity {arity}: {len(compressed)} compressed constants")
    pre, sparse = factor_to_sparse_matrices([list(row) for row in c.mds], c.partial_rounds)
    return OptimizedConstants(c, tuple(compressed), tuple(tuple(row) for row in pre), tuple(sparse))


def round_matrix(oc: OptimizedConstants, rnd: int) -> tuple[str, object]:
    """Which mix round ``rnd`` (0-based, every round counted) uses: ``("dense", matrix)`` for M or the
    pre-sparse matrix, ``("sparse", SparseMatrix)`` in the partial rounds (neptune's ``product_mds``)."""
    half = oc.base.full_rounds // 2
    if rnd == half - 1:
        return "dense", oc.pre_sparse_matrix
    if half - 1 < rnd < half + oc.base.partial_rounds:
        return "sparse", oc.sparse_matrices[rnd - half]
    return "dense", oc.mds


def _sbox(x: int, post: int = 0) -> int:
    return (pow(x, 5, R_MOD) + post) % R_MOD


def _mix(oc: OptimizedConstants, rnd: int, s: list[int]) -> list[int]:
    kind, m = round_matrix(oc, rnd)
    if kind == "dense":
        return apply_matrix(m, s)
    first = sum(w * x for w, x in zip(m.w_hat, s)) % R_MOD
    return [first] + [(s[j] + s[0] * m.v_rest[j - 1]) % R_MOD for j in range(1, len(s))]


def hash_optimized_static(values: Sequence[int], oc: OptimizedConstants | None = None) -> int:
    """neptune's ``hash_optimized_static`` of ``values`` (its length is the arity) with ``oc`` (by
    default the arity's MerkleTree constants): the same digest as ``poseidon.poseidon_hash`` when the
    compressed constants and matrices are right."""
    oc = oc or optimized_constants(len(values))
    c, t = oc.base, oc.base.width
    k = oc.compressed_round_constants
    s = [(x + y) % R_MOD for x, y in zip([c.domain_tag, *values], k[:t])]
    off, rnd, half = t, 0, c.full_rounds // 2
    for _ in range(half):
        s = _mix(oc, rnd, [_sbox(x, p) for x, p in zip(s, k[off : off + t])])
        off, rnd = off + t, rnd + 1
    for _ in range(c.partial_rounds):
        s = _mix(oc, rnd, [_sbox(s[0], k[off]), *s[1:]])
        off, rnd = off + 1, rnd + 1
    for _ in range(half - 1):
        s = _mix(oc, rnd, [_sbox(x, p) for x, p in zip(s, k[off : off + t])])
        off, rnd = off + t, rnd + 1
    s = _mix(oc, rnd, [_sbox(x) for x in s])
    if off != len(k):
        raise AssertionError(f"consumed {off} of {len(k)} compressed constants")
    return s[1]
