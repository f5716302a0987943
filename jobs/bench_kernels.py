"""Time the GPU kernels (NTT, H, G1 and G2 MSM, fixed-base multiplication) against DESIGN.md's figures.

    python jobs/bench_kernels.py [SIZES] [--runs N] [--h-max LOG] [--pass KERNEL] [--msm L]
                                 [--msm-g2 L] [--fixed L]
        SIZES: "16-26" (default) or a comma list "20,24,27" of log2 sizes; "-" for no NTT/H table.
        --h-max: largest size for H (default: all); --pass: pass kernel(s), comma list, e.g.
        ntt_pass,ntt_pass_w (see cuzk_ray.cuda.ntt.PASS_KERNEL; default: its value);
        --pass-bits "8,9": stages per pass to try (cuda.MAX_PASS_BITS; default: its value).
        --pass-threads 256: at most this many threads per pass block (cuda.PASS_THREADS; 0: the
        kernel's launch bound).
        --h-fold "0,1": time H (and check it) with the iNTT's scaling in a separate pass (0) and
        folded into the last DIF pass (1), a row per setting (cuda.FOLD_SCALE; default: its value).
        --qap "snarkjs,bellperson": time the H of each QAP convention, a row per convention
        (cuda.h_device_function; bellperson's on a satisfied a b = c, so its dropped coefficient is 0),
        and the setup scalars of each (--setup).
        --msm "16,18,20": log2 sizes for the G1 MSM table (default none; "-" for none).
        --msm-g2 "16,20,24": log2 sizes for the G2 MSM table (uniform and "90% bits" scalars).
        --fixed "20,24": log2 sizes for fixed-base G1 and G2 multiplication (cuda_fixed_base).
        --g1-windows "14,18,mixed": extra G1 MSM rows (uniform scalars) at these windows: c bits
        each, or "mixed" (cuda_msm.WindowPlan.mixed: 8 x 21 + 4 x 22 bits, printed "21x8+22x4").
        --g2-windows "16,18,20,mixed": extra G2 MSM rows (uniform scalars) at these windows.
        --g2-defines "XYZZ_INLINE=__forceinline__": also time compile-time variants of msm_g2.cu.
        --ntt-defines "MONT_MUL_F64=1": also time compile-time variants of ntt.cu (cuda.DEFINES).
        --g1-defines "MSM_SEG_MINB=3;MSM_PREFETCH=0": compile-time variants of msm.cu (";" between
        variants, "," between the defines of one); --g1-table / --g2-table "20": also time MSMs over
        bases with a table of window multiples for these c (build time printed).
        --seg-max 32: most sorted entries per thread in the MSM bucket accumulation (cuda_msm.SEG_MAX).
        --split-scan 1: the MSMs' 0/1 split by the two scan passes (cuda_msm.SPLIT_SCAN; 0: msm_classify
        and flatnonzero); the rows' "split" phase shows its time.
        --accumulate "xyzz,affine": time every G1/G2 MSM row with each bucket accumulation
        (default cuda_msm.ACCUMULATE[group]: XYZZ mixed additions, or batch-affine levels), side by side.
        --aff-k-max 256 / --aff-budget-gib 16: the affine levels' most slots per thread
        (cuda_msm.AFF_K_MAX, both groups) and level buffers per group of runs (cuda_msm.AFFINE_BUDGET).
        --spmv "16,20,24": log2 sizes of the PoRep circuit for the witness -> a, b, c -> h table.
        --setup "20,24": log2 sizes of the PoRep circuit for the GPU setup scalars table.
        --check "20,24": log2 sizes for the range check of a device field vector (cuda.device).
        --witness "24,27": log2 sizes of the filecoin shape for the device expansion of a compact
        witness (cuda.witness.expand, kernels/witness.cu), checked against the host on sampled rows.
        --bn254 "20-26": the kernels compiled for BN254 (issue 31) at these log2 sizes: the forward NTT
        beside BLS12-381's at the same size (ratio), then BN254 G1 and G2 MSM tables (G2 up to
        --bn254-g2-max, default 24), bases (j + 2) * P from ref/bn254.py, every result checked.
Witness -> h rows: the PoRep-shaped circuit (public=4, field_share=0.05, as jobs/bench.py builds
it) with its matrices resident (load_cs); "abc" = the three sparse mat-vecs into the H buffer
(with the +-1 fast path, and with every coefficient multiplied), "h" = abc + H on the device,
witness already in VRAM; "from host" adds the witness upload (pageable numpy, as the prover gets
it). Each result is checked: c = a * b on every constraint row (a satisfied witness) and a, b, c of
8 random rows against the CPU. Setup rows: wall-clock of cuda_setup.setup_scalars (matrices up,
six scalar vectors down), checked on the h scalars and the ic = lc / gamma relation.
G1 MSM times are wall-clock (device work + the small host-side window combination), median of N
runs after a warm-up, bases and scalars already in VRAM, for uniform scalars, "90% bits" (90% of
the scalars 0 or 1, the rest uniform) and all 0/1; bases are 1024 distinct points
(j + 2) * P tiled to n (building 2^20 distinct points in Python would take minutes), so every
result is checked exactly against (sum_i s_i k_i mod r) * P.

Times are medians over N runs (default 7) after one warm-up, measured with CUDA events around
the device work only (inputs already in VRAM, results left there). Each timed result is checked
(NTT by a round trip, H against the inverse-free identity below) so a broken kernel cannot post
a fast time.
G2 MSM: as the G1 MSM (wall-clock medians, bases (j + 2) * Q tiled from 1024 distinct points,
every result checked exactly), beside DESIGN.md's G2 target (<= 330 ms at 2^24, ~3x G1).
Fixed-base: wall-clock of fixed_base_mul_gpu from device scalars to the numpy result on the host
(the download included, as the setup uses it), median of N runs after a warm-up at 2^16; 64
results of each run's output checked against arkworks (cuzk_ray.ref.msm.fixed_base_mul_array).
"""

