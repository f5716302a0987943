"""Poseidon over many inputs at once: neptune's permutation compiled with numba on the project's Fr
limbs, for whole tree levels (tree C's 2^18 columns of arity 11 in an 8 MiB sector, tree R's levels).

The same function as ``poseidon.permute`` (the reference; the tests compare the two), rearranged
as the Poseidon paper's appendix B (and neptune's "optimized static" mode) does, so partial rounds
cost O(t) instead of O(t^2):

1. Constants: in a partial round only element 0 goes through the S-box, so the constant added to
   elements 1..t-1 passes through linearly; it is carried, multiplied by M, into the next round's
   constants. Each partial round then adds one constant (to element 0); the carry out of the last
   one joins the constants of the first full round after them.
2. Matrices: each partial round's matrix N factors as N = B * A with A = diag(1, N[1:, 1:]) and B
   sparse (dense first row and column, identity elsewhere). A leaves element 0 alone, so it commutes
   with "add to element 0, S-box element 0" and moves into the previous round: that round's matrix
   becomes A * M. The last full round before the partial rounds multiplies by the final A * M.

Cost per hash, width t, Filecoin's R_F = 8 and R_P ~ 57: 8 * (t^2 + 3t) + R_P * (2t + 2)
Montgomery products, e.g. about 3,000 for arity 11 (the textbook form: about 9,800).
The state lives in Montgomery form (x * 2^256 mod r): every product is one ``mont_mul``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache

import numpy as np
from numba import njit

from ..fast.fr_kernels import NL, mod_add, mont_mul
from ..field import FR_R, FR_R2, R_MOD, fr_to_limbs
from .fr32 import check_nodes, limbs_as_nodes, nodes_as_limbs
from .poseidon import PoseidonConstants, constants
from .poseidon_preprocessing import Matrix, mat_inv, mat_mul

MIN_ROWS_PER_THREAD = 1024  # below this a thread's start costs more than its share of the hashing


@dataclass(frozen=True)
class SparsePlan:
    """The rearranged permutation's constants and matrices (ints, standard form); see the module notes."""

    full_constants: list[list[int]]  # R_F rows of t
    partial_constants: list[int]  # R_P, added to element 0
    pre_sparse: Matrix  # the last first-half full round's matrix (A * M)
    sparse_rows: list[list[int]]  # per partial round: B[0][0..t-1]
    sparse_cols: list[list[int]]  # per partial round: B[1..t-1][0]


def sparse_plan(c: PoseidonConstants) -> SparsePlan:
    """Derive the O(t) partial-round form of ``c``'s permutation (steps 1 and 2 of the module notes)."""
    t, half, mds = c.width, c.full_rounds // 2, [list(row) for row in c.mds]
    rc = [list(c.round_constants[r * t : (r + 1) * t]) for r in range(c.full_rounds + c.partial_rounds)]
    partial, carry = [], [0] * t
    for p in range(c.partial_rounds):
        e = [(a + b) % R_MOD for a, b in zip(rc[half + p], carry)]
        partial.append(e[0])
        carry = [sum(mds[j][i] * ([0] + e[1:])[i] for i in range(t)) % R_MOD for j in range(t)]
    after = [(a + b) % R_MOD for a, b in zip(rc[half + c.partial_rounds], carry)]
    full = rc[:half] + [after] + rc[half + c.partial_rounds + 1 :]
    rows, cols, n = [], [], mds
    for _ in range(c.partial_rounds):
        a_hat = [row[1:] for row in n[1:]]
        a_inv = mat_inv(a_hat)
        rows.append([n[0][0]] + [sum(n[0][1 + k] * a_inv[k][j] for k in range(t - 1)) % R_MOD for j in range(t - 1)])
        cols.append([n[i][0] for i in range(1, t)])
        n = mat_mul([[1] + [0] * (t - 1)] + [[0] + row for row in a_hat], mds)
    rows.reverse()
    cols.reverse()
    return SparsePlan(full, partial, n, rows, cols)


def _mont(values) -> np.ndarray:
    return fr_to_limbs([v * FR_R % R_MOD for v in values])


@cache
def _tables(arity: int) -> tuple[np.ndarray, ...]:
    """The sparse plan of one arity as Montgomery-form limb arrays, in ``_hash_rows``' argument order."""
    c = constants(arity)
    t, plan = c.width, sparse_plan(c)
    full = _mont([k for row in plan.full_constants for k in row]).reshape(-1, t, NL)
    mds = _mont([m for row in c.mds for m in row]).reshape(t, t, NL)
    pre = _mont([m for row in plan.pre_sparse for m in row]).reshape(t, t, NL)
    part = _mont(plan.partial_constants)
    rows = _mont([m for row in plan.sparse_rows for m in row]).reshape(-1, t, NL)
    cols = _mont([m for row in plan.sparse_cols for m in row]).reshape(-1, t - 1, NL)
    return full, mds, pre, part, rows, cols, _mont([c.domain_tag])[0]


@njit(nogil=True, cache=True, boundscheck=False)
def _mul(x, i, m):
    """mont_mul of row i of x by the limbs m."""
    return mont_mul(x[i, 0], x[i, 1], x[i, 2], x[i, 3], m[0], m[1], m[2], m[3])


