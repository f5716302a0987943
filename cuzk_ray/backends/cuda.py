"""The ``cuda`` proving backend (CudaBackend, GpuKey): the Backend protocol (backends/base.py)
with the H computation and every MSM on the GPU (the device layer, cuzk_ray.cuda) and the bases
resident in VRAM.

Field vectors: an FrVector is trusted (checked where it was made); a raw numpy or cupy array is
range-checked once, by the first kernel wrapper that takes it (cuda.device.check_fr). ``stage``
returns an FrVector on the device, so a partition staged first is range-checked once in all
(zero times when its witness arrives as an FrVector).

  load_key(pk)   queries a, b_g1, l, h (G1) and b_g2 (G2) uploaded once and kept in the MSM
                 kernels' form (cuda.msm.Bases, Montgomery) of the key's curve (pk.curve:
                 cuda.msm.groups_of, BLS12-381 or BN254); free VRAM checked first; the
                 H query (uniform scalars, the costliest MSM) also gets a table of window
                 multiples when it pays (>= 2^16 bases) and fits (precompute_h; at most half of
                 the VRAM left after the queries); only single points (alpha, beta, delta)
                 become point objects (arkworks for BLS12-381, curve_groups for both)
  load_cs(cs)    constraint matrices uploaded once and kept (cuda.spmv.DeviceConstraintSystem)
  stage(w)       the witness on the device (pinned upload on this thread's stream) as an FrVector;
                 a CompactWitness goes up compact and is expanded there (cuda.witness)
  compute_h_from_witness(cs, w)
                 witness -> a, b, c by sparse mat-vec (kernels/spmv.cu) -> h, all in VRAM; h is
                 returned as an FrVector on the device and fed to the H MSM without a host round trip
  compute_h      a, b, c -> one device buffer -> iNTT, coset shift, NTT, h = ab - c (kernels/ntt.cu)
                 (both take the key's ``qap``: "bellperson" divides by Z(7) on the coset 7 and
                 goes back to H's m - 1 coefficients, cuda.ntt.compute_h_bellperson_device)
  gather(key, wires, w)
                 the witness values of the key's a_wires / b_wires (a key stored by density) as
                 a new device array: cupy take on the uint64[n, 4] limbs with the index arrays
                 uploaded once with the key (GpuKey.wires)
  msm_g1         kernels/msm.cu on the resident bases (scalars numpy or cupy); the kernels under
                 the GPU lock, the host's combination of the window sums (cuda.msm.finish,
                 ~0.4 ms for G1 and ~0.8 ms for G2 on a 2-core VM) after it, so another
                 partition's kernels run meanwhile and it is not counted as GPU time
  msm_g2         kernels/msm_g2.cu on the resident b_g2_query (or a device slice of it), one MSM
                 (split_g2 = False: the prover does not cut it in halves as for the CPU)
                 Both cut an MSM into consecutive pieces, run one after another, when its scratch
                 does not fit in the free VRAM (cuda.msm.piece_len: the 32 GiB PoRep on an 80 GB
                 card), and add the pieces' points on the host

Curves: a key carries its curve (pk.curve), a constraint system its r (cs.modulus): the MSMs run
on that curve's groups, H on its domain and kernels (cuda.spmv, cuda.ntt), raw scalars are
range-checked below its r, and single points and results are that curve's point objects
(curve_groups.groups_for), so the prover's assembly is the same code for both. BN254 proves in
snarkjs's convention only (bellperson's H is BLS12-381's: refused in one line).

One allocator for the process: CuPy's default device memory pool (no cudaMallocAsync mixed in)
and a pinned host pool for uploads.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

from ..cuda import msm as cuda_msm
from ..cuda import ntt as cuda_ntt
from ..cuda import spmv as cuda_spmv
from ..cuda import witness as cuda_witness
from ..cuda.device import check_fr
from ..domain import Domain
from ..field import FR_LIMBS, R_MOD, FrVector, as_fr_limbs, checked_fr
from ..formats.native import release_mapped_pages
from ..groth16.keys import ProvingKey
from ..kernels.loader import require_cupy
from ..r1cs import CodedCsr
from ..witness import CompactWitness
from .base import DeviceTime
from .cpu import ResidentKey

log = logging.getLogger(__name__)

VRAM_MARGIN = 1 << 30  # keep 1 GiB free for kernels' scratch

# The partition whose GPU seconds a kernel counts towards (a one-element list set by
# CudaBackend.account; submit() carries it into the backend's threads).
_account: contextvars.ContextVar = contextvars.ContextVar("cuzk_gpu_account", default=None)


def _msm_section(query: str) -> str:
    """The section an MSM's device time is counted under: "msm_h" for "h_query" (the stage's name)."""
    return "msm_" + query.removesuffix("_query")


def _finish_sum(pieces: list, g, to_points):
    """The point of an MSM from its pieces' MsmParts: each finished on the host (uint64[2, *elem])
    and made a point of the key's curve (``to_points``), the points added."""
    pts = [to_points(cuda_msm.finish(p).reshape(1, 2, *g.elem))[0] for p in pieces]
    total = pts[0]
    for p in pts[1:]:
        total = total + p
    return total