from __future__ import annotations

import datetime
import statistics
import sys

import numpy as np

from cuzk_ray.cuda import ntt as cuda
from cuzk_ray.field import R_MOD
from cuzk_ray.kernels.loader import require_cupy

# DESIGN.md section 6 (H200): NTT over Fr.
NTT_FLOOR_24_MS = 5.0  # compute-bound estimate; scaled by n log n for other sizes ("~")
NTT_PUBLISHED = {21: "0.76 (4090)"}
NTT_TARGET_MS = {24: 6.0, 27: 60.0}
# DESIGN.md section 6 (H200), MSM at 2^24: (floor ms, best published, target ms).
G1_MSM_FIGURES = (107.0, "~110 (RTX 5000 Ada, ZPrize'23)", 110)
G2_MSM_FIGURES = (3 * 107.0, "~2.8x G1 (ICICLE, 4090)", 330)  # floor: DESIGN's "~3x G1" of the G1 floor
# BN254 (issue 31) at 2^24: floor = BLS12-381's scaled by the Fp products, (8/12)^2 limbs squared;
# published: ICICLE ~250 ms on a 3090 Ti (ingonyama-zk/icicle#126), zeknox 77 ms at 1.5 x 2^23 on a
# 4090 (okx/zeknox#85); docs/BENCHMARKS.md has the sources. Target: issue 31.
BN254_G1_MSM_FIGURES = (107.0 * 4 / 9, "~103 (4090, zeknox: 77 at 1.5 x 2^23, scaled)", 60)
BN254_G2_MSM_FIGURES = (3 * 107.0 * 4 / 9, "", "")


def parse_sizes(arg: str) -> list[int]:
    """"16-26" (a range), "20,24,27" (a list) or "-" (none) -> log2 sizes."""
    if arg == "-":
        return []
    if "-" in arg:
        lo, hi = arg.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in arg.split(",")]


def parse_windows(arg: str) -> list:
    """"16,20,mixed" -> MSM windows for msm(window=): ints (c bits) and the string "mixed"."""
    if arg == "-":
        return []
    return [w if w == "mixed" else int(w) for w in arg.split(",")]


def random_fr(cp, shape, seed, modulus: int = R_MOD):
    """Device limbs uint64[shape] of values below modulus (the top limb reduced below its top limb)."""
    x = np.random.default_rng(seed).integers(0, 2**64, size=shape, dtype=np.uint64)
    x[..., 3] %= np.uint64(modulus >> 192)
    return cp.asarray(x)


def time_ms(cp, fn, runs: int) -> float:
    fn()  # warm-up (compiles, builds tables)
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(runs):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def bench_range_check(cp, sizes, runs: int) -> None:
    """What one range check of a field vector costs (cuda.device.check_fr_array: dtype, shape,
    contiguity, every row < r; the bool() of its result waits for the device): the check that
    FrVector lets a partition skip."""
    from cuzk_ray.cuda.device import check_fr_array

    print("\n| log2 n | range check ms (device array) |")
    print("|---:|---:|")
    for log_n in sizes:
        x = random_fr(cp, (1 << log_n, 4), log_n)
        ms = time_ms(cp, lambda x=x: check_fr_array(x, "bench"), runs)
        print(f"| {log_n} | {ms:.3f} |")


def bench_witness(cp, sizes, runs: int) -> None:
    """What expanding a compact partition on the device costs (cuda.witness.expand: popcount
    scan + one pass writing 32 bytes per wire), bitmaps and values already in VRAM; the result is
    checked against CompactWitness.wires on the host for 64 random ranges of 1024 wires."""
    import random

    from cuzk_ray.circuits.porep import FilecoinLayout, compact_filecoin, synthesize_filecoin_parts
    from cuzk_ray.cuda.witness import expand, padded_bitmap

    print("\n| log2 n (filecoin shape) | wires | full wires | compact MiB | expand ms | GB/s written |")
    print("|---:|---:|---:|---:|---:|---:|")
    for log_n in sizes:
        lay = FilecoinLayout.make(1 << log_n, 327)
        w = compact_filecoin(lay, synthesize_filecoin_parts(1 << log_n, 327, seed=log_n))
        full = cp.asarray(padded_bitmap(w.full, w.n_wires)).view(cp.uint32)
        bits = cp.asarray(padded_bitmap(w.bits, w.n_wires)).view(cp.uint32)
        values = cp.asarray(w.values)
        ms = time_ms(cp, lambda: expand(w.n_wires, full, bits, values), runs)
        out = expand(w.n_wires, full, bits, values)
        rng = random.Random(log_n)
        for a in (rng.randrange(max(1, w.n_wires - 1024)) for _ in range(64)):
            b = min(w.n_wires, a + 1024)
            if not np.array_equal(cp.asnumpy(out[a:b]), w.wires(a, b)):
                raise AssertionError(f"witness expansion at 2^{log_n}: wires {a}..{b} differ from the host's")
        del out
        print(f"| {log_n} | {w.n_wires} | {w.n_full} | {w.nbytes / 2**20:.1f} | {ms:.3f} | "
              f"{w.n_wires * 32 / ms / 1e6:.0f} |")


