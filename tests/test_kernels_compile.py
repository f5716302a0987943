"""Every .cu under cuzk_ray/kernels compiles with nvcc for sm_90 (CI has nvcc but no GPU),
and the constants baked into ff/bls12_381.cuh agree with cuzk_ray.field."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cuzk_ray import field

KERNELS = Path(__file__).resolve().parents[1] / "cuzk_ray" / "kernels"
SOURCES = sorted(KERNELS.rglob("*.cu"))


def test_there_are_kernels():
    assert {p.name for p in SOURCES} >= {"ff_test.cu", "ntt.cu", "msm.cu", "msm_g2.cu", "fixed_base.cu"}


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: str(p.relative_to(KERNELS)))
def test_compiles_for_sm90(src, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc not on PATH")
    cmd = [nvcc, "-std=c++17", "-arch=sm_90", f"-I{KERNELS}", "-c", str(src), "-o", str(tmp_path / "k.o")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stdout}\n{res.stderr}"


def _limbs(text: str, name: str) -> int:
    m = re.search(rf"{name}\[\d+\]\s*=\s*\{{([^}}]*)\}}", text)
    assert m, f"{name} not found in bls12_381.cuh"
    words = [int(w.strip().rstrip("u"), 16) for w in m.group(1).split(",")]
    return sum(w << (32 * i) for i, w in enumerate(words))


def test_field_constants_match_field_py():
    text = (KERNELS / "ff" / "bls12_381.cuh").read_text()
    for tag, p, bits in (("FR", field.R_MOD, 256), ("FP", field.Q_MOD, 384)):
        R = 1 << bits
        assert _limbs(text, f"{tag}_MOD") == p
        assert _limbs(text, f"{tag}_ONE") == R % p
        assert _limbs(text, f"{tag}_R2") == R * R % p
        assert _limbs(text, f"{tag}_PM2") == p - 2
        inv = int(re.search(rf"struct {tag.lower()}_params.*?INV = (0x[0-9a-f]+)u", text, re.S).group(1), 16)
        assert inv == (-pow(p, -1, 2**32)) % 2**32
    # negative: the parser would notice a wrong modulus
    assert _limbs(text.replace("0x73eda753u", "0x73eda754u"), "FR_MOD") != field.R_MOD
