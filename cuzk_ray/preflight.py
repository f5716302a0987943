"""Preflight: what a run needs (disk, host memory, object store, VRAM) against what the machine
has, checked before any work starts and before anything is written. A need that does not fit is
one line naming the resource, the need with its parts, and the have:

    host memory: need 61.0 GiB (key copy 44.1 GiB + 12 partitions x 0.40 GiB + ...), have 23.0 GiB

Ray-free and pure: ``Needs`` are computed from a ``KeyShape`` (sizes only, nothing built) and the
run's settings; ``Have`` is read from the machine (or given, in tests); ``check`` compares them;
``preflight`` does all three for a job (jobs/prove.py, jobs/bench.py) before its key is made.
Every estimate here is an upper bound of the arrays the code allocates, named after them.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from .engines.admission import OBJECT_STORE_MARGIN
from .groth16.keys import WIRE_INDEX_DTYPE

GIB = 1 << 30
G1_AFFINE = 96  # bytes: two Fp coordinates of 6 u64 limbs
G2_AFFINE = 192
FR = 32
WIRE_INDEX = WIRE_INDEX_DTYPE.itemsize  # bytes per wire of a density index (a_wires, b_wires)
CSR_DEVICE_BYTES_PER_NNZ = 8  # uint32 column + uint32 coefficient code (r1cs.CodedCsr: bundle and VRAM)
ZKEY_BYTES_PER_NNZ = 8 + 32  # a converted zkey's CsrMatrix: int64 column + 4 u64 limbs of the coefficient
DRIVER_BYTES = 2 * GIB  # the driver process: Python, Ray's core worker, numpy temporaries
VRAM_MARGIN = 1 * GIB  # kept free for kernels' scratch (the cuda backend's margin)


@dataclass(frozen=True)
class KeyShape:
    """The sizes that decide a key's bytes: wires, public inputs, the QAP domain, the non-zeros
    of A, B, C, and how many wires have a point in a_query / b_g1_query / b_g2_query (all of them
    in a dense key; only the wires that appear in A or B in a key stored by density)."""

    n_wires: int
    n_public: int
    domain: int
    nnz_a: int
    nnz_b: int
    nnz_c: int
    a_points: int | None = None  # None: dense (n_wires)
    b_points: int | None = None
    bytes_per_nnz: int = CSR_DEVICE_BYTES_PER_NNZ  # as the key's cache stores a non-zero (zkeys: CsrMatrix)
    dense_bound: bool = False  # True: density unknown (a zkey before it is read), queries counted dense

    @property
    def query_bytes(self) -> dict[str, int]:
        a = self.n_wires if self.a_points is None else self.a_points
        b = self.n_wires if self.b_points is None else self.b_points
        return {"a_query": a * G1_AFFINE, "b_g1_query": b * G1_AFFINE, "b_g2_query": b * G2_AFFINE,
                "l_query": (self.n_wires - self.n_public - 1) * G1_AFFINE, "h_query": self.domain * G1_AFFINE}

    @property
    def gathered(self) -> dict[str, int]:
        """Wires of each density index the key stores: a_wires / b_wires exist only where fewer
        wires than all have a point (ProvingKey.by_density leaves a full one None)."""
        out = {}
        for name, points in (("a_wires", self.a_points), ("b_wires", self.b_points)):
            if points is not None and points < self.n_wires:
                out[name] = points
        return out

    @property
    def index_bytes(self) -> int:
        return WIRE_INDEX * sum(self.gathered.values())

    @property
    def key_bytes(self) -> int:
        """What the key stores: its queries and its density index arrays (ProvingKey.nbytes)."""
        return sum(self.query_bytes.values()) + self.index_bytes

    @property
    def nnz(self) -> int:
        return self.nnz_a + self.nnz_b + self.nnz_c

    @property
    def matrix_bytes(self) -> int:
        """The constraint matrices as the key bundle stores them and VRAM holds them (r1cs.CodedCsr:
        8 bytes per non-zero, an int64 row pointer per row; the coefficient tables are small; a
        zkey's matrices are CsrMatrix, ``bytes_per_nnz`` = 40)."""
        return self.nnz * self.bytes_per_nnz + 3 * (self.domain + 1) * 8

    def device_matrix_bytes(self, with_c: bool) -> int:
        """The matrices as VRAM holds them: A and B, and C only ``with_c`` (the cuda backend
        computes c = a * b on the device instead: cuda.spmv.C_FROM_AB)."""
        nnz = self.nnz_a + self.nnz_b + (self.nnz_c if with_c else 0)
        return nnz * self.bytes_per_nnz + (3 if with_c else 2) * (self.domain + 1) * 8

    @property
    def witness_bytes(self) -> int:
        return self.n_wires * FR


@dataclass(frozen=True)
class Need:
    """One resource: its name, the parts of the need (label, bytes), and what is there."""

    resource: str
    parts: tuple[tuple[str, int], ...]
    have: int | None  # None: unknown (not checked)

    @property
    def need(self) -> int:
        return sum(b for _, b in self.parts)

    @property
    def fits(self) -> bool:
        return self.have is None or self.need <= self.have

    def line(self) -> str:
        parts = " + ".join(f"{label} {gib(b)}" for label, b in self.parts if b)
        have = "unknown" if self.have is None else gib(self.have)
        return f"{self.resource}: need {gib(self.need)} ({parts}), have {have}"


@dataclass(frozen=True)
class Have:
    """What the machine offers: free disk where the key goes, host memory available, the object
    store's capacity (None without Ray), free VRAM per GPU (None without one)."""

    disk_free: int
    host_available: int
    object_store: int | None = None
    vram_free: int | None = None


@dataclass(frozen=True)
class RunPlan:
    """The settings that size a run."""

    pw: int
    partition_host_bytes: int
    backend: str  # "cpu" | "cuda"
    engine: str  # "ray" | "local"
    key_on_disk: bool  # the key (and matrices) must still be written to the cache
    gpu_concurrency: int = 2  # partitions one GPU actor works on at once
    gpu_workers: int = 1  # GPU actors per device, each with its own copy of the key in VRAM
    key_in_object_store: bool = True  # False: the actors map the key's bundle (one node, built-in keys)
    partition_batch_bytes: int | None = None  # one partition's Arrow batch (circuit.partition_batch_bytes);
    # None: the full witness (KeyShape.witness_bytes), an upper bound


class PreflightError(ValueError):
    """A resource the run needs is not there; the message is the one-line need/have."""


def gib(nbytes: int) -> str:
    return f"{nbytes / GIB:.1f} GiB" if nbytes >= GIB / 10 else f"{nbytes / (1 << 20):.1f} MiB"


def working_set_bytes(shape: KeyShape) -> int:
    """VRAM one partition in flight holds on the device: its witness, its h and the witness values
    gathered for a key stored by density (one copy per density index, the B MSMs share theirs);
    a | b | c (3 domain vectors) exist only while h is computed under the device lock: counted
    once, in vram_need."""
    return shape.witness_bytes + shape.domain * FR + FR * sum(shape.gathered.values())


def needs(shape: KeyShape, plan: RunPlan, have: Have) -> list[Need]:
    """Every resource the run needs, each with its have."""
    out = []
    dense = " (dense: an upper bound)" if shape.dense_bound else ""  # a zkey's density is unknown until read
    key = f"key{dense}"
    if plan.key_on_disk:
        out.append(Need("disk (key cache)", ((key, shape.key_bytes), ("constraint matrices", shape.matrix_bytes)),
                        have.disk_free))
    key_copy = shape.key_bytes + shape.matrix_bytes  # one host copy per node (object store or mmap)
    # what the engine reserves per partition in flight (engines.admission: cuda counts the Arrow
    # batch and its pinned staging copy; cpu the witness, a, b, c and h)
    parts = ((f"key copy{dense}", key_copy), (f"{plan.pw} partitions x {gib(plan.partition_host_bytes)}",
                                      plan.pw * plan.partition_host_bytes), ("driver", DRIVER_BYTES))
    out.append(Need("host memory", parts, have.host_available))
    if plan.engine == "ray":  # each partition's Arrow batch (its compact witness), and the key unless mapped
        batch = shape.witness_bytes if plan.partition_batch_bytes is None else plan.partition_batch_bytes
        batches = (f"{plan.pw} partition batches x {gib(batch)}", plan.pw * batch)
        key = ("key", key_copy if plan.key_in_object_store else 0)
        out.append(Need("object store", (key, batches, ("margin", OBJECT_STORE_MARGIN)),
                        have.object_store))  # = engines.admission.object_store_need
    if plan.backend == "cuda":
        out.append(vram_need(shape, plan, have))
    return out


def vram_need(shape: KeyShape, plan: RunPlan, have: Have) -> Need:
    """VRAM of the GPU actors on one device: each holds its own key and matrices; while proving,
    gpu_concurrency partitions' working sets, one a | b | c and the largest MSM's scratch (kernels
    run one partition at a time per device), which exceed the key's standard-form upload while it
    is converted at load (the larger of the two counts). a | b | c and an MSM's scratch are not
    on the device together (h is computed, and a | b | c freed, before H's MSM; the kernels of
    one device run one at a time): the larger of the two counts. An MSM whose scratch does not
    fit in what is left is cut into pieces (cuda.msm.piece_len, as the backend does): the line
    names them."""
    from .cuda.msm import MIN_PIECE, piece_len, scratch_bytes
    from .cuda.spmv import C_FROM_AB

    n = plan.gpu_workers
    parts = [(f"{n} x key", n * shape.key_bytes),
             (f"{n} x matrices", n * shape.device_matrix_bytes(with_c=not C_FROM_AB))]
    work = n * plan.gpu_concurrency * working_set_bytes(shape)
    abc = 3 * shape.domain * FR
    piece = shape.domain
    if have.vram_free is not None:
        left = have.vram_free - sum(b for _, b in parts) - work - VRAM_MARGIN
        try:
            piece = piece_len(shape.domain, left)
        except MemoryError:
            piece = min(MIN_PIECE, shape.domain)  # the smallest piece's scratch: the line shows the shortfall
    scratch = scratch_bytes(piece)
    converting = max(shape.query_bytes.values())  # the largest query's standard-form upload
    if work + max(abc, scratch) >= converting:
        pieces = "" if piece == shape.domain else f" (MSMs in pieces of {piece} scalars)"
        transient = (f"a|b|c{pieces}", abc) if abc >= scratch else (f"MSM scratch{pieces}", scratch)
        parts += [(f"{n * plan.gpu_concurrency} working sets", work), transient]
    else:
        parts.append(("key conversion", converting))
    return Need("VRAM", tuple(parts) + (("margin", VRAM_MARGIN),), have.vram_free)


def fit_concurrency(shape: KeyShape, plan: RunPlan, have: Have) -> int:
    """The largest gpu_concurrency, at most the plan's, whose VRAM fits; the plan's own when none
    does (check then refuses, naming the shortfall) or when the VRAM is unknown. The 32 GiB PoRep
    on an 80 GB card: 1 (two partitions' working sets do not fit beside its key)."""
    from dataclasses import replace

    if plan.backend != "cuda" or have.vram_free is None:
        return plan.gpu_concurrency
    for gc in range(plan.gpu_concurrency, 0, -1):
        if vram_need(shape, replace(plan, gpu_concurrency=gc), have).fits:
            return gc
    return plan.gpu_concurrency


def fitted_concurrency(settings, circuit, cache_dir: str, setup_seed: int = 0, vram: int | None = None) -> int:
    """fit_concurrency for a job about to run: its circuit's shape (the quick one, nothing hashed
    or drawn) against this machine's free VRAM (``vram``: the room measured elsewhere, the
    service's provers: engines.admission.vram_room); settings' own when the sizes are not known
    yet. The engine bounds gpu_concurrency by the VRAM as it bounds pw by the host budget."""
    if settings.backend != "cuda":
        return settings.gpu_concurrency
    shape = circuit.key_shape(quick=True)
    if shape is None:
        return settings.gpu_concurrency
    return fit_concurrency(shape, *_plan(settings, circuit, shape, cache_dir, setup_seed, quick=True, vram=vram))


def fit_gpu(settings, circuit, cache_dir: str, setup_seed: int, say, vram: int | None = None):
    """``settings`` with gpu_concurrency lowered to what the GPU's free memory (or ``vram``) holds
    for ``circuit``'s partitions, ``say`` given one line saying so, as pw is bounded by the host
    budget; unchanged when it fits or is unknown."""
    from dataclasses import replace

    gc = fitted_concurrency(settings, circuit, cache_dir, setup_seed, vram)
    if gc == settings.gpu_concurrency:
        return settings
    say(f"gpu_concurrency={settings.gpu_concurrency} does not fit in the GPU's free memory: "
        f"{gc} partition(s) per GPU at once")
    return replace(settings, gpu_concurrency=gc)


def largest_pw(shape: KeyShape, plan: RunPlan, have: Have) -> int:
    """The largest pw (>= 1) whose host memory and object store fit, or 0 when none does."""
    from dataclasses import replace

    best = 0
    for pw in range(1, max(1, plan.pw)):
        fits = all(n.fits for n in needs(shape, replace(plan, pw=pw), have)
                   if n.resource in ("host memory", "object store"))
        if fits:
            best = pw
    return best


def check(shape: KeyShape, plan: RunPlan, have: Have) -> list[Need]:
    """The run's needs; raises PreflightError with the first that does not fit (and, when a
    smaller pw would fit, says which)."""
    got = needs(shape, plan, have)
    for n in got:
        if not n.fits:
            hint = ""
            if n.resource in ("host memory", "object store") and plan.pw > 1:
                pw = largest_pw(shape, plan, have)
                if pw:
                    hint = f"; pw={pw} would fit"
            elif n.resource == "VRAM" and plan.gpu_concurrency > 1:
                from dataclasses import replace

                if vram_need(shape, replace(plan, gpu_concurrency=1), have).fits:
                    hint = "; gpu_concurrency=1 would fit"
            raise PreflightError(n.line() + hint)
    return got


def plan_run(settings, circuit, cache_dir: str, setup_seed: int = 0,
             vram: int | None = None) -> tuple[KeyShape, RunPlan, Have] | None:
    """The shape, plan and machine of a job about to run (None when the circuit's sizes are not
    known before its key is read; a zkey's come from its headers, its queries counted dense).
    ``settings``: engines.EngineSettings. The
    object store's have is /dev/shm for an embedded Ray (ray.object_store_memory when set); on a
    cluster it is not known before connecting, and not checked. pw unset: as the engine picks it
    (2 with CPU provers, pw_per_gpu per visible GPU). ``vram``: the VRAM have, measured elsewhere
    (the service's provers); None: this process reads its GPU's free memory."""
    shape = circuit.key_shape()
    if shape is None:
        return None
    return shape, *_plan(settings, circuit, shape, cache_dir, setup_seed, vram=vram)


def _plan(settings, circuit, shape: KeyShape, cache_dir: str, setup_seed: int,
          quick: bool = False, vram: int | None = None) -> tuple[RunPlan, Have]:
    """The plan and the machine for ``shape``; ``quick``: the key's disk left out (whether it is
    cached is not asked: for a zkey that hashes the whole file); ``vram``: see plan_run."""
    from .backends import visible_gpus
    from .engines.admission import bounded_pw, expected_pw, parse_bytes, partition_host_bytes

    if settings.backend != "cuda":
        vram, gpus = None, 0
    elif vram is None:
        vram, gpus = _vram_free()
    else:  # no CUDA context in this process for it
        gpus = visible_gpus()
    part_bytes = partition_host_bytes(circuit, shape.domain, settings.backend)
    pw = bounded_pw(expected_pw(settings, gpus), settings.host_budget, part_bytes)  # as the engine bounds it
    # an embedded Ray is one node: a built-in key (a bundle) reaches the actors as its path
    embedded = settings.engine == "ray" and not (settings.ray.get("address") or os.environ.get("RAY_ADDRESS"))
    plan = RunPlan(pw=pw, partition_host_bytes=part_bytes,
                   backend=settings.backend, engine=settings.engine,
                   key_on_disk=not quick and not circuit.key_cached(cache_dir, setup_seed),
                   gpu_concurrency=settings.gpu_concurrency, gpu_workers=settings.gpu_workers_per_device,
                   key_in_object_store=not (embedded and circuit.key_bundle),  # a zkey's key is always put
                   partition_batch_bytes=circuit.partition_batch_bytes())
    store = None  # a cluster's object store is not known before connecting: not checked
    if embedded:  # sized for the key (engines.admission.object_store_bytes): it must fit in /dev/shm
        configured = parse_bytes(settings.ray.get("object_store_memory"), "ray.object_store_memory")
        store = configured if configured is not None else shared_memory_bytes()
    return plan, machine_have(cache_dir, store, vram)


def shared_memory_bytes() -> int:
    """Free bytes of /dev/shm, where Ray keeps its object store (else the host's memory)."""
    try:
        return shutil.disk_usage("/dev/shm").free
    except OSError:
        return host_available_bytes()


def _vram_free() -> tuple[int | None, int]:
    """(free bytes on the current GPU, number of GPUs); (None, 0) without one."""
    from .backends import visible_gpus

    n = visible_gpus()
    if not n:
        return None, 0
    import cupy

    return int(cupy.cuda.runtime.memGetInfo()[0]), n


def preflight(settings, circuit, cache_dir: str, setup_seed: int = 0, vram: int | None = None) -> list[Need]:
    """check() for a job about to run (see plan_run); [] when its sizes are not known yet.

    A quick pass comes first, so that a size that cannot fit is refused before anything is
    allocated or hashed: the circuit's quick shape (``key_shape(quick=True)``: the built-in key's
    density counted as its floor, without the random draws that allocate ~1 GB at 2^27 and
    3.7 TiB at 2^40; a zkey's sizes from its headers) against host memory, object store and VRAM,
    the key's disk left out (asking whether a zkey's conversion is cached hashes the file). Then
    the exact shape, with the disk."""
    if not preflight_quick(settings, circuit, cache_dir, setup_seed, vram):
        return []
    planned = plan_run(settings, circuit, cache_dir, setup_seed, vram)
    return [] if planned is None else check(*planned)


def preflight_quick(settings, circuit, cache_dir: str, setup_seed: int = 0, vram: int | None = None) -> list[Need]:
    """preflight's quick pass alone (host memory, object store, VRAM of the circuit's quick shape;
    nothing allocated, hashed or drawn): what the service checks before it accepts a request whose
    key is not resident. [] when the circuit's sizes are not known before its key is read."""
    quick = circuit.key_shape(quick=True)
    if quick is None:
        return []
    return check(quick, *_plan(settings, circuit, quick, cache_dir, setup_seed, quick=True, vram=vram))


def machine_have(key_dir: str, object_store: int | None = None, vram_free: int | None = None) -> Have:
    """Free disk at key_dir (or its nearest existing parent) and available host memory."""
    path = os.path.abspath(os.path.expanduser(key_dir))
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return Have(shutil.disk_usage(path).free, host_available_bytes(), object_store, vram_free)


RAY_DISK_LIMIT_ENV = "RAY_local_fs_capacity_threshold"  # Ray's limit on its spill disk's use (default 0.95)


def disk_over_ray_limit(path: str) -> tuple[str, float, float, float] | None:
    """(path, percent used, free GiB, capacity GiB) of the file system at ``path`` (or its nearest
    existing parent: Ray's temp dir, where it spills objects) when its use is over Ray's limit,
    which Ray's raylet then warns about every 10 s; None when it is not (or cannot be read)."""
    path = os.path.abspath(os.path.expanduser(path))
    while not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        usage = shutil.disk_usage(path)
        limit = float(os.environ.get(RAY_DISK_LIMIT_ENV, "0.95"))
    except (OSError, ValueError):
        return None
    used = 1 - usage.free / usage.total if usage.total else 0.0
    if used < limit:
        return None
    return path, 100 * used, usage.free / GIB, usage.total / GIB


def host_available_bytes() -> int:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), else total RAM."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
