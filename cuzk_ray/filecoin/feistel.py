"""The Feistel permutation that places SDR's expander parents (rust-fil-proofs
storage-proofs-core/src/crypto/feistel.rs), vectorized over indices.

An index of ``2 * half_bits`` bits (the smallest even width whose power of four covers
``num_elements``) is split into left/right halves and put through three rounds
``(L, R) -> (R, L ^ F(R, key_i))``; F is the first 8 bytes of BLAKE2b-512 over
``u64_be(R) || u64_be(key)``, read big-endian and masked to ``half_bits``. Outputs at or above
``num_elements`` are encrypted again until they land inside (cycle walking), so the map is a
permutation of ``[0, num_elements)``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

ROUNDS = 3
SMALL_BATCH = 256  # below this many messages hashlib's C loop beats ~2,000 numpy calls per batch
NUMBA_BATCH = 1 << 14  # from this many indices a compiled loop (numba, cached on disk) beats numpy

_U64 = np.uint64
_IV = np.array([0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
                0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179], dtype=_U64)
_SIGMA = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
          (14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3),
          (11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4),
          (7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8),
          (9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13),
          (2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9),
          (12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11),
          (13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 10, 2, 6),
          (6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5),
          (10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0))
_G_COLUMNS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
              (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _rotr(x: np.ndarray, n: int) -> np.ndarray:
    return (x >> _U64(n)) | (x << _U64(64 - n))


def blake2b_prefix_be(right: np.ndarray, key: int) -> np.ndarray:
    """First 8 bytes, as a big-endian u64, of BLAKE2b-512 (unkeyed) over the 16-byte messages
    ``u64_be(right[i]) || u64_be(key)`` (the Feistel round function before its mask)."""
    right = np.asarray(right, dtype=_U64)
    if right.size < SMALL_BATCH:
        return blake2b_prefix_be_hashlib(right, key)
    return blake2b_prefix_be_numpy(right, key)


def blake2b_prefix_be_hashlib(right: np.ndarray, key: int) -> np.ndarray:
    """``blake2b_prefix_be`` one message at a time through hashlib."""
    tail = int(key).to_bytes(8, "big")
    out = [int.from_bytes(hashlib.blake2b(int(r).to_bytes(8, "big") + tail).digest()[:8], "big")
           for r in np.ravel(right)]
    return np.array(out, dtype=_U64).reshape(np.shape(right))


def blake2b_prefix_be_numpy(right: np.ndarray, key: int) -> np.ndarray:
    """``blake2b_prefix_be`` as one BLAKE2b compression over all messages at once (numpy)."""
    right = np.asarray(right, dtype=_U64)
    m = [np.zeros_like(right) for _ in range(16)]
    m[0] = right.byteswap()  # message words are little-endian reads of big-endian bytes
    m[1] = np.full_like(right, _U64(key)).byteswap()
    h0 = _IV[0] ^ _U64(0x01010040)  # parameter block: digest 64 bytes, no key, fanout 1, depth 1
    v = [np.full_like(right, h0)] + [np.full_like(right, _IV[i]) for i in range(1, 8)]
    v += [np.full_like(right, _IV[i]) for i in range(8)]
    v[12] = v[12] ^ _U64(16)  # bytes hashed so far
    v[14] = ~v[14]  # last block
    for r in range(12):
        s = _SIGMA[r % 10]
        for g, (a, b, c, d) in enumerate(_G_COLUMNS):
            v[a] = v[a] + v[b] + m[s[2 * g]]
            v[d] = _rotr(v[d] ^ v[a], 32)
            v[c] = v[c] + v[d]
            v[b] = _rotr(v[b] ^ v[c], 24)
            v[a] = v[a] + v[b] + m[s[2 * g + 1]]
            v[d] = _rotr(v[d] ^ v[a], 16)
            v[c] = v[c] + v[d]
            v[b] = _rotr(v[b] ^ v[c], 63)
    return (h0 ^ v[0] ^ v[8]).byteswap()


@dataclass(frozen=True)
class FeistelShape:
    """The split of an index for ``num_elements`` (rust's ``precompute``)."""

    num_elements: int
    half_bits: int

    @classmethod
    def for_elements(cls, num_elements: int) -> FeistelShape:
        """The smallest ``half_bits`` >= 1 with ``4 ** half_bits >= num_elements``."""
        half_bits = 1
        while 4**half_bits < num_elements:
            half_bits += 1
        return cls(num_elements, half_bits)

    @property
    def right_mask(self) -> int:
        return (1 << self.half_bits) - 1


def _encode(index: np.ndarray, keys: tuple[int, ...], shape: FeistelShape) -> np.ndarray:
    mask, bits = _U64(shape.right_mask), _U64(shape.half_bits)
    left, right = (index >> bits) & mask, index & mask
    for key in keys[:ROUNDS]:
        left, right = right, left ^ (blake2b_prefix_be(right, key) & mask)
    return (left << bits) | right


def _decode(index: np.ndarray, keys: tuple[int, ...], shape: FeistelShape) -> np.ndarray:
    mask, bits = _U64(shape.right_mask), _U64(shape.half_bits)
    left, right = (index >> bits) & mask, index & mask
    for key in reversed(keys[:ROUNDS]):
        left, right = right ^ (blake2b_prefix_be(left, key) & mask), left
    return (left << bits) | right


def _cycle_walk(index: np.ndarray, step, keys: tuple[int, ...], shape: FeistelShape) -> np.ndarray:
    out = step(np.asarray(index, dtype=_U64), keys, shape)
    outside = out >= _U64(shape.num_elements)
    while outside.any():
        out[outside] = step(out[outside], keys, shape)
        outside = out >= _U64(shape.num_elements)
    return out


def permute(indices: np.ndarray, keys: tuple[int, ...], shape: FeistelShape) -> np.ndarray:
    """rust's ``feistel::permute`` of every index (uint64 array in, uint64 array out)."""
    indices = np.asarray(indices, dtype=_U64)
    if indices.size >= NUMBA_BATCH:
        return permute_compiled(indices, keys, shape)
    return _cycle_walk(indices, _encode, keys, shape)


def permute_compiled(indices: np.ndarray, keys: tuple[int, ...], shape: FeistelShape) -> np.ndarray:
    """``permute`` as one compiled loop: ~2,000 64-bit operations per BLAKE2b, 3-4 per index."""
    kernel = _permute_kernel()
    out = np.empty(np.size(indices), dtype=_U64)
    kernel(np.ascontiguousarray(indices, dtype=_U64).ravel(), np.array(keys[:ROUNDS], dtype=_U64),
           _U64(shape.num_elements), _U64(shape.half_bits), _IV, np.array(_SIGMA, dtype=np.int64),
           np.array(_G_COLUMNS, dtype=np.int64), out)
    return out.reshape(np.shape(indices))


def _permute_loop(indices, keys, num_elements, half_bits, iv, sigma, columns, out):
    mask = (np.uint64(1) << half_bits) - np.uint64(1)
    v = np.empty(16, dtype=np.uint64)
    m = np.zeros(16, dtype=np.uint64)
    h0 = iv[0] ^ np.uint64(0x01010040)
    for n in range(indices.size):
        u = indices[n]
        while True:
            left, right = (u >> half_bits) & mask, u & mask
            for key in keys:
                m[0], m[1] = _bswap(right), _bswap(key)
                v[0] = h0
                v[1:8] = iv[1:8]
                v[8:16] = iv
                v[12] ^= np.uint64(16)
                v[14] = ~v[14]
                for r in range(12):
                    for g in range(8):
                        a, b, c, d = columns[g, 0], columns[g, 1], columns[g, 2], columns[g, 3]
                        v[a] = v[a] + v[b] + m[sigma[r % 10, 2 * g]]
                        v[d] = _rotr64(v[d] ^ v[a], 32)
                        v[c] = v[c] + v[d]
                        v[b] = _rotr64(v[b] ^ v[c], 24)
                        v[a] = v[a] + v[b] + m[sigma[r % 10, 2 * g + 1]]
                        v[d] = _rotr64(v[d] ^ v[a], 16)
                        v[c] = v[c] + v[d]
                        v[b] = _rotr64(v[b] ^ v[c], 63)
                left, right = right, left ^ (_bswap(h0 ^ v[0] ^ v[8]) & mask)
            u = (left << half_bits) | right
            if u < num_elements:
                break
        out[n] = u


def _rotr64_py(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


def _bswap_py(x):
    y = np.uint64(0)
    for i in range(8):
        y = (y << np.uint64(8)) | ((x >> np.uint64(8 * i)) & np.uint64(0xFF))
    return y


def _permute_kernel():
    """``_permute_loop`` compiled on first use (numba imported only then; cached on disk)."""
    global _KERNEL, _rotr64, _bswap
    if _KERNEL is None:
        from numba import njit

        _rotr64, _bswap = njit(_rotr64_py), njit(_bswap_py)
        _KERNEL = njit(nogil=True, cache=True)(_permute_loop)
    return _KERNEL


_KERNEL = _rotr64 = _bswap = None


def invert_permute(indices: np.ndarray, keys: tuple[int, ...], shape: FeistelShape) -> np.ndarray:
    """rust's ``feistel::invert_permute``: ``invert_permute(permute(i)) == i``."""
    return _cycle_walk(indices, _decode, keys, shape)
