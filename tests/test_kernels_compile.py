"""Every .cu under cuzk_ray/kernels compiles with nvcc for sm_90 (CI has nvcc but no GPU), through
the precompiled-cubin builder the GPU runs use (cuzk_ray.kernels.build); the cubin key changes with
any kernel source; and the constants baked into ff/bls12_381.cuh agree with cuzk_ray.field, those
of ff/bn254.cuh with cuzk_ray.ref.bn254's moduli. The modules compile for BN254 too (all but msm.cu,
whose G1 instance takes ~2 min: msm_g2.cu compiles the same ec/msm_impl.cuh for BN254's Fp2)."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cuzk_ray import field
from cuzk_ray.kernels import build, loader
from cuzk_ray.ref import bn254

KERNELS = Path(__file__).resolve().parents[1] / "cuzk_ray" / "kernels"
LIBRARIES = [KERNELS / name for name in loader.LIBRARIES]  # host code: nvcc -shared, not a cubin
SOURCES = sorted(p for p in KERNELS.rglob("*.cu") if p not in LIBRARIES)
BN254_SOURCES = [p for p in SOURCES if p.name != "msm.cu"]


def test_there_are_kernels():
    assert {p.name for p in SOURCES} >= {"ff_test.cu", "ntt.cu", "msm.cu", "msm_g2.cu", "fixed_base.cu", "spmv.cu",
                                         "setup.cu", "witness.cu"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(out, nvcc, {source: (name, seconds, error)}): every module and host library built once
    into one folder, two nvcc at a time (CI has 2 cores; msm.cu alone takes ~2.5 min, all the
    others together ~1.5 min, so it goes first and the rest build beside it)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH")
    out = tmp_path_factory.mktemp("cubins")
    with ThreadPoolExecutor(max_workers=2) as ex:
        jobs = {p: ex.submit(build.build_one, p.name, "sm_90", out, nvcc)
                for p in sorted(SOURCES, key=lambda p: p.name != "msm.cu")}
        jobs |= {p: ex.submit(build.build_library, str(p.relative_to(KERNELS)), "sm_90", out, nvcc)
                 for p in LIBRARIES}
        jobs |= {(p, "bn254"): ex.submit(build.build_one, p.name, "sm_90", out, nvcc, (), frozenset(), "bn254")
                 for p in BN254_SOURCES}
        return out, nvcc, {p: f.result() for p, f in jobs.items()}


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: str(p.relative_to(KERNELS)))
def test_compiles_for_sm90(src, built):
    out, _nvcc, results = built
    _name, _secs, err = results[src]
    assert err == "", f"nvcc failed on {src.name}:\n{err}"
    target = out / loader.cubin_path(src.name, "sm_90").name
    assert sorted(out.glob(f"{src.stem}-sm_90-*.cubin")) == [target]
    assert target.read_bytes()[:4] == b"\x7fELF"  # a cubin is an ELF image
    assert list(out.glob(f"{src.stem}-*.tmp*")) == []


@pytest.mark.parametrize("src", BN254_SOURCES, ids=lambda p: str(p.relative_to(KERNELS)))
def test_compiles_for_bn254(src, built):
    """A cubin per (module, curve): the BN254 one beside BLS12-381's, with its own name and key."""
    out, _nvcc, results = built
    _name, _secs, err = results[(src, "bn254")]
    assert err == "", f"nvcc failed on {src.name} for bn254:\n{err}"
    target = out / loader.cubin_path(src.name, "sm_90", curve="bn254").name
    assert sorted(out.glob(f"{src.stem}-bn254-sm_90-*.cubin")) == [target]
    assert target.read_bytes()[:4] == b"\x7fELF"
    assert target.name != loader.cubin_path(src.name, "sm_90").name  # negative: not BLS12-381's cubin


def test_curve_is_part_of_the_key():
    """BLS12-381 keeps its cubin names; another curve has its own; an unknown curve is refused."""
    assert loader.cubin_path("ntt.cu", "sm_90").name.startswith("ntt-sm_90-")
    assert loader.cubin_path("ntt.cu", "sm_90", curve="bn254").name.startswith("ntt-bn254-sm_90-")
    assert loader.module_hash("ntt.cu", "sm_90", curve="bn254") != loader.module_hash("ntt.cu", "sm_90")
    assert loader.module_hash("ntt.cu", "sm_90", ("CUZK_CURVE_BN254=1",)) == \
        loader.module_hash("ntt.cu", "sm_90", curve="bn254")  # the curve is exactly its defines
    with pytest.raises(ValueError, match="unknown curve 'bn256'"):
        loader.cubin_path("ntt.cu", "sm_90", curve="bn256")
    assert build.main(["--curve", "bn256", "--out", "/nonexistent-cuzk"]) == 2


