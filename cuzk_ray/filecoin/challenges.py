"""Which nodes a PoRep partition challenges: interactive, synthetic and non-interactive PoRep.

Source (read, not copied): rust-fil-proofs storage-proofs-porep/src/stacked/vanilla/challenges.rs.
Every derivation ends the same way: a 256-bit little-endian integer x becomes the node
``x mod (nodes - 1) + 1`` (node 0 is never challenged). Challenge ``i`` of partition ``k`` is
number ``j = k * C + i`` of the whole sector, C the challenges per partition.
"""

from __future__ import annotations

import hashlib

from .chacha import ietf_keystream
from .registry import PoRepConfig

NI_TAG = b"filecoin.io|PoRep|1|NonInteractive|1"
SYNTH_GENERATION_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Generation"
SYNTH_SELECTION_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Selection"
SYNTH_NONCE = b"synth-porep\x00"
SYNTH_CHALLENGE_BYTES = 32
SYNTH_INDEX_BYTES = 4
DEFAULT_SYNTH_CHALLENGES = 1 << 18


def _check32(value: bytes, what: str) -> bytes:
    if len(value) != 32:
        raise ValueError(f"{what}: need 32 bytes, have {len(value)}")
    return bytes(value)


def to_challenge(digest: bytes, nodes: int) -> int:
    """challenges.rs ``bigint_to_challenge``: little-endian integer mod (nodes - 1), plus 1."""
    return int.from_bytes(digest, "little") % (nodes - 1) + 1


def _numbers(per_partition: int, k: int) -> range:
    if not 0 <= k < 256:
        raise ValueError(f"partition: k = {k} is outside 0..255 (rust passes it as u8)")
    return range(per_partition * k, per_partition * (k + 1))


def interactive_challenges(replica_id: bytes, seed: bytes, nodes: int, per_partition: int, k: int) -> list[int]:
    """SHA-256(replica_id || seed || u32_le(j)) for j of partition k."""
    prefix = _check32(replica_id, "replica_id") + _check32(seed, "seed")
    return [to_challenge(hashlib.sha256(prefix + j.to_bytes(4, "little")).digest(), nodes)
            for j in _numbers(per_partition, k)]


def ni_challenges(replica_id: bytes, comm_r: bytes, nodes: int, per_partition: int, k: int) -> list[int]:
    """NI-PoRep: SHA-256(tag || replica_id || comm_r || u32_le(j)); no seed (no interaction)."""
    prefix = NI_TAG + _check32(replica_id, "replica_id") + _check32(comm_r, "comm_r")
    return [to_challenge(hashlib.sha256(prefix + j.to_bytes(4, "little")).digest(), nodes)
            for j in _numbers(per_partition, k)]


class SyntheticChallenges:
    """Synthetic PoRep: a sector-wide list of ``min(nodes, 2^18)`` synthetic challenges drawn from a
    ChaCha20 stream keyed by BLAKE2b(replica_id || comm_r); the seed then selects, through a second
    stream, which of them each partition proves."""

    def __init__(self, replica_id: bytes, comm_r: bytes, nodes: int, count: int | None = None):
        self.replica_id = _check32(replica_id, "replica_id")
        self.nodes = nodes
        self.count = min(nodes, DEFAULT_SYNTH_CHALLENGES) if count is None else count
        if not 0 < self.count < 1 << 32:
            raise ValueError(f"synthetic challenges: count {self.count} is outside 1..2^32-1")
        self._key = _keyed_blake2b(SYNTH_GENERATION_KEY, self.replica_id + _check32(comm_r, "comm_r"))

    def challenge(self, i: int) -> int:
        """Synthetic challenge number i (keystream bytes 32 i .. 32 i + 32)."""
        if not 0 <= i < self.count:
            raise ValueError(f"synthetic challenges: index {i} is outside 0..{self.count - 1}")
        chunk = ietf_keystream(self._key, SYNTH_NONCE, i * SYNTH_CHALLENGE_BYTES, SYNTH_CHALLENGE_BYTES)
        return to_challenge(chunk, self.nodes)

    def all(self) -> list[int]:
        """Every synthetic challenge, in order."""
        stream = ietf_keystream(self._key, SYNTH_NONCE, 0, self.count * SYNTH_CHALLENGE_BYTES)
        return [to_challenge(stream[n:n + SYNTH_CHALLENGE_BYTES], self.nodes)
                for n in range(0, len(stream), SYNTH_CHALLENGE_BYTES)]

    def selected_indexes(self, seed: bytes, per_partition: int, k: int) -> list[int]:
        """Which synthetic challenges partition k proves: u32_le words of the selection stream."""
        key = _keyed_blake2b(SYNTH_SELECTION_KEY, self.replica_id + _check32(seed, "seed"))
        first = _numbers(per_partition, k).start
        stream = ietf_keystream(key, SYNTH_NONCE, first * SYNTH_INDEX_BYTES, per_partition * SYNTH_INDEX_BYTES)
        return [int.from_bytes(stream[n:n + SYNTH_INDEX_BYTES], "little") % self.count
                for n in range(0, len(stream), SYNTH_INDEX_BYTES)]

    def partition_challenges(self, seed: bytes, per_partition: int, k: int) -> list[int]:
        """The nodes partition k proves."""
        return [self.challenge(i) for i in self.selected_indexes(seed, per_partition, k)]


def _keyed_blake2b(key: bytes, data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32, key=key).digest()


def porep_challenges(config: PoRepConfig, replica_id: bytes, comm_r: bytes, seed: bytes, k: int) -> list[int]:
    """The challenges of partition k under the config's features (params.rs ``challenges``)."""
    if not 0 <= k < config.partitions:
        raise ValueError(f"partition: k = {k} is outside 0..{config.partitions - 1}")
    c = config.challenges_per_partition
    if config.synthetic:
        return SyntheticChallenges(replica_id, comm_r, config.nodes).partition_challenges(seed, c, k)
    if config.non_interactive:
        return ni_challenges(replica_id, comm_r, config.nodes, c, k)
    return interactive_challenges(replica_id, seed, config.nodes, c, k)
