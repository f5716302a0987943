#!/usr/bin/env bash
# Issue 30 on the H200 in ONE device call (<= 600 s): the real 2 KiB C2 on the GPU as a test, then
# the 32 GiB benchmark with whatever time is left. Logs, the figures JSON and samplers under $OUT.
#
#   bash jobs/gpu_issue30.sh [all|2k|32g] [REPEAT]     (default: all 3)
#   device call: carry [".whl", ".cubin"] (both made by jobs/make_carry.sh; .cubin optional:
#   without it NVRTC compiles the kernels, ~2 min, inside the 2 KiB test's time); nothing else is
#   needed (no caches survive between calls: a machine stays warm ~30 s).
#
# Phases, as measured on the H200 on 2026-12-05 (docs/gpu-runs/2026-12-05c-h200-issue30; ~ = estimate):
#   install the carried wheels                                             5 s
#   2 KiB GPU test (tests/test_filecoin_c2_gpu.py), timeout T2K=170 s      79 s with .cubin, ~200 s without
#   32 GiB bench, timeout = what is left less 25 s for packing:
#     synthetic 32 GiB C1                                                  14 s
#     partition cache: one blank synthesis, recording + tape written,
#       read back (SHA-256 of ~9 GB, density check)                        117 s
#     fast witness of partition 0 (numba compile, then timed)              9 s (0.52 s timed)
#     development key on the GPU (made in memory: 72 s)
#       KEY=bundle: streamed into a native key bundle on disk, mapped      ~90 s
#       KEY=params: into a .params (47.4 GB), then decoded into memory     ~150 s + ~60 s
#     Ray engine up, the key to the provers                                ~50 s (48.5 s before the OOM)
#     REPEAT proofs of 10 partitions (goal 12 s/proof steady; first ~30 s) ~30 s + 12 s x (REPEAT - 1)
#   total 32 GiB ~400 s with KEY=bundle: it does NOT fit after the 2 KiB test; run `32g` alone.
# Host memory: KEY=params holds the decoded 48 GB key in the driver and Ray puts another copy (+ the
# 9 GB of matrices) in its object store: on 2026-12-05 (the same two copies, made in memory) the
# prover actor was OOM-killed at 121 of 126 GB. KEY=bundle (the default) maps one copy from disk, in
# the page cache, shared by the driver and the actor. Disk: ~9.2 GB partition cache + ~48 GB bundle
# (matrices hard-linked from the cache) of the 64 GB (checked before the bundle is written).
set -uo pipefail
cd "$(dirname "$0")/.."
WHAT=${1:-all}
REPEAT=${2:-3}
KEY=${KEY:-bundle}   # bundle: the dev key mapped from a native bundle; params: through a .params file
BENCH_SET=${BENCH_SET:-}  # one engine override for the bench, e.g. pw=8 (gpu_concurrency is fitted to the VRAM)
DISTINCT=${DISTINCT:-}    # 1: REPEAT different C1s, one per proof (sector ids 77, 78, ...; ~5-10 s each to make)
OUT=${OUT:-outputs/gpu-issue30}
mkdir -p "$OUT"
START=$(date +%s)
BUDGET=${BUDGET:-590}          # seconds of the device call this script may use
T2K=${T2K:-170}
left() { echo $(( BUDGET - ($(date +%s) - START) )); }

. jobs/gpu_env.sh "$OUT/machine.txt"  # the carried wheels and cubins; machine.txt
take_keys /tmp/service32g/cache "$HOME/.cache/cuzk-ray-issue30" | tee -a "$OUT/phases.txt"
echo "== install: $(( $(date +%s) - START )) s" | tee -a "$OUT/phases.txt"

# samplers (this script's own background jobs, stopped by their pids at the end): VRAM, host, disk
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 1000 > "$OUT/vram.csv" 2>&1 &
SMI=$!
( while true; do echo "$(date +%s) $(free -b | awk '/Mem:/{print $3}') $(df -B1 --output=used "$HOME" | tail -1)";
  sleep 2; done ) > "$OUT/host_disk.txt" 2>&1 &
HOST=$!

status=0
if [ "$WHAT" = all ] || [ "$WHAT" = 2k ]; then
    t0=$(date +%s)
    timeout "$T2K" python3 -m pytest -q -m gpu tests/test_filecoin_c2_gpu.py 2>&1 | tee "$OUT/test_2k_gpu.log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] || status=1
    echo "== 2 KiB GPU test: $(( $(date +%s) - t0 )) s (rc $rc; 124 = timed out)" | tee -a "$OUT/phases.txt"
fi
if [ "$WHAT" = all ] || [ "$WHAT" = 32g ]; then
    t0=$(date +%s)
    T32=$(( $(left) - 25 ))
    echo "32 GiB bench: ${T32} s left for it" | tee -a "$OUT/phases.txt"
    if [ "$T32" -gt 30 ]; then
        timeout "$T32" python3 jobs/bench_filecoin_c2.py --sector-size 32GiB --backend cuda --pw 12 --engine ray \
            --repeat "$REPEAT" --key "$KEY" --cache-dir "$HOME/.cache/cuzk-ray-issue30" --work /tmp/issue30-work \
            --out "$OUT/bench_32g.json" ${BENCH_SET:+--set "$BENCH_SET"} ${DISTINCT:+--distinct} 2>&1 | tee "$OUT/bench_32g.log"
        rc=${PIPESTATUS[0]}
        [ "$rc" -eq 0 ] || status=1
        echo "== 32 GiB bench: $(( $(date +%s) - t0 )) s (rc $rc; 124 = timed out)" | tee -a "$OUT/phases.txt"
    fi
fi
kill "$SMI" "$HOST" 2>/dev/null
du -sb "$HOME/.cache/cuzk-ray-issue30"/* >> "$OUT/phases.txt" 2>/dev/null
echo "== total: $(( $(date +%s) - START )) s" | tee -a "$OUT/phases.txt"
exit $status