@njit(nogil=True, cache=True, boundscheck=False)
def _sbox_add(x, i, c):
    """x[i] = (x[i] + c)^5 in Montgomery form: one addition, two squarings and one product."""
    a0, a1, a2, a3 = mod_add(x[i, 0], x[i, 1], x[i, 2], x[i, 3], c[0], c[1], c[2], c[3])
    s0, s1, s2, s3 = mont_mul(a0, a1, a2, a3, a0, a1, a2, a3)
    s0, s1, s2, s3 = mont_mul(s0, s1, s2, s3, s0, s1, s2, s3)
    x[i, 0], x[i, 1], x[i, 2], x[i, 3] = mont_mul(s0, s1, s2, s3, a0, a1, a2, a3)


@njit(nogil=True, cache=True, boundscheck=False)
def _full_round(state, tmp, consts, mat):
    """S-box every element after its constant, then state = mat * state (dense: t^2 products)."""
    t = state.shape[0]
    for i in range(t):
        _sbox_add(state, i, consts[i])
    for j in range(t):
        a0 = a1 = a2 = a3 = np.uint64(0)
        for i in range(t):
            p0, p1, p2, p3 = _mul(state, i, mat[j, i])
            a0, a1, a2, a3 = mod_add(a0, a1, a2, a3, p0, p1, p2, p3)
        tmp[j, 0], tmp[j, 1], tmp[j, 2], tmp[j, 3] = a0, a1, a2, a3
    state[:, :] = tmp


@njit(nogil=True, cache=True, boundscheck=False)
def _partial_round(state, const, row, col):
    """S-box element 0 after its constant, then the sparse matrix: 2t - 1 products."""
    t = state.shape[0]
    _sbox_add(state, 0, const)
    a0, a1, a2, a3 = _mul(state, 0, row[0])
    for i in range(1, t):
        p0, p1, p2, p3 = _mul(state, i, row[i])
        a0, a1, a2, a3 = mod_add(a0, a1, a2, a3, p0, p1, p2, p3)
    for i in range(1, t):
        p0, p1, p2, p3 = _mul(state, 0, col[i - 1])
        state[i, 0], state[i, 1], state[i, 2], state[i, 3] = mod_add(
            state[i, 0], state[i, 1], state[i, 2], state[i, 3], p0, p1, p2, p3)
    state[0, 0], state[0, 1], state[0, 2], state[0, 3] = a0, a1, a2, a3


@njit(nogil=True, cache=True, boundscheck=False)
def _hash_rows(inputs, out, full, mds, pre, part, rows, cols, tag, r2, one):
    """out[h] = state[1] after the permutation of [tag, inputs[h]...] (inputs, out: standard form;
    the tables: Montgomery form; r2 = 2^512 mod r enters Montgomery form, ``one`` leaves it)."""
    n, t = inputs.shape[0], inputs.shape[1] + 1
    half = full.shape[0] // 2
    state = np.empty((t, NL), dtype=np.uint64)
    tmp = np.empty((t, NL), dtype=np.uint64)
    for h in range(n):
        state[0, :] = tag
        for k in range(t - 1):
            state[k + 1, 0], state[k + 1, 1], state[k + 1, 2], state[k + 1, 3] = _mul(inputs[h], k, r2)
        for rnd in range(half):
            _full_round(state, tmp, full[rnd], pre if rnd == half - 1 else mds)
        for p in range(part.shape[0]):
            _partial_round(state, part[p], rows[p], cols[p])
        for rnd in range(half, 2 * half):
            _full_round(state, tmp, full[rnd], mds)
        out[h, 0], out[h, 1], out[h, 2], out[h, 3] = _mul(state, 1, one)


def hash_many(inputs: np.ndarray, threads: int | None = None) -> np.ndarray:
    """Poseidon digests ``uint64[n, 4]`` of n preimages ``uint64[n, arity, 4]`` (standard-form Fr
    limbs, each < r: a value that is not is refused, naming it). The rows are split over ``threads``
    threads (default: every core; the kernel releases the GIL)."""
    inputs = np.ascontiguousarray(inputs, dtype=np.uint64)
    if inputs.ndim != 3 or inputs.shape[2] != NL:
        raise ValueError(f"hash_many: need uint64[n, arity, {NL}] Fr limbs, have shape {inputs.shape}")
    arity = inputs.shape[1]
    check_nodes(limbs_as_nodes(inputs.reshape(-1, NL)), f"poseidon inputs (arity {arity}: node k is row k // {arity})")
    out = np.empty((inputs.shape[0], NL), dtype=np.uint64)
    r2, one = fr_to_limbs([FR_R2, 1])
    tables = _tables(arity)
    threads = max(1, min(threads or os.cpu_count() or 1, len(inputs) // MIN_ROWS_PER_THREAD))
    bounds = np.linspace(0, len(inputs), threads + 1).astype(int)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        jobs = [pool.submit(_hash_rows, inputs[lo:hi], out[lo:hi], *tables, r2, one)
                for lo, hi in zip(bounds[:-1], bounds[1:])]
        for job in jobs:
            job.result()
    return out


def hash_node_groups(nodes: np.ndarray, arity: int, threads: int | None = None) -> np.ndarray:
    """One tree level up: ``uint8[n / arity, 32]`` digests of consecutive groups of ``arity`` nodes."""
    if len(nodes) % arity:
        raise ValueError(f"a level of {len(nodes)} nodes does not split into groups of {arity}")
    return limbs_as_nodes(hash_many(nodes_as_limbs(nodes).reshape(-1, arity, NL), threads))
