"""G1 and G2 multi-scalar multiplication on the GPU (kernels/msm.cu, kernels/msm_g2.cu: one
pipeline, ec/msm_impl.cuh, instantiated per group).

``msm_g1(points, scalars)``: points affine standard form ``uint64[n, 2, 6]`` (all-zero rows =
infinity), or a ``Bases`` from ``prepare_bases`` (resident, Montgomery form, optionally with a
table of window multiples); scalars standard-form Fr ``uint64[n, 4]``; numpy or cupy (raw points
are converted to a temporary Montgomery copy per call). Returns sum_i s_i P_i as a numpy ``uint64[2, 6]``
(affine, standard form, all zero for infinity), bit for bit what ref.g1.msm_naive gives.
Scalars may also be an FrVector (trusted: not range-checked again).
``msm_g2``: the same with G2 points ``uint64[n, 2, 2, 6]`` (x.c0, x.c1, y.c0, y.c1) and a
``uint64[2, 2, 6]`` result, bit for bit arkworks' ``G2Point.multiexp_unchecked``.
Curves: the groups above are BLS12-381's; ``BN254_G1`` / ``BN254_G2`` (``msm(BN254_G1, ...)``)
run the same pipeline on the kernels compiled for BN254 (kernels/loader.py CURVES), with Fp in 4
uint64 limbs (points ``uint64[n, 2, 4]`` / ``uint64[n, 2, 2, 4]``), Fr scalars ``uint64[n, 4]``
below BN254's r, and the host tail in Python ints (ref/bn254_xyzz.py) where BLS12-381 uses arkworks.

Pipeline (see ec/msm_impl.cuh for the kernels and their costs): scalars classified in one read
(msm_split_count / msm_split_scatter): 0 dropped, 1 summed by a tree of batch additions (msm_sum_points,
xyzz_sum_rows); the rest: signed-digit decomposition (device) -> sort of 64-bit (bucket key,
point) entries on the key's bits only (cuda/sort.py: CUB) -> segmented bucket accumulation, S
entries per thread whatever the bucket sizes (msm_seg_points, then msm_seg_partials for buckets
that cross segments) -> bucket reduction (bucket_reduce: msm_chunks running sums, recursively)
-> one sum per window. The host combines the W window sums and the scalar-1 sum (``finish``:
the rows made affine with one inversion, Horner in arkworks; ``msm_parts`` is the device part
alone, for callers that let the device go before the host work).

Windows (``WindowPlan``): by default windows_for(c) windows of c = default_window(m) bits; for
G1 from MIXED_MIN Pippenger scalars on the mixed plan, 8 windows of 21 bits then 4 of 22 (12
windows of 256 bits; 8 2^20 + 4 2^21 = 2^24 buckets, keys in 24 bits: the sort's passes of c =
20), where c = 22 would take 12 2^21 buckets and 25 key bits. Each run of equal-width windows
is one bucket_reduce; finish's Horner step is 2^(width) of the window below. ``window=`` takes
an int c, "mixed" or a WindowPlan.

Batch-affine accumulation (``ACCUMULATE[group] = "affine"`` or
``msm(..., accumulate="affine")``), in
place of the segmented XYZZ one: the sorted entries' bucket runs are reduced pairwise, level by
level, in affine coordinates with one inversion per block of additions (Montgomery's trick;
msm_aff_level, ~6 Fp mul per addition instead of 10), in groups of runs whose level buffers fit
AFFINE_BUDGET; the one point per run left is added into its bucket (msm_aff_buckets). Then the
same bucket_reduce / Horner.

Window multiples (``prepare_bases(..., table_window=c)``): rows w n + i = 2^(c w) P_i for the W
windows of c-bit digits (built on the device: c doublings per level, one batched inversion per
BATCH_AFFINE points); an MSM over such bases puts every window's digits into one set of 2^(c-1)
buckets, so there is one bucket reduction and no Horner tail, and c can be larger (c = 22: 12
windows instead of 16 at c = 16). Costs W times the bases' VRAM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from types import ModuleType

import numpy as np
from py_arkworks_bls12381 import Scalar

from ..curve import g1_array, g1_points, g2_array, g2_points
from ..curves import BN254
from ..field import FP_LIMBS, Q_MOD, R_MOD, limbs_to_ints
from ..kernels.loader import get_kernel, require_cupy
from ..ref import bn254_xyzz
from ..ref import g1 as g1_ref
from ..ref import g2 as g2_ref
from .device import DeviceCache, check_fr
from .device import launch as launch_kernel
from .sort import sort_high_bits

THREADS = 128
SPLIT_THREADS, SPLIT_TILE = 256, 2048  # = SPLIT_B, SPLIT_TILE in ec/msm_impl.cuh
# The 0/1 split by two scan passes (msm_split_count / msm_split_scatter) instead of msm_classify
# + two CuPy flatnonzero: H200, 2^27, 1.7 ms against 4.4 (bench_kernels --split-scan 1, ninth
# session); False keeps the old path (tests/test_msm_gpu.py checks both against flatnonzero).
SPLIT_SCAN = True
NO_KEY = 0xFFFFFFFF
SEG_PARTIALS = 16  # slots per thread in the passes over cross-segment partial sums
SEG_MAX = 256  # most entries per accumulation thread (H200 2^27: cross-segment partials 11.0 ms at 128, 6.3 at 256)
SUM_FANIN = 32  # points per thread in the sum of the scalar-1 points and of the chunk sums
CHUNK_LEN = 16  # buckets per msm_chunks thread (a power of two; 2^19 x 13 buckets: 425 K threads)
BATCH_AFFINE = 32  # points per inversion when the window multiples are made affine
TABLE_WINDOW = 22  # c of a table of window multiples for >= TABLE_LARGE bases (12 windows)
TABLE_WINDOW_SMALL = 20  # below that (13 windows, 2^19 instead of 2^21 buckets to reduce)
TABLE_LARGE = 1 << 23
TABLE_MIN_SCALARS = 1 << 16  # fewer Pippenger scalars than this: the plain bases, default window
# The bucket accumulation per group (Group.name): "xyzz" (msm_seg_points: mixed XYZZ additions,
# 10 Fp mul each) or "affine" (batch-affine pair reduction: msm_aff_level, ~6 Fp mul per addition
# plus one inversion per block); msm(accumulate=) overrides per call. Measured on the H200
# (docs/BENCHMARKS.md, "Batch-affine MSM accumulation" and "The affine levels' source words"):
# G1 affine is slower (2^24 uniform 117.1 vs 111.9 ms, 2^27 747.5 vs 724.8, 90 % bits 27.9 vs
# 24.1: its additions take ~17 % fewer instructions than a mixed XYZZ one, not 40 %), G2 affine
# at K <= 1024 faster (2^24 uniform 285-289 vs 378 ms, 90 % bits 61.8 vs 70.9) but slower inside
# porep32g (msm_b_g2 0.062 vs 0.052 s per 2^27 partition, call 00:22): its few non-bit scalars
# make short levels whose launches dominate. So XYZZ for both by default.
ACCUMULATE = {"g1": "xyzz", "g2": "xyzz"}
AFF_THREADS = 128  # threads per block of msm_aff_level (= AFF_B in ec/msm_impl.cuh)
# Output slots per msm_aff_level thread (one inversion per block of AFF_THREADS K of them), per
# group: an Fp2 inversion costs more, so G2 takes 4x larger blocks (2^24 uniform 363.8 vs 406.9
# ms at 256, first session); for G1 K <= 1024 was 5 % slower.
AFF_K_MIN, AFF_K_MAX = 8, {"g1": 256, "g2": 1024}
AFF_MIN_THREADS = 1 << 16  # K is lowered (to AFF_K_MIN) to keep about this many threads per level
AFFINE_BUDGET = 16 << 30  # bytes of level buffers per group of bucket runs (runs beyond it: more groups)
MAX_WINDOW = 24  # plain-bases windows 2..MAX_WINDOW (key = w 2^(c-1) + |d| - 1 fits 32 bits)
MAX_PLAN_WINDOWS = 128  # windows of one plan: windows_for(2) (msm_digits reads one plan word per window)
SCALAR_BITS = 255  # scalars < r < 2^255
MIXED_WIDTHS = (21,) * 8 + (22,) * 4  # 12 windows, 256 bits, 8 2^20 + 4 2^21 = 2^24 buckets
# From this many Pippenger scalars on (G1, no window given, no table) the MSM takes the mixed
# plan: 12 windows (12 n additions instead of 13 n at c = 20) for 2^24 buckets (one sort pass
# fewer than c = 22's 25 key bits, 2.5x c = 20's bucket reduction). Only 2^27 is measured
# (c = 22's 12 windows: 1 % faster there, slower at 2^26; docs/BENCHMARKS.md).
MIXED_MIN = 1 << 27


@dataclass(frozen=True)
class Group:
    """What the pipeline needs to know about a group: its kernels, its curve and its coordinate
    layout. ``points`` / ``array`` (arkworks) do finish's Horner when given; without them (BN254)
    finish runs it in Python ints on ``ref``'s XYZZ formulas."""

    name: str  # "g1" | "g2"
    module: str  # kernels/<module>
    prefix: str  # kernel name prefix in that module
    elem: tuple  # uint64 shape of one coordinate: (6,) for BLS12-381 Fp, (2, 6) for Fp2; (4,), (2, 4) BN254
    ref: ModuleType | bn254_xyzz.XyzzGroup  # Python-int arithmetic: xyzz_add, xyzz_dbl, xyzz_to_affine_many
    points: Callable | None  # affine uint64[n, 2, *elem] -> arkworks points (curve.g1_points / g2_points)
    array: Callable | None  # arkworks points -> affine uint64[n, 2, *elem] (curve.g1_array / g2_array)
    defines: tuple = ()  # compile-time variant of the module (benchmarks compare variants)
    curve: str = "bls12381"  # the kernels' curve (a cuzk_ray.curves name; kernels/loader.py CURVES)
    fp_modulus: int = Q_MOD
    fr_modulus: int = R_MOD  # raw scalars are checked below it

    @property
    def fp_limbs(self) -> int:
        """uint64 limbs of one Fp element."""
        return self.elem[-1]

    def coords_to_ints(self, flat: list) -> list:
        """Standard-form ints, one per Fp limb row -> the group's field elements."""
        return flat if len(self.elem) == 1 else [tuple(flat[i : i + 2]) for i in range(0, len(flat), 2)]

    def affine_to_limbs(self, aff) -> np.ndarray:
        """affine (x, y) of ints (G1) or Fp2 pairs (G2), None = infinity -> uint64[2, *elem]."""
        out = np.zeros((2, *self.elem), dtype=np.uint64)
        if aff is not None:
            flat = list(aff) if len(self.elem) == 1 else [v for c in aff for v in c]
            k = self.fp_limbs
            raw = b"".join(int(v).to_bytes(8 * k, "little") for v in flat)
            out[:] = np.frombuffer(raw, dtype="<u8").reshape(out.shape)
        return out


