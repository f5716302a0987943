"""Poseidon over BLS12-381's Fr exactly as neptune computes it (rust-fil-proofs pins neptune 11).

Every Filecoin tree (C, R_last) and the column hash use neptune's ``PoseidonConstants::new()``:
HashType::MerkleTree with Standard strength. For arity a (width t = a + 1):

- S-box x^5; R_F = 8 full rounds, R_P partial rounds from neptune's port of the Poseidon paper's
  ``calc_round_numbers`` with a security margin (t=3: 55, t=9: 57, t=12: 57);
- (R_F + R_P) * t round constants from the Grain LFSR (self-shrinking), 255 bits each read
  big-endian, values >= r rejected (neptune ``round_constants.rs``);
- MDS: the Cauchy matrix M[i][j] = 1 / (i + (t + j)) (``mds.rs``), symmetric;
- state = [2^a - 1 (the domain tag), inputs...]; the digest is state[1].

This is the textbook permutation (neptune's ``hash_correct``): each round adds t constants, then
applies the S-box (to every element in a full round, to element 0 in a partial one), then the MDS
matrix. neptune hashes with an "optimized static" rearrangement that gives the same outputs.
``poseidon_batch`` runs the same permutation compiled over many inputs at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from ..field import R_MOD
from .fr32 import fr_from_bytes, fr_to_bytes

FULL_ROUNDS = 8
SECURITY_BITS = 128  # M in the Poseidon paper
PRIME_BITS = 256  # neptune rounds BLS12-381's 255-bit r up to 256 bits for the round-number inequalities
FIELD_BITS = 255  # bits per Grain round constant: Fr's NUM_BITS
GRAIN_DISCARD = 160


@dataclass(frozen=True)
class PoseidonConstants:
    """Everything the permutation for one arity needs; ``constants(arity)`` builds and caches it."""

    arity: int
    full_rounds: int
    partial_rounds: int
    round_constants: tuple[int, ...]  # (full_rounds + partial_rounds) * width, in the order consumed
    mds: tuple[tuple[int, ...], ...]  # width x width
    domain_tag: int

    @property
    def width(self) -> int:
        return self.arity + 1


def _secure(t: int, rf: int, rp: int) -> bool:
    """The Poseidon paper's inequalities, in float32 as neptune evaluates them."""
    f = np.float32
    rf_stat = f(6.0) if f(SECURITY_BITS) <= (f(PRIME_BITS) - f(3.0)) * (f(t) + f(1.0)) else f(10.0)
    rf_interp = f(0.43) * f(SECURITY_BITS) + np.log2(f(t)) - f(rp)
    rf_grob_1 = f(0.21) * f(PRIME_BITS) - f(rp)
    rf_grob_2 = (f(0.14) * f(PRIME_BITS) - f(1.0) - f(rp)) / (f(t) - f(1.0))
    # Rust's `as usize` turns a negative ceiling into 0.
    rf_max = max(max(int(np.ceil(x)), 0) for x in (rf_stat, rf_interp, rf_grob_1, rf_grob_2))
    return rf >= rf_max


def round_numbers(arity: int) -> tuple[int, int]:
    """(R_F, R_P) of neptune's ``calc_round_numbers(t, security_margin=true)`` for width t = arity + 1.

    neptune scans even R_F in 2..1000 and R_P in 4..199, keeps the secure pair with the fewest
    S-boxes (t * R_F + R_P, after adding the margin: R_F + 2 and ceil(1.075 * R_P)), ties to the smaller
    R_F. For one R_P more R_F only adds S-boxes, so the smallest secure even R_F per R_P is enough."""
    t = arity + 1
    best = None
    for rp in range(4, 200):
        rf = next((rf for rf in range(2, 1001, 2) if _secure(t, rf, rp)), None)
        if rf is None:
            continue
        rf_m, rp_m = rf + 2, int(np.ceil(np.float32(1.075) * np.float32(rp)))
        key = (t * rf_m + rp_m, rf_m, rf, rp)  # the scan's own order breaks the remaining ties
        if best is None or key < best:
            best = key
    return best[1], int(np.ceil(np.float32(1.075) * np.float32(best[3])))


