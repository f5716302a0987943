"""cuzk-ray vs snarkjs 0.7.6 on the same circom circuit and witness, whole process each (issue 3).

    python jobs/bench_snarkjs.py [--k 10,12,14,16] [--rounds 3] [--cache-dir DIR] [--no-ray]
                                 [--curve bls12381|bn128] [--proofs 10]

For each size 2^k (default k=16) the artefacts are made once and cached under
``<cache-dir>/k<k>/`` (default ``~/.cache/cuzk-ray/bench-snarkjs``; ``<cache-dir>/bn128-k<k>/``
for ``--curve bn128``, BN254: everything below with that prime and a bn128 powers of tau):

- ``circuit.circom``: a circom 2 circuit with 1 public input (``x``), 1 private input (``y``),
  1 output, i.e. 2 public signals, and exactly ``2^k - 3`` constraints: a chain of
  multiplications whose factors mix earlier signals, constants and the inputs
  (``m[i] <== m[i-1] * (m[i-2] + c)``), with 16 linear constraints with negative and positive
  coefficients interleaved. snarkjs sizes the domain as 2^(floor(log2(constraints + public)) + 1)
  (src/zkey_new.js, ``cirPower``), so constraints + public = 2^k - 1 gives a domain of exactly 2^k
  (one more constraint would double it). Compiled with circom2@0.2.23 ``--O1 --prime bls12381``;
  the constraint count is read back from the .r1cs header and checked.
- a BLS12-381 powers of tau (``snarkjs powersoftau new bls12381 <p>``, one contribution,
  ``prepare phase2``) shared by all sizes under ``<cache-dir>/ptau/``: the smallest cached one
  with power >= k is used, else one of power k is made (``--ptau FILE`` uses a given one instead);
- ``circuit.zkey`` (``groth16 setup`` + one ``zkey contribute``), ``verification_key.json``,
  ``witness.wtns`` (``snarkjs wtns calculate``), and one snarkjs proof checked with
  ``groth16 verify``.

Then, alternating the order every round (A/B then B/A), it times the wall clock of whole
commands (``subprocess`` start to exit):

- snarkjs: ``node_modules/.bin/snarkjs groth16 prove circuit.zkey witness.wtns proof.json public.json``
- cuzk-ray: ``python jobs/prove.py circuit=snarkjs circuit.zkey=... circuit.witness=[...]
  output_dir=... engine=local cache_dir=<cache-dir>/k<k>/cuzk-cache`` (Python start-up, imports,
  Hydra, key load from the converted-key cache, numba kernel load, proving, verification,
  writing outputs: everything).

With ``--proofs N`` (N > 1) each round also times N proofs: snarkjs as N commands one after
another (N witnesses ``witness_<i>.wtns`` from ``input_<i>.json``, x = i + 1), cuzk-ray as one
``jobs/prove.py`` process given the N witnesses (sum of walls against one wall).

Every cuzk-ray proof is checked with ``snarkjs groth16 verify`` (not timed). Not in the timed
rounds, and reported on their own rows: the first cuzk-ray run of a size, which converts the zkey
(converted-key cache emptied first: a cache miss); with ``--cold-numba`` a run with an empty numba
cache (``NUMBA_CACHE_DIR`` pointed at a fresh folder: the kernels compile), and one ``engine=ray``
run (embedded Ray start-up included; unless ``--no-ray``). Load averages (``os.getloadavg``) are
recorded before and after every command, and each command's CPU seconds (user + sys of it and the
children it waited for; for engine=ray this misses the Ray workers). Results go to stdout and, as
JSON, to ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNARKJS_VERSION = "0.7.6"
CIRCOM2_VERSION = "0.2.23"
N_PUBLIC = 2  # 1 public input + 1 output
N_LINEAR = 16


def log(msg: str) -> None:
    print(msg, flush=True)


def tools() -> tuple[str, str]:
    """Paths of snarkjs and circom2 in the repository's node_modules (installed if missing)."""
    nm = ROOT / "node_modules"

    def version(pkg):
        try:
            return json.loads((nm / pkg / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None

    given = os.environ.get("CIRCOM")  # a circom2 installed elsewhere (as tests/fixtures/make_fixtures.sh)
    if version("snarkjs") != SNARKJS_VERSION or (not given and version("circom2") != CIRCOM2_VERSION):
        subprocess.run(["npm", "install", "--no-save", f"snarkjs@{SNARKJS_VERSION}", f"circom2@{CIRCOM2_VERSION}"],
                       cwd=ROOT, check=True)
    return str(nm / ".bin" / "snarkjs"), given or str(nm / ".bin" / "circom2")


LAST_CPU_S = 0.0  # user + sys seconds of the last command run by sh() (it and its children)


def sh(cmd: list[str], cwd=None, env=None) -> tuple[float, str]:
    """Run a command; return (wall seconds, stdout+stderr). Raises with the output on failure."""
    global LAST_CPU_S
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU_S = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if p.returncode != 0:
        raise RuntimeError(f"command failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout[-4000:]}")
    return dt, p.stdout


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ------------------------------------------------------------------------------------------------
# artefacts

def circom_source(k: int) -> str:
    n_constraints = (1 << k) - N_PUBLIC - 1
    n_mul = n_constraints - N_LINEAR - 1  # -1: the output constraint
    assert n_mul > 2 * N_LINEAR
    step = n_mul // N_LINEAR
    return f"""pragma circom 2.0.0;

// cuzk-ray benchmark circuit (jobs/bench_snarkjs.py): {n_constraints} constraints + {N_PUBLIC} public = 2^{k} - 1.
template Bench(M, L, S) {{
    signal input x;
    signal input y;
    signal output out;
    signal m[M];
    signal l[L];
    m[0] <== x * y;
    m[1] <== m[0] * (y + 7);
    for (var i = 2; i < M; i++) {{
        if (i % 3 == 0) {{
            m[i] <== m[i-1] * (m[i-2] + i);
        }} else if (i % 3 == 1) {{
            m[i] <== (m[i-1] - x) * m[i-2];
        }} else {{
            m[i] <== m[i-1] * m[i-1] + y;
        }}
    }}
    for (var j = 0; j < L; j++) {{
        // linear: one signal = a combination with negative and positive coefficients
        l[j] <== 3 * m[j * S + 1] - 5 * m[j * S + 2] + 7 * x - j;
    }}
    var acc = 0;
    for (var j = 0; j < L; j++) {{
        acc += (j + 1) * l[j];
    }}
    out <== (acc + m[M-1]) * y;
}}

component main {{public [x]}} = Bench({n_mul}, {N_LINEAR}, {step});
"""


def r1cs_header(path: Path) -> dict:
    """nConstraints, nPubOut, nPubIn, nPrvIn of a .r1cs file (header section, type 1)."""
    data = path.read_bytes()
    if data[:4] != b"r1cs":
        raise ValueError(f"{path}: not an r1cs file")
    n_sections = struct.unpack_from("<I", data, 8)[0]
    off = 12
    for _ in range(n_sections):
        stype, ssize = struct.unpack_from("<IQ", data, off)
        off += 12
        if stype == 1:
            fsize = struct.unpack_from("<I", data, off)[0]
            o = off + 4 + fsize
            n_wires, n_pub_out, n_pub_in, n_prv_in = struct.unpack_from("<IIII", data, o)
            n_labels, n_constraints = struct.unpack_from("<QI", data, o + 16)
            return {"wires": n_wires, "pub_out": n_pub_out, "pub_in": n_pub_in, "prv_in": n_prv_in,
                    "constraints": n_constraints}
        off += ssize
    raise ValueError(f"{path}: no header section")


def ptau_power(path: Path) -> int:
    """The power of a .ptau file (header section, type 1: n8, q, power, ceremony power)."""
    with open(path, "rb") as f:
        head = f.read(12)
        if head[:4] != b"ptau":
            raise ValueError(f"{path}: not a powers of tau file")
        for _ in range(struct.unpack_from("<I", head, 8)[0]):
            stype, ssize = struct.unpack("<IQ", f.read(12))
            if stype == 1:
                n8 = struct.unpack("<I", f.read(4))[0]
                f.seek(n8, 1)
                return struct.unpack("<I", f.read(4))[0]
            f.seek(ssize, 1)
    raise ValueError(f"{path}: no header section")


def ensure_ptau(cache: Path, k: int, snarkjs: str, given: Path | None = None,
                curve: str = "bls12381") -> tuple[Path, dict]:
    if given is not None:
        power = ptau_power(given)
        if power < k:
            raise ValueError(f"{given}: power {power} < {k}")
        return given, {"ptau": str(given), "ptau_power": power, "ptau_made": False}
    pdir = cache / "ptau"
    pdir.mkdir(parents=True, exist_ok=True)
    have = sorted((int(m.group(1)), p) for p in pdir.glob(f"{curve}_*.ptau")
                  if (m := re.fullmatch(rf"{curve}_(\d+)\.ptau", p.name)))
    for power, p in have:
        if power >= k:
            return p, {"ptau": str(p), "ptau_power": power, "ptau_made": False}
    times = {}
    with tempfile.TemporaryDirectory(dir=pdir) as tmp:
        t = Path(tmp)
        log(f"  ptau 2^{k}: powersoftau new / contribute / prepare phase2 (slow at large k)")
        times["ptau_new_s"], _ = sh([snarkjs, "powersoftau", "new", curve, str(k), str(t / "0.ptau")])
        times["ptau_contribute_s"], _ = sh([snarkjs, "powersoftau", "contribute", str(t / "0.ptau"), str(t / "1.ptau"),
                                            "--name=cuzk-ray bench", f"-e=cuzk-ray bench entropy {k}"])
        times["ptau_prepare_s"], _ = sh([snarkjs, "powersoftau", "prepare", "phase2", str(t / "1.ptau"),
                                         str(t / "final.ptau")])
        dest = pdir / f"{curve}_{k}.ptau"
        os.replace(t / "final.ptau", dest)
    return dest, {"ptau": str(dest), "ptau_power": k, "ptau_made": True, **{k_: round(v, 2) for k_, v in times.items()}}


def artefact_dir(cache: Path, k: int, curve: str) -> Path:
    return cache / (f"k{k}" if curve == "bls12381" else f"{curve}-k{k}")


def ensure_witnesses(d: Path, proofs: int, snarkjs: str) -> None:
    """witness_<i>.wtns for 2 <= i <= proofs (input_<i>.json: x = i + 1), made once."""
    for i in range(2, proofs + 1):
        if not (d / f"witness_{i}.wtns").exists():
            inputs = {"x": str(i + 1), "y": str(123456789012345678901234567889 + i)}
            (d / f"input_{i}.json").write_text(json.dumps(inputs) + "\n")
            sh([snarkjs, "wtns", "calculate", "circuit_js/circuit.wasm", f"input_{i}.json", f"witness_{i}.wtns"], cwd=d)


def witness_paths(d: Path, proofs: int) -> list[Path]:
    return [d / "witness.wtns"] + [d / f"witness_{i}.wtns" for i in range(2, proofs + 1)]


def ensure_artefacts(cache: Path, k: int, snarkjs: str, circom: str, ptau: Path | None = None,
                     curve: str = "bls12381") -> dict:
    d = artefact_dir(cache, k, curve)
    meta_path = d / "artefacts.json"
    if meta_path.exists():
        return json.loads(meta_path.read_text())
    log(f"2^{k}: making artefacts under {d}")
    d.mkdir(parents=True, exist_ok=True)
    times = {}
    (d / "circuit.circom").write_text(circom_source(k))
    times["circom_s"], _ = sh([circom, "circuit.circom", "--r1cs", "--wasm", "--O1", "--prime", curve, "-o", "."],
                              cwd=d)
    hdr = r1cs_header(d / "circuit.r1cs")
    public = hdr["pub_out"] + hdr["pub_in"]
    if hdr["constraints"] + public != (1 << k) - 1:
        raise RuntimeError(f"2^{k}: circom gave {hdr['constraints']} constraints + {public} public, "
                           f"want {(1 << k) - 1} in all")
    ptau, pinfo = ensure_ptau(cache, k, snarkjs, ptau, curve)
    times["setup_s"], _ = sh([snarkjs, "groth16", "setup", "circuit.r1cs", str(ptau), "circuit_0.zkey"], cwd=d)
    times["zkey_contribute_s"], _ = sh([snarkjs, "zkey", "contribute", "circuit_0.zkey", "circuit.zkey",
                                        "--name=cuzk-ray bench", f"-e=cuzk-ray bench zkey {k}"], cwd=d)
    (d / "circuit_0.zkey").unlink()
    sh([snarkjs, "zkey", "export", "verificationkey", "circuit.zkey", "verification_key.json"], cwd=d)
    (d / "input.json").write_text(json.dumps({"x": "3", "y": "123456789012345678901234567890"}) + "\n")
    times["wtns_s"], _ = sh([snarkjs, "wtns", "calculate", "circuit_js/circuit.wasm", "input.json", "witness.wtns"],
                            cwd=d)
    sh([snarkjs, "groth16", "prove", "circuit.zkey", "witness.wtns", "proof_snarkjs.json", "public_snarkjs.json"],
       cwd=d)
    sh([snarkjs, "groth16", "verify", "verification_key.json", "public_snarkjs.json", "proof_snarkjs.json"], cwd=d)
    meta = {"k": k, "curve": curve, "dir": str(d), "r1cs": hdr, "public": public, "domain": 1 << k, **pinfo,
            **{k_: round(v, 2) for k_, v in times.items()}}
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


# ------------------------------------------------------------------------------------------------
# runs

STAGE_RE = re.compile(r"^(\w+)\s+([0-9.]+)\s+([0-9.]+)(?:\s{2}.*)?$")  # stage, median, summed, what it is


def parse_cuzk(out: str) -> dict:
    """Key load, per-stage and in-process totals from jobs/prove.py's output."""
    res: dict = {"stages": {}}
    m = re.search(r"^key: .*? \((.*), ([0-9.]+) s\)\s*$", out, re.M)
    if m:
        res["key_note"], res["key_s"] = m.group(1), float(m.group(2))
    for line in out.splitlines():
        s = STAGE_RE.match(line)
        if s and s.group(1) not in ("stage", "wall"):
            res["stages"][s.group(1)] = float(s.group(3))  # total s (one partition: = median)
        w = re.match(r"^wall\s+([0-9.]+)", line)
        if w:
            res["batch_wall_s"] = float(w.group(1))
    m = re.search(r"^total ([0-9.]+) s[ ;]", out, re.M)
    if m:
        res["in_run_s"] = float(m.group(1))
    return res


GROTH16PY_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
import groth16py as g
zkey, public, wtns = sys.argv[1], sys.argv[2], sys.argv[3:]
pk, vk = g.import_zkey(zkey)
t1 = time.perf_counter()
proofs = [g.prove_wtns(pk, w) for w in wtns]
t2 = time.perf_counter()
ok = g.Verifier(vk).verify(proofs[0], [int(x) for x in json.load(open(public))])
print(f"import {t1 - t0:.2f} s, {len(wtns)} proof(s) {t2 - t1:.2f} s, verified {ok}")
"""


class Bench:
    def __init__(self, cache: Path, k: int, meta: dict, snarkjs: str, work: Path):
        self.cache, self.k, self.meta, self.snarkjs = cache, k, meta, snarkjs
        self.d = Path(meta["dir"])
        self.work = work
        self.key_cache = self.d / "cuzk-cache"
        self.n = 0

    def snarkjs_prove(self, witnesses: list[Path] | None = None) -> dict:
        """One ``snarkjs groth16 prove`` command per witness, one after another (default: witness.wtns)."""
        la0 = loadavg()
        dt = cpu = 0.0
        for w in witnesses or [self.d / "witness.wtns"]:
            self.n += 1
            proof, public = self.work / f"sj_proof_{self.n}.json", self.work / f"sj_public_{self.n}.json"
            t, _ = sh([self.snarkjs, "groth16", "prove", str(self.d / "circuit.zkey"), str(w), str(proof), str(public)])
            dt, cpu = dt + t, cpu + LAST_CPU_S
        return {"tool": "snarkjs", "wall_s": round(dt, 3), "cpu_s": round(cpu, 3), "load_before": la0,
                "load_after": loadavg()}

    def groth16py_prove(self, python: str, witnesses: list[Path] | None = None) -> dict:
        """groth16py (arkworks, PyPI) in one process: import_zkey, then prove_wtns per witness; the
        first proof checked with its Verifier against snarkjs's public signals of witness.wtns."""
        witnesses = witnesses or [self.d / "witness.wtns"]
        la0 = loadavg()
        dt, out = sh([python, "-c", GROTH16PY_SCRIPT, str(self.d / "circuit.zkey"),
                      str(self.d / "public_snarkjs.json"), *map(str, witnesses)])
        if "verified True" not in out:
            raise RuntimeError(f"groth16py's proof did not verify:\n{out}")
        return {"tool": "groth16py", "wall_s": round(dt, 3), "cpu_s": round(LAST_CPU_S, 3), "load_before": la0,
                "load_after": loadavg(), "out": out.strip()}

    def cuzk_prove(self, engine: str = "local", env_extra: dict | None = None,
                   witnesses: list[Path] | None = None) -> dict:
        """One ``jobs/prove.py`` process for the witnesses (default: witness.wtns); every proof then
        checked with ``snarkjs groth16 verify``."""
        self.n += 1
        out_dir = self.work / f"cuzk_{self.n}"
        witnesses = witnesses or [self.d / "witness.wtns"]
        cmd = [sys.executable, str(ROOT / "jobs" / "prove.py"), "circuit=snarkjs",
               f"circuit.zkey={self.d / 'circuit.zkey'}", f"circuit.witness=[{','.join(map(str, witnesses))}]",
               f"output_dir={out_dir}", f"engine={engine}", f"cache_dir={self.key_cache}"]
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.update(env_extra or {})
        la0 = loadavg()
        dt, out = sh(cmd, env=env)
        cpu = LAST_CPU_S
        la1 = loadavg()
        for w in witnesses:
            part = out_dir / "proofs" / w.stem / "partition-0"  # proofs are named after their witness file
            _, vout = sh([self.snarkjs, "groth16", "verify", str(out_dir / "verification_key.json"),
                          str(part / "public.json"), str(part / "proof.json")])
            if "OK" not in vout:
                raise RuntimeError(f"snarkjs groth16 verify rejected {part}:\n{vout}")
        shutil.rmtree(out_dir, ignore_errors=True)
        return {"tool": f"cuzk-ray/{engine}", "wall_s": round(dt, 3), "cpu_s": round(cpu, 3), "load_before": la0,
                "load_after": la1, "snarkjs_verify": "OK", **parse_cuzk(out)}


def bench_size(cache: Path, k: int, rounds: int, snarkjs: str, circom: str, ray: bool, cold_numba: bool,
               ptau: Path | None = None, curve: str = "bls12381", proofs: int = 1,
               keep_key_cache: bool = False, groth16py: str | None = None) -> dict:
    meta = ensure_artefacts(cache, k, snarkjs, circom, ptau, curve)
    ensure_witnesses(Path(meta["dir"]), proofs, snarkjs)
    with tempfile.TemporaryDirectory(prefix=f"bench-snarkjs-k{k}-") as tmp:
        b = Bench(cache, k, meta, snarkjs, Path(tmp))
        extra = {}
        # first run: converted-key cache emptied (zkey parse + conversion), not in the rounds
        if not keep_key_cache:
            shutil.rmtree(b.key_cache, ignore_errors=True)
        extra["first_key_miss"] = b.cuzk_prove()
        log(f"  2^{k} cuzk-ray first run (zkey converted): {extra['first_key_miss']['wall_s']:.2f} s "
            f"(key {extra['first_key_miss'].get('key_s')} s)")
        if cold_numba:
            with tempfile.TemporaryDirectory(prefix="numba-cold-") as nd:
                extra["cold_numba"] = b.cuzk_prove(env_extra={"NUMBA_CACHE_DIR": nd})
            log(f"  2^{k} cuzk-ray with an empty numba cache: {extra['cold_numba']['wall_s']:.2f} s")
        runs, batch = [], []
        many = witness_paths(b.d, proofs)
        for r in range(rounds):
            order = (b.snarkjs_prove, b.cuzk_prove) if r % 2 == 0 else (b.cuzk_prove, b.snarkjs_prove)
            for f in order:
                res = f()
                res["round"] = r
                runs.append(res)
                log(f"  2^{k} round {r} {res['tool']:15s} {res['wall_s']:7.2f} s  (CPU {res['cpu_s']:6.2f} s)  "
                    f"load {res['load_before']} -> {res['load_after']}")
            if groth16py:
                for many_or_one in ([None] + ([many] if proofs > 1 else [])):
                    res = b.groth16py_prove(groth16py, many_or_one)
                    res.update(round=r, proofs=len(many_or_one or [1]))
                    (batch if many_or_one else runs).append(res)
                    log(f"  2^{k} round {r} {res['proofs']} proof(s) groth16py {res['wall_s']:7.2f} s  "
                        f"(CPU {res['cpu_s']:6.2f} s)  load {res['load_before']} -> {res['load_after']}  {res['out']}")
            if proofs > 1:  # N proofs: N snarkjs commands against one cuzk-ray process, same alternation
                for f in order:
                    res = f(witnesses=many)
                    res.update(round=r, proofs=proofs)
                    batch.append(res)
                    log(f"  2^{k} round {r} {proofs} proofs {res['tool']:15s} {res['wall_s']:7.2f} s  "
                        f"(CPU {res['cpu_s']:6.2f} s)  load {res['load_before']} -> {res['load_after']}")
        if ray:
            extra["ray"] = b.cuzk_prove(engine="ray")
            log(f"  2^{k} cuzk-ray engine=ray: {extra['ray']['wall_s']:.2f} s")
    sj = [r["wall_s"] for r in runs if r["tool"] == "snarkjs"]
    cz = [r["wall_s"] for r in runs if r["tool"] == "cuzk-ray/local"]
    cz_runs = [r for r in runs if r["tool"] == "cuzk-ray/local"]
    stages = {s: statistics.median(r["stages"].get(s, 0.0) for r in cz_runs) for s in cz_runs[0]["stages"]}
    if batch:
        extra["batch"] = {"proofs": proofs, "runs": batch,
                          "snarkjs_median_s": statistics.median(r["wall_s"] for r in batch if r["tool"] == "snarkjs"),
                          "cuzk_median_s": statistics.median(r["wall_s"] for r in batch
                                                             if r["tool"].startswith("cuzk"))}
        extra["batch"]["ratio"] = extra["batch"]["snarkjs_median_s"] / extra["batch"]["cuzk_median_s"]
        g16 = [r["wall_s"] for r in batch if r["tool"] == "groth16py"]
        if g16:
            extra["batch"]["groth16py_median_s"] = statistics.median(g16)
    g16 = [r["wall_s"] for r in runs if r["tool"] == "groth16py"]
    if g16:
        extra["groth16py_median_s"] = statistics.median(g16)
    return {"k": k, "curve": curve, "artefacts": meta, "runs": runs, "extra": extra,
            "snarkjs_median_s": statistics.median(sj), "cuzk_median_s": statistics.median(cz),
            "ratio": statistics.median(sj) / statistics.median(cz), "cuzk_stage_medians": stages,
            "snarkjs_cpu_median_s": statistics.median(r["cpu_s"] for r in runs if r["tool"] == "snarkjs"),
            "cuzk_cpu_median_s": statistics.median(r["cpu_s"] for r in cz_runs),
            "cuzk_key_s_median": statistics.median(r.get("key_s", 0.0) for r in cz_runs),
            "cuzk_in_run_median_s": statistics.median(r.get("in_run_s", 0.0) for r in cz_runs)}


def report(results: list[dict]) -> str:
    lines = ["", "size   constraints  snarkjs s (median)  cuzk-ray s (median)  ratio snarkjs/cuzk-ray  "
             "cuzk first run s (zkey convert)  cuzk engine=ray s  CPU s snarkjs / cuzk-ray (medians)"]
    for r in results:
        first = r["extra"]["first_key_miss"]["wall_s"]
        ray = r["extra"].get("ray", {}).get("wall_s")
        lines.append(f"2^{r['k']:<4d} {r['artefacts']['r1cs']['constraints']:11d}  {r['snarkjs_median_s']:18.2f}  "
                     f"{r['cuzk_median_s']:19.2f}  {r['ratio']:22.2f}x  {first:31.2f}  "
                     f"{'-' if ray is None else f'{ray:.2f}':>17s}  "
                     f"{r['snarkjs_cpu_median_s']:.2f} / {r['cuzk_cpu_median_s']:.2f}")
    for r in results:
        lines.append("")
        lines.append(f"2^{r['k']}: cuzk-ray whole process {r['cuzk_median_s']:.2f} s (median), of which inside "
                     f"prove.py's run() {r['cuzk_in_run_median_s']:.2f} s, key load {r['cuzk_key_s_median']:.2f} s; "
                     f"per-stage medians (s):")
        lines.append("  " + "  ".join(f"{s} {v:.3f}" for s, v in r["cuzk_stage_medians"].items()))
        if "batch" in r["extra"]:
            bt = r["extra"]["batch"]
            lines.append(f"  {bt['proofs']} proofs ({r['curve']}): snarkjs {bt['snarkjs_median_s']:.2f} s "
                         f"({bt['proofs']} commands), cuzk-ray {bt['cuzk_median_s']:.2f} s (one process): "
                         f"{bt['ratio']:.2f}x (medians)"
                         + (f"; groth16py {bt['groth16py_median_s']:.2f} s (one process)" if "groth16py_median_s" in bt
                            else ""))
        if "groth16py_median_s" in r["extra"]:
            lines.append(f"  1 proof: groth16py {r['extra']['groth16py_median_s']:.2f} s whole process (median)")
        if "cold_numba" in r["extra"]:
            lines.append(f"  empty numba cache (kernels compile): {r['extra']['cold_numba']['wall_s']:.2f} s "
                         f"whole process")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", default="16", help="comma-separated log2 sizes, e.g. 10,12,14,16 (default 16)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating snarkjs/cuzk-ray rounds (default 3)")
    ap.add_argument("--cache-dir", default="~/.cache/cuzk-ray/bench-snarkjs", help="artefact cache")
    ap.add_argument("--no-ray", action="store_true", help="skip the informational engine=ray run")
    ap.add_argument("--cold-numba", action="store_true",
                    help="also time one cuzk-ray run with an empty numba cache (kernel compilation)")
    ap.add_argument("--ptau", default=None,
                    help="a prepared BLS12-381 .ptau (power >= every k) to use instead of making one "
                         "(a power-16 prepare phase2 takes about an hour on 2 cores)")
    ap.add_argument("--json", default=None, help="write all measurements to this JSON file")
    ap.add_argument("--curve", default="bls12381", choices=("bls12381", "bn128"),
                    help="circom's --prime and the powers of tau's curve (bn128: BN254)")
    ap.add_argument("--proofs", type=int, default=1,
                    help="also time this many proofs per round: snarkjs commands vs one cuzk-ray process")
    ap.add_argument("--groth16py", default=None, metavar="PYTHON",
                    help="also time groth16py (PyPI, arkworks) with this interpreter, which has it installed")
    ap.add_argument("--keep-key-cache", action="store_true",
                    help="do not empty the converted-key cache before the first run (BN254's conversion "
                         "checks every G2 point in Python ints: ~2 ms a point)")
    args = ap.parse_args(argv)
    ks = [int(x) for x in args.k.split(",") if x.strip()]
    for k in ks:
        if not 5 <= k <= 20:
            ap.error(f"k={k}: use 5..20")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")
    if args.proofs < 1:
        ap.error("--proofs must be >= 1")
    cache = Path(args.cache_dir).expanduser()
    snarkjs, circom = tools()
    log(f"nproc {os.cpu_count()}; load average at start {loadavg()}; {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    results = []
    for k in ks:
        results.append(bench_size(cache, k, args.rounds, snarkjs, circom, not args.no_ray, args.cold_numba,
                                  Path(args.ptau).expanduser() if args.ptau else None, args.curve, args.proofs,
                                  args.keep_key_cache, args.groth16py))
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    log(report(results))
    log(f"load average at end {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
