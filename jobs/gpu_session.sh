#!/usr/bin/env bash
# One GPU-machine session in one call (../shared/device/README.md: few, full calls): install the
# carried wheels, run the phases named on the command line, and pack logs and results into
# $OUT/results.tgz (the device tool brings back at most 8 files).
#
#   bash jobs/gpu_session.sh PHASE...
#     tests                      every test marked gpu (pytest -m gpu)
#     pytest:ARGS                pytest -q -m gpu ARGS (test files or node ids, space-separated;
#                                a -k expression with spaces does not survive the split)
#     kernels:ARGS               jobs/bench_kernels.py ARGS (one quoted argument, space-separated)
#     prove:NAME:OVERRIDES       jobs/prove.py backend=cuda OVERRIDES (one quoted argument, space-separated)
#     bench:NAME:OVERRIDES       jobs/bench.py hardware=h200 plots=false OVERRIDES (likewise)
#
# Kernels come precompiled when .cubin/ travels (python -m cuzk_ray.kernels.build --tests --out
# .cubin here; --tests adds ff_test.cu, which only the gpu tests load); otherwise NVRTC compiles
# them on the device (~2 min for the MSM modules).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-outputs/gpu-session}
R="$OUT/r"
mkdir -p "$R"
. jobs/gpu_env.sh "$R/machine.txt"  # the carried wheels and cubins; machine.txt
export HYDRA_FULL_ERROR=1
set -f  # phase arguments are split on spaces below, never globbed (pytest ids hold [ ])
T="timeout ${PHASE_TIMEOUT:-900}"  # seconds per phase: a hung phase must not eat the call

status=0
for phase in "$@"; do
    kind=${phase%%:*}
    rest=${phase#*:}
    t0=$(date +%s)
    case $kind in
        tests)
            $T python3 -m pytest -q -m gpu tests 2>&1 | tee "$R/pytest-gpu.log" || status=1 ;;
        pytest)
            # shellcheck disable=SC2086
            $T python3 -m pytest -q -m gpu ${rest} 2>&1 | tee -a "$R/pytest-gpu.log" || status=1 ;;
        kernels)
            # shellcheck disable=SC2086
            $T python3 jobs/bench_kernels.py ${rest} 2>&1 | tee -a "$R/kernels.txt" || status=1 ;;
        prove)
            name=${rest%%:*}; over=${rest#*:}
            # shellcheck disable=SC2086
            $T python3 jobs/prove.py backend=cuda output_dir="$R/prove-$name" ${over} 2>&1 | tee "$R/prove-$name.log" || status=1 ;;
        bench)
            name=${rest%%:*}; over=${rest#*:}
            # shellcheck disable=SC2086
            $T python3 jobs/bench.py hardware=h200 plots=false output_dir="$R/bench-$name" ${over} 2>&1 | tee "$R/bench-$name.log" || status=1 ;;
        *)
            echo "unknown phase $phase" >&2; status=2 ;;
    esac
    echo "== $phase: $(( $(date +%s) - t0 )) s; disk used $(df -B1 --output=used "$HOME" | tail -1) B" | tee -a "$R/phases.txt"
done
# proofs/ trees are many small files: one tarball; no key bundles or caches in it
tar czf "$OUT/results.tgz" -C "$OUT" --exclude='*.npy' r
exit $status
