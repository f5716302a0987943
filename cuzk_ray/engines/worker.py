"""The per-partition steps, free of Ray (the local executor calls them in-process, the actors in
cuzk_ray.engines.actors and the Ray synthesis task wrap them).

``synthesize_witness`` turns a synthesis spec into the partition's witness (a CompactWitness from
the circuits' synthesis; an FrVector, checked here once, when a replacement synthesis hands back
a raw array). A PartitionProver holds a backend and a resident proving key; ``prove`` takes one
partition and returns its PartitionOutcome."""

from __future__ import annotations

import time
from contextlib import nullcontext

from ..backends import make_backend
from ..circuits import synthesize
from ..field import checked_fr, limbs_to_ints
from ..groth16.keys import ProvingKey
from ..groth16.prover import prove, random_blinding
from ..partition import Partition
from ..r1cs import ConstraintSystem
from ..timing import StageTimes
from ..witness import CompactWitness, Witness, read_wires
from .types import PartitionOutcome


def synthesize_witness(spec: dict, synth_fn=None) -> Witness:
    """The witness of the partition ``spec`` describes (``synth_fn`` replaces the circuit's
    synthesis: tests inject failures with it)."""
    witness = (synth_fn or synthesize)(spec)
    if isinstance(witness, CompactWitness):  # our synthesis: checked there
        return witness
    what = spec.get("path") or f"witness of proof {spec.get('proof')}, partition {spec['partition']}"
    return checked_fr(witness, what)  # an FrVector passes through


class PartitionProver:
    """A backend with the key and constraint matrices resident; proves one partition at a time
    (or several on threads: the backend serializes its device work)."""

    def __init__(self, backend: str, pk: ProvingKey, cs: ConstraintSystem, threads: int = 2):
        self.backend = make_backend(backend, threads=threads)
        self.pk, self.cs = pk, cs
        self.load_seconds: dict[str, float] = {}  # key, matrices, warm_up: what a prover's start costs
        for what, step in (("key", self.backend.load_key), ("matrices", self.backend.load_cs),
                           ("warm_up", self.backend.warm_up)):
            # bases resident before the first partition arrives, then the constraint matrices (VRAM
            # on the cuda backend), then kernels compiled/loaded before the first partition
            t0 = time.perf_counter()
            step(pk if what != "matrices" else cs)
            self.load_seconds[what] = round(time.perf_counter() - t0, 3)

    def prove(self, part: Partition, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """The proof of one partition, its public inputs and per-stage seconds (and spans)."""
        if r is None or s is None:
            r, s = random_blinding()
        times = StageTimes()
        with self.backend.account() as gpu:
            # once; every device stage reads it there (no device: the witness as it is, untimed)
            with times.stage("upload") if gpu is not None else nullcontext():
                witness = self.backend.stage(part.witness)  # compact or full: trusted, not checked again
            proof = prove(self.pk, self.cs, witness, r, s, self.backend, times)
        if gpu is not None:
            times["gpu"] = gpu.seconds  # this partition's kernel time (device synchronized)
            for section, sec in gpu.sections.items():  # the same by what held the device
                times[f"gpu.{section}"] = sec
            times.spans.extend(("gpu", a, b) for a, b in gpu.spans)  # when it held the device
        public = limbs_to_ints(read_wires(part.witness, 1, 1 + self.pk.n_public))  # not the whole witness
        return PartitionOutcome(part.proof_id, part.partition, proof, [int(x) for x in public], dict(times),
                                list(times.spans), self.backend.vram_peak)