G1 = Group("g1", "msm.cu", "", (FP_LIMBS,), g1_ref, g1_points, g1_array)
G2 = Group("g2", "msm_g2.cu", "g2_", (2, FP_LIMBS), g2_ref, g2_points, g2_array)
BN254_G1 = Group("g1", "msm.cu", "", (BN254.fp_limbs,), bn254_xyzz.G1, None, None, curve=BN254.name,
                 fp_modulus=BN254.p, fr_modulus=BN254.r)
BN254_G2 = Group("g2", "msm_g2.cu", "g2_", (2, BN254.fp_limbs), bn254_xyzz.G2, None, None, curve=BN254.name,
                 fp_modulus=BN254.p, fr_modulus=BN254.r)
# (G1, G2) of each curve (a cuzk_ray.curves name): what a key of that curve's MSMs run on.
GROUPS = {"bls12381": (G1, G2), BN254.name: (BN254_G1, BN254_G2)}


def groups_of(curve: str) -> tuple[Group, Group]:
    """(G1, G2) of a curve name; ValueError in one line naming the curves with MSM kernels."""
    try:
        return GROUPS[curve]
    except KeyError:
        raise ValueError(f"cuda MSM: no kernels for curve {curve!r} (have {', '.join(GROUPS)})") from None


def default_window(n: int) -> int:
    """Window bits c: about log2(n) - 2, between 4 and 16; 20 from 2^24 scalars, where fewer
    windows (additions = W n) pay for more buckets to reduce. H200, G1 uniform, plain bases
    (2026-12-01, docs/BENCHMARKS.md, with the recursive bucket reduction and the key-bits
    sort): c = 18 / 20 / 22: 2^24 123.1 / 118.8 / 138.0 ms; 2^26 459.0 / 411.4 / 421.8; 2^27
    904.5 / 799.2 / 789.0 (c = 22 saves 1 % there for 2.5 GiB more buckets: not taken). G2 2^24
    c = 18 / 20: 436.3 / 430.9 ms."""
    if n >= 1 << 24:
        return 20
    return max(4, min(16, n.bit_length() - 3))


def windows_for(c: int) -> int:
    """Signed c-bit digits of a 255-bit scalar plus the final carry."""
    return 255 // c + 1