class GpuKey:
    """A proving key with its queries in VRAM (and the single points for assembly on the CPU),
    on the MSM groups of its curve (``g1``, ``g2``; scalars below ``r``)."""

    G1_QUERIES = ("a_query", "b_g1_query", "l_query", "h_query")
    G2_QUERIES = ("b_g2_query",)

    def __init__(self, pk: ProvingKey, cp, precompute_h: bool = True):
        self.pk = pk
        self.g1, self.g2 = cuda_msm.groups_of(pk.curve.name)
        self.r = pk.curve.r
        names = self.G1_QUERIES + self.G2_QUERIES
        index = {d: getattr(pk, d) for d in pk.DENSITIES if getattr(pk, d) is not None}
        need = sum(getattr(pk, q).nbytes for q in names) + sum(int(x.nbytes) for x in index.values())
        largest = max(getattr(pk, q).nbytes for q in names)  # its standard-form upload, converted then freed
        free, _total = cp.cuda.runtime.memGetInfo()
        free += cp.get_default_memory_pool().free_bytes()
        if need + largest + VRAM_MARGIN > free:
            raise MemoryError(f"GPU memory: the key's queries (G1 and G2) need {need / 2**30:.2f} GiB "
                              f"(+ {largest / 2**30:.2f} GiB while converting), {free / 2**30:.2f} GiB free "
                              f"(margin {VRAM_MARGIN / 2**30:.0f} GiB)")
        n_h = len(pk.h_query)
        table = cuda_msm.table_bytes(self.g1, n_h)
        # Window multiples of the H bases when they pay and fit in half of what is left.
        self.h_table = bool(precompute_h and n_h >= cuda_msm.TABLE_MIN_SCALARS
                            and table <= (free - need - VRAM_MARGIN) // 2)
        self.device = {}
        for q in names:
            g = self.g2 if q in self.G2_QUERIES else self.g1
            window = cuda_msm.table_window_for(n_h) if (q == "h_query" and self.h_table) else None
            t0 = time.perf_counter()
            pts = np.ascontiguousarray(getattr(pk, q))
            try:
                self.device[q] = cuda_msm.prepare_bases(g, pts, table_window=window)
            except cp.cuda.memory.OutOfMemoryError:
                if not window:
                    raise
                log.warning("h_query: no VRAM for the window multiples after all; plain bases")
                cp.get_default_memory_pool().free_all_blocks()
                self.h_table, window = False, None
                self.device[q] = cuda_msm.prepare_bases(g, pts)
            cp.get_default_memory_pool().free_all_blocks()  # the standard-form upload
            release_mapped_pages(getattr(pk, q))  # in VRAM now: the host's mapped copy is not needed
            if window:
                log.info("h_query: window multiples for c = %d, %.1f GiB of VRAM, built in %.1f s",
                         window, table / 2**30, time.perf_counter() - t0)
        if not self.h_table:
            log.info("h_query: no table of window multiples (%d bases; %.1f GiB needed, %.1f GiB free after the "
                     "queries, precompute_h=%s)", n_h, table / 2**30, (free - need) / 2**30, precompute_h)
        # The density index arrays (uint32, 4 bytes per wire: ~0.13 GB for b_wires at 2^27) stay
        # in VRAM with the bases, so a partition's gather is a device operation only. cupy's take
        # along axis 0 computes index * 4 (limbs per row) in the index's type: uint32 is exact
        # below 2^30 wires; above, the index goes up as int64.
        wide = pk.n_wires > 1 << 30
        self.wires = {d: cp.asarray(np.ascontiguousarray(x, dtype=np.int64 if wide else x.dtype))
                      for d, x in index.items()}
        self.cpu = ResidentKey(pk, g1_queries=False, g2_queries=False)
        self.groups = self.cpu.groups  # the curve's point objects (curve_groups): MSM results become them
        # The rest of the interface (alpha_g1, delta_g2, ...) comes from the CPU-side key.
        for name in ("alpha_g1", "beta_g1", "delta_g1", "beta_g2", "delta_g2"):
            setattr(self, name, getattr(self.cpu, name))
        self.queries = self.cpu.queries


class CudaBackend:
    name = "cuda"
    qaps = ("snarkjs", "bellperson")  # the H conventions compute_h_from_witness computes (cuda/ntt.py)
    split_g2 = False  # one G2 MSM on the GPU (the CPU backend cuts it in two for two cores)
    precompute_h = True  # window multiples of the H bases when they pay and fit (GpuKey)
    max_msm_piece: int | None = None  # scalars per MSM piece at most (None: as the free VRAM allows)

    def __init__(self, threads: int = 2):
        self.cp = require_cupy()
        self.pool = ThreadPoolExecutor(max_workers=max(2, threads), thread_name_prefix="cuzk-gpu")
        self._keys: dict[int, GpuKey] = {}
        self._systems: dict = {}  # id(cs) -> DeviceConstraintSystem
        self._gpu_lock = threading.Lock()  # one partition's kernels at a time on this device
        self._copy_streams: dict[int, object] = {}  # upload stream per staging thread
        self.gpu_seconds = 0.0
        self._vram_peak = 0  # bytes in use on the device (all processes), highest seen after a kernel

    @property
    def vram_peak(self) -> int:
        return self._vram_peak

    def load_key(self, pk: ProvingKey) -> GpuKey:
        key = self._keys.get(id(pk))
        if key is None or key.pk is not pk:
            key = self._keys[id(pk)] = GpuKey(pk, self.cp, self.precompute_h)
        return key

    @contextmanager
    def account(self):
        """Yields a DeviceTime: the GPU seconds of the kernels run in this context (and in backend
        threads it submits to) and their (start, end) epoch times: per-partition kernel time even
        when two partitions share the device, and when it happened (bench windows)."""
        box = DeviceTime()
        token = _account.set(box)
        try:
            yield box
        finally:
            _account.reset(token)

    def load_cs(self, cs):
        """cs's matrices resident in VRAM (uploaded on first use, kept for the backend's life).
        Raises MemoryError naming the sizes when the free VRAM minus VRAM_MARGIN cannot hold them
        and one proof's working buffers."""
        dcs = self._systems.get(id(cs))
        if dcs is not None and dcs.cs is cs:
            return dcs
        resident, upload = cuda_spmv.DeviceConstraintSystem.estimate_bytes(cs)
        work = cuda_spmv.DeviceConstraintSystem.working_bytes(cs)
        free, _total = self.cp.cuda.runtime.memGetInfo()
        free += self.cp.get_default_memory_pool().free_bytes()  # cached by CuPy, reusable
        if resident + max(upload, work) + VRAM_MARGIN > free:
            raise MemoryError(
                f"GPU memory: the constraint matrices of {cs.name} need up to {resident / 2**30:.2f} GiB resident "
                f"+ {max(upload, work) / 2**30:.2f} GiB while uploading / proving, {free / 2**30:.2f} GiB free "
                f"(margin {VRAM_MARGIN / 2**30:.0f} GiB); use a GPU with more memory or backend=cpu"
                + (" (the H query's table of window multiples holds part of it: CudaBackend.precompute_h = False)"
                   if any(k.h_table for k in self._keys.values()) else ""))
        with self._gpu_lock:
            dcs = self._systems[id(cs)] = cuda_spmv.DeviceConstraintSystem(cs)
            self.cp.cuda.get_current_stream().synchronize()
        for m in (x for x in (cs.A, cs.B, cs.C) if x is not None):  # in VRAM now: mapped pages dropped
            for arr in (m.indptr, m.entries) if isinstance(m, CodedCsr) else (m.indptr, m.indices, m.data):
                release_mapped_pages(arr)
        return dcs

    def unload(self, pk: ProvingKey, cs=None) -> None:
        """Free the key's VRAM (its queries, tables, density indices) and the matrices of ``cs``:
        the device memory goes back to the driver, so another key can take it."""
        with self._gpu_lock:  # not while one of its partitions runs kernels
            key = self._keys.get(id(pk))
            if key is not None and key.pk is pk:
                del self._keys[id(pk)]
            dcs = self._systems.get(id(cs)) if cs is not None else None
            if dcs is not None and dcs.cs is cs:
                del self._systems[id(cs)]
            del key, dcs
            self.cp.cuda.get_current_stream().synchronize()
            self.cp.get_default_memory_pool().free_all_blocks()

    def compute_h_from_witness(self, cs, witness, times=None, qap: str = "snarkjs") -> FrVector:
        """h as an FrVector on the device (``uint64[n, 4]``, standard form) from the witness (an
        FrVector, or standard-form limbs, numpy or cupy: a cupy witness is used in place), in the
        key's H convention ``qap`` ("bellperson": its m - 1 coefficients). a, b, c never leave the
        device. Recorded as stage "h" in ``times`` (the matrices' first upload included)."""
        from contextlib import nullcontext

        cuda_spmv.check_qap_curve(qap, cuda_spmv.curve_of_system(cs))  # before any upload
        witness = self._scalar_limbs(witness, "witness", cs.modulus)  # ints too, as the cpu backend takes
        with times.stage("h") if times is not None else nullcontext():
            dcs = self.load_cs(cs)
            return FrVector(self._timed_gpu("h", cuda_spmv.h_from_witness, dcs, witness, qap=qap))

    def _scalar_limbs(self, x, what: str, modulus: int = R_MOD):
        """What a kernel wrapper takes: an FrVector as it is (trusted); a cupy array stays on the
        device (dtype and shape checked here, range and contiguity by the kernel wrapper, once);
        numpy limbs via as_fr_limbs (checked by the wrapper too); ints reduced mod r (an FrVector;
        ``modulus``: the r of the key's curve)."""
        if isinstance(x, FrVector):
            return x
        if isinstance(x, self.cp.ndarray):
            if x.dtype != np.uint64 or x.ndim != 2 or x.shape[1] != FR_LIMBS:
                raise ValueError(f"{what}: expected a uint64[n, {FR_LIMBS}] array of standard-form Fr limbs, "
                                 f"got {x.dtype}{list(x.shape)}")
            return x
        if isinstance(x, np.ndarray) and x.dtype == np.uint64:
            return as_fr_limbs(x)
        return checked_fr(x, what, modulus)

    def _timed_gpu(self, section: str, fn, *args, **kw):
        """fn(*args, **kw) under the GPU lock, the device synchronized after it; the seconds are
        counted towards the current partition (account), also under ``section``."""
        with self._gpu_lock:
            t0, w0 = time.perf_counter(), time.time()
            try:
                return fn(*args, **kw)
            finally:
                self.cp.cuda.get_current_stream().synchronize()
                dt = time.perf_counter() - t0
                self.gpu_seconds += dt
                box = _account.get()
                if box is not None:
                    box.seconds += dt
                    box.spans.append((w0, w0 + dt))
                    box.sections[section] = box.sections.get(section, 0.0) + dt
                free, total = self.cp.cuda.runtime.memGetInfo()
                self._vram_peak = max(self._vram_peak, total - free)

    def warm_up(self, pk: ProvingKey | None = None) -> None:
        """Nothing yet: kernels are compiled (or loaded from cubins) on first use."""

    def stage(self, witness, modulus: int = R_MOD) -> FrVector:
        """The witness on the device as an FrVector, ahead of the kernels that use it: copied into
        pinned host buffers (CuPy's pinned pool, reused across partitions), uploaded on this
        thread's own non-blocking stream and waited for here, outside the GPU lock, so the upload
        of one partition overlaps the kernels of another (the actor runs partitions on two
        threads). A CompactWitness uploads its bitmaps and values only (~0.16 GiB at 2^27
        instead of 4 GiB) and is expanded on the device (cuda.witness, ~1 ms at 2^27, under the
        GPU lock and counted as this partition's GPU time). An FrVector on the device is
        returned as it is; raw limbs (numpy or cupy) are range-checked once, on the device, after
        the upload, below ``modulus`` (the r of the key's curve: the prover passes pk.curve.r);
        an FrVector or a CompactWitness is not checked again."""
        cp = self.cp
        if isinstance(witness, CompactWitness):
            return self._stage_compact(witness)
        witness = self._scalar_limbs(witness, "witness", modulus)
        if isinstance(witness, FrVector) and witness.on_device:
            return witness
        if isinstance(witness, cp.ndarray):
            return check_fr(witness, "witness", modulus)
        w = np.ascontiguousarray(as_fr_limbs(witness))
        (dev,) = self._upload([(w, w.nbytes)])
        dev = dev.view(cp.uint64).reshape(w.shape)
        return FrVector(dev) if isinstance(witness, FrVector) else check_fr(dev, "witness", modulus)

    def _stage_compact(self, w: CompactWitness) -> FrVector:
        cp = self.cp
        nw = cuda_witness.bitmap_words(w.n_wires)  # bitmaps go up zero-padded to whole 32-bit words
        full, bits, values = self._upload([(w.full, 4 * nw), (w.bits, 4 * nw), (w.values, w.values.nbytes)])
        values = (values.view(cp.uint64).reshape(w.n_full, FR_LIMBS) if w.n_full
                  else cp.empty((0, FR_LIMBS), dtype=cp.uint64))  # all bits: nothing went up
        dev = self._timed_gpu("expand", cuda_witness.expand, w.n_wires, full.view(cp.uint32), bits.view(cp.uint32),
                              values)
        return FrVector(dev)

    def _upload(self, parts) -> list:
        """Device uint8 copies of host arrays, ``parts`` = [(array, nbytes >= array.nbytes)]: each
        copied into a pinned buffer of nbytes (zero-padded), uploaded on this thread's copy stream;
        this thread waits for the copies, the device goes on with other partitions' kernels."""
        cp = self.cp
        stream = self._copy_streams.get(threading.get_ident())
        if stream is None:
            stream = self._copy_streams[threading.get_ident()] = cp.cuda.Stream(non_blocking=True)
        pinned, out = [], []
        with stream:
            for a, nbytes in parts:
                dev = cp.empty(nbytes, dtype=cp.uint8)
                if nbytes:
                    mem = cp.cuda.alloc_pinned_memory(nbytes)
                    host = np.frombuffer(mem, dtype=np.uint8, count=nbytes)
                    src = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                    host[: src.size] = src
                    host[src.size :] = 0
                    dev.set(host, stream=stream)
                    pinned.append(mem)
                out.append(dev)
            done = stream.record()
        done.synchronize()
        # the pinned blocks go back to the pinned pool on return, after the copies completed
        return out

    def compute_h(self, a, b, c, qap: str = "snarkjs", domain: Domain | None = None) -> np.ndarray:
        """h (numpy ``uint64[n, 4]``, standard form; "bellperson" ``qap``: its m - 1 coefficients)
        from a, b, c (FrVectors, or limbs / ints, checked by the kernel wrapper) on ``domain``
        (None: BLS12-381's of their length; a BN254 Domain for a BN254 key, snarkjs only)."""
        fn = {"snarkjs": cuda_ntt.compute_h, "bellperson": cuda_ntt.compute_h_bellperson}.get(qap)
        if fn is None:
            raise ValueError(f"compute_h: qap={qap!r} is not one of snarkjs, bellperson")
        if domain is None:
            a, b, c = (x if isinstance(x, FrVector) else as_fr_limbs(x) for x in (a, b, c))
            return self._timed_gpu("h", fn, a, b, c)
        cuda_spmv.check_qap_curve(qap, domain.curve)
        a, b, c = (self._scalar_limbs(x, f"compute_h {k}", domain.r) for x, k in zip((a, b, c), "abc"))
        return self._timed_gpu("h", fn, a, b, c, domain)

    def gather(self, key: GpuKey, wires: str, scalars):
        """scalars[pk.<wires>] on the device (a new contiguous uint64[k, 4]; an FrVector when given
        one), or scalars as they are when the key is dense there. Host scalars are uploaded first
        (the prover stages the witness, so it is already on the device).

        Cost at 2^27 (filecoin shape): A covers every wire (a_wires None: no gather); b_wires has
        ~33.1M wires, so the gather reads 33.1M x (4 B index + one 32 B row) and writes 33.1M x 32 B,
        ~2.3 GB of traffic: ~1 ms at the H200's ~4.8 TB/s (the rows are 32 B sectors, so scattered
        reads cost about as much as sequential ones), against ~0.3 s for the B MSMs it feeds; and
        1.06 GB of VRAM for the gathered scalars while the partition's B MSMs run (both use one
        gather). A key with a_wires too (a zkey) pays the same per gathered wire."""
        idx = key.pk.density_index(wires)
        if idx is None:
            return scalars
        cp = self.cp
        s = self._scalar_limbs(scalars, f"gather {wires} scalars", key.r)
        trusted = isinstance(s, FrVector)
        limbs = cp.asarray(s.limbs if trusted else s)
        if len(limbs) != key.pk.n_wires:
            raise ValueError(f"gather {wires}: {len(limbs)} scalars, the key has {key.pk.n_wires} wires")
        out = self._timed_gpu("gather", cp.take, limbs, key.wires[wires], 0)
        # rows of checked values are checked values; a raw array is range-checked by the MSM
        return FrVector(out) if trusted else out

    def msm_g1(self, key: GpuKey, query: str, scalars):
        bases = key.device[query]
        s = self._scalar_limbs(scalars, f"MSM {query} scalars", key.r)
        if len(s) != bases.n:
            raise ValueError(f"MSM {query}: {bases.n} bases but {len(s)} scalars")
        # H's scalars are evaluations of a b - c: uniform, so no 0/1 split (msm_parts split=False)
        pieces = self._timed_gpu(_msm_section(query), self._msm_pieces, key.g1, bases, s,
                                 split=query != "h_query")
        return _finish_sum(pieces, key.g1, key.groups.g1_points)  # host work, the device let go

    def msm_g2(self, key: GpuKey, query: str, scalars, start: int | None = None):
        """sum_i scalars[i] * query[start + i] in G2 on the GPU. Without start the counts must
        match; with it the scalars cover a slice of the resident bases (a view, no copy)."""
        bases = key.device[query]
        s = self._scalar_limbs(scalars, f"MSM {query} scalars", key.r)
        if start is None:
            if len(s) != bases.n:
                raise ValueError(f"MSM {query}: {bases.n} bases but {len(s)} scalars")
        else:
            if start < 0 or start + len(s) > bases.n:
                raise ValueError(f"MSM {query}: {len(s)} scalars from base {start} but {bases.n} bases")
            bases = bases.slice(start, len(s))
        pieces = self._timed_gpu(_msm_section(query), self._msm_pieces, key.g2, bases, s)
        return _finish_sum(pieces, key.g2, key.groups.g2_points)  # host work

    def _msm_pieces(self, g, bases, scalars, split: bool = True) -> list:
        """msm_parts of one MSM (a list of one MsmParts), or of consecutive pieces of it when its
        scratch does not fit in the VRAM free now (cuda_msm.piece_len; at most max_msm_piece
        scalars each when that is set). Run under the GPU lock: the free VRAM is read with no
        other MSM of this backend running, and each piece's scratch goes back to CuPy's pool
        for the next. A piece drops the H bases' table of window multiples (its rows are per
        level), which only a card with room to spare has."""
        free, _total = self.cp.cuda.runtime.memGetInfo()
        free += self.cp.get_default_memory_pool().free_bytes() - VRAM_MARGIN
        n = bases.n
        step = cuda_msm.piece_len(n, free) if n else 0
        if self.max_msm_piece is not None:
            step = min(step, self.max_msm_piece)
        if step >= n:
            return [cuda_msm.msm_parts(g, bases, scalars, split=split)]
        return [cuda_msm.msm_parts(g, bases.slice(a, min(step, n - a)), scalars[a : a + step], split=split)
                for a in range(0, n, step)]

    def submit(self, fn, *args):
        return self.pool.submit(contextvars.copy_context().run, fn, *args)