@pytest.mark.parametrize("src", LIBRARIES, ids=lambda p: str(p.relative_to(KERNELS)))
def test_library_builds_for_sm90(src, built):
    """The host libraries (CUB's radix sort) build with nvcc -shared and export their C entry
    points; a second build is a no-op (the name is keyed by the sources)."""
    out, nvcc, results = built
    name = str(src.relative_to(KERNELS))
    _, _secs, err = results[src]
    assert err == "", f"nvcc failed on {name}:\n{err}"
    lib = out / loader.library_path(name, "sm_90").name
    assert sorted(out.glob(f"lib{src.stem}-*.so")) == [lib]
    assert lib.read_bytes()[:4] == b"\x7fELF" and list(out.glob(f"*{src.stem}*.tmp*")) == []
    text = lib.read_bytes()
    assert all(sym.encode() in text for sym in ("cuzk_sort_temp_bytes", "cuzk_sort_keys", "cuzk_sort_error"))
    assert build.build_library(name, "sm_90", out, nvcc)[1:] == (0.0, "")  # cached


def test_cubin_key_follows_every_source(tmp_path, monkeypatch):
    shutil.copytree(KERNELS, tmp_path / "k", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(loader, "KERNEL_DIR", tmp_path / "k")
    before = loader.module_hash("ntt.cu", "sm_90")
    assert loader.module_hash("ntt.cu", "sm_90") == before  # deterministic
    assert loader.module_hash("ntt.cu", "sm_80") != before
    assert loader.module_hash("msm.cu", "sm_90") != before
    msm_before = loader.module_hash("msm.cu", "sm_90")
    own = tmp_path / "k" / "ntt.cu"
    own.write_text(own.read_text() + "\n// changed\n")
    assert loader.module_hash("ntt.cu", "sm_90") != before  # the module's own source changed
    assert loader.module_hash("msm.cu", "sm_90") == msm_before  # ... which is not in msm.cu's key
    before = loader.module_hash("ntt.cu", "sm_90")
    header = tmp_path / "k" / "ff" / "ptx.cuh"
    header.write_text(header.read_text() + "\n// changed\n")
    assert loader.module_hash("ntt.cu", "sm_90") != before  # an included header changed


def test_test_only_kernels_stay_out_of_the_production_build(tmp_path, monkeypatch):
    """ff_test.cu is built only with --tests, and editing it leaves every production cubin key as it was."""
    assert "ff_test.cu" in loader.TEST_MODULES
    assert "ff_test.cu" not in build.modules() and "ff_test.cu" in build.modules(tests=True)
    assert {"ntt.cu", "msm.cu", "msm_g2.cu", "fixed_base.cu", "spmv.cu", "setup.cu"} <= set(build.modules())
    shutil.copytree(KERNELS, tmp_path / "k", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(loader, "KERNEL_DIR", tmp_path / "k")
    keys = {m: loader.module_hash(m, "sm_90") for m in build.modules()}
    test_before = loader.module_hash("ff_test.cu", "sm_90")
    src = tmp_path / "k" / "ff_test.cu"
    src.write_text(src.read_text() + "\n// changed\n")
    assert {m: loader.module_hash(m, "sm_90") for m in build.modules()} == keys
    assert loader.module_hash("ff_test.cu", "sm_90") != test_before  # negative: its own key moves


def test_build_without_nvcc_is_one_line_error(monkeypatch, capsys):
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    assert build.main(["--out", "/nonexistent-cuzk"]) == 2
    assert "nvcc not on PATH" in capsys.readouterr().err


def _limbs(text: str, name: str) -> int:
    m = re.search(rf"{name}\[\d+\]\s*=\s*\{{([^}}]*)\}}", text)
    assert m, f"{name} not found in the curve header"
    words = [int(w.strip().rstrip("u"), 16) for w in m.group(1).split(",")]
    return sum(w << (32 * i) for i, w in enumerate(words))


@pytest.mark.parametrize("header, fr, fp, fp_bits", [("bls12_381.cuh", field.R_MOD, field.Q_MOD, 384),
                                                     ("bn254.cuh", bn254.R, bn254.P, 256)])
def test_field_constants_match_field_py(header, fr, fp, fp_bits):
    text = (KERNELS / "ff" / header).read_text()
    for tag, p, bits in (("FR", fr, 256), ("FP", fp, fp_bits)):
        R = 1 << bits
        assert _limbs(text, f"{tag}_MOD") == p
        assert _limbs(text, f"{tag}_ONE") == R % p
        assert _limbs(text, f"{tag}_R2") == R * R % p
        assert _limbs(text, f"{tag}_PM2") == p - 2
        inv = int(re.search(rf"struct {tag.lower()}_params.*?INV = (0x[0-9a-f]+)u", text, re.DOTALL).group(1), 16)
        assert inv == (-pow(p, -1, 2**32)) % 2**32
        top = int(re.search(rf"struct {tag.lower()}_params.*?TOP = (0x[0-9a-f]+)u", text, re.DOTALL).group(1), 16)
        assert top == p >> (bits - 32)  # mul_sub_wide decides from it whether 3p < R
    # negative: the parser would notice a wrong modulus
    top = f"0x{fr >> 224:08x}u"
    assert _limbs(text.replace(top, f"0x{(fr >> 224) + 1:08x}u"), "FR_MOD") != fr
