#!/usr/bin/env bash
# The service at 32 GiB on one GPU in ONE device call (<= 600 s): the real PoRep C2 circuit as
# filecoin-c2 requests POSTed by the trial, a SIGKILL mid-batch and a restart, every partition
# verified again (jobs/service_trial.py --kind filecoin-c2). Outputs under $OUT.
#
#   bash jobs/gpu_service32g.sh [PROOFS]      (default 3)
#   device call: carry [".whl", ".cubin"], made by jobs/make_carry.sh
#
# Phases, from the 32 GiB runs on an H100 (2026-12-07; ~ = estimate): install 5 s; consistent
# synthetic C1 ~12 s and partition cache ~110 s (jobs/bench_synthesis_workers.prepare); the
# development key bundle on the GPU ~80 s (--make-key: circuit.load_key in its own process);
# service start ~30-50 s; phase A, PROOFS proofs, ~30 s + ~15 s each; phase B: a kill after the
# first proof, the restart (key mapped again) and the rest; the verification of every partition.
set -uo pipefail
cd "$(dirname "$0")/.."
PROOFS=${1:-3}
OUT=${OUT:-outputs/gpu-service32g}
BUDGET=${BUDGET:-560}    # seconds of the device call this script may use
WORK=/tmp/service32g     # the trial's folder: its cache (C1, partition cache, key), logs, outputs
C1_COPIES=${C1_COPIES:-}  # 1: each request names its own copy of the C1 (parsed as distinct sectors' are)
mkdir -p "$OUT" "$WORK"
START=$(date +%s)
. jobs/gpu_env.sh "$OUT/machine.txt"  # the carried wheels and cubins; machine.txt
take_keys "$HOME/.cache/cuzk-ray-issue30" "$WORK/cache" | tee -a "$OUT/phases.txt"
rm -rf "$WORK/cache/service" "$WORK/cache/ray" "$WORK"/a "$WORK"/b "$WORK"/c1  # a trial before this one on a warm machine
python3 -c "import sys; sys.path.insert(0, 'jobs'); from pathlib import Path; import bench_synthesis_workers as b; \
b.prepare('32GiB', Path('$WORK/cache'))" 2>&1 | tail -3
echo "== C1 and partition cache: $(( $(date +%s) - START )) s" | tee -a "$OUT/phases.txt"
nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 1000 > "$OUT/vram.csv" 2>&1 &
SMI=$!
timeout $(( BUDGET - ($(date +%s) - START) - 15 )) python3 jobs/service_trial.py --kind filecoin-c2 --make-key \
    --proofs "$PROOFS" --kill-after 1 --circom 2 ${C1_COPIES:+--c1-copies} --out "$WORK" -- circuit=filecoin \
    "circuit.c1=$WORK/cache/c1-32GiB.json" backend=cuda setup_backend=cuda pw=12 2>&1 | tee "$OUT/trial.log"
rc=${PIPESTATUS[0]}
kill "$SMI" 2>/dev/null
cp "$WORK"/trial.json "$WORK"/*.log "$OUT"/ 2>/dev/null
echo "== service trial: rc $rc (124 = timed out); total $(( $(date +%s) - START )) s" | tee -a "$OUT/phases.txt"
exit "$rc"
