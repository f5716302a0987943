"""jobs/bench_snarkjs.py (cuzk-ray vs snarkjs 0.7.6, issue 3).

The end-to-end test (marked slow) runs the script at k=8 with 1 round and a fresh artefact cache
(circom 2 circuit, BLS12-381 powers of tau of power 8, zkey, witness, then both provers, every
cuzk-ray proof checked with `snarkjs groth16 verify`). On the 2-core development VM: 24 s at k=8
(2026-12-01, cores idle; `prepare phase2` 9.4 s of it), where k=10 took 46-55 s idle and 150 s on
loaded cores (2026-11-29; `prepare phase2` at power 10 alone 90 s of it): the script's path is the
same at every k, so CI runs the smallest size that still has a real domain.

The other tests are fast: the circuit generator's constraint count and the output parser.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "jobs"))

import bench_snarkjs  # noqa: E402


def test_circuit_source_sizes_domain_exactly():
    for k in (10, 12, 14, 16):
        src = bench_snarkjs.circom_source(k)
        assert f"{(1 << k) - 3} constraints + 2 public = 2^{k} - 1" in src
        assert "component main {public [x]}" in src


def test_parse_cuzk_output():
    out = """key: /x/circuit.zkey (converted from the zkey, 1 witness file(s) checked, 0.4 s)
provers: 1 x cpu; pw=1; 1 proof(s) x 1 partition(s) of snarkjs-circuit.zkey-abc
  1/1 partitions verified
engine: local (auto: no cluster given and 1 partition(s) x 2^16 fits one process; engine=ray to use Ray)
start-up: 0.6 s (provers ready); prover start (slowest prover): key 0.0 s, matrices 0.0 s, warm_up 0.6 s
  1/1 partitions verified (0.29/s, in 3 s)
stage         median s  summed s  what
synthesis        0.000     0.000  the witness: a .wtns file read, or the built-in circuit synthesized
h                0.150     0.150  H: iNTT, coset NTT of a, b, c, then a.b - c (snarkjs's convention)
msm_b_g2         2.900     2.900  MSM in G2 over the B query (pi_b); CPU: its first half
verify           0.011     0.011  pairing check of the proof, before it is written
wall             3.500            1 partition(s) of 1 proof(s), 3.500 s/proof; the batch from first submission
total 5.2 s (start-up 0.6 s, proving 3.5 s); 1 partitions proved and verified in this run; manifest: /tmp/o/m.json
"""
    r = bench_snarkjs.parse_cuzk(out)
    assert r["key_s"] == 0.4 and r["key_note"].startswith("converted")
    assert r["stages"] == {"synthesis": 0.0, "h": 0.15, "msm_b_g2": 2.9, "verify": 0.011}
    assert r["batch_wall_s"] == 3.5 and r["in_run_s"] == 5.2


@pytest.mark.slow
def test_bench_snarkjs_k8_end_to_end(tmp_path):
    out_json = tmp_path / "res.json"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    res = subprocess.run([sys.executable, str(ROOT / "jobs" / "bench_snarkjs.py"), "--k", "8", "--rounds", "1",
                          "--no-ray", "--cache-dir", str(tmp_path / "cache"), "--json", str(out_json)],
                         capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    [r] = json.loads(out_json.read_text())
    assert r["artefacts"]["r1cs"]["constraints"] == 253 and r["artefacts"]["domain"] == 256
    assert all(x["snarkjs_verify"] == "OK" for x in r["runs"] if x["tool"].startswith("cuzk"))
    assert r["snarkjs_median_s"] > 0 and r["cuzk_median_s"] > 0
    assert {"h", "msm_b_g2", "verify"} <= set(r["cuzk_stage_medians"])
    assert "ratio snarkjs/cuzk-ray" in res.stdout


def test_ptau_power_reads_the_header(tmp_path):
    import struct

    n8, q = 48, (1 << 380) + 7  # any field element size and prime: only the layout matters here
    hdr = struct.pack("<I", n8) + q.to_bytes(n8, "little") + struct.pack("<II", 13, 0)
    other = b"\x00" * 5
    good = tmp_path / "x.ptau"
    good.write_bytes(b"ptau" + struct.pack("<II", 1, 2) + struct.pack("<IQ", 2, len(other)) + other
                     + struct.pack("<IQ", 1, len(hdr)) + hdr)
    assert bench_snarkjs.ptau_power(good) == 13
    bad = tmp_path / "y.ptau"
    bad.write_bytes(b"zkey" + b"\x00" * 20)
    with pytest.raises(ValueError, match="not a powers of tau file"):
        bench_snarkjs.ptau_power(bad)
