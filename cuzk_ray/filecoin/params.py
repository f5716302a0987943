"""bellperson's Groth16 key files: the ``.vk`` verifying key and the memory-mapped ``.params`` key.

``.vk`` (``VerifyingKey::write``, bellperson ``src/groth16/verifying_key.rs``): alpha_g1, beta_g1,
beta_g2, gamma_g2, delta_g1, delta_g2, ``u32`` big-endian ic_len, then the ic points; every point
uncompressed (G1 96 bytes, G2 192; see points.py). 4,708 bytes for 40 IC points.

``.params`` (``Parameters::write``, ``src/groth16/params.rs``): the verifying key, then the h, l, a,
b_g1 and b_g2 queries, each a ``u32`` big-endian point count and the uncompressed points (b_g2 in
G2). ``ParamsFile`` maps the file and finds every query's offset from the counts alone; a query's
points are decoded only when asked for (``check=False`` by default: the file is authenticated by
its digest when its name is a published one, see parameters_json.py, and bellperson reads the
queries unchecked too).

Against the project's key (groth16.keys.ProvingKey): the same queries under other names (h_query,
l_query, a_query, b_g1_query, b_g2_query), beta_g1 and delta_g1 beside the verifying key. A
``.params`` stores no density: the a/b queries hold points for the wires of the circuit's A/B
densities (inputs first), which the reader must be told (``a_wires``/``b_wires``, as
setup.wire_density gives them) unless the queries are dense. Nor does it say which H convention its
h query follows: Filecoin's keys hold bellperson's m - 1 monomial points, the project's development
keys the snarkjs-convention n points; a key converts either way, but proves only with the matching H.
"""

from __future__ import annotations

import mmap
import os
import struct
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from ..groth16.keys import ProvingKey, VerifyingKey
from .parameters_json import authenticate
from .points import G1, G2, Group, PointError, Where, decode, encode

VK_POINTS = (("alpha_g1", G1), ("beta_g1", G1), ("beta_g2", G2), ("gamma_g2", G2), ("delta_g1", G1),
             ("delta_g2", G2))
# .params query name -> (group, ProvingKey field), in file order
QUERIES = {"h": (G1, "h_query"), "l": (G1, "l_query"), "a": (G1, "a_query"), "b_g1": (G1, "b_g1_query"),
           "b_g2": (G2, "b_g2_query")}
LENGTH_BYTES = 4
WRITE_CHUNK = 1 << 16  # points encoded per write


class ParamsError(ValueError):
    """A .vk or .params file is truncated, inconsistent or holds a bad point; names file and offset."""


@dataclass(frozen=True)
class BellpersonVerifyingKey:
    """bellperson's VerifyingKey: six points and the IC (one point per input, ONE included)."""

    alpha_g1: np.ndarray
    beta_g1: np.ndarray
    beta_g2: np.ndarray
    gamma_g2: np.ndarray
    delta_g1: np.ndarray
    delta_g2: np.ndarray
    ic: np.ndarray

    @property
    def n_inputs(self) -> int:
        """Public inputs a proof takes, the leading ONE excluded (ic_len - 1)."""
        return len(self.ic) - 1

    def to_groth16(self) -> VerifyingKey:
        """The project's verifying key (beta_g1 and delta_g1 live in its ProvingKey)."""
        return VerifyingKey(alpha_g1=self.alpha_g1, beta_g2=self.beta_g2, gamma_g2=self.gamma_g2,
                            delta_g2=self.delta_g2, ic=self.ic)

    @classmethod
    def from_proving_key(cls, pk: ProvingKey) -> BellpersonVerifyingKey:
        vk = pk.vk
        return cls(alpha_g1=vk.alpha_g1, beta_g1=pk.beta_g1, beta_g2=vk.beta_g2, gamma_g2=vk.gamma_g2,
                   delta_g1=pk.delta_g1, delta_g2=vk.delta_g2, ic=vk.ic)

    def equals(self, other: BellpersonVerifyingKey) -> bool:
        return all(np.array_equal(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))


