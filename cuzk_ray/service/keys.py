"""Resident keys: a key (proving key, matrices) added to the service's one prover pool (the
engine's provers load it, each holding every key they serve), kept between requests and evicted
least-recently-used under ``service.key_budget``.

A key's id comes from the circuit config (``key_id``): the built-in circuit's id and the setup
seed (its partition count and witness seeds are the proofs', not the key's), or a zkey's name and
SHA-256. ``KeyCircuit`` is the circuit an engine proves for the service: the key's circuit, with
each snarkjs proof's own witness file (the batch job's circuit holds the whole batch's)."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ..circuits import PorepCircuit, SnarkjsCircuit
from ..circuits.filecoin import FilecoinCircuit
from ..formats.native import file_sha256

log = logging.getLogger(__name__)

_DIGESTS: dict[tuple, str] = {}  # (realpath, size, mtime_ns) -> SHA-256 of a zkey (hashed once)


def zkey_digest(path: str) -> str:
    st = os.stat(path)
    memo = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if memo not in _DIGESTS:
        _DIGESTS[memo] = file_sha256(path)
    return _DIGESTS[memo]


def key_circuit(circuit: dict):
    """The key's circuit for a request's checked circuit dict (models.parse_circuit): a PorepCircuit
    (ValueError naming the field for sizes it refuses), or a SnarkjsCircuit without witnesses."""
    if circuit["kind"] == "porep":
        return PorepCircuit.from_config(circuit)
    if circuit["kind"] == "filecoin-c2":  # the C1 is read: its registered proof picks the key
        return FilecoinCircuit.from_config(circuit)
    return SnarkjsCircuit(zkey=os.path.abspath(circuit["zkey"]))


def key_id(circuit: dict, setup_seed: int) -> str:
    """The resident key a request's circuit needs (the id /v1/keys and /v1/status use)."""
    if circuit["kind"] == "porep":
        return f"{key_circuit(circuit).circuit_id}-setup{setup_seed}"
    if circuit["kind"] == "filecoin-c2":  # published params: the folder names the key; else the dev seed
        base = key_circuit(circuit)
        source = f"params-{os.path.abspath(base.params)}" if base.params else f"setup{setup_seed}"
        return f"filecoin-{base.variant}-{base.proof_type}-{source}"
    return f"snarkjs-{os.path.basename(circuit['zkey'])}-{zkey_digest(circuit['zkey'])[:12]}"


class KeyCircuit:
    """The circuit a resident key's engine proves: the key's own (every attribute), except that
    a snarkjs proof's synthesis reads that proof's witness file (``witness_of[index]``), and a
    filecoin-c2 proof its C1 (``c1_of[index]``)."""

    def __init__(self, base):
        self.base = base
        self.witness_of: dict[int, str] = {}
        self.c1_of: dict[int, str] = {}

    def __getattr__(self, name):
        return getattr(self.base, name)

    def synth_spec(self, seed: int, proof: int, partition: int) -> dict:
        if self.base.kind == "snarkjs":
            return dataclasses.replace(self.base, witness=(self.witness_of[proof],)).synth_spec(seed, 0, partition)
        if self.base.kind == "filecoin":
            return self.for_c1(self.c1_of[proof]).synth_spec(seed, 0, partition)
        return self.base.synth_spec(seed, proof, partition)

    def for_c1(self, c1: str):
        """The key's Filecoin circuit with another C1 of the same proof type (its meta shared)."""
        return dataclasses.replace(self.base, c1_files=(c1,))


@dataclass
class ResidentKey:
    """A loaded key, added to the prover pool (``context``: what its proofs are scheduled with)."""

    key_id: str
    circuit: KeyCircuit
    pk: object
    context: object  # engines.types.KeyContext
    nbytes: int
    load_seconds: float
    source: str  # where the key came from (keystore path or zkey)
    insecure: bool = False
    setup_seed: int | None = None
    partitions_at_once: int = 0  # its own limit per GPU prover (0: the provers' gpu_concurrency)
    last_used: float = field(default_factory=time.time)

    def view(self, provers: int) -> dict:
        """/v1/status's entry (``provers``: how many of the pool's provers hold it now)."""
        return {"key_id": self.key_id, "bytes": self.nbytes, "load_seconds": round(self.load_seconds, 3),
                "source": self.source, "provers": provers, "last_used": self.last_used,
                "insecure_dev_setup": self.insecure, "partitions_at_once": self.partitions_at_once or None}