def _grain_bits(t: int, r_f: int, r_p: int):
    """The Grain LFSR's self-shrinking output bits for Poseidon over a prime field with x^5."""
    init = [(1, 2), (1, 4), (FIELD_BITS, 12), (t, 12), (r_f, 10), (r_p, 10), ((1 << 30) - 1, 30)]
    bits = [(value >> i) & 1 for value, width in init for i in range(width - 1, -1, -1)]
    state = sum(b << i for i, b in enumerate(bits))  # bit i of the int is b_i of the paper

    def step() -> int:
        nonlocal state
        new = ((state >> 62) ^ (state >> 51) ^ (state >> 38) ^ (state >> 23) ^ (state >> 13) ^ state) & 1
        state = (state >> 1) | (new << 79)
        return new

    for _ in range(GRAIN_DISCARD):
        step()
    while True:
        while not step():  # a pair whose first bit is 0 is dropped
            step()
        yield step()


def grain_round_constants(t: int, r_f: int, r_p: int) -> list[int]:
    """(r_f + r_p) * t round constants: 255 Grain bits each, most significant first, values >= r rejected."""
    bits = _grain_bits(t, r_f, r_p)
    out = []
    while len(out) < (r_f + r_p) * t:
        value = 0
        for _ in range(FIELD_BITS):
            value = (value << 1) | next(bits)
        if value < R_MOD:
            out.append(value)
    return out


def cauchy_mds(t: int) -> list[list[int]]:
    """neptune's MDS matrix: M[i][j] = 1 / (x_i + y_j) with x = 0..t-1, y = t..2t-1."""
    return [[pow(i + t + j, -1, R_MOD) for j in range(t)] for i in range(t)]


@cache
def constants(arity: int) -> PoseidonConstants:
    """The MerkleTree / Standard constants of one arity (built once: about 0.1-0.5 s in Python)."""
    if arity < 1:
        raise ValueError(f"Poseidon arity must be >= 1, is {arity}")
    r_f, r_p = round_numbers(arity)
    rc = grain_round_constants(arity + 1, r_f, r_p)
    mds = tuple(tuple(row) for row in cauchy_mds(arity + 1))
    return PoseidonConstants(arity, r_f, r_p, tuple(rc), mds, (1 << arity) - 1)


def permute(state: Sequence[int], c: PoseidonConstants) -> list[int]:
    """The Poseidon permutation of ``state`` (width values < r) with constants ``c``."""
    s, t = list(state), c.width
    half = c.full_rounds // 2
    for rnd in range(c.full_rounds + c.partial_rounds):
        s = [(x + k) % R_MOD for x, k in zip(s, c.round_constants[rnd * t : (rnd + 1) * t])]
        full = rnd < half or rnd >= half + c.partial_rounds
        s = [pow(x, 5, R_MOD) for x in s] if full else [pow(s[0], 5, R_MOD), *s[1:]]
        s = [sum(s[i] * c.mds[i][j] for i in range(t)) % R_MOD for j in range(t)]
    return s


def poseidon_hash(values: Sequence[int]) -> int:
    """neptune's MerkleTree Poseidon digest of ``values`` (its length is the arity; each < r)."""
    if any(not 0 <= v < R_MOD for v in values):
        raise ValueError("poseidon_hash: every input must be a reduced Fr element (0 <= v < r)")
    c = constants(len(values))
    return permute([c.domain_tag, *values], c)[1]


def poseidon_hash_nodes(nodes: Sequence[bytes]) -> bytes:
    """The Poseidon digest of 32-byte little-endian nodes, as a node (the tree hash of trees C and R)."""
    return fr_to_bytes(poseidon_hash([fr_from_bytes(n, f"poseidon input {i}") for i, n in enumerate(nodes)]))

