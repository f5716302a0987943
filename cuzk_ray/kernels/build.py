"""Precompile every kernel module to a cubin with nvcc (no GPU needed), for the loader to pick up
instead of compiling with NVRTC on the GPU machine (minutes for msm.cu):

    python -m cuzk_ray.kernels.build [--arch sm_90] [--out DIR] [--jobs N]

DIR defaults to $CUZK_CUBIN_DIR or ~/.cache/cuzk-ray/cubin; files are named by loader.module_hash,
so only cubins of the current sources are ever loaded. Older cubins of a module are removed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import loader


def modules() -> list[str]:
    return sorted(p.name for p in loader.KERNEL_DIR.glob("*.cu"))


def build_one(name: str, arch: str, out: Path, nvcc: str) -> tuple[str, float, str]:
    """(name, seconds, error or ""): nvcc -cubin into a temporary name, renamed when complete."""
    target = out / loader.cubin_path(name, arch).name
    if target.is_file():
        return name, 0.0, ""
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    cmd = [nvcc, loader.STD, f"-arch={arch}", f"-I{loader.KERNEL_DIR}", "-cubin", "-o", str(tmp),
           str(loader.KERNEL_DIR / name)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        return name, time.perf_counter() - t0, (res.stderr or res.stdout).strip()
    stem = Path(name).stem
    for old in out.glob(f"{stem}-{arch}-*.cubin"):
        old.unlink()
    tmp.rename(target)
    return name, time.perf_counter() - t0, ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("error: nvcc not on PATH (install the CUDA toolkit, or let NVRTC compile on the GPU)", file=sys.stderr)
        return 2
    out = args.out or loader.cubin_dir()  # file names do not depend on the directory
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        for name, secs, err in ex.map(lambda n: build_one(n, args.arch, out, nvcc), modules()):
            if err:
                failed += 1
                print(f"error: {name}: nvcc failed:\n{err}", file=sys.stderr)
            else:
                print(f"{name}: {'cached' if secs == 0 else f'{secs:.1f} s'} -> {out / loader.cubin_path(name, args.arch).name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