@dataclass(frozen=True)
class WindowPlan:
    """The Pippenger windows of an MSM: ``widths[w]`` bits for window w, lowest window first.
    Window w covers bits ``bits[w]`` .. ``bits[w] + widths[w] - 1`` and its signed digits
    |d| <= 2^(width-1) go to buckets ``bases[w]`` .. ``bases[w] + 2^(width-1) - 1`` (key =
    bases[w] + |d| - 1). The widths must sum to >= SCALAR_BITS + 1: then the top window's raw
    value is < 2^(width-1), so with the carry from below it is <= 2^(width-1) and nothing carries
    out (see signed_digits). Windows of equal width are best contiguous: each run of them is one
    block of equal-length bucket rows for bucket_reduce."""

    widths: tuple[int, ...]

    def __post_init__(self) -> None:
        w = tuple(int(c) for c in self.widths)
        object.__setattr__(self, "widths", w)
        if not 1 <= len(w) <= MAX_PLAN_WINDOWS:
            raise ValueError(f"window plan: {len(w)} windows outside 1..{MAX_PLAN_WINDOWS}")
        if any(not 2 <= c <= MAX_WINDOW for c in w):
            raise ValueError(f"window plan: widths {w} not all in 2..{MAX_WINDOW}")
        if sum(w) < SCALAR_BITS + 1:
            raise ValueError(f"window plan: widths sum to {sum(w)} < {SCALAR_BITS + 1} (the top window's carry)")
        if sum(w) - w[-1] >= 256:
            raise ValueError(f"window plan: window {len(w) - 1} starts past the scalar's 256 bits")
        if self.total_buckets >= NO_KEY:
            raise ValueError(f"window plan: {self.total_buckets} buckets do not fit the 32-bit keys")

    @classmethod
    def uniform(cls, c: int) -> WindowPlan:
        """windows_for(c) windows of c bits: keys w 2^(c-1) + |d| - 1, as before plans existed."""
        return cls((c,) * windows_for(c))

    @classmethod
    def mixed(cls) -> WindowPlan:
        """MIXED_WIDTHS: 8 windows of 21 bits, then 4 of 22 (12 windows, 2^24 buckets)."""
        return cls(MIXED_WIDTHS)

    @cached_property
    def bits(self) -> tuple[int, ...]:
        """The start bit of each window."""
        return tuple(sum(self.widths[:w]) for w in range(len(self.widths)))

    @cached_property
    def bases(self) -> tuple[int, ...]:
        """The first bucket key of each window: sum of 2^(width-1) over the windows below."""
        return tuple(sum(1 << (c - 1) for c in self.widths[:w]) for w in range(len(self.widths)))

    @cached_property
    def total_buckets(self) -> int:
        return sum(1 << (c - 1) for c in self.widths)

    @cached_property
    def groups(self) -> tuple[tuple[int, int, int], ...]:
        """(width, windows, first bucket) of each run of equal-width windows, in window order."""
        out: list = []
        for c, base in zip(self.widths, self.bases):
            if out and out[-1][0] == c:
                out[-1][1] += 1
            else:
                out.append([c, 1, base])
        return tuple(tuple(g) for g in out)

    @cached_property
    def label(self) -> str:
        """"20" for a uniform plan, "21x8+22x4" for runs of widths (benchmark tables)."""
        gs = self.groups
        if len(gs) == 1 and self == WindowPlan.uniform(gs[0][0]):
            return str(gs[0][0])
        return "+".join(f"{c}x{k}" for c, k, _ in gs)

    @cached_property
    def key_bits(self) -> int:
        """Bits of the key the sort must look at: every key a scalar < r can give stays below
        2^bits - 1 (NO_KEY's low bits, which must sort after it). The largest key is the top
        window's largest digit: ((r - 1) >> its start bit) + 1 (a carry). The mixed plan's last
        bucket (key 2^24 - 1, digit 2^21 of the top window) is unreachable, so 24 bits do."""
        top = ((R_MOD - 1) >> self.bits[-1]) + 1
        return (self.bases[-1] + top).bit_length()

    def words(self) -> np.ndarray:
        """uint64[W] for msm_digits: base << 32 | start bit << 8 | width per window."""
        return np.array([(b << 32) | (s << 8) | c for c, s, b in zip(self.widths, self.bits, self.bases)],
                        dtype=np.uint64)


def signed_digits(plan: WindowPlan, s: int) -> list[int]:
    """The signed digits of scalar s (0 <= s < 2^255) for the plan, as msm_digits computes them:
    per window the raw width-bit value plus the carry, above 2^(width-1) taken as negative (minus
    2^width, carry 1). sum_w d_w 2^(bits_w) = s. Raises if a carry leaves the top window (a plan
    too narrow for s; WindowPlan refuses widths that allow it)."""
    out, carry = [], 0
    for c, b in zip(plan.widths, plan.bits):
        d = ((s >> b) & ((1 << c) - 1)) + carry
        carry = int(d > 1 << (c - 1))
        out.append(d - (carry << c))
    if carry:
        raise ValueError(f"signed_digits: a carry out of the top window for {s:#x}")
    return out


def digit_key(plan: WindowPlan, w: int, d: int) -> int:
    """The bucket key of digit d of window w (NO_KEY for 0), as msm_digits writes it."""
    return NO_KEY if d == 0 else plan.bases[w] + abs(d) - 1


def default_plan(g: Group, m: int) -> WindowPlan:
    """The windows for m Pippenger scalars without a given window: the mixed plan for G1 from
    MIXED_MIN scalars on, otherwise default_window(m) bits for all."""
    if g.name == "g1" and m >= MIXED_MIN:
        return WindowPlan.mixed()
    return WindowPlan.uniform(default_window(m))


def plan_of(window) -> WindowPlan:
    """A window argument -> its plan: an int c (uniform, 2..MAX_WINDOW), "mixed", or a WindowPlan."""
    if isinstance(window, WindowPlan):
        return window
    if window == "mixed":
        return WindowPlan.mixed()
    if isinstance(window, (int, np.integer)) and not isinstance(window, bool):
        if not 2 <= window <= MAX_WINDOW:
            raise ValueError(f"window {window} outside 2..{MAX_WINDOW}")
        return WindowPlan.uniform(int(window))
    raise ValueError(f"window {window!r}: expected an int c, 'mixed' or a WindowPlan")


def accumulation(g: Group, accumulate: str | None = None) -> str:
    """The bucket accumulation an MSM over group g takes: accumulate, else ACCUMULATE[g.name]."""
    return accumulate or ACCUMULATE[g.name]


