"""backend=cuda proves BN254 keys (issue 31). GPU machine only (skipped without CuPy and a GPU).

Fixtures: tests/fixtures/circom/{bn254, bn_many, bn_pow2, bn_k10} (snarkjs bn128 zkeys): domains
of 2^2, 2^5, 2^6 (61 constraints + 2 public: exactly a power of two with its public rows) and
2^10 (exactly, circom --O1). Checks, each with a tampered or otherwise-wrong twin:
  - the cuda proof equals the cpu backend's bit for bit for the same r, s, and our pairing
    verifier accepts it (a changed public input: rejected)
  - ``cuzk-ray groth16 prove ... backend=cuda`` (the local engine, the snarkjs JSON writers):
    our verifier and snarkjs 0.7.6 accept its proofs (that half skips, saying so, where node and
    the repository's node_modules/snarkjs are absent, as on the GPU machines)
  - the backend interface against the cpu backend's: H from the witness and from a, b, c on the
    BN254 domain, gather, every G1 MSM, the G2 MSM whole and from a start; raw limbs checked
    below BN254's r (BLS12-381's would let r through)
  - the H query's table of window multiples (made from 2^16 bases in production) on BN254
  - bellperson's H over BN254 refused in one line

Run: ``pytest -m gpu tests/test_bn254_cuda_backend.py`` (the BLS12-381 cuda tests are
tests/test_cuda_backend.py and friends, unchanged).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from functools import cache

import numpy as np
import pytest
from gpu import require_gpu

cp = require_gpu()

from conftest import ROOT, snarkjs_verify_many  # noqa: E402
from test_cli import cli  # noqa: E402

from cuzk_ray.backends.cpu import CpuBackend  # noqa: E402
from cuzk_ray.backends.cuda import CudaBackend  # noqa: E402
from cuzk_ray.cuda import msm as cuda_msm  # noqa: E402
from cuzk_ray.curve_groups import groups_for  # noqa: E402
from cuzk_ray.curves import BN254  # noqa: E402
from cuzk_ray.domain import Domain  # noqa: E402
from cuzk_ray.field import FrVector, fr_to_limbs, limbs_to_ints  # noqa: E402
from cuzk_ray.formats.snarkjs import read_wtns, read_zkey  # noqa: E402
from cuzk_ray.formats.snarkjs_json import read_proof, read_public, read_verification_key  # noqa: E402
from cuzk_ray.groth16.prover import prove  # noqa: E402
from cuzk_ray.groth16.verifier import verify  # noqa: E402
from cuzk_ray.ref import qap  # noqa: E402

pytestmark = pytest.mark.gpu
FIX = ROOT / "tests" / "fixtures" / "circom"
R = BN254.r
SEED = int(os.environ.get("CUZK_TEST_SEED", random.randrange(2**32)))
CIRCUITS = {"bn254": 4, "bn_many": 32, "bn_pow2": 64, "bn_k10": 1024}  # circuit -> H points (domain)
G = groups_for(BN254)


@cache
def fixture(circuit: str):
    """(pk, cs, [witnesses]) of a fixture circuit, read once."""
    pk, cs = read_zkey(FIX / circuit / f"{circuit}.zkey")
    paths = sorted((FIX / circuit).glob("witness_*.wtns"))
    return pk, cs, [read_wtns(p, pk.n_wires, BN254) for p in paths]


@pytest.fixture(scope="module")
def backends():
    return CpuBackend(), CudaBackend()


def public_of(pk, w) -> list[int]:
    return limbs_to_ints(np.asarray(w.limbs)[1 : pk.n_public + 1]).tolist()


def same(p, q) -> bool:
    return all(np.array_equal(getattr(p, k), getattr(q, k)) for k in "abc")


def host(x) -> np.ndarray:
    """Limbs on the host from an FrVector or an array on either side."""
    x = x.limbs if isinstance(x, FrVector) else x
    return cp.asnumpy(x) if isinstance(x, cp.ndarray) else np.asarray(x)


@pytest.mark.parametrize("circuit", CIRCUITS)
def test_cuda_proof_equals_cpu_proof_and_verifies(backends, circuit):
    cpu, gpu = backends
    pk, cs, ws = fixture(circuit)
    assert pk.curve is BN254 and pk.domain_size == CIRCUITS[circuit] and ws
    rng = random.Random(SEED)
    for w in ws:
        r, s = rng.randrange(R), rng.randrange(R)
        p_gpu = prove(pk, cs, w, r, s, gpu)
        p_cpu = prove(pk, cs, w, r, s, cpu)
        assert same(p_gpu, p_cpu), f"{circuit}: the cuda proof is not the cpu backend's, seed {SEED}"
        public = public_of(pk, w)
        assert verify(pk.vk, public, p_gpu)
        assert not verify(pk.vk, [(public[0] + 1) % R] + public[1:], p_gpu)
    # twin: other blinding gives another proof (the equality above compares something)
    assert not same(prove(pk, cs, ws[-1], r + 1, s, gpu), p_cpu)
    assert gpu.gpu_seconds > 0


def _snarkjs_missing() -> str | None:
    """Why snarkjs cannot verify here (None: it can). tests/snarkjs_verify_many.cjs needs node and
    the repository's node_modules/snarkjs (``npm install``); the GPU machines have neither."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "snarkjs").is_dir():
        return f"{ROOT / 'node_modules' / 'snarkjs'} is missing (npm install in the repository)"
    return None


