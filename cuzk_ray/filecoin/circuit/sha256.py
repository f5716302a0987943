"""SHA-256 in a circuit, as bellperson's ``gadgets/sha256.rs`` (FIPS 180-4 over UInt32 words).

The message schedule and the 64 rounds run inside one MultiEq, so the additions' equalities share
constraints; ``a`` and ``e`` of each round stay deferred (a list of words to add) until the next
round reads them, which lets ``temp1 + d`` and ``temp1 + temp2`` each be one addmany. The MultiEq is
flushed when the compression ends (Rust drops it there). Inputs and outputs are big-endian bits.
"""

from __future__ import annotations

from . import boolean
from .boolean import Boolean
from .multieq import MultiEq
from .uint32 import UInt32

ROUND_CONSTANTS = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip

IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)


def sha256_iv() -> list[UInt32]:
    """The initial hash value as constant words: the first block's state costs no constraint."""
    return [UInt32.constant(v) for v in IV]


def sha256_block_no_padding(cs, bits: list[Boolean]) -> list[Boolean]:
    """One compression of a 512-bit block from the IV, no padding: 256 big-endian output bits."""
    if len(bits) != 512:
        raise ValueError(f"sha256_block_no_padding needs 512 bits, has {len(bits)}")
    return [b for word in sha256_compression_function(cs, bits, sha256_iv()) for b in word.into_bits_be()]


def padded(bits: list[Boolean]) -> list[Boolean]:
    """The message with SHA-256's padding as constants: a 1, zeros, the 64-bit big-endian bit length."""
    if len(bits) % 8:
        raise ValueError(f"sha256 hashes whole bytes; the message has {len(bits)} bits")
    length = len(bits)
    out = list(bits) + [boolean.TRUE]
    out += [boolean.FALSE] * ((-(len(out) + 64)) % 512)
    out += [boolean.constant(bool(length >> i & 1)) for i in range(63, -1, -1)]
    return out


def sha256(cs, bits: list[Boolean]) -> list[Boolean]:
    """SHA-256 of a whole-byte message (big-endian bits): padding, then one compression per block
    in namespaces ``block i``; 256 big-endian output bits."""
    message = padded(bits)
    state = sha256_iv()
    for i in range(len(message) // 512):
        with cs.namespace(f"block {i}"):
            state = sha256_compression_function(cs, message[512 * i : 512 * (i + 1)], state)
    return [b for word in state for b in word.into_bits_be()]


def _schedule(cs: MultiEq, input_bits: list[Boolean]) -> list[UInt32]:
    """The 64 message-schedule words; w[16..64] in namespaces ``w extension i``."""
    w = [UInt32.from_bits_be(input_bits[32 * i : 32 * (i + 1)]) for i in range(16)]
    for i in range(16, 64):
        with cs.namespace(f"w extension {i}"):
            x = w[i - 15]
            with cs.namespace("first xor for s0"):
                s0 = x.rotr(7).xor(cs, x.rotr(18))
            with cs.namespace("second xor for s0"):
                s0 = s0.xor(cs, x.shr(3))
            y = w[i - 2]
            with cs.namespace("first xor for s1"):
                s1 = y.rotr(17).xor(cs, y.rotr(19))
            with cs.namespace("second xor for s1"):
                s1 = s1.xor(cs, y.shr(10))
            with cs.namespace("computation of w[i]"):
                w.append(UInt32.addmany(cs, [w[i - 16], s0, w[i - 7], s1]))
    return w


def _compute(cs: MultiEq, word: UInt32 | list[UInt32], others: list[UInt32]) -> UInt32:
    """Rust's ``Maybe::compute``: a concrete word as it is, a deferred sum added up (with ``others``)."""
    if isinstance(word, UInt32):
        return word
    return UInt32.addmany(cs, word + others)


def _rotr_xor3(cs, x: UInt32, r1: int, r2: int, r3: int, name: str) -> UInt32:
    """rotr(x, r1) xor rotr(x, r2) xor rotr(x, r3): Σ0 and Σ1 of the rounds."""
    with cs.namespace(f"first xor for {name}"):
        s = x.rotr(r1).xor(cs, x.rotr(r2))
    with cs.namespace(f"second xor for {name}"):
        return s.xor(cs, x.rotr(r3))


def sha256_compression_function(cs, input_bits: list[Boolean], state: list[UInt32]) -> list[UInt32]:
    """One SHA-256 compression of 512 big-endian bits into ``state`` (8 words): bellperson's exact
    order of allocations and constraints, the MultiEq flushed at the end."""
    if len(input_bits) != 512 or len(state) != 8:
        raise ValueError(f"compression needs 512 bits and 8 words, has {len(input_bits)} and {len(state)}")
    with MultiEq(cs) as meq:
        w = _schedule(meq, input_bits)
        a: UInt32 | list[UInt32] = state[0]
        b, c, d = state[1], state[2], state[3]
        e: UInt32 | list[UInt32] = state[4]
        f, g, h = state[5], state[6], state[7]
        for i in range(64):
            with meq.namespace(f"compression round {i}"):
                with meq.namespace("deferred e computation"):
                    new_e = _compute(meq, e, [])
                s1 = _rotr_xor3(meq, new_e, 6, 11, 25, "s1")
                with meq.namespace("ch"):
                    ch = UInt32.sha256_ch(meq, new_e, f, g)
                temp1 = [h, s1, ch, UInt32.constant(ROUND_CONSTANTS[i]), w[i]]
                with meq.namespace("deferred a computation"):
                    new_a = _compute(meq, a, [])
                s0 = _rotr_xor3(meq, new_a, 2, 13, 22, "s0")
                with meq.namespace("maj"):
                    maj = UInt32.sha256_maj(meq, new_a, b, c)
                h, g, f = g, f, new_e
                e = temp1 + [d]
                d, c, b = c, b, new_a
                a = temp1 + [s0, maj]
        with meq.namespace("deferred h0 computation"):
            h0 = _compute(meq, a, [state[0]])
        out = [h0]
        for k, word in ((1, b), (2, c), (3, d)):
            with meq.namespace(f"new h{k}"):
                out.append(UInt32.addmany(meq, [state[k], word]))
        with meq.namespace("deferred h4 computation"):
            out.append(_compute(meq, e, [state[4]]))
        for k, word in ((5, f), (6, g), (7, h)):
            with meq.namespace(f"new h{k}"):
                out.append(UInt32.addmany(meq, [state[k], word]))
    return out
