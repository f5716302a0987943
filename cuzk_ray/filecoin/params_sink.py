"""A development key streamed into bellperson's ``.params`` as it is made (issue 30, 32 GiB keys).

``dev_setup`` builds the whole ProvingKey in host memory and ``write_params`` then encodes it: at
32 GiB that is ~47 GB of points held twice over. Here ``generate_key`` (groth16/setup.py) writes
into a ``ParamsSink`` instead: every query's place in the file follows from counts known before
the first point (``params_layout``: the circuit's wire densities and bellperson's domain), so each
chunk of points is encoded and written at its offset the moment it is computed (on the GPU: 2^23
points at a time), and the host never holds more than a chunk. The verifying key, computed last,
is written at the head and as the ``.vk``; the ``.params`` is renamed into place at the very end,
which marks the key complete.

``check_room`` is the preflight: the disk room for the files and the host memory the setup needs,
refused in one line (path, need vs have) before anything is computed.
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..groth16.setup import STREAM_CHUNK, generate_key, wire_density
from ..r1cs import ConstraintSystem
from ..ref.bellperson_qap import bellperson_domain
from .params import LENGTH_BYTES, VK_POINTS, BellpersonVerifyingKey, vk_to_bytes, write_vk
from .points import G1, G2, encode

ENCODE_CHUNK = 1 << 16  # points encoded per write: bounded scratch whatever the chunk the setup yields
# generate_key's query names -> (.params query, group), in .params order
FILE_QUERIES = {"h_query": ("h", G1), "l_query": ("l", G1), "a_query": ("a", G1), "b_g1_query": ("b_g1", G1),
                "b_g2_query": ("b_g2", G2)}
GB = 1e9


@dataclass(frozen=True)
class ParamsLayout:
    """Point counts of every part of a .params, hence every byte offset."""

    ic: int
    counts: dict  # generate_key query name -> points, in FILE_QUERIES order

    @property
    def head_bytes(self) -> int:
        """The verifying key: six points, ic_len, the IC."""
        return sum(g.uncompressed_size for _, g in VK_POINTS) + LENGTH_BYTES + self.ic * G1.uncompressed_size

    def offsets(self) -> dict:
        """generate_key query name -> byte offset of its first point (its u32 count just before)."""
        out, pos = {}, self.head_bytes
        for name, (_, g) in FILE_QUERIES.items():
            out[name] = pos + LENGTH_BYTES
            pos += LENGTH_BYTES + self.counts[name] * g.uncompressed_size
        return out

    @property
    def total_bytes(self) -> int:
        return self.head_bytes + sum(LENGTH_BYTES + n * FILE_QUERIES[q][1].uncompressed_size
                                     for q, n in self.counts.items())

    @property
    def largest_query_bytes(self) -> int:
        return max(n * FILE_QUERIES[q][1].uncompressed_size for q, n in self.counts.items())


def params_layout(cs: ConstraintSystem) -> ParamsLayout:
    """The layout of ``cs``'s development .params (bellperson QAP, a/b queries by density)."""
    a_wires, b_wires = wire_density(cs)
    n_a = cs.n_wires if a_wires is None else len(a_wires)
    n_b = cs.n_wires if b_wires is None else len(b_wires)
    counts = {"h_query": bellperson_domain(cs.n_constraints).n - 1, "l_query": cs.n_wires - cs.n_public - 1,
              "a_query": n_a, "b_g1_query": n_b, "b_g2_query": n_b}
    return ParamsLayout(cs.n_public + 1, counts)


def setup_host_bytes(layout: ParamsLayout, n_wires: int, backend: str) -> int:
    """Host memory the setup needs beside the mapped circuit: on the GPU two chunks of points (the
    scalars stay in VRAM); on the CPU the scalars (u, v, w, l, ic, h, 32 bytes each) and one whole
    query, as points and encoded."""
    if backend == "cuda":
        return 2 * STREAM_CHUNK * G2.uncompressed_size
    return 6 * 32 * max(n_wires, layout.counts["h_query"]) + 2 * layout.largest_query_bytes


def available_host_bytes() -> int:
    """MemAvailable of /proc/meminfo (the kernel's estimate of what can be had without swapping)."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    raise OSError("/proc/meminfo has no MemAvailable line")


def check_room(path, disk_bytes: int, host_bytes: int = 0, what: str = "the key") -> None:
    """Refuse in one line (ValueError naming the path, need vs have) when the file system of
    ``path`` has less than ``disk_bytes`` free or the host less than ``host_bytes`` available."""
    path = Path(path).expanduser().absolute()
    parent = next(p for p in (path, *path.parents) if p.exists())
    free = shutil.disk_usage(parent).free
    if free < disk_bytes:
        raise ValueError(f"{path}: {what} needs {disk_bytes / GB:.1f} GB of disk, {parent} has {free / GB:.1f} GB free")
    if host_bytes:
        have = available_host_bytes()
        if have < host_bytes:
            raise ValueError(f"{path}: {what} needs {host_bytes / GB:.1f} GB of host memory, {have / GB:.1f} GB "
                             "available")


class _Writer:
    """One query's points written at its offset, chunk by chunk, counted."""

    def __init__(self, fd: int, offset: int, count: int, name: str):
        self.fd, self.pos, self.left, self.name = fd, offset, count, name

    def write(self, chunk: np.ndarray) -> None:
        if len(chunk) > self.left:
            raise ValueError(f".params {self.name}: {len(chunk)} more points, {self.left} left in its span")
        for lo in range(0, len(chunk), ENCODE_CHUNK):
            data = encode(np.asarray(chunk[lo : lo + ENCODE_CHUNK])).tobytes()
            os.pwrite(self.fd, data, self.pos)
            self.pos += len(data)
        self.left -= len(chunk)


