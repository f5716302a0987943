"""Filecoin's published PoRep parameter files and their authentication (rust-fil-proofs' parameters.json).

Each ``.params``/``.vk`` file Filecoin publishes is named ``v28-<cache id>.<ext>`` and listed in
``parameters.json`` with its IPFS cid and a ``digest``: the first 32 hex characters of the file's
BLAKE2b-512 (``storage-proofs-core/src/parameter_cache.rs``). A file handed to us under one of those
names is hashed (streamed) and refused if the digest differs. The table holds the PoRep files of
the five production sector sizes, copied from filecoin-project/rust-fil-proofs ``parameters.json``
at commit f4c584ae2c85c74f05b6fbd1c1f6571a2f7d12a0 (and /work/shared/FILECOIN.md section 2.4).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

PARAM_FILE_PREFIX = "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-"
DIGEST_HEX_CHARS = 32


class DigestMismatch(ValueError):
    """A file named as a published parameter file does not have that file's digest."""


@dataclass(frozen=True)
class PublishedFile:
    """One entry of parameters.json."""

    name: str
    sector_size: int
    cid: str
    digest: str


# (sector size, tree shape and cache id, params cid, params digest, vk cid, vk digest)
_POREP = (
    (2 << 10, "8-0-0-sha256_hasher-032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f",
     "QmWceMgnWYLopMuM4AoGMvGEau7tNe5UK83XFjH5V9B17h", "434fb1338ecfaf0f59256f30dde4968f",
     "QmamahpFCstMUqHi2qGtVoDnRrsXhid86qsfvoyCTKJqHr", "dc1ade9929ade1708238f155343044ac"),
    (8 << 20, "8-0-0-sha256_hasher-ecd683648512ab1765faa2a5f14bab48f676e633467f0aa8aad4b55dcb0652bb",
     "QmPXAPPuQtuQz7Zz3MHMAMEtsYwqM1o9H1csPLeiMUQwZH", "09e612e4eeb7a0eb95679a88404f960c",
     "QmYCuipFyvVW1GojdMrjK1JnMobXtT4zRCZs1CGxjizs99", "b687beb9adbd9dabe265a7e3620813e4"),
    (512 << 20, "8-0-0-sha256_hasher-6babf46ce344ae495d558e7770a585b2382d54f225af8ed0397b8be7c3fcd472",
     "QmYBpTt7LWNAWr1JXThV5VxX7wsQFLd1PHrGYVbrU1EZjC", "6c77597eb91ab936c1cef4cf19eba1b3",
     "QmWionkqH2B6TXivzBSQeSyBxojaiAFbzhjtwYRrfwd8nH", "065179da19fbe515507267677f02823e"),
    (32 << 30, "8-8-0-sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820",
     "QmengpM684XLQfG8754ToonszgEg2bQeAGUan5uXTHUQzJ", "6a388072a518cf46ebd661f5cc46900a",
     "Qmf93EMrADXAK6CyiSfE8xx45fkMfR3uzKEPCvZC1n2kzb", "0c7b4aac1c40fdb7eb82bc355b41addf"),
    (64 << 30, "8-8-2-sha256_hasher-96f1b4a04c5c51e4759bbf224bbc2ef5a42c7100f16ec0637123f16a845ddfb2",
     "QmS7ye6Ri2MfFzCkcUJ7FQ6zxDKuJ6J6B8k5PN7wzSR9sX", "1801f8a6e1b00bceb00cc27314bb5ce3",
     "QmehSmC6BhrgRZakPDta2ewoH9nosNzdjCqQRXsNFNUkLN", "a89884252c04c298d0b3c81bfd884164"),
)


def _published() -> dict[str, PublishedFile]:
    out = {}
    for size, cache_id, p_cid, p_digest, v_cid, v_digest in _POREP:
        for ext, cid, digest in (("params", p_cid, p_digest), ("vk", v_cid, v_digest)):
            name = f"{PARAM_FILE_PREFIX}{cache_id}.{ext}"
            out[name] = PublishedFile(name, size, cid, digest)
    return out


PUBLISHED_FILES: dict[str, PublishedFile] = _published()


def file_digest(path, chunk: int = 1 << 24) -> str:
    """parameters.json's digest of a file: the first 32 hex characters of its BLAKE2b-512, the file
    read a chunk at a time (a 32 GiB .params is ~47 GB)."""
    h = hashlib.blake2b(digest_size=64)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()[:DIGEST_HEX_CHARS]


def published_file(path) -> PublishedFile | None:
    """The parameters.json entry for a file's name, or None when the name is not a published one."""
    return PUBLISHED_FILES.get(os.path.basename(os.fspath(path)))


def authenticate(path) -> PublishedFile | None:
    """Check a file whose name is a published parameter file against its digest; DigestMismatch (one
    line: file, expected, got) if it differs. Returns the entry, or None for any other name (our
    own development keys): nothing to check those against."""
    entry = published_file(path)
    if entry is None:
        return None
    got = file_digest(path)
    if got != entry.digest:
        raise DigestMismatch(f"{os.fspath(path)}: BLAKE2b digest {got} does not match parameters.json's "
                             f"{entry.digest} for this file name (a corrupt or substituted file)")
    return entry


def published_key_names(sector_size: int) -> tuple[str, str]:
    """(.params name, .vk name) of the published PoRep key of ``sector_size``-byte sectors;
    ValueError naming the sizes that have one."""
    names = {f.name.rsplit(".", 1)[1]: f.name for f in PUBLISHED_FILES.values() if f.sector_size == sector_size}
    if set(names) != {"params", "vk"}:
        sizes = sorted({f.sector_size for f in PUBLISHED_FILES.values()})
        raise ValueError(f"sector size {sector_size}: no published PoRep key (published: {sizes})")
    return names["params"], names["vk"]