def affine_level_bytes(g: Group, entries: int, runs: int) -> int:
    """Upper bound of the affine levels' buffers for `entries` sorted entries in at most `runs`
    bucket runs: what aff_groups counts for all of them (one slot more per run for the rounding),
    capped by AFFINE_BUDGET (the groups are done one at a time)."""
    elem = int(np.prod(g.elem)) * 8
    point = 2 * elem
    whole = (entries // 2 + runs) * (point + elem + 16) + (entries // 4 + runs) * point + 64 * runs
    return min(AFFINE_BUDGET, whole)


def scratch_bytes(n: int, accumulate: str | None = None) -> int:
    """Upper bound of the VRAM one MSM of n uniform scalars takes beside its bases (no table),
    the larger of G1's and G2's (default_plan per group): the 64-bit digit entries of every
    window (window_sums), as much again for the sort's temporary storage, split_scalars'
    classes and index lists, and the XYZZ buckets with the reduction's first chunk sums (2 per
    CHUNK_LEN buckets). At 2^27: G1 takes the mixed plan (12 windows, 2^24 G1 buckets, 3.4 GiB
    with the chunk sums), G2 c = 20 (13 windows, 13 2^19 G2 buckets, 2.7 GiB); with the entries
    ~30 GiB either way. The affine accumulation runs after the sort, whose
    unsorted input (W n 8 bytes) is then free in CuPy's pool: it adds what its level buffers
    (AFFINE_BUDGET per group of runs, one group at a time; more only where one bucket's run alone
    is larger) and run arrays take beyond that. accumulate: for both groups (default:
    ACCUMULATE's)."""
    need = 0
    for g in (G1, G2):
        plan = default_plan(g, n)
        W = len(plan.widths)
        buckets = plan.total_buckets * 4 * int(np.prod(g.elem)) * 8
        affine = accumulation(g, accumulate) == "affine"
        extra = max(0, affine_level_bytes(g, W * n, plan.total_buckets) + 16 * n - W * n * 8) if affine else 0
        need = max(need, 2 * W * n * 8 + buckets + 2 * buckets // CHUNK_LEN + extra)
    return need + n * 13


MIN_PIECE = 1 << 20  # scalars: the smallest piece piece_len cuts an MSM into (~0.5 GiB of scratch)


def piece_len(n: int, free: int) -> int:
    """Scalars per piece when an MSM of n scalars is cut into consecutive pieces, each run alone,
    so that one piece's scratch (scratch_bytes) fits in ``free`` bytes of VRAM: n when the whole
    MSM fits, else ceil(n / 2), ceil(n / 4), ... MemoryError in one line (need vs have) when not
    even MIN_PIECE scalars' scratch fits.

    Why: at 2^27 a uniform MSM's scratch is ~30 GiB (the 64-bit digit entries of 12 windows and
    the sort's copy of them), which an 80 GB card cannot hold beside the 32 GiB PoRep key and
    matrices (~50 GiB); pieces of 2^25 scalars take 9.6 GiB. Cost: every piece pays its own
    bucket reduction (2^24 G1 buckets for a 2^27 plan, fewer for smaller pieces' plans) and the
    host's finish (~0.4 ms G1, ~0.8 ms G2); the bucket accumulation, the bulk, is the same work."""
    step = n
    while step > MIN_PIECE and scratch_bytes(step) > free:
        step = -(-step // 2)
    need = scratch_bytes(step)
    if need > free:
        raise MemoryError(f"GPU memory: an MSM of {n} scalars needs {need / 2**30:.2f} GiB of scratch even in "
                          f"pieces of {step}, {max(free, 0) / 2**30:.2f} GiB free")
    return step


@dataclass
class Bases:
    """MSM bases resident on the device in the kernels' form: ``mont`` = affine Montgomery
    ``[n, 2, *elem]``; with ``table_window`` c, ``table`` = ``[W n, 2, *elem]`` with row w n + i =
    2^(c w) P_i (``mont`` is its first n rows)."""

    group: Group
    mont: object
    n: int
    table: object = None
    table_window: int = 0

    @property
    def nbytes(self) -> int:
        return int((self.table if self.table is not None else self.mont).nbytes)

    def slice(self, start: int, count: int) -> Bases:
        """Bases start .. start + count - 1 (a view; without the table, whose rows are per level)."""
        if not 0 <= start <= start + count <= self.n:
            raise ValueError(f"bases slice {start}..{start + count} outside 0..{self.n}")
        return Bases(self.group, self.mont[start : start + count], count)


def table_window_for(n: int) -> int:
    """c of the table of window multiples for n bases. H200, G1 uniform, table c = 20 / 22 / no
    table: 2^20 12.0 / 18.3 / 16.9 ms, 2^22 32.3 / 37.0 / 40.6, 2^24 112.0 / 110.9 / 136.9
    (the 2^21 buckets of c = 22 cost ~8 ms to reduce, which pays only at the largest sizes)."""
    return TABLE_WINDOW if n >= TABLE_LARGE else TABLE_WINDOW_SMALL


def table_bytes(g: Group, n: int, c: int | None = None) -> int:
    """VRAM of a table of window multiples of n bases (all W levels, the bases included); c
    defaults to table_window_for(n)."""
    return windows_for(c or table_window_for(n)) * n * 2 * int(np.prod(g.elem)) * 8


def prepare_bases(g: Group, points, table_window: int | None = None, timings: dict | None = None) -> Bases:
    """points (affine standard form, numpy or cupy, shape checked) -> Bases on the device;
    table_window c: also the window multiples 2^(c w) P_i for the windows of c-bit digits."""
    cp = require_cupy()
    pts = _check_points(g, points)
    n = int(pts.shape[0])
    if table_window is not None and not 2 <= table_window <= 24:
        raise ValueError(f"prepare_bases: table window {table_window} outside 2..24")
    levels = windows_for(table_window) if table_window else 1
    if table_window and levels * n >= 2**31:
        raise ValueError(f"prepare_bases: {levels} x {n} table rows is more than the kernels index (2^31 - 1)")
    timer = PhaseTimer(cp) if timings is not None else None
    table = cp.empty((levels * n, 2, *g.elem), dtype=cp.uint64)
    count = n * 2 * int(np.prod(g.elem)) // g.fp_limbs  # Fp elements
    if n:
        _launch(g, "msm_to_mont", count, (pts, table, np.uint64(count)))
    _mark(timer, "to_mont")
    if levels > 1 and n:
        xyzz = _xyzz_buffer(cp, g, n)
        scratch = cp.empty((n, *g.elem), dtype=cp.uint64)
        per = n * 2 * int(np.prod(g.elem))  # uint64 words per level
        flat = table.reshape(-1)
        for w in range(1, levels):
            prev, cur = flat[(w - 1) * per : w * per], flat[w * per : (w + 1) * per]
            _launch(g, "msm_double_c", n, (prev, np.uint32(n), np.int32(table_window), xyzz))
            nt = (n + BATCH_AFFINE - 1) // BATCH_AFFINE
            _launch(g, "msm_batch_affine", nt, (xyzz, np.uint32(n), np.uint32(BATCH_AFFINE), scratch, cur))
        del xyzz, scratch
        _mark(timer, "table")
    if timer is not None:
        timings.update(timer.ms())
    return Bases(g, table[:n], n, table if levels > 1 else None, table_window or 0)


def _check_points(g: Group, points, n: int | None = None):
    """points as a cupy array, checked: uint64 [n, 2, *elem] (any n when n is None), C-contiguous."""
    cp = require_cupy()
    shape = (points.shape[0] if n is None and getattr(points, "ndim", 0) else n, 2, *g.elem)
    if not isinstance(points, (np.ndarray, cp.ndarray)) or points.dtype != np.uint64:
        raise TypeError(f"msm_{g.name} points: expected a numpy or cupy uint64 array {list(shape[1:])} per point "
                        "(affine, standard form)")
    if points.shape != shape:
        raise ValueError(f"msm_{g.name} points: expected shape {shape} to match the scalars, got {tuple(points.shape)}")
    if not points.flags.c_contiguous:
        raise ValueError(f"msm_{g.name} points: array must be C-contiguous")
    return cp.asarray(points)


def xyzz_rows_to_ints(g: Group, rows: np.ndarray) -> list[tuple]:
    """uint64[m, 4, *elem] Montgomery XYZZ -> list of standard-form XYZZ tuples."""
    p = g.fp_modulus
    r_inv = pow(1 << (64 * g.fp_limbs), -1, p)
    vals = limbs_to_ints(rows.reshape(-1, g.fp_limbs))
    vals = g.coords_to_ints([int(v) * r_inv % p for v in vals])
    return [tuple(vals[4 * i : 4 * i + 4]) for i in range(len(vals) // 4)]


def _launch(g: Group, name: str, nthreads: int, args) -> None:
    launch_kernel(get_kernel(g.module, g.prefix + name, g.defines, g.curve), nthreads, args, THREADS)


def _xyzz_buffer(cp, g: Group, m: int, zero: bool = False):
    return (cp.zeros if zero else cp.empty)((m, 4, *g.elem), dtype=cp.uint64)


def _sum_rows(cp, g: Group, parts, rows: int, m: int):
    """[rows][m] XYZZ -> [rows] XYZZ by xyzz_sum_rows launches (a tree of fan-in SUM_FANIN)."""
    while m > 1:
        mo = (m + SUM_FANIN - 1) // SUM_FANIN
        out = _xyzz_buffer(cp, g, rows * mo)
        _launch(g, "xyzz_sum_rows", rows * mo, (parts, np.uint32(rows), np.uint32(m), np.uint32(SUM_FANIN), out))
        parts, m = out, mo
    return parts


def _split_kernel(name: str):
    return get_kernel(G1.module, G1.prefix + name, G1.defines)


def split_scalars(cp, s, scan: bool | None = None):
    """Indices (uint32, device, ascending) of the scalars equal to 1 and of those other than 0 and
    1. scan (default SPLIT_SCAN): msm_split_count (one read of the scalars: a class byte each and
    per-tile counts), prefix sums of the tiles' counts, msm_split_scatter (both lists in index
    order; one sync for their lengths); else msm_classify and two CuPy flatnonzero. Same lists."""
    s = cp.ascontiguousarray(s)  # the kernels read rows of 8 words (a no-op for FrVector limbs)
    n = int(s.shape[0])
    if n == 0:
        return cp.empty(0, dtype=cp.uint32), cp.empty(0, dtype=cp.uint32)
    cls = cp.empty(n, dtype=cp.uint8)
    if not (SPLIT_SCAN if scan is None else scan):
        _launch(G1, "msm_classify", n, (s, np.uint64(n), cls))
        return cp.flatnonzero(cls == 1).astype(cp.uint32), cp.flatnonzero(cls == 2).astype(cp.uint32)
    nb = -(-n // SPLIT_TILE)
    counts = cp.empty((2, nb), dtype=cp.uint32)
    _split_kernel("msm_split_count")((nb,), (SPLIT_THREADS,), (s, np.uint64(n), cls, counts))
    ends = cp.cumsum(counts, axis=1, dtype=cp.uint32)
    n_ones, n_rest = (int(v) for v in cp.asnumpy(ends[:, -1]))
    offsets = ends - counts  # each tile's first slot in either list
    ones, rest = cp.empty(n_ones, dtype=cp.uint32), cp.empty(n_rest, dtype=cp.uint32)
    _split_kernel("msm_split_scatter")((nb,), (SPLIT_THREADS,), (cls, np.uint64(n), offsets, ones, rest))
    return ones, rest


def _rest_scalars(cp, s, rest):
    """The scalars of the index list rest, contiguous (s itself when rest is every index)."""
    return s if rest.shape[0] == s.shape[0] else cp.ascontiguousarray(s[rest])


def sum_points(cp, g: Group, pts, idx):
    """sum of the points idx (device uint32) as one XYZZ row (device), Montgomery form."""
    m = int(idx.shape[0])
    mo = (m + SUM_FANIN - 1) // SUM_FANIN
    parts = _xyzz_buffer(cp, g, mo)
    _launch(g, "msm_sum_points", mo, (pts, idx, np.uint32(m), np.uint32(SUM_FANIN), parts))
    return _sum_rows(cp, g, parts, 1, mo)


def segment_size(length: int) -> int:
    """Entries per thread: about length / 2^18 (enough threads to fill an H200), 4..SEG_MAX."""
    s = 4
    while s < SEG_MAX and s * 2**18 < length:
        s *= 2
    return s


def bucket_sums(cp, g: Group, pts, sorted_entries, M: int, total: int, timer=None):
    """[total] XYZZ buckets from M sorted (key << 32 | value) entries by the segmented reduction."""
    buckets = _xyzz_buffer(cp, g, total, zero=True)
    S = segment_size(M)
    nseg = (M + S - 1) // S
    keys = cp.empty(2 * nseg, dtype=cp.uint32)
    part = _xyzz_buffer(cp, g, 2 * nseg)
    _launch(g, "msm_seg_points", nseg, (pts, sorted_entries, np.uint32(M), np.uint32(S), buckets, keys, part))
    _mark(timer, "acc_points")
    while nseg > 1:  # the partial sums of buckets that cross segments, same reduction again
        length, S = 2 * nseg, SEG_PARTIALS
        nseg = (length + S - 1) // S
        keys2 = cp.empty(2 * nseg, dtype=cp.uint32)
        part2 = _xyzz_buffer(cp, g, 2 * nseg)
        _launch(g, "msm_seg_partials", nseg, (keys, part, np.uint32(length), np.uint32(S), buckets, keys2, part2))
        keys, part = keys2, part2
    _mark(timer, "acc_partials")
    return buckets


# ---------------------------------------------------------------------------------------------
# Batch-affine accumulation (ACCUMULATE[group] = "affine"). The driver below is written against an
# array module xp (cupy on the device, numpy in the CPU model) and an `ops` object that runs
# the kernels (AffineOps here; tests/affine_model.py emulates them in Python ints), so the CPU
# test runs this exact planning code: runs, groups, per-level offsets, K, ping-pong buffers.


def aff_slots_per_thread(slots: int, k_min: int = AFF_K_MIN, k_max: int = AFF_K_MAX["g1"],
                         min_threads: int = AFF_MIN_THREADS) -> int:
    """K, the output slots of one msm_aff_level thread: about slots / min_threads, k_min..k_max."""
    return max(k_min, min(k_max, slots // min_threads))


def aff_level_plan(xp, in_len):
    """Per run: out_len = ceil(len / 2), out_start = exclusive prefix sum; and the total."""
    out_len = (in_len + xp.uint32(1)) >> xp.uint32(1)
    csum = xp.cumsum(out_len, dtype=xp.uint32)
    return out_len, csum - out_len, int(csum[-1])


def aff_run_of_slot(xp, out_start, slots: int):
    """run[j] = the run whose output slots hold slot j: a prefix sum of run heads (every run has
    at least one slot, so the heads are distinct). One u32 per slot, read coalesced by the
    level kernel (a binary search per slot would cost ~log2(runs) loads each)."""
    heads = xp.zeros(slots, dtype=xp.uint32)
    heads[out_start] = 1
    run = xp.cumsum(heads, dtype=xp.uint32)
    run -= xp.uint32(1)
    return run


def aff_groups(xp, lens, point_bytes: int, elem_bytes: int, budget: int) -> list[tuple[int, int]]:
    """Runs split into consecutive groups [r0, r1) whose level buffers (ceil(len/2) points, as
    many scratch elements, 8 bytes of slot-to-run map (heads, prefix sum) and 8 of source word,
    then ceil(len/4) points, 16 bytes of run arrays per run and level) stay within budget bytes;
    a run larger than that alone is a group of its own."""
    L = lens.astype(xp.int64)
    cost = ((L + 1) // 2) * (point_bytes + elem_bytes + 16) + ((L + 3) // 4) * point_bytes + 64
    cum = xp.cumsum(cost)
    R = int(lens.shape[0])
    out, r0, done = [], 0, 0
    while r0 < R:
        r1 = int(xp.searchsorted(cum, xp.asarray([done + budget], dtype=xp.int64), side="right")[0])
        r1 = min(R, max(r1, r0 + 1))
        out.append((r0, r1))
        done = int(cum[r1 - 1])
        r0 = r1
    return out


def aff_reduce(xp, ops, sorted_entries, in_start, in_len):
    """The level-wise pair reduction of one group of R runs (sorted_entries: the group's digit
    entries; in_start relative to them) -> the compact array of R affine points, one per run."""
    maxlen = int(in_len.max())
    bufs: list = [None, None]
    scratch, scratch_n, level, cur = None, 0, 0, None
    while True:
        out_len, out_start, slots = aff_level_plan(xp, in_len)
        K = aff_slots_per_thread(slots, ops.k_min, ops.k_max, ops.min_threads)
        nblocks = -(-slots // (K * ops.block))
        need = K * nblocks * ops.block
        if need > scratch_n:  # level 0 needs the most (slots and K only shrink)
            scratch, scratch_n = None, 0
            scratch, scratch_n = ops.alloc_scratch(need), need
        b = level % 2
        if bufs[b] is None:  # level 0: slots_0 points; level 1: slots_1 (>= every later level's)
            bufs[b] = ops.alloc_points(slots)
        out = bufs[b]
        run = aff_run_of_slot(xp, out_start, slots)
        ops.level(level == 0, cur, sorted_entries, in_start, in_len, out_start, run, slots, K, nblocks, scratch, out)
        del run
        cur, in_start, in_len = out, out_start, out_len
        maxlen = (maxlen + 1) // 2
        level += 1
        if maxlen == 1:
            return cur


def affine_bucket_sums_with(xp, ops, entries, M: int, total: int, budget: int):
    """Batch-affine bucket sums into ops.buckets from M sorted entries (all with a key < total)."""
    start_by_key = xp.full(total, NO_KEY, dtype=xp.uint32)
    ops.runs(entries, M, start_by_key)
    keys = xp.flatnonzero(start_by_key != xp.uint32(NO_KEY)).astype(xp.uint32)
    starts = start_by_key[keys]  # increasing: the entries are sorted by key
    del start_by_key
    R = int(keys.shape[0])
    lens = xp.empty_like(starts)
    lens[:-1] = starts[1:] - starts[:-1]
    lens[-1] = xp.uint32(M) - starts[-1]
    for r0, r1 in aff_groups(xp, lens, ops.point_bytes, ops.elem_bytes, budget):
        e0 = int(starts[r0])
        e1 = int(starts[r1]) if r1 < R else M
        compact = aff_reduce(xp, ops, entries[e0:e1], starts[r0:r1] - xp.uint32(e0), lens[r0:r1])
        ops.buckets(compact, keys[r0:r1], r1 - r0)
        ops.group_done()


class AffineOps:
    """The device kernels of the affine accumulation for aff_reduce / affine_bucket_sums_with."""

    def __init__(self, cp, g: Group, pts, buckets, timer=None):
        self.cp, self.g, self.pts, self.bucket_buf, self.timer = cp, g, pts, buckets, timer
        # read at call time, so tests can force K and the block count
        self.block, self.k_min, self.min_threads = AFF_THREADS, AFF_K_MIN, AFF_MIN_THREADS
        self.k_max = AFF_K_MAX[g.name]
        self.elem_bytes = int(np.prod(g.elem)) * 8
        self.point_bytes = 2 * self.elem_bytes

    def alloc_points(self, n: int):
        return self.cp.empty((n, 2, *self.g.elem), dtype=self.cp.uint64)

    def alloc_scratch(self, n: int):
        return self.cp.empty((n, *self.g.elem), dtype=self.cp.uint64)

    def runs(self, entries, M: int, start_by_key) -> None:
        _launch(self.g, "msm_aff_runs", M, (entries, np.uint32(M), start_by_key))
        _mark(self.timer, "aff_runs")

    def alloc_sources(self, n: int):
        return self.cp.empty(n, dtype=self.cp.uint64)

    def level(self, gather: bool, src, sorted_entries, in_start, in_len, out_start, run, slots: int, K: int,
              nblocks: int, scratch, out) -> None:
        """One level: the slots' source words (msm_aff_sources), then the level kernel over them."""
        g = self.g
        words = self.alloc_sources(slots)
        runs = (in_start, in_len, out_start, run, np.uint32(slots), words)
        if gather:
            _launch(g, "msm_aff_sources_gather", slots, (sorted_entries, *runs))
        else:
            _launch(g, "msm_aff_sources", slots, runs)
        name = "msm_aff_level_gather" if gather else "msm_aff_level"
        fn = get_kernel(g.module, g.prefix + name, g.defines, g.curve)
        fn((nblocks,), (self.block,), (self.pts if gather else src, words, np.uint32(slots), np.uint32(K), scratch,
                                       out))

    def buckets(self, compact, keys, R: int) -> None:
        _launch(self.g, "msm_aff_buckets", R, (compact, keys, np.uint32(R), self.bucket_buf))

    def group_done(self) -> None:
        _mark(self.timer, "aff_levels")


def affine_bucket_sums(cp, g: Group, pts, sorted_entries, M: int, total: int, timer=None):
    """[total] XYZZ buckets from M sorted (key << 32 | value) entries by batch-affine levels."""
    buckets = _xyzz_buffer(cp, g, total, zero=True)
    affine_bucket_sums_with(cp, AffineOps(cp, g, pts, buckets, timer), sorted_entries, M, total, AFFINE_BUDGET)
    return buckets


class PhaseTimer:
    """CUDA events between the phases of one MSM call: ``mark(name)`` ends the phase ``name``;
    ``ms()`` waits for the device and returns {phase: milliseconds} (host work included, since
    the marks are recorded in program order)."""

    def __init__(self, cp):
        self.cp, self.events = cp, [("", cp.cuda.Event())]
        self.events[0][1].record()

    def mark(self, name: str) -> None:
        ev = self.cp.cuda.Event()
        ev.record()
        self.events.append((name, ev))

    def ms(self) -> dict:
        self.events[-1][1].synchronize()
        out: dict = {}
        for (_, a), (name, b) in zip(self.events, self.events[1:]):
            out[name] = out.get(name, 0.0) + self.cp.cuda.get_elapsed_time(a, b)
        return out


def _mark(timer, name: str) -> None:
    if timer is not None:
        timer.mark(name)


def bucket_reduce(cp, g: Group, vals, m: int, rows: int, off: int):
    """[rows] XYZZ (device): per row w, sum_i (i + off) vals[w m + i] for vals [rows][m] XYZZ, m a
    power of two (off = 1: the bucket sums, bucket i holding digit i + 1). msm_chunks takes
    chunks of L buckets to T_j = sum_t (t + off) v_t and S_j = sum_t v_t; then
    sum_i (i + off) v_i = sum_j T_j + L sum_j j S_j, the last sum this function again (off = 0)."""
    L = min(m, CHUNK_LEN)
    nchunks = rows * (m // L)
    t = _xyzz_buffer(cp, g, nchunks)
    s = _xyzz_buffer(cp, g, nchunks)  # unused when L == m (rows entries; the kernel writes it anyway)
    _launch(g, "msm_chunks", nchunks, (vals, np.uint32(m), np.uint32(L), np.uint32(off), np.uint32(nchunks), t, s))
    if L == m:  # one chunk per row: T is the answer
        return t
    t_sum = _sum_rows(cp, g, t, rows, m // L)
    inner = bucket_reduce(cp, g, s, m // L, rows, 0)
    out = _xyzz_buffer(cp, g, rows)
    _launch(g, "xyzz_rows_shift_add", rows, (t_sum, inner, np.uint32(rows), np.int32(L.bit_length() - 1), out))
    return out


PLAN_WORDS = DeviceCache("MSM window plans' msm_digits words (a few hundred bytes each)")


def plan_words(cp, plan: WindowPlan):
    """The plan's msm_digits words (WindowPlan.words) on the current device, copied once."""
    return PLAN_WORDS.get(plan, lambda: cp.asarray(plan.words()))


def window_sums(cp, g: Group, pts, scalars, idx, plan: WindowPlan, timer=None, table_n: int = 0,
                accumulate: str | None = None):
    """[W] XYZZ rows (device), lowest window first: sum over the scalars idx of digit_w(s) * P,
    per window w of the plan. table_n != 0: pts is a table of window multiples of table_n bases
    for this (uniform) plan, and the one row returned (W = 1) is the whole sum. accumulate:
    "xyzz" | "affine" (default ACCUMULATE[g.name])."""
    m = int(idx.shape[0])
    W = len(plan.widths)
    if table_n and len(plan.groups) != 1:
        raise ValueError("window_sums: a table of window multiples takes a uniform plan")
    total = 1 << (plan.widths[0] - 1) if table_n else plan.total_buckets
    entries = cp.empty(W * m, dtype=cp.uint64)
    _launch(g, "msm_digits", m, (scalars, idx, np.uint32(m), plan_words(cp, plan), np.int32(W), np.uint32(table_n),
                                 entries))
    _mark(timer, "digits")
    # Keys below 2^key_bits - 1, NO_KEY (all ones) last: a sort of the key's key_bits bits
    # suffices (a bucket's entries may come in any order), and the first NO_KEY entry still
    # bounds them.
    entries = sort_high_bits(cp, entries, total.bit_length() if table_n else plan.key_bits)
    M = int(cp.searchsorted(entries, cp.asarray([NO_KEY << 32], dtype=cp.uint64))[0])
    _mark(timer, "sort")
    if not M:
        buckets = _xyzz_buffer(cp, g, total, zero=True)
    elif accumulation(g, accumulate) == "affine":
        buckets = affine_bucket_sums(cp, g, pts, entries, M, total, timer)
    else:
        buckets = bucket_sums(cp, g, pts, entries, M, total, timer)
    del entries
    if table_n:
        out = bucket_reduce(cp, g, buckets, total, 1, 1)
    else:  # one reduction per run of equal-width windows, its rows in window order
        rows = [bucket_reduce(cp, g, buckets[base : base + k * (1 << (c - 1))], 1 << (c - 1), k, 1)
                for c, k, base in plan.groups]
        out = rows[0] if len(rows) == 1 else cp.concatenate(rows)
    _mark(timer, "reduce")
    return out


@dataclass
class MsmParts:
    """What an MSM's kernels leave for the host (numpy, XYZZ rows in Montgomery form, already
    copied off the device): ``windows`` the W window sums, lowest first, to be combined by Horner
    with ``widths[w]`` doublings between window w + 1 and window w (a WindowPlan's widths; ()
    when a table of window multiples merged the windows into one row); ``ones`` the sum of the
    scalar-1 points. ``finish`` combines them on the host (G1 ~0.4 ms, G2 ~0.8 ms at c = 20,
    W = 13 on a 2-core VM), so callers that hold a device (backends/cuda.py) finish after letting
    it go."""

    group: Group
    windows: np.ndarray | None
    widths: tuple[int, ...]
    ones: np.ndarray | None


def msm(g: Group, points, scalars, window: int | str | WindowPlan | None = None, timings: dict | None = None,
        use_table: bool | None = None, accumulate: str | None = None, split: bool = True) -> np.ndarray:
    """sum_i scalars[i] * points[i] in group g; returns numpy uint64[2, *g.elem] (affine, standard):
    ``finish(msm_parts(...))``; see msm_parts for the arguments."""
    return finish(msm_parts(g, points, scalars, window, timings, use_table, accumulate, split))


def finish(parts: MsmParts) -> np.ndarray:
    """The affine result (numpy uint64[2, *g.elem], standard form) of an MSM's parts, host only:
    the rows made affine with Python ints (one inversion for all), then Horner over the windows
    in arkworks (acc * 2^(width of window w) + window w, from the top window down) and the
    scalar-1 sum added. Measured
    on the 2-core VM for 13 windows + 1 (c = 20): G1 0.42 ms, G2 0.81 ms, where Horner on
    Python-int XYZZ doublings with an inversion per row took 4.0 / 11.8 ms."""
    g = parts.group
    rows = [r for r in (parts.windows, parts.ones) if r is not None]
    if not rows:
        return g.affine_to_limbs(None)
    if g.points is None:
        return finish_python(parts)
    aff = [g.affine_to_limbs(p) for p in g.ref.xyzz_to_affine_many(xyzz_rows_to_ints(g, np.concatenate(rows)))]
    pts = g.points(np.stack(aff))
    nw = 0 if parts.windows is None else len(parts.windows)
    if nw > 1 and len(parts.widths) != nw:
        raise ValueError(f"finish: {nw} window rows for {len(parts.widths)} widths")
    acc = None
    for w in reversed(range(nw)):
        acc = pts[w] if acc is None else acc * Scalar(1 << parts.widths[w]) + pts[w]
    if parts.ones is not None:
        acc = pts[nw] if acc is None else acc + pts[nw]
    return g.array([acc])[0]


def finish_python(parts: MsmParts) -> np.ndarray:
    """finish for a group without arkworks (BN254): Horner over the window rows in Python-int XYZZ
    (acc doubled width times, plus the window), the scalar-1 sum added, one conversion to affine
    at the end (G1 ~4 ms, G2 ~12 ms for 13 windows, BLS12-381's figures for this path)."""
    g = parts.group
    rows = xyzz_rows_to_ints(g, np.concatenate([r for r in (parts.windows, parts.ones) if r is not None]))
    nw = 0 if parts.windows is None else len(parts.windows)
    if nw > 1 and len(parts.widths) != nw:
        raise ValueError(f"finish: {nw} window rows for {len(parts.widths)} widths")
    acc = g.ref.inf_xyzz
    for w in reversed(range(nw)):
        if w < nw - 1:
            for _ in range(parts.widths[w]):
                acc = g.ref.xyzz_dbl(acc)
        acc = g.ref.xyzz_add(acc, rows[w])
    if parts.ones is not None:
        acc = g.ref.xyzz_add(acc, rows[nw])
    return g.affine_to_limbs(g.ref.xyzz_to_affine(acc))


def msm_parts(g: Group, points, scalars, window: int | str | WindowPlan | None = None, timings: dict | None = None,
              use_table: bool | None = None, accumulate: str | None = None, split: bool = True) -> MsmParts:
    """The device part of sum_i scalars[i] * points[i] in group g (every kernel, and the few
    rows they leave copied to the host); ``finish`` completes it.
    points: affine standard form (converted per call) or Bases (prepare_bases). window: the
    per-window path's windows: an int c (uniform c-bit windows), "mixed" (WindowPlan.mixed) or a
    WindowPlan; default default_plan (by size and group). use_table: bases with a table of window multiples use it
    (and its c) when True, never when False; None (default): when no window is given and at least
    TABLE_MIN_SCALARS scalars are other than 0 and 1.
    timings: a dict that receives per-phase milliseconds (benchmarks; costs a few events).
    accumulate: the bucket accumulation, "xyzz" or "affine" (default: ACCUMULATE[g.name]).
    split: sort out the scalars 0 and 1 first (split_scalars; they cost nothing and one addition);
    False sends every scalar through the windows (as correct: a 0 has no digits, a 1 one), for
    scalars known to be uniform (the H query's), saving the split's ~1.7 ms at 2^27 (4.4 without SPLIT_SCAN)."""
    if accumulate not in (None, "xyzz", "affine"):
        raise ValueError(f"msm_{g.name}: accumulate {accumulate!r} is not 'xyzz' or 'affine'")
    cp = require_cupy()
    s = check_fr(scalars, f"msm_{g.name} scalars", g.fr_modulus).limbs
    n = s.shape[0]
    timer = PhaseTimer(cp) if timings is not None else None
    if isinstance(points, Bases):
        if (points.group.name, points.group.curve) != (g.name, g.curve):
            raise ValueError(f"msm_{g.name}: bases prepared for {points.group.curve} {points.group.name}, "
                             f"not {g.curve} {g.name}")
        if points.n != n:
            raise ValueError(f"msm_{g.name} points: {points.n} bases for {n} scalars")
        bases = points
    else:
        _check_points(g, points, n)
    if n >= 2**31:
        raise ValueError(f"msm_{g.name}: {n} points is more than this kernel indexes (2^31 - 1)")
    try:
        plan = None if window is None else plan_of(window)
    except ValueError as e:
        raise ValueError(f"msm_{g.name}: {e}") from None
    parts = MsmParts(g, None, (), None)
    if n == 0:
        return parts
    if not isinstance(points, Bases):
        bases = prepare_bases(g, points)
        _mark(timer, "to_mont")
    pts = bases.mont
    if split:
        ones, rest = split_scalars(cp, s)
    else:
        ones, rest = cp.empty(0, dtype=cp.uint32), cp.arange(n, dtype=cp.uint32)
    _mark(timer, "split")
    m = int(rest.shape[0])
    if use_table and bases.table is None:
        raise ValueError(f"msm_{g.name}: use_table without a table of window multiples (prepare_bases(table_window=))")
    if use_table and window is not None:
        raise ValueError(f"msm_{g.name}: use_table takes the table's window ({bases.table_window}); give no window")
    if use_table is None:
        use_table = bases.table is not None and window is None and m >= TABLE_MIN_SCALARS
    if m and use_table:
        sums = window_sums(cp, g, bases.table, _rest_scalars(cp, s, rest), rest,
                           WindowPlan.uniform(bases.table_window), timer, table_n=n, accumulate=accumulate)
        parts.windows = cp.asnumpy(sums)[:1]  # one row: the windows are merged
    elif m:
        plan = plan or default_plan(g, m)
        parts.widths = plan.widths
        sums = window_sums(cp, g, pts, _rest_scalars(cp, s, rest), rest, plan, timer, accumulate=accumulate)
        parts.windows = cp.asnumpy(sums)
    _mark(timer, "rows")  # the window sums copied to the host (finish combines them, untimed here)
    if ones.shape[0]:
        parts.ones = cp.asnumpy(sum_points(cp, g, pts, ones))
        _mark(timer, "ones")
    if timer is not None:
        timings.update(timer.ms())
    return parts


def msm_g1(points, scalars, window: int | str | WindowPlan | None = None, timings: dict | None = None,
           use_table: bool | None = None, accumulate: str | None = None, split: bool = True) -> np.ndarray:
    """sum_i scalars[i] * points[i] in G1; see the module docstring for formats."""
    return msm(G1, points, scalars, window, timings, use_table, accumulate, split)


def msm_g2(points, scalars, window: int | str | WindowPlan | None = None, timings: dict | None = None,
           use_table: bool | None = None, accumulate: str | None = None) -> np.ndarray:
    """sum_i scalars[i] * points[i] in G2: points uint64[n, 2, 2, 6] -> numpy uint64[2, 2, 6]."""
    return msm(G2, points, scalars, window, timings, use_table, accumulate)
