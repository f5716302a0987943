"""Precompile every kernel module to a cubin with nvcc (no GPU needed), for the loader to pick up
instead of compiling with NVRTC on the GPU machine (minutes for msm.cu):

    python -m cuzk_ray.kernels.build [--arch sm_90] [--out DIR] [--jobs N] [--tests] [--curve C1,C2]
                                     [--variant MODULE:D1,D2 ...]

DIR defaults to $CUZK_CUBIN_DIR or ~/.cache/cuzk-ray/cubin; files are named by loader.module_hash,
so only cubins of the current sources are ever loaded. Older cubins of a module are removed when
its default build is made. --variant also builds a compile-time variant (defines, e.g.
msm.cu:MSM_SEG_MINB=3) that benchmarks ask for (loader.get_kernel(..., defines)). The test-only
modules (loader.TEST_MODULES: ff_test.cu) are built only with --tests. The host libraries
(loader.LIBRARIES: host/radix_sort.cu, CUB's radix sort for cuda/sort.py) are built with
nvcc -shared beside the cubins, as lib<stem>-<arch>-<hash>.so. Every module is built once per
curve (loader.CURVES; --curve picks some, default all): msm-sm_90-*.cubin for BLS12-381 as
before, msm-bn254-sm_90-*.cubin for BN254; --variant builds for the first curve given.
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


def modules(tests: bool = False) -> list[str]:
    """Every production kernel module; with tests, the test-only ones too."""
    return sorted(p.name for p in loader.KERNEL_DIR.glob("*.cu") if tests or p.name not in loader.TEST_MODULES)


def build_one(name: str, arch: str, out: Path, nvcc: str, defines: tuple = (),
              keep: frozenset = frozenset(), curve: str = loader.DEFAULT_CURVE) -> tuple[str, float, str]:
    """(name, seconds, error or ""): nvcc -cubin of the module for ``curve`` into a temporary
    name, renamed when complete; a default build removes the module's other cubins of that curve
    except those named in keep."""
    target = out / loader.cubin_path(name, arch, defines, curve).name
    if target.is_file():
        return name, 0.0, ""
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    cmd = [nvcc, loader.STD, f"-arch={arch}", f"-I{loader.KERNEL_DIR}", "-cubin", "-o", str(tmp),
           *(f"-D{d}" for d in loader.curve_defines(curve) + tuple(defines)), str(loader.KERNEL_DIR / name)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        return name, time.perf_counter() - t0, (res.stderr or res.stdout).strip()
    for old in out.glob(f"{loader.cubin_stem(name, arch, curve)}-*.cubin") if not defines else ():
        if old.name not in keep:
            old.unlink()
    tmp.rename(target)
    return name, time.perf_counter() - t0, ""


def build_library(name: str, arch: str, out: Path, nvcc: str) -> tuple[str, float, str]:
    """(name, seconds, error or ""): nvcc -shared of a host library (loader.LIBRARIES) into a
    temporary name, renamed when complete; older builds of it are removed."""
    target = out / loader.library_path(name, arch).name
    if target.is_file():
        return name, 0.0, ""
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    cmd = [nvcc, loader.STD, f"-arch={arch}", f"-I{loader.KERNEL_DIR}", "-O2", "-shared", "-Xcompiler", "-fPIC",
           "-o", str(tmp), str(loader.KERNEL_DIR / name)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if res.returncode != 0:
        tmp.unlink(missing_ok=True)
        return name, time.perf_counter() - t0, (res.stderr or res.stdout).strip()
    for old in out.glob(f"lib{Path(name).stem}-{arch}-*.so"):
        old.unlink()
    tmp.rename(target)
    return name, time.perf_counter() - t0, ""


def job_label(name: str, defines: tuple, curve: str) -> str:
    """How a build job is named in the output: module, [curve unless BLS12-381], [defines]."""
    tags = ([] if curve == loader.DEFAULT_CURVE else [curve]) + list(defines)
    return name + (f" [{','.join(tags)}]" if tags else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--variant", action="append", default=[], metavar="MODULE:D1,D2",
                    help="also build MODULE with these defines (repeatable)")
    ap.add_argument("--tests", action="store_true", help=f"also build the test-only modules {loader.TEST_MODULES}")
    ap.add_argument("--curve", default=",".join(loader.CURVES),
                    help=f"comma-separated curves to build for (default all: {','.join(loader.CURVES)})")
    args = ap.parse_args(argv)
    curves = [c for c in args.curve.split(",") if c]
    unknown = [c for c in curves if c not in loader.CURVES]
    if unknown or not curves:
        print(f"error: --curve {args.curve}: expected names from {sorted(loader.CURVES)}", file=sys.stderr)
        return 2
    variants = []
    for v in args.variant:
        name, _, defs = v.partition(":")
        if name not in modules(tests=True) or not defs:
            print(f"error: --variant {v}: expected MODULE:DEFINE[,DEFINE] with MODULE one of {modules(tests=True)}",
                  file=sys.stderr)
            return 2
        variants.append((name, tuple(defs.split(",")), curves[0]))
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("error: nvcc not on PATH (install the CUDA toolkit, or let NVRTC compile on the GPU)", file=sys.stderr)
        return 2
    out = args.out or loader.cubin_dir()  # file names do not depend on the directory
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    jobs = [(n, (), c) for c in curves for n in modules(args.tests)] + variants
    keep = frozenset(loader.cubin_path(n, args.arch, d, c).name for n, d, c in jobs)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        libs = [ex.submit(build_library, name, args.arch, out, nvcc) for name in loader.LIBRARIES]
        results = ex.map(lambda j: build_one(j[0], args.arch, out, nvcc, j[1], keep, j[2]), jobs)
        done = [(job_label(name, defs, curve), r, loader.cubin_path(name, args.arch, defs, curve).name)
                for (name, defs, curve), r in zip(jobs, results)]
        done += [(name, f.result(), loader.library_path(name, args.arch).name)
                 for name, f in zip(loader.LIBRARIES, libs)]
    for label, (_, secs, err), target in done:
        if err:
            failed += 1
            print(f"error: {label}: nvcc failed:\n{err}", file=sys.stderr)
        else:
            took = "cached" if secs == 0 else f"{secs:.1f} s"
            print(f"{label}: {took} -> {out / target}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
