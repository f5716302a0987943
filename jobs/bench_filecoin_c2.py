"""Filecoin C2 end to end on this machine, with the real partition circuit: seal a small sector,
write its C1, prove it with ``cuzk-ray filecoin c2`` (a development .params made on first use and
cached), and check the MultiProof with ``cuzk-ray filecoin verify``; prints the seconds of each step.

    python jobs/bench_filecoin_c2.py [--sector-size 2KiB|8MiB] [--cache-dir DIR] [--variant stacked]

Not a test: the 2 KiB partition circuit has 2.69M constraints (bellperson domain 2^22), so its
development key holds ~10M G1 points, ~20 minutes of the CPU setup on two cores (run once,
then cached under --cache-dir), and one CPU proof is a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from cuzk_ray.filecoin import c2, fr32, registry, seal
from cuzk_ray.filecoin.c1 import write_c1
from cuzk_ray.filecoin.commands import main as filecoin_main
from cuzk_ray.filecoin.sector_args import parse_size

PROVER_ID, SECTOR_ID, TICKET, SEED = bytes(31) + b"\x07", 77, bytes([12]) * 32, bytes([13]) * 32
PROOFS = {2048: "StackedDrg2KiBV1_1", 8 << 20: "StackedDrg8MiBV1_1"}


def step(name: str, t0: float, times: dict) -> float:
    times[name] = time.perf_counter() - t0
    print(f"{name}: {times[name]:.1f} s", flush=True)
    return time.perf_counter()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sector-size", default="2KiB")
    ap.add_argument("--cache-dir", default=str(Path.home() / ".cache" / "cuzk-ray"))
    ap.add_argument("--work", default="outputs/bench_filecoin_c2")
    ap.add_argument("--variant", default="stacked", choices=c2.VARIANTS)
    args = ap.parse_args()
    size = parse_size(args.sector_size)
    proof = registry.registered_seal_proof(PROOFS[size])
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    times: dict[str, float] = {}
    t = time.perf_counter()
    piece = bytearray(fr32.unpadded_size(size))
    piece[0] = 1
    sector = seal.seal_sector(bytes(piece), proof, PROVER_ID, SECTOR_ID, TICKET)
    c1 = seal.commit_phase1(sector, SEED)
    write_c1(c1, work / "c1.json")
    t = step("seal + C1", t, times)
    setup = c2.circuit_setup(proof, args.cache_dir, args.variant)
    print(f"circuit: {setup.name} {setup.recording.shape}")
    t = step("recording (cached after the first run)", t, times)
    c2.ensure_dev_params(setup, args.cache_dir)
    t = step("development .params (cached after the first run)", t, times)
    out = work / "proof.bin"
    code = filecoin_main(["c2", str(work / "c1.json"), "--variant", args.variant, "--cache-dir", args.cache_dir,
                          "-o", str(out)])
    t = step("c2 (key load, witness, prove, verify, write)", t, times)
    if code != 0:
        return code
    vk = c2.dev_key_files(setup, args.cache_dir)[1]
    code = filecoin_main(["verify", str(out), "--vk", str(vk), "--registered-proof", proof.name,
                          "--comm-r", c1.comm_r.hex(), "--comm-d", c1.comm_d.hex(), "--prover-id", PROVER_ID.hex(),
                          "--sector-id", str(SECTOR_ID), "--ticket", TICKET.hex(), "--seed", SEED.hex()])
    step("filecoin verify", t, times)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