def vk_to_bytes(vk: BellpersonVerifyingKey) -> bytes:
    """The .vk encoding (also the head of a .params file)."""
    head = b"".join(encode(getattr(vk, name)).tobytes() for name, _ in VK_POINTS)
    return head + struct.pack(">I", len(vk.ic)) + encode(vk.ic).tobytes()


def _points_at(buf, pos: int, count: int, g: Group, source: str, what: str, check: bool) -> np.ndarray:
    """``count`` uncompressed points of g at byte ``pos`` of buf, after a bounds check."""
    need = count * g.uncompressed_size
    if pos + need > len(buf):
        raise ParamsError(f"{source}: {what} needs {need} bytes at byte {pos}, the file ends at byte {len(buf)} "
                          "(truncated)")
    raw = np.frombuffer(buf, dtype=np.uint8, count=need, offset=pos)
    try:
        return decode(raw, g, check=check, where=Where(f"{source}: {what}", pos))
    except PointError as e:
        message = str(e)
    # raised outside the except block, the view gone: a traceback holding a view of the mapping
    # would keep ParamsFile from closing it (BufferError)
    del raw
    raise ParamsError(message)


def _u32(buf, pos: int, source: str, what: str) -> int:
    if pos + LENGTH_BYTES > len(buf):
        raise ParamsError(f"{source}: {what} (u32) at byte {pos}: the file ends at byte {len(buf)} (truncated)")
    return struct.unpack_from(">I", buf, pos)[0]


def vk_from_buffer(buf, source: str, check: bool = True) -> tuple[BellpersonVerifyingKey, int]:
    """(verifying key, offset just after it) from the start of a .vk or .params buffer."""
    pos, out = 0, {}
    for name, g in VK_POINTS:
        out[name] = _points_at(buf, pos, 1, g, source, name, check)
        pos += g.uncompressed_size
    ic_len = _u32(buf, pos, source, "ic_len")
    if ic_len == 0:
        raise ParamsError(f"{source}: ic_len at byte {pos} is 0, need at least 1 (the ONE input)")
    out["ic"] = _points_at(buf, pos + LENGTH_BYTES, ic_len, G1, source, f"ic (ic_len {ic_len})", check)
    return BellpersonVerifyingKey(**out), pos + LENGTH_BYTES + ic_len * G1.uncompressed_size