def parse_variants(arg: str) -> list[list[str]]:
    """"A=1,B=2;C=3" -> [["A=1", "B=2"], ["C=3"]]: compile-time variants, their defines."""
    return [v.split(",") for v in arg.split(";")]


def main(argv: list[str]) -> None:
    cp = require_cupy()
    sizes, runs, h_max = list(range(16, 27)), 7, 40
    msm_sizes, spmv_sizes, setup_sizes, check_sizes, witness_sizes = [], [], [], [], []
    g2_sizes, fixed_sizes, g1_windows, g2_windows, g2_variants = [], [], [], [], []
    g1_variants, g1_tables, g2_tables, accumulates, ntt_variants = [], [], [], [None], []
    bn254_sizes, bn254_g2_max = [], 24
    pass_kernels, pass_bits, h_folds = [cuda.PASS_KERNEL], [cuda.MAX_PASS_BITS], [cuda.FOLD_SCALE]
    qaps = ["snarkjs"]
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--runs":
            runs = int(args.pop(0))
        elif a == "--h-max":
            h_max = int(args.pop(0))
        elif a == "--msm":
            msm_sizes = parse_sizes(args.pop(0))
        elif a == "--msm-g2":
            g2_sizes = parse_sizes(args.pop(0))
        elif a == "--g1-windows":
            g1_windows = parse_windows(args.pop(0))
        elif a == "--g1-defines":
            g1_variants = parse_variants(args.pop(0))
        elif a == "--ntt-defines":
            ntt_variants = parse_variants(args.pop(0))
        elif a == "--seg-max":
            from cuzk_ray.cuda import msm as cuda_msm

            cuda_msm.SEG_MAX = int(args.pop(0))
        elif a == "--split-scan":
            from cuzk_ray.cuda import msm as cuda_msm

            cuda_msm.SPLIT_SCAN = args.pop(0) not in ("0", "false", "False")
        elif a == "--accumulate":
            accumulates = args.pop(0).split(",")
        elif a in ("--aff-k-max", "--aff-budget-gib"):
            from cuzk_ray.cuda import msm as cuda_msm

            v = int(args.pop(0))
            if a == "--aff-k-max":
                cuda_msm.AFF_K_MAX.update(g1=v, g2=v)
            else:
                cuda_msm.AFFINE_BUDGET = v << 30
        elif a == "--g1-table":
            g1_tables = parse_sizes(args.pop(0))
        elif a == "--g2-table":
            g2_tables = parse_sizes(args.pop(0))
        elif a == "--g2-windows":
            g2_windows = parse_windows(args.pop(0))
        elif a == "--g2-defines":
            g2_variants = parse_variants(args.pop(0))
        elif a == "--fixed":
            fixed_sizes = parse_sizes(args.pop(0))
        elif a == "--spmv":
            spmv_sizes = parse_sizes(args.pop(0))
        elif a == "--setup":
            setup_sizes = parse_sizes(args.pop(0))
        elif a == "--check":
            check_sizes = parse_sizes(args.pop(0))
        elif a == "--witness":
            witness_sizes = parse_sizes(args.pop(0))
        elif a == "--bn254":
            bn254_sizes = parse_sizes(args.pop(0))
        elif a == "--bn254-g2-max":
            bn254_g2_max = int(args.pop(0))
        elif a == "--pass":
            pass_kernels = args.pop(0).split(",")
        elif a == "--pass-bits":
            pass_bits = [int(b) for b in args.pop(0).split(",")]
        elif a == "--pass-threads":
            cuda.PASS_THREADS = int(args.pop(0))
        elif a == "--h-fold":
            h_folds = [bool(int(f)) for f in args.pop(0).split(",")]
        elif a == "--qap":
            qaps = args.pop(0).split(",")
        else:
            sizes = parse_sizes(a)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, GPU: {props['name'].decode()}, "
          f"runs={runs} (median after warm-up), python jobs/bench_kernels.py {' '.join(argv)}")
    if sizes:
        mul_throughput(cp)
    for kernel in pass_kernels if sizes else []:
        for bits in pass_bits:
            cuda.PASS_KERNEL, cuda.MAX_PASS_BITS = kernel, bits
            print(f"NTT pass kernel: {kernel}, at most {bits} stages per pass")
            ntt_table(cp, sizes, runs, h_max, h_folds, qaps)
    for defines in ntt_variants if sizes else []:
        cuda.DEFINES = tuple(defines)
        print(f"NTT pass kernel: {cuda.PASS_KERNEL}, ntt.cu variant {','.join(defines)}")
        ntt_table(cp, sizes, runs, h_max, h_folds)
        cuda.DEFINES = ()
    if msm_sizes:
        bench_msm(cp, msm_sizes, runs, g1_windows, g1_variants, g1_tables, accumulates)
    if g2_sizes:
        bench_msm_g2(cp, g2_sizes, runs, g2_windows, g2_variants, g2_tables, accumulates)
    if fixed_sizes:
        bench_fixed_base(cp, fixed_sizes, runs)
    if spmv_sizes:
        bench_spmv(cp, spmv_sizes, runs)
    if setup_sizes:
        bench_setup(cp, setup_sizes, runs, qaps)
    if check_sizes:
        bench_range_check(cp, check_sizes, runs)
    if witness_sizes:
        bench_witness(cp, witness_sizes, runs)
    if bn254_sizes:
        bench_bn254(cp, bn254_sizes, runs, bn254_g2_max)