def make_resident(kid: str, circuit: dict, engine, cfg: dict, vram: int | None = None) -> ResidentKey:
    """Load (or make, for a development key) the key of ``circuit`` and add it to the prover pool
    of ``engine`` (resident in its provers when this returns). The batch job's preflight runs
    first, and again once the key is read when only then its sizes are known (a Filecoin key):
    a key whose partitions fit the GPU only fewer at a time than the provers' threads is added
    with that limit (as the batch job lowers gpu_concurrency), one that does not fit is refused.
    ``vram``: the room the pool's GPU provers measured (Engine.device_room: the key as if alone
    on its card); None: with CPU provers, or this process reads its GPU."""
    from ..preflight import preflight

    base = key_circuit(circuit)
    t0 = time.perf_counter()
    known = base.key_shape(quick=True) is not None
    settings = fitted(engine.settings, base, cfg, vram)
    preflight(settings, base, cfg["cache_dir"], cfg["setup_seed"], vram)
    pk, cs, info = base.load_key(cfg["cache_dir"], cfg["setup_seed"], cfg["setup_backend"])
    if not known:  # before the provers load it: a refusal here costs no VRAM
        settings = fitted(engine.settings, base, cfg, vram)
        preflight(settings, base, cfg["cache_dir"], cfg["setup_seed"], vram)
    kc = KeyCircuit(base)
    limit = settings.gpu_concurrency if settings.gpu_concurrency < engine.settings.gpu_concurrency else 0
    context = engine.add_key(kid, pk, cs, kc, concurrency=limit)
    seconds = time.perf_counter() - t0
    insecure = bool(pk.meta.get("insecure_dev_setup"))
    nbytes = int(pk.nbytes + (cs.nbytes if cs is not None else 0))
    log.info("key %s resident in %.1f s (%s, %s; %d B; %d prover(s))", kid, seconds, info["key"], info["note"],
             nbytes, len(engine.provers))
    return ResidentKey(kid, kc, pk, context, nbytes, seconds, str(info["key"]), insecure,
                       pk.meta.get("seed") if insecure else None, limit)


def fitted(settings, base, cfg: dict, vram: int | None = None, quiet: bool = False):
    """``settings`` with gpu_concurrency lowered to what the GPU's free memory (``vram``: the
    provers' room) holds for this key's partitions (a log line says so unless ``quiet``), as the
    batch job fits it (preflight.fit_gpu)."""
    from ..preflight import fit_gpu

    def say(line: str) -> None:
        if not quiet:
            log.info("key of %s: %s", base.circuit_id, line)

    return fit_gpu(settings, base, cfg["cache_dir"], cfg["setup_seed"], say, vram)


def estimate_bytes(circuit: dict) -> int:
    """A key's bytes before it is loaded (the preflight's estimate of the key), for evicting first."""
    shape = key_circuit(circuit).key_shape(quick=True)
    return int(shape.key_bytes) if shape is not None else 0


class KeyRing:
    """The resident keys, least recently used first; ``budget``: bytes they may hold (None: any)."""

    def __init__(self, budget: int | None):
        self.budget = budget
        self.keys: OrderedDict[str, ResidentKey] = OrderedDict()

    def get(self, kid: str) -> ResidentKey | None:
        """The resident key (marked as used now), or None."""
        rk = self.keys.get(kid)
        if rk is not None:
            rk.last_used = time.time()
            self.keys.move_to_end(kid)
        return rk

    def add(self, rk: ResidentKey) -> None:
        self.keys[rk.key_id] = rk
        self.keys.move_to_end(rk.key_id)

    def pop(self, kid: str) -> ResidentKey | None:
        return self.keys.pop(kid, None)

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes for k in self.keys.values())

    def victims(self, need: int, busy: set[str], keep: str | None = None) -> list[str] | None:
        """The idle keys to evict, least recently used first, so that ``need`` more bytes fit the
        budget; None when evicting every idle key would not make room (``busy`` keys have proofs
        queued or running; ``keep`` is never chosen)."""
        if self.budget is None:
            return []
        held, out = self.nbytes, []
        for kid, rk in self.keys.items():
            if held + need <= self.budget:
                break
            if kid in busy or kid == keep:
                continue
            out.append(kid)
            held -= rk.nbytes
        return out if held + need <= self.budget else None