def _read_file(path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ParamsError(f"{os.fspath(path)}: cannot read: {e.strerror}") from None


def read_vk(path, check: bool = True) -> BellpersonVerifyingKey:
    """A .vk file, authenticated by its digest when its name is a published one, every point
    checked (on the curve, in the subgroup) unless ``check`` is False; the file must end exactly
    after the last IC point (a wrong ic_len is refused)."""
    authenticate(path)
    buf = _read_file(path)
    vk, end = vk_from_buffer(buf, os.fspath(path), check)
    if end != len(buf):
        raise ParamsError(f"{os.fspath(path)}: ic_len {len(vk.ic)} makes the key {end} bytes, the file has "
                          f"{len(buf)}")
    return vk


@contextmanager
def _atomic_output(path):
    """A binary file object writing to a temporary name in path's directory, renamed over path
    when the block ends without an exception (a reader never sees half a key)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_vk(path, vk: BellpersonVerifyingKey) -> None:
    """Write a .vk file (temporary name, then rename)."""
    with _atomic_output(path) as f:
        f.write(vk_to_bytes(vk))


def write_params(path, pk: ProvingKey, chunk: int = WRITE_CHUNK) -> None:
    """Write the project's proving key as a bellperson .params file, queries as the key stores
    them (a key from the development setup is stored by density, as Filecoin's are), encoded
    ``chunk`` points at a time (memory stays bounded for a large, memory-mapped key)."""
    with _atomic_output(path) as f:
        f.write(vk_to_bytes(BellpersonVerifyingKey.from_proving_key(pk)))
        for _, field in QUERIES.values():
            points = getattr(pk, field)
            f.write(struct.pack(">I", len(points)))
            for lo in range(0, len(points), chunk):
                f.write(encode(np.asarray(points[lo : lo + chunk])).tobytes())


@dataclass(frozen=True)
class QuerySpan:
    """Where a query's points lie in a .params file."""

    name: str
    group: Group
    count: int
    offset: int  # byte offset of the first point

    @property
    def end(self) -> int:
        return self.offset + self.count * self.group.uncompressed_size


class ParamsFile:
    """A memory-mapped .params file: the verifying key read (and checked) at once, each query's
    span found from its count, its points decoded on request. Use as a context manager."""

    def __init__(self, path, check_vk: bool = True, verify_digest: bool = True):
        self.path = os.fspath(path)
        if verify_digest:
            authenticate(self.path)
        try:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
        except OSError as e:
            raise ParamsError(f"{self.path}: cannot open: {e.strerror}") from None
        try:
            self.vk, pos = vk_from_buffer(self._map, self.path, check_vk)
            self.spans = self._index(pos)
        except BaseException:
            self.close()
            raise

    def _index(self, pos: int) -> dict[str, QuerySpan]:
        spans = {}
        for name, (g, _) in QUERIES.items():
            count = _u32(self._map, pos, self.path, f"{name} length")
            span = QuerySpan(name, g, count, pos + LENGTH_BYTES)
            if span.end > len(self._map):
                raise ParamsError(f"{self.path}: {name} length {count} at byte {pos} needs {count} {g.name} points "
                                  f"up to byte {span.end}, the file has {len(self._map)} bytes (truncated)")
            spans[name], pos = span, span.end
        if pos != len(self._map):
            raise ParamsError(f"{self.path}: {len(self._map) - pos} bytes after the b_g2 query (at byte {pos})")
        return spans

    def query(self, name: str, start: int = 0, stop: int | None = None, check: bool = False) -> np.ndarray:
        """Points start..stop of a query (h, l, a, b_g1, b_g2) as a limb array, decoded now."""
        if name not in self.spans:
            raise ValueError(f"{self.path}: no query {name!r} (queries: {', '.join(QUERIES)})")
        s = self.spans[name]
        stop = s.count if stop is None else min(stop, s.count)
        start = min(start, stop)
        size = s.group.uncompressed_size
        return _points_at(self._map, s.offset + start * size, stop - start, s.group, self.path, f"{name} query", check)

    def proving_key(self, a_wires=None, b_wires=None, check: bool = False, meta: dict | None = None) -> ProvingKey:
        """The project's ProvingKey from this file; ``a_wires``/``b_wires``: the wires of the a and
        b queries' points (the circuit's densities), None where a query has a point per wire."""
        arrays = {n: getattr(self.vk, n) for n in ProvingKey.VK_ARRAYS + ("beta_g1", "delta_g1")}
        arrays.update({field: self.query(name, check=check) for name, (_, field) in QUERIES.items()})
        for name, wires in (("a_wires", a_wires), ("b_wires", b_wires)):
            if wires is not None:
                arrays[name] = wires
        pk = ProvingKey.from_arrays(arrays, meta or {"source": self.path})
        try:
            pk.validate()
        except ValueError as e:
            raise ParamsError(f"{self.path}: {e}{self._hint(pk)}") from None
        return pk

    def _hint(self, pk: ProvingKey) -> str:
        n = self.spans["h"].count + 1
        if n & (n - 1) == 0:
            return (f" (h holds {n - 1} = m - 1 points: bellperson's H convention, which the project's prover "
                    "does not use yet)")
        if pk.dense and self.spans["a"].count != pk.n_wires:
            return " (a .params stores no density: pass a_wires and b_wires, the circuit's A and B densities)"
        return ""

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()

    def __enter__(self) -> ParamsFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
