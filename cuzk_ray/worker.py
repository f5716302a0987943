"""The per-partition proving step, free of Ray (actors in cuzk_ray.actors wrap it).

A PartitionProver holds a backend and a resident proving key; ``prove`` takes one partition's
witness and returns the proof, its public inputs and the per-stage seconds."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from .backends import make_backend
from .field import limbs_to_ints
from .groth16.keys import ProvingKey
from .groth16.prover import prove, random_blinding
from .partition import Partition
from .r1cs import ConstraintSystem
from .timing import StageTimes


class PartitionProver:
    def __init__(self, backend: str, pk: ProvingKey, cs: ConstraintSystem, threads: int = 2):
        self.backend = make_backend(backend, threads=threads)
        self.pk, self.cs = pk, cs
        self.backend.load_key(pk)  # bases resident before the first partition arrives
        self.backend.load_cs(cs)  # and the constraint matrices (VRAM on the cuda backend)
        self.backend.warm_up(pk)  # compile/load kernels before the first partition, not during it

    def prove(self, part: Partition, r: int | None = None, s: int | None = None) -> dict:
        if r is None or s is None:
            r, s = random_blinding()
        times = StageTimes()
        with self.backend.account() as gpu:
            # once; every device stage reads it there (no device: the witness as it is, untimed)
            with times.stage("upload") if gpu is not None else nullcontext():
                witness = self.backend.stage(part.witness)
            proof = prove(self.pk, self.cs, witness, r, s, self.backend, times)
        if gpu is not None:
            times["gpu"] = gpu.seconds  # this partition's kernel time (device synchronized)
            times.spans.extend(("gpu", a, b) for a, b in gpu.spans)  # when it held the device
        public = limbs_to_ints(np.asarray(part.witness[1 : 1 + self.pk.n_public]))
        out = {"proof_id": part.proof_id, "partition": part.partition, "proof": proof,
               "public": [int(x) for x in public], "times": dict(times), "spans": list(times.spans)}
        peak = self.backend.vram_peak
        if peak is not None:
            out["vram_peak"] = peak
        return out