class ParamsSink:
    """generate_key's sink (as MemorySink / BundleWriter: ``add`` and ``stream``) that writes a
    .params file in place: queries at their offsets as they come, the verifying key at the head when
    complete (``finish``). The file is a temporary name until ``finish`` renames it."""

    def __init__(self, path, layout: ParamsLayout):
        self.path, self.layout = Path(path), layout
        self.offsets = layout.offsets()
        fd, self.tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        self.fd = fd
        os.ftruncate(fd, layout.total_bytes)
        self.small: dict[str, np.ndarray] = {}
        self.left: dict[str, int] = {}

    def add(self, name: str, arr: np.ndarray) -> None:
        if name in ("a_wires", "b_wires"):  # a .params stores no density: the reader is told it
            return
        self.small[name] = np.ascontiguousarray(arr)

    def stream(self, name: str, dtype, shape: tuple):
        if name == "ic":
            return _Collect(self.small, name, shape)
        if name not in FILE_QUERIES:
            raise ValueError(f".params: generate_key made {name!r}, which the file has no place for")
        want = self.layout.counts[name]
        if shape[0] != want:
            raise ValueError(f".params {name}: the setup makes {shape[0]} points, the layout has room for {want}")
        os.pwrite(self.fd, struct.pack(">I", want), self.offsets[name] - LENGTH_BYTES)
        return _Span(self, _Writer(self.fd, self.offsets[name], want, name))

    def verifying_key(self) -> BellpersonVerifyingKey:
        names = [n for n, _ in VK_POINTS] + ["ic"]
        missing = [n for n in names if n not in self.small]
        if missing:
            raise ValueError(f"{self.path}: the setup made no {missing[0]}")
        return BellpersonVerifyingKey(**{n: self.small[n] for n in names})

    def finish(self, vk_path) -> BellpersonVerifyingKey:
        """Every query complete: write the head, fsync, the .vk, then rename the .params into place."""
        short = {n: left for n, left in self.left.items() if left}
        if set(self.left) != set(FILE_QUERIES) or short:
            name = next(iter(short), next(iter(set(FILE_QUERIES) - set(self.left)), "?"))
            raise ValueError(f"{self.path}: query {name} was not written completely")
        vk = self.verifying_key()
        if len(vk.ic) != self.layout.ic:
            raise ValueError(f"{self.path}: the setup made {len(vk.ic)} IC points, the layout {self.layout.ic}")
        head = vk_to_bytes(vk)
        os.pwrite(self.fd, head, 0)
        os.fsync(self.fd)
        os.close(self.fd)
        self.fd = -1
        write_vk(vk_path, vk)
        os.chmod(self.tmp, 0o644)
        os.replace(self.tmp, self.path)
        return vk

    def close(self) -> None:
        """Drop the temporary file (after a failure; a no-op after ``finish``)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        Path(self.tmp).unlink(missing_ok=True)


class _Span:
    """Context manager of one streamed query: records what is left when it closes."""

    def __init__(self, sink: ParamsSink, writer: _Writer):
        self.sink, self.writer = sink, writer

    def __enter__(self) -> _Writer:
        return self.writer

    def __exit__(self, *exc) -> bool:
        self.sink.left[self.writer.name] = self.writer.left
        return False


class _Collect:
    """The IC (a few hundred points): kept whole, written with the head."""

    def __init__(self, small: dict, name: str, shape: tuple):
        self.small, self.name = small, name
        self.out = np.empty(shape, dtype=np.uint64)
        self.rows = 0

    def __enter__(self):
        return self

    def write(self, chunk: np.ndarray) -> None:
        self.out[self.rows : self.rows + len(chunk)] = chunk
        self.rows += len(chunk)

    def __exit__(self, *exc) -> bool:
        self.small[self.name] = self.out[: self.rows]
        return False


def write_dev_params(params_path, vk_path, cs: ConstraintSystem, seed: int, meta: dict | None = None,
                     backend: str = "cpu") -> ParamsLayout:
    """A development key of ``cs`` (INSECURE, ``seed``; bellperson's QAP; on ``backend``) streamed into
    ``params_path`` with its ``.vk`` at ``vk_path``, after ``check_room``. Returns the layout."""
    layout = params_layout(cs)
    need_disk = layout.total_bytes + layout.head_bytes  # the .params and the .vk (its head again)
    check_room(params_path, need_disk, setup_host_bytes(layout, cs.n_wires, backend),
               what=f"the development setup of {cs.name}")
    sink = ParamsSink(params_path, layout)
    try:
        generate_key(sink, cs, seed, meta, backend, qap="bellperson")
        sink.finish(vk_path)
    finally:
        sink.close()
    return layout
