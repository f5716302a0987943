"""The iden3 binary container shared by .r1cs, .wtns and .zkey files (DESIGN.md section 4).

Layout, all little-endian: 4-byte magic, u32 version, u32 section count, then sections
``{u32 id, u64 length, payload}`` in any order. ``BinFile`` maps the file read-only, indexes the
sections after checking every header against the file size, and hands out bounds-checked views,
so no reader allocates from a length it has not checked.

Every problem is a ``FormatError`` whose one-line message names the file and the field, what was
expected and what was found.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass

import numpy as np

from ..field import Q_MOD, R_MOD
from .regular import NotRegularFile, open_regular


class FormatError(ValueError):
    """A snarkjs/circom file is missing, truncated, corrupt, inconsistent or of another curve."""


# Primes a circom/snarkjs file may carry, so a wrong-curve file is named rather than "bad prime".
BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BN254_Q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
KNOWN_PRIMES = {
    R_MOD: "BLS12-381 scalar field r",
    Q_MOD: "BLS12-381 base field q",
    BN254_R: "BN254 (bn128) scalar field r",
    BN254_Q: "BN254 (bn128) base field q",
}


def describe_prime(p: int) -> str:
    return KNOWN_PRIMES.get(p, f"unknown prime 0x{p:x}")


@dataclass(frozen=True)
class Section:
    offset: int  # of the payload, in the file
    length: int


class BinFile:
    """A memory-mapped iden3 container. Use as a context manager; views die with the mapping."""

    HEADER = 12  # magic, version, section count
    SECTION_HEADER = 12  # id u32, length u64

    def __init__(self, path, magic: bytes, versions: tuple[int, ...]):
        self.path = os.fspath(path)
        self.name = os.path.basename(self.path)
        try:
            self._file = open_regular(self.path)  # a FIFO or a device would block or never end
        except FileNotFoundError:
            raise FormatError(f"{self.path}: file not found") from None
        except NotRegularFile as exc:
            raise FormatError(str(exc)) from None
        except OSError as exc:
            raise FormatError(f"{self.path}: cannot open: {exc.strerror}") from None
        self.size = os.fstat(self._file.fileno()).st_size
        self._map = None
        try:
            if self.size < self.HEADER:
                self.fail("header", f"at least {self.HEADER} bytes", f"a file of {self.size} bytes")
            self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self.buf = memoryview(self._map)
            found = bytes(self.buf[:4])
            if found != magic:
                self.fail("magic", repr(magic), repr(found))
            self.version = self.u32(4, "version")
            if self.version not in versions:
                self.fail("version", " or ".join(map(str, versions)), self.version)
            self.sections = self._index_sections(self.u32(8, "section count"))
        except BaseException:
            self.close()
            raise

    # -- errors --------------------------------------------------------------------------------
    def fail(self, field: str, expected, found) -> None:
        raise FormatError(f"{self.path}: {field}: expected {expected}, found {found}")

    # -- section index ---------------------------------------------------------------------------
    def _index_sections(self, count: int) -> dict[int, Section]:
        sections: dict[int, Section] = {}
        pos = self.HEADER
        for k in range(count):
            if pos + self.SECTION_HEADER > self.size:
                self.fail(f"section header {k + 1} of {count}", f"12 bytes at offset {pos}",
                          f"end of file at {self.size} (truncated)")
            sid, length = struct.unpack_from("<IQ", self.buf, pos)
            pos += self.SECTION_HEADER
            if length > self.size - pos:
                self.fail(f"section {sid} length", f"at most {self.size - pos} bytes (the rest of the file)",
                          f"{length} (truncated file or corrupt header)")
            if sid in sections:
                self.fail(f"section {sid}", "one section with this id", "a second one")
            sections[sid] = Section(pos, length)
            pos += length
        if pos != self.size:
            self.fail("file size", f"{pos} bytes (header and {count} sections)", f"{self.size} bytes")
        return sections

    def section(self, sid: int, what: str) -> Section:
        try:
            return self.sections[sid]
        except KeyError:
            self.fail(f"section {sid} ({what})", "present", f"sections {sorted(self.sections)}")

    def expect_length(self, sid: int, what: str, expected: int, because: str) -> Section:
        """The section, after checking its length is exactly ``expected`` bytes."""
        sec = self.section(sid, what)
        if sec.length != expected:
            self.fail(f"section {sid} ({what}) length", f"{expected} bytes ({because})", f"{sec.length}")
        return sec

    # -- bounds-checked reads ----------------------------------------------------------------------
    def _check(self, offset: int, nbytes: int, field: str, end: int | None = None) -> None:
        end = self.size if end is None else end
        if offset < 0 or offset + nbytes > end:
            self.fail(field, f"{nbytes} bytes at offset {offset}",
                      f"only {max(end - offset, 0)} bytes left in its section")

    def u32(self, offset: int, field: str, end: int | None = None) -> int:
        self._check(offset, 4, field, end)
        return struct.unpack_from("<I", self.buf, offset)[0]

    def u64(self, offset: int, field: str, end: int | None = None) -> int:
        self._check(offset, 8, field, end)
        return struct.unpack_from("<Q", self.buf, offset)[0]

    def uint(self, offset: int, nbytes: int, field: str, end: int | None = None) -> int:
        self._check(offset, nbytes, field, end)
        return int.from_bytes(self.buf[offset : offset + nbytes], "little")

    def array(self, offset: int, dtype, count: int, field: str, end: int | None = None) -> np.ndarray:
        """A read-only numpy view of ``count`` items of ``dtype`` (no copy)."""
        dtype = np.dtype(dtype)
        self._check(offset, count * dtype.itemsize, field, end)
        return np.frombuffer(self.buf, dtype=dtype, count=count, offset=offset)

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        if self._map is not None:
            try:  # fails while a numpy view is alive; the mapping then goes with the last view
                if hasattr(self, "buf"):
                    self.buf.release()
                self._map.close()
            except BufferError:
                pass
            self._map = None
        self._file.close()

    def __enter__(self) -> BinFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