def test_cli_backend_cuda_proves_bn254_ours_and_snarkjs_accept(tmp_path):
    """``cuzk-ray groth16 prove <zkey> <wtns>... backend=cuda``: the local engine and the snarkjs
    JSON writers on the cuda backend, for a domain of 2^5 and one of exactly 2^10."""
    triples, twins = [], []
    for circuit in ("bn_many", "bn_k10"):
        out = tmp_path / circuit
        given = sorted((FIX / circuit).glob("witness_*.wtns"))
        res = cli("groth16", "prove", FIX / circuit / f"{circuit}.zkey", *given, "-o", out,
                  f"cache_dir={tmp_path / 'cache'}", "backend=cuda")
        assert res.returncode == 0, res.stdout + res.stderr
        m = json.loads((out / "manifest.json").read_text())
        assert len(m["proofs"]) == len(given)
        vk_path = out / "verification_key.json"
        assert json.loads(vk_path.read_text()) == json.loads((FIX / circuit / "verification_key.json").read_text())
        vk = read_verification_key(vk_path)
        for e in m["proofs"]:
            public, proof = read_public(out / e["public"]), read_proof(out / e["proof"])
            assert json.loads((out / e["proof"]).read_text())["curve"] == "bn128"
            assert verify(vk, public, proof), f"{circuit} {e['witness']}"
            assert not verify(vk, [(public[0] + 1) % R] + public[1:], proof)
            triples.append((vk_path, out / e["public"], out / e["proof"]))
            bad = tmp_path / f"{circuit}-{len(twins)}-public.json"  # twin: a public input changed
            bad.write_text(json.dumps([str((public[0] + 1) % R)] + [str(v) for v in public[1:]]))
            twins.append((vk_path, bad, out / e["proof"]))
    missing = _snarkjs_missing()
    if missing:
        pytest.skip(f"snarkjs half skipped: {missing}; our verifier accepted the {len(triples)} proofs above")
    assert snarkjs_verify_many(None, triples + twins) == [True] * len(triples) + [False] * len(twins)