_NTT_INPUTS: dict = {}  # log2 n -> device input, shared by the tables of several pass kernels


def ntt_table(cp, sizes, runs: int, h_max: int, h_folds=(True,), qaps=("snarkjs",)) -> None:
    """The NTT / H table for the current cuda.PASS_KERNEL and cuda.MAX_PASS_BITS: a row per size,
    cuda.FOLD_SCALE setting in h_folds (H scaling "fold": in the last DIF pass; "pass": the
    separate scale_powers pass) and QAP convention in qaps. The NTT column is the forward NTT,
    the same for every setting."""
    print("| log2 n | NTT ms | NTT floor ms | NTT published ms | NTT target ms | H ms | H / NTT | H scaling | H qap |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
    fold_before = cuda.FOLD_SCALE
    for log_n in sizes:
        n = 1 << log_n
        if log_n not in _NTT_INPUTS:  # 2^27: 4 GiB of random limbs, ~10 s on the host
            _NTT_INPUTS[log_n] = random_fr(cp, (1, n, 4), log_n)
        x = _NTT_INPUTS[log_n]
        ntt_ms = time_ms(cp, lambda: cuda.ntt_device(x), runs)
        src = random_fr(cp, (3, n, 4), log_n + 100) if log_n <= h_max else None
        floor = NTT_FLOOR_24_MS * (n * log_n) / (2**24 * 24)
        for fold, qap in ((f, q) for f in h_folds for q in qaps):
            cuda.FOLD_SCALE = fold
            y = cuda.ntt_device(x)
            ok = bool(cp.array_equal(cuda.ntt_device(y, inverse=True), x))  # the iNTT folds too
            del y
            h_ms, h_ok = time_h(cp, src, runs, qap) if src is not None else (float("nan"), True)
            flag = "" if ok and h_ok else "  RESULT CHECK FAILED"
            print(f"| {log_n} | {ntt_ms:.3f} | ~{floor:.2f} | {NTT_PUBLISHED.get(log_n, '')} | "
                  f"{NTT_TARGET_MS.get(log_n, '')} | {h_ms:.3f} | {h_ms / ntt_ms:.1f} | "
                  f"{'fold' if fold else 'pass'} | {qap} |{flag}", flush=True)
        cuda.FOLD_SCALE = fold_before
        del src
        cp.get_default_memory_pool().free_all_blocks()


def time_h(cp, src, runs: int, qap: str = "snarkjs") -> tuple[float, bool]:
    """(median ms, result checked) of the H of convention qap on a copy of src (H overwrites its
    input; the copy is ~1% of the time). bellperson's H runs on src with c replaced by a b."""
    from cuzk_ray.cuda import spmv as cuda_spmv

    work = cp.empty_like(src)
    h_fn = cuda.h_device_function(qap)
    if qap == "bellperson":  # a satisfied a b = c, so H Z = A B - C exactly (check_h_bellperson)
        n = src.shape[1]
        src = src.copy()
        cuda_spmv.launch("fr_mul_std", n, (src[2], src[0], src[1], np.uint64(n)))

    def run_h():
        cp.copyto(work, src)
        return h_fn(work)

    check = check_h_bellperson if qap == "bellperson" else check_h
    return time_ms(cp, run_h, runs), check(cp, src, run_h())


_CIRCUITS: dict = {}


def porep_circuit(log_n: int):
    """(cs, build seconds) of the PoRep-shaped circuit of 2^log_n constraints, built once."""
    import time

    from cuzk_ray.circuits.porep import build_circuit

    if log_n not in _CIRCUITS:
        t0 = time.perf_counter()
        _CIRCUITS[log_n] = (build_circuit(1 << log_n, 4), time.perf_counter() - t0)
    return _CIRCUITS[log_n]


def check_abc(cp, cs, w, abc, rng) -> bool:
    """c = a * b on the constraint rows (the witness satisfies cs) and 8 random rows against the CPU."""
    from cuzk_ray.cuda import spmv as cuda_spmv
    from cuzk_ray.field import limbs_to_ints

    m = cs.n_constraints
    ab = cp.empty_like(abc[0])
    cuda_spmv.launch("fr_mul_std", ab.shape[0], (ab, abc[0], abc[1], np.uint64(ab.shape[0])))
    ok = bool(cp.array_equal(ab[:m], abc[2, :m]))
    rows = [0, m - 1] + [int(j) for j in rng.integers(0, m, 6)]
    got = [limbs_to_ints(cp.asnumpy(abc[i, rows])) for i in range(3)]
    for i, mat in enumerate((cs.A, cs.B, cs.C)):
        for k, j in enumerate(rows):
            want = sum(c * int(limbs_to_ints(w[col : col + 1])[0]) for col, c in mat.row(j)) % R_MOD
            ok &= int(got[i][k]) == want
    return ok


def bench_spmv(cp, sizes, runs: int) -> None:
    import time

    from cuzk_ray.backends.cuda import CudaBackend
    from cuzk_ray.circuits.porep import synthesize
    from cuzk_ray.cuda import spmv as cuda_spmv

    be = CudaBackend()
    rng = np.random.default_rng(5)
    print("\n| log2 n | nnz A+B+C | build s (CPU) | load_cs s | resident MiB | abc ms | abc ms, no +-1 path | "
          "H ms | h from witness ms | from host w ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for log_n in sizes:
        cs, build_s = porep_circuit(log_n)
        w = synthesize(1 << log_n, 4, seed=log_n)
        t0 = time.perf_counter()
        dcs = be.load_cs(cs)
        cp.cuda.Device().synchronize()
        load_s = time.perf_counter() - t0
        wd = cp.asarray(w)
        abc_ms = time_ms(cp, lambda: cuda_spmv.evaluate_abc(dcs, wd), runs)
        mul_ms = time_ms(cp, lambda: cuda_spmv.evaluate_abc(dcs, wd, fast=False), runs)
        h_ms = time_ms(cp, lambda: cuda_spmv.h_from_witness(dcs, wd), runs)
        host_ms = time_ms(cp, lambda: be.compute_h_from_witness(cs, w), runs)
        abc = cuda_spmv.evaluate_abc(dcs, wd)
        ok = check_abc(cp, cs, w, abc, rng) and bool(cp.array_equal(cuda_spmv.evaluate_abc(dcs, wd, fast=False), abc))
        pure_h = time_ms(cp, lambda: cuda.compute_h_device(abc.copy()), runs)
        abc = None
        nnz = sum(m.nnz for m in (cs.A, cs.B, cs.C))
        print(f"| {log_n} | {nnz} | {build_s:.1f} | {load_s:.2f} | {dcs.nbytes / 2**20:.0f} | {abc_ms:.3f} "
              f"| {mul_ms:.3f} | "
              f"{pure_h:.3f} | {h_ms:.3f} | {host_ms:.3f} |" + ("" if ok else "  RESULT CHECK FAILED"), flush=True)
        be._systems.clear()
        dcs = wd = None
        cp.get_default_memory_pool().free_all_blocks()


def bench_setup(cp, sizes, runs: int, qaps=("snarkjs",)) -> None:
    import random
    import time

    from cuzk_ray.cuda.setup import setup_scalars

    rng = random.Random(3)
    print("\n| log2 n | setup scalars s (GPU, wall, median) | min s | qap |")
    print("|---:|---:|---:|---|")
    for log_n, qap in ((s, q) for s in sizes for q in qaps):
        cs, _ = porep_circuit(log_n)
        toxic = [rng.randrange(1, R_MOD) for _ in range(5)]
        sc = setup_scalars(cs, *toxic, qap=qap)  # warm-up
        times = []
        for _ in range(min(runs, 3)):
            t0 = time.perf_counter()
            sc = setup_scalars(cs, *toxic, qap=qap)
            times.append(time.perf_counter() - t0)
        ok = check_setup(cs, sc, toxic, qap)
        print(f"| {log_n} | {statistics.median(times):.2f} | {min(times):.2f} | {qap} |"
              + ("" if ok else "  RESULT CHECK FAILED"),
              flush=True)
        del sc
        cp.get_default_memory_pool().free_all_blocks()


def check_setup(cs, sc, toxic, qap: str) -> bool:
    """A handful of h scalars against their formula (snarkjs: L^(2n)_(2j+1)(tau) / delta;
    bellperson: tau^j Z(tau) / delta) and ic = lc / gamma on the public wires."""
    from cuzk_ray.domain import domain_size
    from cuzk_ray.field import limbs_to_ints, root_of_unity
    from cuzk_ray.ref.bellperson_qap import bellperson_domain

    tau, alpha, beta, gamma, delta = toxic
    delta_inv, p = pow(delta, -1, R_MOD), cs.n_public
    if qap == "bellperson":
        n = bellperson_domain(cs.n_constraints).n
        idx = (0, 1, n - 2, n // 3)
        want = [pow(tau, j, R_MOD) * (pow(tau, n, R_MOD) - 1) * delta_inv % R_MOD for j in idx]
    else:
        n = domain_size(cs.n_constraints, p)
        w2 = root_of_unity(2 * n)
        fac = (pow(tau, 2 * n, R_MOD) - 1) * pow(2 * n, -1, R_MOD) * delta_inv % R_MOD
        idx = (0, 1, n - 1, n // 3)
        want = [x * pow(tau - x, -1, R_MOD) * fac % R_MOD for x in (pow(w2, 2 * j + 1, R_MOD) for j in idx)]
    ok = [int(limbs_to_ints(sc["h"][j : j + 1])[0]) for j in idx] == want
    u, v, w_, ic = (limbs_to_ints(sc[k][: p + 1]) for k in ("u", "v", "w", "ic"))
    return ok and list(ic * gamma % R_MOD) == list((beta * u + alpha * v + w_) % R_MOD)


def mul_throughput(cp) -> None:
    """Field multiplications (squarings for the sqr probes) per second of the Montgomery kernels
    (2 independent chains per thread). _kara: mul_kara (Karatsuba product, sqr_wide's reduction);
    _f64: mul_f64 (ff/mont_f64.cuh, the a*b products on FP64),
    both operands converted to double limbs in every multiply; _f64_pre: the reused operand y
    converted once."""
    from cuzk_ray.kernels.loader import get_kernel

    n, iters = 132 * 2048 * 4, 256
    probes = (("fr_mul_chain", 8), ("fr_mul_wide_chain", 8), ("fr_mul_kara_chain", 8), ("fr_sqr_wide_chain", 8),
              ("fr_mul_f64_chain", 8), ("fr_mul_f64_pre_chain", 8),
              ("fp_mul_chain", 12), ("fp_mul_wide_chain", 12), ("fp_mul_kara_chain", 12), ("fp_sqr_wide_chain", 12),
              ("fp_mul_f64_chain", 12), ("fp_mul_f64_pre_chain", 12))
    for name, words in probes:
        data = random_fr(cp, (n, words // 2), 7)  # any limbs < r are < p as well
        data[:, 4:] = 0
        fn = get_kernel("ff_test.cu", name)
        ms = time_ms(cp, lambda: fn(((n + 255) // 256,), (256,), (data, np.int32(iters), np.uint64(n))), 3)
        print(f"{name}: {2 * iters * n / ms / 1e6:.1f} G {'sqr' if '_sqr_' in name else 'mul'}/s")


def msm_scalars(cp, n: int, kind: str, seed: int, modulus: int = R_MOD):
    """Device scalars [n, 4]: "uniform" (< r), "bits" (0/1), "90% bits" (90% 0/1, 10% uniform)."""
    sc = random_fr(cp, (n, 4), seed, modulus)
    if kind == "uniform":
        return sc
    rs = cp.random.RandomState(seed)
    bit = rs.randint(0, 2, size=n).astype(cp.uint64)
    mask = rs.random_sample(n) < 0.9 if kind == "90% bits" else cp.ones(n, dtype=bool)
    sc[:, 0] = cp.where(mask, bit, sc[:, 0])
    sc[:, 1:] = cp.where(mask[:, None], cp.uint64(0), sc[:, 1:])
    return sc


def msm_expected(cp, sc, start, period: int):
    """Oracle for bases P_i = (i mod period + 2) * start: (sum_i s_i (i mod period + 2) mod r) * start."""
    from cuzk_ray.ref import g1 as g1_ref

    return g1_ref.affine_mul(msm_expected_scalar(cp, sc, period), start)


def msm_expected_scalar(cp, sc, period: int, modulus: int = R_MOD) -> int:
    """sum_i s_i (i mod period + 2) mod r, the per-class scalar sums exact in 32-bit halves
    (n / period < 2^32 terms of < 2^32 each)."""
    n = sc.shape[0]
    lo = (sc & cp.uint64(0xFFFFFFFF)).reshape(n // period, period, 4).sum(axis=0)
    hi = (sc >> cp.uint64(32)).reshape(n // period, period, 4).sum(axis=0)
    lo, hi = cp.asnumpy(lo), cp.asnumpy(hi)
    total = 0
    for j in range(period):
        s_j = sum((int(lo[j, k]) + (int(hi[j, k]) << 32)) << (64 * k) for k in range(4))
        total += (j + 2) * s_j
    return total % modulus


def phase_ms(fn, *args, **kw) -> str:
    """One more call of an MSM with per-phase CUDA events: "name ms, ..." (cuda_msm.PhaseTimer)."""
    t: dict = {}
    fn(*args, timings=t, **kw)
    return ", ".join(f"{k} {v:.1f}" for k, v in t.items())


def bench_msm_rows(cp, g, label: str, rows, sizes, runs: int, scalar_seed: int, want_fn, figures: tuple,
                   kinds=("uniform", "90% bits", "bits"), windows=(), variants=(), tables=(),
                   accumulates=(None,), modulus: int = R_MOD) -> None:
    """One MSM table for group g: bases = 1024 distinct points `rows` tiled to n, prepared once
    (prepare_bases: Montgomery form, as the prover keeps them); rows per scalar kind, extra
    windows, compile-time variants (defines) and tables of window multiples (c; build time shown).
    want_fn(sc, res) checks each result exactly. figures: DESIGN.md's (floor ms, best published,
    target ms) at 2^24; the floor is scaled by n for other sizes ("~"). accumulates: bucket
    accumulations ("xyzz", "affine"; None = cuda_msm.ACCUMULATE[group]), each case timed with each."""
    import dataclasses
    import time

    from cuzk_ray.cuda.msm import default_plan, msm, plan_of, prepare_bases, split_scalars

    groups = [("", g)] + [(" [" + ",".join(d) + "]", dataclasses.replace(g, defines=tuple(d))) for d in variants]
    floor, published, target = figures
    print(f"\n| log2 n | scalars | window | {label} MSM ms (median of {runs}) | min ms | floor ms | best published ms "
          "| target ms | phases ms (one more call) |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---|")
    for log_n in sizes:
        n = 1 << log_n
        pts = cp.asarray(np.ascontiguousarray(np.tile(rows, (max(1, n // 1024),) + (1,) * (rows.ndim - 1))[:n]))
        cases = [(kind, None, tag, gv, None) for tag, gv in groups for kind in kinds]
        cases += [("uniform", c, tag, gv, None) for c in windows for tag, gv in groups]
        cases += [(kind, None, tag, gv, c) for c in tables for tag, gv in groups for kind in kinds if kind != "bits"]
        prepared: dict = {}
        for (kind, window, tag, gv, table_c), acc in ((case, a) for case in cases for a in accumulates):
            key = (tag, table_c)
            if key not in prepared:
                bases = None
                prepared.clear()
                cp.get_default_memory_pool().free_all_blocks()
                t: dict = {}
                prepared[key] = prepare_bases(gv, pts, table_window=table_c, timings=t)
                print(f"prepare_bases({label}, 2^{log_n}{tag}, table_window={table_c}): "
                      + ", ".join(f"{k} {v:.1f} ms" for k, v in t.items()), flush=True)
            bases = prepared[key]
            sc = msm_scalars(cp, n, kind, log_n + scalar_seed, modulus)
            use = True if table_c else None  # a table row goes through the table whatever the scalar count
            res = msm(gv, bases, sc, window, use_table=use, accumulate=acc)  # warm-up
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                res = msm(gv, bases, sc, window, use_table=use, accumulate=acc)
                times.append((time.perf_counter() - t0) * 1e3)
            ok = want_fn(sc, res)
            _, rest = split_scalars(cp, sc)
            m = int(rest.shape[0])
            if table_c or not m:  # the windows msm uses: "20", "21x8+22x4", ...
                c = table_c or "-"
            else:
                c = (plan_of(window) if window else default_plan(gv, m)).label
            name = f"{kind}{tag}" + (f" table c={table_c}" if table_c else "") + (f" [{acc}]" if acc else "")
            at24 = log_n == 24
            phases = phase_ms(msm, gv, bases, sc, window, use_table=use, accumulate=acc)
            print(f"| {log_n} | {name} | {c} | {statistics.median(times):.2f} | {min(times):.2f} "
                  f"| ~{floor * n / 2**24:.{1 if n >= 2**20 else 2}f} | {published if at24 else ''} "
                  f"| {target if at24 else ''} | {phases} |"
                  + ("" if ok else "  RESULT CHECK FAILED"), flush=True)
            del sc
        bases = None
        prepared.clear()
        del pts
        cp.get_default_memory_pool().free_all_blocks()


def bench_msm(cp, sizes, runs: int, windows=(), variants=(), tables=(), accumulates=(None,)) -> None:
    from cuzk_ray.cuda.msm import G1
    from cuzk_ray.field import fp_to_limbs, limbs_to_ints
    from cuzk_ray.ref import g1 as g1_ref

    rng = np.random.default_rng(11)
    start = g1_ref.affine_mul(int(rng.integers(1, 2**62)), g1_ref.G1_GEN)
    distinct, acc = [], start
    for _ in range(1024):
        acc = g1_ref.affine_add(acc, start)
        distinct.append(acc)  # distinct[j] = (j + 2) * start
    rows = fp_to_limbs([v for p in distinct for v in p]).reshape(-1, 2, 6)

    def want(sc, res):
        x, y = limbs_to_ints(res)
        return (None if x == 0 and y == 0 else (int(x), int(y))) == msm_expected(cp, sc, start, min(sc.shape[0], 1024))

    bench_msm_rows(cp, G1, "G1", rows, sizes, runs, 200, want, G1_MSM_FIGURES, windows=windows, variants=variants,
                   tables=tables, accumulates=accumulates)


def bench_msm_g2(cp, sizes, runs: int, windows=(), variants=(), tables=(), accumulates=(None,)) -> None:
    from py_arkworks_bls12381 import G2Point, Scalar

    from cuzk_ray.cuda.msm import G2
    from cuzk_ray.curve import g2_array

    start = G2Point() * Scalar(int(np.random.default_rng(12).integers(1, 2**62)))
    distinct, acc = [], start
    for _ in range(1024):
        acc = acc + start
        distinct.append(acc)  # distinct[j] = (j + 2) * start
    rows = g2_array(distinct)

    def want(sc, res):
        return np.array_equal(res, g2_array([start * Scalar(msm_expected_scalar(cp, sc, min(sc.shape[0], 1024)))])[0])

    bench_msm_rows(cp, G2, "G2", rows, sizes, runs, 300, want, G2_MSM_FIGURES,
                   kinds=("uniform", "90% bits"), windows=windows, variants=variants, tables=tables,
                   accumulates=accumulates)


def bench_fixed_base(cp, sizes, runs: int) -> None:
    import time

    from cuzk_ray.cuda.fixed_base import fixed_base_mul_gpu
    from cuzk_ray.ref.msm import fixed_base_mul_array

    print(f"\n| log2 n | group | fixed-base ms (median of {runs}, to host) | M points/s |")
    print("|---:|---|---:|---:|")
    for group in ("g1", "g2"):
        fixed_base_mul_gpu(group, random_fr(cp, (1 << 16, 4), 1))  # warm-up: compile, window table
        for log_n in sizes:
            sc = random_fr(cp, (1 << log_n, 4), log_n + 400)
            sc[:3] = cp.asarray(np.array([[0, 0, 0, 0], [1, 0, 0, 0], [2, 0, 0, 0]], dtype=np.uint64))
            times, out = [], None
            for _ in range(runs):
                del out
                t0 = time.perf_counter()
                out = fixed_base_mul_gpu(group, sc)
                times.append((time.perf_counter() - t0) * 1e3)
            idx = np.r_[0:3, np.random.default_rng(log_n).integers(0, 1 << log_n, 61)]
            want = fixed_base_mul_array(group, cp.asnumpy(sc[cp.asarray(idx)]), workers=1)
            ok = np.array_equal(out[idx], want)
            ms = statistics.median(times)
            print(f"| {log_n} | {group} | {ms:.1f} | {(1 << log_n) / ms / 1e3:.1f} |"
                  + ("" if ok else "  RESULT CHECK FAILED"),
                  flush=True)
            del sc, out
            cp.get_default_memory_pool().free_all_blocks()


def check_h(cp, abc, h) -> bool:
    """h_j = A(v_j) B(v_j) - C(v_j) at v_j = w_2n^(2j+1): check it through cuda.ntt_device with
    shift w_2n (independent of compute_h's fused DIF/DIT path) at a handful of indices."""
    from cuzk_ray.field import limbs_to_ints, root_of_unity

    n = abc.shape[1]
    w2 = root_of_unity(2 * n)
    odd = [cuda.ntt_device(cuda.ntt_device(abc[i : i + 1], inverse=True), shift=w2) for i in range(3)]
    idx = [0, 1, n - 1, n // 3]
    vals = [limbs_to_ints(cp.asnumpy(v[0, idx])) for v in odd]
    got = limbs_to_ints(cp.asnumpy(h[idx]))
    return all(int(g) == (int(a) * int(b) - int(c)) % R_MOD for g, a, b, c in zip(got, *vals))


def check_h_bellperson(cp, abc, h) -> bool:
    """bellperson's H (m - 1 coefficients) of a satisfied a b = c: H(v_j) Z(7) = A(v_j) B(v_j) - C(v_j)
    at v_j = 7 w^j, the values through cuda.ntt_device (coset 7, native roots; independent of the
    fused path) at a handful of indices."""
    from cuzk_ray.field import limbs_to_ints
    from cuzk_ray.ref.bellperson_qap import COSET_GENERATOR as G

    n = abc.shape[1]
    coset = [cuda.ntt_device(cuda.ntt_device(abc[i : i + 1], inverse=True, domain="native"), shift=G,
                             domain="native") for i in range(3)]
    full = cp.zeros((1, n, 4), dtype=cp.uint64)
    full[0, : n - 1] = h
    h_at = cuda.ntt_device(full, shift=G, domain="native")
    idx = [0, 1, n - 1, n // 3]
    vals = [limbs_to_ints(cp.asnumpy(v[0, idx])) for v in coset]
    got = limbs_to_ints(cp.asnumpy(h_at[0, idx]))
    z = pow(G, n, R_MOD) - 1
    return all(int(g) * z % R_MOD == (int(a) * int(b) - int(c)) % R_MOD for g, a, b, c in zip(got, *vals))


def bench_bn254(cp, sizes, runs: int, g2_max: int) -> None:
    """BN254 rows (issue 31): the forward NTT of each size beside BLS12-381's (same input limbs
    reduced below BN254's r, which is also below BLS12-381's), checked by a round trip; then G1 and
    G2 MSM tables on the BN254 kernels, bases (j + 2) * P tiled from 1024 points, checked exactly."""
    from cuzk_ray.cuda import msm as cuda_msm
    from cuzk_ray.domain import Domain
    from cuzk_ray.ref import bn254

    print("\n| log2 n | BN254 NTT ms | BLS12-381 NTT ms | BLS / BN254 |")
    print("|---:|---:|---:|---:|")
    for log_n in sizes:
        x = random_fr(cp, (1, 1 << log_n, 4), log_n, bn254.R)
        d = Domain.of(1 << log_n, "snarkjs", "bn254")
        bn = time_ms(cp, lambda: cuda.ntt_device(x, domain=d), runs)
        bls = time_ms(cp, lambda: cuda.ntt_device(x), runs)
        ok = bool(cp.array_equal(cuda.ntt_device(cuda.ntt_device(x, domain=d), inverse=True, domain=d), x))
        print(f"| {log_n} | {bn:.3f} | {bls:.3f} | {bls / bn:.2f} |" + ("" if ok else "  RESULT CHECK FAILED"),
              flush=True)
    cp.get_default_memory_pool().free_all_blocks()
    groups = ((cuda_msm.BN254_G1, bn254.G1_OPS, bn254.G1_GEN, BN254_G1_MSM_FIGURES, 400,
               ("uniform", "90% bits", "bits"), max(sizes)),
              (cuda_msm.BN254_G2, bn254.G2_OPS, bn254.G2_GEN, BN254_G2_MSM_FIGURES, 500,
               ("uniform", "90% bits"), g2_max))
    for group, ops, gen, figures, seed, kinds, top in groups:
        start = bn254.mul(gen, int(np.random.default_rng(seed).integers(1, 2**62)), ops)
        distinct, acc = [], start
        for _ in range(1024):
            acc = bn254.add(acc, start, ops)
            distinct.append(acc)  # distinct[j] = (j + 2) * start
        rows = np.stack([group.affine_to_limbs(p) for p in distinct])

        def want(sc, res, group=group, ops=ops, start=start):
            k = msm_expected_scalar(cp, sc, min(sc.shape[0], 1024), bn254.R)
            return np.array_equal(res, group.affine_to_limbs(bn254.mul(start, k, ops)))

        bench_msm_rows(cp, group, f"BN254 {group.name.upper()}", rows, [n for n in sizes if n <= top], runs, seed,
                       want, figures, kinds=kinds, modulus=bn254.R)


if __name__ == "__main__":
    main(sys.argv[1:])
