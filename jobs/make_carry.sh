#!/usr/bin/env bash
# Fills .whl/ and .cubin/ for a device call that runs the 32 GiB bench or the service
# (jobs/gpu_issue30.sh, jobs/gpu_service32g.sh; carry [".whl", ".cubin"]), within the 64 MiB a call
# may carry with the working tree (~9.4 MiB):
#   - the wheels the GPU machine lacks, Ray Serve's included (../shared/device/make-wheels.sh,
#     SERVE=1: ~51.9 MB), less Ray's dashboard front end (ray/dashboard/client, ~2.4 MB: no one
#     opens the dashboard on the device);
#   - the BLS12-381 cubins only (~5.7 MB; BN254's add ~2.8 MB).
# Usage, from the repository root, in the venv:  bash jobs/make_carry.sh   (~2.5 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
SERVE=1 bash ../shared/device/make-wheels.sh >/dev/null
python3 - .whl/ray-*.whl <<'PY'
import os, sys, zipfile
src = sys.argv[1]
drop = b"ray/dashboard/client/"
tmp = src + ".tmp"
with zipfile.ZipFile(src) as zi, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zo:
    for info in zi.infolist():
        if info.filename.encode().startswith(drop):
            continue
        data = zi.read(info.filename)
        if info.filename.endswith(".dist-info/RECORD"):
            data = b"\n".join(line for line in data.split(b"\n") if not line.startswith(drop))
        zo.writestr(info, data)
os.replace(tmp, src)
PY
rm -rf .cubin
python -m cuzk_ray.kernels.build --out .cubin --curve bls12381 >/dev/null
tree=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
carry=$(du -sb .whl .cubin | awk '{s += $1} END {print s}')
echo "carry .whl + .cubin $((carry >> 20)) MiB, tracked tree $((tree >> 20)) MiB (limit 64 MiB together)"
