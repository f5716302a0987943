# Sourced by the device-call scripts (gpu_session.sh, gpu_issue30.sh, gpu_service32g.sh), from the
# repository root: installs the carried wheels (.whl; jobs/make_carry.sh makes .whl and .cubin) into
# /tmp/site, puts them and the checkout on PYTHONPATH, points the kernels at the carried cubins
# (.cubin) and writes what the machine is to $1 (machine.txt).
shopt -s nullglob
wheels=(.whl/*.whl .whl/*.tar.gz)
shopt -u nullglob
if [ ${#wheels[@]} -gt 0 ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "${wheels[@]}" \
        || echo "carried wheels not installed; using the installed packages" >&2
fi
export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 RAY_AUTH_MODE=disabled
export CUZK_CUBIN_DIR=${CUZK_CUBIN_DIR:-$PWD/.cubin}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; free -g | head -2; date -u;
  df -B1 "$HOME" /tmp /dev/shm; ls "$CUZK_CUBIN_DIR"; } > "$1" 2>&1

# take_keys FROM TO: on a machine still warm from the other device script, its cache FROM holds a
# 32 GiB development key bundle (the same key: seed 0, the same file name) and a partition cache.
# The 64 GB disk holds one such set (~9 GB of partition cache + the 48 GB bundle, whose matrices
# are hard links into that cache), so the bundle and its .vk are moved into TO/keys, the partition
# cache into TO/partitions (when TO has none: ~110 s saved) and the rest of FROM removed; without
# this the next key is refused for disk (2026-12-07: "needs 47.4 GB, 0.5 GB free").
take_keys() {
    [ -d "$1" ] || return 0
    mkdir -p "$2/keys"
    local b
    for b in "$1"/keys/*.bundle; do
        [ -e "$b" ] && mv "$b" "${b%.bundle}.vk" "$2/keys/" && echo "key bundle taken from $1: $(basename "$b")"
    done
    if [ -d "$1/partitions" ] && [ ! -e "$2/partitions" ]; then
        mv "$1/partitions" "$2/partitions" && echo "partition cache taken from $1"
    fi
    rm -rf "$1"
}