@pytest.mark.parametrize("circuit", ["bn_pow2", "bn_k10"])
def test_h_gather_and_every_msm_equal_the_cpu_backend(backends, circuit):
    cpu, gpu = backends
    pk, cs, ws = fixture(circuit)
    w = ws[0]
    rng = random.Random(SEED)

    # H: from the witness (spmv.cu + ntt.cu for BN254, in VRAM), and from a, b, c on the domain
    staged = gpu.stage(w, modulus=R)
    h_gpu = gpu.compute_h_from_witness(cs, staged)
    assert isinstance(h_gpu, FrVector) and h_gpu.on_device
    want = np.asarray(cpu.compute_h_from_witness(cs, w).limbs)
    assert np.array_equal(host(h_gpu), want), f"{circuit}: H from the witness, seed {SEED}"
    abc = qap.evaluations(cs, limbs_to_ints(np.asarray(w.limbs)))  # int vectors (what the cpu reference takes)
    a, b, c = (fr_to_limbs(v) for v in abc)
    d = Domain.of(len(a), "snarkjs", BN254.name)
    assert np.array_equal(gpu.compute_h(a, b, c, domain=d), want)
    assert np.array_equal(cpu.compute_h(*abc, d), want)
    assert not np.array_equal(gpu.compute_h(a, b, c), want)  # twin: BLS12-381's domain (the default)

    # gather and the MSMs, with scalars mixing 0, 1, r - 1 and uniform values (raw numpy limbs:
    # checked on the device below BN254's r)
    kg, kc = gpu.load_key(pk), cpu.load_key(pk)
    assert (kg.g1, kg.g2) == (cuda_msm.BN254_G1, cuda_msm.BN254_G2)
    for wires in ("a_wires", "b_wires"):
        assert np.array_equal(host(gpu.gather(kg, wires, staged)), host(cpu.gather(kc, wires, w))), wires

    def scalars(n: int) -> np.ndarray:
        vals = [rng.choice((0, 1, R - 1)) if rng.random() < 0.3 else rng.randrange(R) for _ in range(n)]
        return fr_to_limbs(vals)

    for q in ("a_query", "b_g1_query", "l_query", "h_query"):
        pts = getattr(pk, q)
        s = scalars(len(pts))
        got = G.g1_array([gpu.msm_g1(kg, q, s)])
        assert np.array_equal(got, G.g1_array([cpu.msm_g1(kc, q, s)])), f"{circuit} {q}, seed {SEED}"
        finite = np.flatnonzero(pts.reshape(len(pts), -1).any(axis=1))
        if len(finite):  # twin: one more times a finite base changes the sum
            i = int(finite[0])
            s[i] = fr_to_limbs([(limbs_to_ints(s[i : i + 1])[0] + 1) % R])[0]
            assert not np.array_equal(G.g1_array([gpu.msm_g1(kg, q, s)]), got), f"{circuit} {q}"
    s = scalars(len(pk.b_g2_query))
    assert np.array_equal(G.g2_array([gpu.msm_g2(kg, "b_g2_query", s)]),
                          G.g2_array([cpu.msm_g2(kc, "b_g2_query", s)])), f"{circuit} b_g2_query, seed {SEED}"
    half = len(s) // 2
    assert np.array_equal(G.g2_array([gpu.msm_g2(kg, "b_g2_query", s[half:], half)]),
                          G.g2_array([cpu.msm_g2(kc, "b_g2_query", s[half:], half)]))

    # raw limbs are range-checked below BN254's r: r itself (< BLS12-381's r) is refused
    bad = s.copy()
    bad[-1] = fr_to_limbs([R])[0]
    with pytest.raises(ValueError, match="not a reduced Fr value"):
        gpu.msm_g2(kg, "b_g2_query", bad)
    raw = np.array(np.asarray(w.limbs))
    assert np.array_equal(host(gpu.stage(raw, modulus=R)), raw)
    raw[-1] = fr_to_limbs([R])[0]
    with pytest.raises(ValueError, match="witness: element .* is not a reduced Fr value"):
        gpu.stage(raw, modulus=R)
    # a raw witness proves as its FrVector does
    assert same(prove(pk, cs, np.array(np.asarray(w.limbs)), 7, 11, gpu), prove(pk, cs, w, 7, 11, cpu))


def test_h_query_table_of_window_multiples_on_bn254(backends, monkeypatch):
    """GpuKey's table of window multiples for the H query (built from TABLE_MIN_SCALARS = 2^16
    bases in production; lowered here so the 2^10 key gets one): msm_double_c and
    msm_batch_affine for BN254, and an MSM over the merged windows, give the cpu backend's proof."""
    cpu, _ = backends
    pk, cs, ws = fixture("bn_k10")
    monkeypatch.setattr(cuda_msm, "TABLE_MIN_SCALARS", 0)
    gpu = CudaBackend()
    key = gpu.load_key(pk)
    bases = key.device["h_query"]
    assert key.h_table and bases.table is not None and bases.group is cuda_msm.BN254_G1
    assert bases.table.shape == (cuda_msm.windows_for(bases.table_window) * len(pk.h_query), 2, 4)
    s = fr_to_limbs([random.Random(SEED).randrange(R) for _ in range(len(pk.h_query))])
    assert np.array_equal(G.g1_array([gpu.msm_g1(key, "h_query", s)]),
                          G.g1_array([cpu.msm_g1(cpu.load_key(pk), "h_query", s)])), f"seed {SEED}"
    assert same(prove(pk, cs, ws[0], 5, 9, gpu), prove(pk, cs, ws[0], 5, 9, cpu))
    assert not same(prove(pk, cs, ws[0], 5, 10, gpu), prove(pk, cs, ws[0], 5, 9, cpu))  # twin: other s
    gpu.unload(pk, cs)


def test_bellperson_h_over_bn254_is_refused_in_one_line(backends):
    _, gpu = backends
    pk, cs, ws = fixture("bn254")
    for call in (lambda: gpu.compute_h_from_witness(cs, ws[0], qap="bellperson"),
                 lambda: gpu.compute_h(*(np.zeros((4, 4), np.uint64),) * 3, qap="bellperson",
                                       domain=Domain.of(4, "native", BN254.name))):
        with pytest.raises(ValueError) as info:
            call()
        msg = str(info.value)
        assert "\n" not in msg and "bn254" in msg and "BLS12-381" in msg
