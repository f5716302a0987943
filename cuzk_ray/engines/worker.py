"""The per-partition steps, free of Ray (the local executor calls them in-process, the actors in
cuzk_ray.engines.actors and the Ray synthesis task wrap them).

``synthesize_witness`` turns a synthesis spec into the partition's witness (a CompactWitness from
the circuits' synthesis; an FrVector, checked here once, when a replacement synthesis hands back
a raw array). A ProverWorker holds a backend and the proving keys resident in it; ``prove``
takes one partition and the key it is for, and returns its PartitionOutcome (PartitionProver:
the same with one key)."""

from __future__ import annotations

import os
import sys
import time
from collections import OrderedDict
from contextlib import nullcontext

from ..backends import check_backend_curve, make_backend
from ..circuits import synthesize
from ..field import checked_fr, limbs_to_ints
from ..groth16.keys import ProvingKey
from ..groth16.prover import check_backend_qap, prove, random_blinding
from ..partition import Partition
from ..r1cs import ConstraintSystem
from ..timing import StageTimes
from ..witness import CompactWitness, Witness, read_wires
from .types import DeviceRoom, PartitionOutcome


def limit_synthesis_threads(threads: int) -> int:
    """Cap numba's parallel loops (the Filecoin witness replay) in this process at ``threads`` and
    return the cap in force. numba uses every core by default: pw synthesis tasks that each hold
    one of Ray's CPUs would run pw x cores threads and starve the GPU actor's host work on the same
    node. Before numba is imported the cap is its NUMBA_NUM_THREADS (the size of the pool it
    starts); after, ``set_num_threads`` (per calling thread: Ray runs a task on its worker's main
    thread), never above the pool numba started with."""
    threads = max(1, int(threads))
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
        return threads
    import numba

    threads = min(threads, numba.config.NUMBA_NUM_THREADS)
    numba.set_num_threads(threads)
    return threads


def synthesize_witness(spec: dict, synth_fn=None) -> Witness:
    """The witness of the partition ``spec`` describes (``synth_fn`` replaces the circuit's
    synthesis: tests inject failures with it)."""
    witness = (synth_fn or synthesize)(spec)
    if isinstance(witness, CompactWitness):  # our synthesis: checked there
        return witness
    what = spec.get("path") or f"witness of proof {spec.get('proof')}, partition {spec['partition']}"
    return checked_fr(witness, what)  # an FrVector passes through


def device_room(worker: ProverWorker, node: str) -> DeviceRoom | None:
    """The reading of ``worker``'s device (``node``: where it runs), None on the CPU backend."""
    if worker.backend.name != "cuda":
        return None
    cp = worker.backend.cp
    free, _total = cp.cuda.runtime.memGetInfo()
    return DeviceRoom(f"{node}/{cp.cuda.Device().pci_bus_id}", int(free),
                      int(cp.get_default_memory_pool().total_bytes()))


class ProverWorker:
    """One backend and the keys resident in it (a prover of the pool serves every key it holds):
    ``load`` makes a key resident (bases, then matrices, then warm kernels), ``evict`` frees it,
    ``prove`` proves one partition with a resident key (or several on threads: the backend
    serializes its device work). Keys are kept least recently used first (``keys``)."""

    def __init__(self, backend: str, threads: int = 2):
        self.backend = make_backend(backend, threads=threads)
        self.keys: OrderedDict[str, tuple[ProvingKey, ConstraintSystem]] = OrderedDict()
        self.key_seconds: dict[str, dict[str, float]] = {}  # key id -> key, matrices, warm_up seconds

    def load(self, key_id: str, pk: ProvingKey, cs: ConstraintSystem) -> dict[str, float]:
        """Make the key resident (once); the seconds each step took (what a key's start costs)."""
        if key_id in self.keys:
            return self.key_seconds[key_id]
        check_backend_curve(self.backend.name, pk.curve.name)  # before anything is made resident
        check_backend_qap(pk, self.backend)  # a key this backend cannot prove with: refused before any upload
        seconds: dict[str, float] = {}
        try:
            for what, step, arg in (("key", self.backend.load_key, pk), ("matrices", self.backend.load_cs, cs),
                                    ("warm_up", self.backend.warm_up, pk)):
                # bases resident before the first partition arrives, then the constraint matrices (VRAM
                # on the cuda backend), then kernels compiled/loaded before the first partition
                t0 = time.perf_counter()
                step(arg)
                seconds[what] = round(time.perf_counter() - t0, 3)
        except BaseException:
            self.backend.unload(pk, cs)  # a half-loaded key (its bases, not its matrices) goes
            raise
        self.keys[key_id] = (pk, cs)
        self.key_seconds[key_id] = seconds
        return seconds

    def evict(self, key_id: str) -> bool:
        """Free a resident key (False: it was not resident)."""
        held = self.keys.pop(key_id, None)
        self.key_seconds.pop(key_id, None)
        if held is None:
            return False
        self.backend.unload(*held)
        return True

    def prove(self, key_id: str, part: Partition, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """The proof of one partition with the resident key ``key_id``, its public inputs and
        per-stage seconds (and spans)."""
        try:
            pk, cs = self.keys[key_id]
        except KeyError:
            raise KeyError(f"key {key_id} is not resident in this prover") from None
        self.keys.move_to_end(key_id)
        if r is None or s is None:
            r, s = random_blinding(pk.curve.r)
        times = StageTimes()
        with self.backend.account() as gpu:
            # once; every device stage reads it there (no device: the witness as it is, untimed)
            with times.stage("upload") if gpu is not None else nullcontext():
                # compact or full: trusted, not checked again (a raw array: below the key's r)
                witness = self.backend.stage(part.witness, modulus=pk.curve.r)
            proof = prove(pk, cs, witness, r, s, self.backend, times)
        if gpu is not None:
            times["gpu"] = gpu.seconds  # this partition's kernel time (device synchronized)
            for section, sec in gpu.sections.items():  # the same by what held the device
                times[f"gpu.{section}"] = sec
            times.spans.extend(("gpu", a, b) for a, b in gpu.spans)  # when it held the device
        public = limbs_to_ints(read_wires(part.witness, 1, 1 + pk.n_public))  # not the whole witness
        return PartitionOutcome(part.proof_id, part.partition, proof, [int(x) for x in public], dict(times),
                                list(times.spans), self.backend.vram_peak)


class PartitionProver(ProverWorker):
    """A ProverWorker with one key, loaded at construction (the local executor, tests)."""

    KEY = "key"

    def __init__(self, backend: str, pk: ProvingKey, cs: ConstraintSystem, threads: int = 2):
        super().__init__(backend, threads)
        self.pk, self.cs = pk, cs
        self.load_seconds = super().load(self.KEY, pk, cs)

    def prove(self, part: Partition, r: int | None = None, s: int | None = None) -> PartitionOutcome:
        """The proof of one partition with this prover's key."""
        return super().prove(self.KEY, part, r, s)
