"""ChaCha block function (Bernstein; RFC 8439 for the 20-round IETF layout), vectorized over blocks.

Two consumers in Filecoin PoRep, each with its own state layout:

* rand_chacha's ``ChaCha8Rng`` (DRG parents): key = the 32-byte seed, a 64-bit block counter in
  words 12-13 and a 64-bit stream id (0) in words 14-15. ``rng.gen::<u64>()`` reads two consecutive
  32-bit output words, low word first, i.e. the keystream as little-endian u64s (the DRG only ever
  draws u64s from a fresh generator, so draws never straddle an odd word).
* RustCrypto's IETF ``ChaCha20`` (synthetic PoRep challenges): a 32-bit block counter in word 12
  and a 96-bit nonce in words 13-15; seeking is by keystream byte.
"""

from __future__ import annotations

import numpy as np

SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # "expand 32-byte k"
BLOCK_BYTES = 64
_QUARTER_ROUNDS = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                   (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _rotl(x: np.ndarray, n: int) -> np.ndarray:
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def chacha_blocks(states: np.ndarray, rounds: int) -> np.ndarray:
    """The ChaCha block function of each row of ``states`` ((N, 16) uint32 input words): ``rounds``
    rounds (8 or 20; two per double round), then the input added back. Returns (N, 16) uint32
    output words; their little-endian bytes are the keystream."""
    if rounds % 2 or states.ndim != 2 or states.shape[1] != 16:
        raise ValueError(f"chacha: need (N, 16) states and an even round count, have {states.shape}, {rounds}")
    x = [states[:, i].astype(np.uint32) for i in range(16)]
    for _ in range(rounds // 2):
        for a, b, c, d in _QUARTER_ROUNDS:
            x[a] = x[a] + x[b]
            x[d] = _rotl(x[d] ^ x[a], 16)
            x[c] = x[c] + x[d]
            x[b] = _rotl(x[b] ^ x[c], 12)
            x[a] = x[a] + x[b]
            x[d] = _rotl(x[d] ^ x[a], 8)
            x[c] = x[c] + x[d]
            x[b] = _rotl(x[b] ^ x[c], 7)
    return np.stack(x, axis=1) + states.astype(np.uint32)


def _key_words(keys: np.ndarray) -> np.ndarray:
    """(N, 32) uint8 keys -> (N, 8) uint32 little-endian words."""
    return np.ascontiguousarray(keys, dtype=np.uint8).view("<u4").astype(np.uint32)


def _check_key(key: bytes, what: str) -> None:
    if len(key) != 32:
        raise ValueError(f"chacha: {what} must be 32 bytes, have {len(key)}")


def ietf_block(key: bytes, counter: int, nonce: bytes, rounds: int = 20) -> bytes:
    """One 64-byte keystream block in RFC 8439's layout (32-bit counter, 96-bit nonce)."""
    _check_key(key, "key")
    if len(nonce) != 12:
        raise ValueError(f"chacha: nonce must be 12 bytes, have {len(nonce)}")
    state = np.zeros((1, 16), dtype=np.uint32)
    state[0, :4] = SIGMA
    state[0, 4:12] = _key_words(np.frombuffer(key, np.uint8)[None, :])[0]
    state[0, 12] = counter
    state[0, 13:16] = np.frombuffer(nonce, "<u4")
    return chacha_blocks(state, rounds).astype("<u4").tobytes()


def ietf_keystream(key: bytes, nonce: bytes, offset: int, length: int, rounds: int = 20) -> bytes:
    """``length`` keystream bytes from byte ``offset`` (what a seek to ``offset`` then
    ``apply_keystream`` on zeros yields), in RFC 8439's layout."""
    _check_key(key, "key")
    if len(nonce) != 12:
        raise ValueError(f"chacha: nonce must be 12 bytes, have {len(nonce)}")
    first, last = offset // BLOCK_BYTES, (offset + length + BLOCK_BYTES - 1) // BLOCK_BYTES
    if last > 1 << 32:
        raise ValueError(f"chacha: keystream end {offset + length} passes the 32-bit block counter")
    n = max(last - first, 0)
    states = np.zeros((n, 16), dtype=np.uint32)
    states[:, :4] = SIGMA
    states[:, 4:12] = _key_words(np.frombuffer(key, np.uint8)[None, :])[0]
    states[:, 12] = np.arange(first, last, dtype=np.uint64).astype(np.uint32)
    states[:, 13:16] = np.frombuffer(nonce, "<u4")
    stream = chacha_blocks(states, rounds).astype("<u4").tobytes()
    start = offset - first * BLOCK_BYTES
    return stream[start:start + length]


def rng_words(seeds: np.ndarray, n_words: int, rounds: int = 8, first_word: int = 0) -> np.ndarray:
    """rand_chacha's output words ``first_word .. first_word + n_words`` for each seed: (N, 32)
    uint8 seeds -> (N, n_words) uint32 (64-bit block counter from 0, stream 0)."""
    seeds = np.asarray(seeds, dtype=np.uint8)
    if seeds.ndim != 2 or seeds.shape[1] != 32:
        raise ValueError(f"chacha: seeds must be (N, 32) bytes, have shape {seeds.shape}")
    first_block, end = first_word // 16, first_word + n_words
    n_blocks = (end + 15) // 16 - first_block
    n = seeds.shape[0]
    states = np.zeros((n, n_blocks, 16), dtype=np.uint32)
    states[:, :, :4] = SIGMA
    states[:, :, 4:12] = _key_words(seeds)[:, None, :]
    counters = np.arange(first_block, first_block + n_blocks, dtype=np.uint64)
    states[:, :, 12] = (counters & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    states[:, :, 13] = (counters >> np.uint64(32)).astype(np.uint32)
    words = chacha_blocks(states.reshape(-1, 16), rounds).reshape(n, n_blocks * 16)
    start = first_word - first_block * 16
    return words[:, start:start + n_words]


def rng_u64(seeds: np.ndarray, count: int, rounds: int = 8) -> np.ndarray:
    """The first ``count`` values of ``rng.gen::<u64>()`` from a fresh rand_chacha generator per
    seed: (N, 32) uint8 -> (N, count) uint64 (low word first)."""
    words = rng_words(seeds, 2 * count, rounds).astype(np.uint64)
    return words[:, 0::2] | (words[:, 1::2] << np.uint64(32))


class ChaChaRng:
    """A scalar rand_chacha generator (``ChaCha{rounds}Rng::from_seed``) for tests and one-off
    draws; the DRG uses ``rng_u64`` over many seeds at once."""

    def __init__(self, seed: bytes, rounds: int = 8):
        _check_key(seed, "seed")
        self._seed = np.frombuffer(seed, np.uint8)[None, :]
        self._rounds = rounds
        self.word_pos = 0

    def next_u32(self) -> int:
        """The next 32-bit word."""
        word = int(rng_words(self._seed, 1, self._rounds, self.word_pos)[0, 0])
        self.word_pos += 1
        return word

    def next_u64(self) -> int:
        """``gen::<u64>()``: two words, low first (rand_core's ``next_u64`` of a block RNG)."""
        lo = self.next_u32()
        return lo | (self.next_u32() << 32)
