"""The Filecoin circuit for the engine (``circuit=filecoin``): each C1 file is one proof of
``partitions`` partitions of the StackedDRG circuit (filecoin/c2.py), proved with bellperson's QAP.

    python jobs/prove.py circuit=filecoin circuit.c1=C1.json circuit.params=DIR
    python jobs/prove.py circuit=filecoin circuit.c1=DIR      (every .json in DIR; or a list, a glob)

Many C1s in one run share the engine's start-up (Ray, the key mapped and uploaded) and keep the
GPU fed across sectors; they must be of one registered proof (one key).

The key: Filecoin's published ``.params`` in DIR (named as parameters.json names them, digest
checked), or, without ``circuit.params``, a development key (INSECURE) made once and cached as
a key bundle + ``.vk`` under ``<cache_dir>/keys`` (load_key). The partitions go through the engine as every
circuit's do (each verified before it is written); at the end ``write_seal_proofs`` writes each
C1's 192-byte-per-partition MultiProof beside them, verified against its public inputs first.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..outputs import SEAL_PROOF
from ..witness import CompactWitness, compact_bytes
from .input_files import expand_files, file_names

C1_SUFFIX = ".json"
C1_USAGE = ("circuit=filecoin needs circuit.c1=C1.json, a list [A.json,...], a folder or a glob (C1 JSON files: "
            "SealCommitPhase1Output, one proof each)")


@dataclass(frozen=True)
class FilecoinCircuit:
    """C1 files proved as Filecoin's C2 (``circuit=filecoin``), one proof each."""

    c1_files: tuple[str, ...]
    params: str | None = None
    variant: str = "stacked"
    proof_type: str = ""  # the C1's registered proof (read by from_config)
    meta: dict = field(default_factory=dict, compare=False)  # filled by load_key: cache_dir, sizes, vk

    kind = "filecoin"
    local_files = True  # the C1 is read where the driver runs
    # the Ray engine reads each proof's C1 once (split_c1, a task on the driver's node) and hands
    # each partition's synthesis task its share, not the file
    splits_inputs = True

    @classmethod
    def from_config(cls, c: dict) -> FilecoinCircuit:
        """From ``circuit.c1`` (a file, a list, a folder of .json files or a glob: expand_files),
        ``circuit.params`` (a directory or null) and ``circuit.variant``; every C1 is read and
        checked here, once (c1_proof_type: a malformed one, or one with the wrong partition or
        challenge counts, fails in one line naming the file and field; C1s of two registered
        proofs, which need two keys, are refused naming one of each)."""
        from ..filecoin.c2 import check_variant

        files = expand_files(c.get("c1"), C1_SUFFIX, "circuit.c1", C1_USAGE)
        for path in files:
            if not os.path.isfile(path):
                raise ValueError(f"circuit.c1={path}: no such file")
        params = c.get("params")
        if params is not None and not os.path.isdir(os.path.expanduser(params)):
            raise ValueError(f"circuit.params={params}: not a directory (the folder holding Filecoin's .params/.vk)")
        kinds: dict[str, str] = {}  # registered proof -> the first C1 of it
        for path in dict.fromkeys(files):  # each file read once (a list may name one twice)
            kinds.setdefault(c1_proof_type(path), path)
        if len(kinds) > 1:
            (a, fa), (b, fb) = list(kinds.items())[:2]
            raise ValueError(f"circuit.c1: {fb} is a {b} C1 and {fa} a {a} one: one run proves C1s of one "
                             f"registered proof (one key); prove them in two runs")
        return cls(files, os.path.abspath(os.path.expanduser(params)) if params else None,
                   check_variant(c.get("variant") or "stacked"), next(iter(kinds)))

    @property
    def registered_proof(self):
        from ..filecoin.registry import registered_seal_proof

        return registered_seal_proof(self.proof_type)

    @property
    def partitions(self) -> int:
        return self.registered_proof.config.partitions

    def load_key(self, cache_dir, setup_seed: int = 0, setup_backend: str = "auto"):
        """(pk, cs, info): the recorded circuit, the C1 checked against it, and the key, memory-mapped
        from a native key bundle: the published .params in circuit.params, decoded into one once
        (c2.mapped_params); else the development key, made on first use straight into one with its
        .vk (c2.ensure_dev_bundle: the key ensure_dev_params writes as .params, array for array).
        Why not the dev .params and its decoded bundle: at 32 GiB that is 2 x 47 GB on disk, which
        a 64 GB GPU box does not have; the .params form is written only where a file is wanted
        (c2.ensure_dev_params: selftest's stand-ins, the bench's --key params)."""
        from ..filecoin import c2

        setup = c2.circuit_setup(self.registered_proof, cache_dir, self.variant)
        for path in dict.fromkeys(self.c1_files):  # read and checked once (c1_proof_type), by from_config
            found = c1_proof_type(path)
            if found != setup.proof.name:
                raise ValueError(f"{path}: registered_proof {found}, the circuit is {setup.proof.name}")
        if self.params is not None:
            params, vk = c2.published_params(self.params, setup)
            pk, note = c2.mapped_params(params, setup, cache_dir), "published .params, digest checked"
        else:
            from ..backends import resolve_backend_name

            pk, vk, made = c2.ensure_dev_bundle(setup, cache_dir, setup_seed, resolve_backend_name(setup_backend))
            params = pk.meta["bundle_path"]
            note = "created by the INSECURE dev setup" if made else "cached"
        self.adopt(setup, pk, vk, cache_dir)
        return pk, setup.recording.cs, {"key": str(params), "note": note}

    def adopt(self, setup, pk, vk, cache_dir) -> None:
        """Take ``setup`` (c2.CircuitSetup) and its key ``pk`` (with its .vk path) as this circuit's:
        what load_key does once it has them (jobs/bench_filecoin_c2.py makes them step by step)."""
        from ..filecoin.c2 import full_wires
        from ..preflight import KeyShape

        rec = setup.recording.shape
        shape = KeyShape(pk.n_wires, pk.n_public, pk.domain_size, rec.nnz_a, rec.nnz_b, rec.nnz_c,
                         a_points=len(pk.a_query), b_points=len(pk.b_g1_query))
        self.meta.update(cache_dir=os.path.abspath(os.path.expanduser(os.fspath(cache_dir))), vk=str(vk),
                         n_wires=pk.n_wires, domain=pk.domain_size, circuit_id=setup.name,
                         full_wires=full_wires(setup), key_shape=shape, bundle=bool(pk.meta.get("bundle_path")))

    @property
    def key_bundle(self) -> bool:
        """Whether the key is mapped from a native bundle (on one node the actors map it too)."""
        return self.meta.get("bundle", False)

    def key_shape(self, quick: bool = False):
        """The key's sizes once load_key (or adopt) has recorded the circuit and mapped its key;
        None before: a sector size's counts come from its recording, its densities from the key."""
        return self.meta.get("key_shape")

    def key_cached(self, cache_dir, setup_seed: int = 0) -> bool:
        """True once the key is mapped (nothing left to write to disk)."""
        return "key_shape" in self.meta

    @property
    def key_label(self) -> str:
        return f"the key of {self.meta.get('circuit_id', self.proof_type)}"

    @property
    def circuit_id(self) -> str:
        return self.meta.get("circuit_id", f"filecoin-{self.variant}-{self.proof_type}")

    def synth_spec(self, seed: int, proof: int, partition: int) -> dict:
        return {"kind": self.kind, "c1": self.c1_files[proof], "proof_type": self.proof_type, "variant": self.variant,
                "cache_dir": self.meta["cache_dir"], "proof": proof, "partition": partition}

    def synthesis_plan(self):
        """The witness plan every "stacked" synthesis replays (c2.witness_plan, mapped from the
        partition cache; 0.67 GB at 32 GiB), None for "inputs": what the Ray engine on a cluster
        puts in the object store once, so that synthesis runs on nodes without this cache."""
        if self.variant != "stacked":
            return None
        from ..filecoin import c2

        return c2.witness_plan(self.registered_proof, self.meta["cache_dir"])

    def domain_size(self) -> int:
        return self.meta["domain"]

    def witness_bytes(self) -> int:
        return self.meta["n_wires"] * 32

    def partition_batch_bytes(self) -> int:
        """The compact witness with every wire the tape computes as a field element counted full (an
        upper bound: at 32 GiB ~0.1 GB, not the 4.2 GB of every wire full)."""
        n = self.meta["n_wires"]
        return compact_bytes(n, min(n, self.meta.get("full_wires", n)))

    def synthesis_bytes(self) -> int:
        """Peak heap of one synthesis task, a fresh process's first (admission counts it for every
        partition in flight). "stacked" replays the tape into a byte per wire and its field slots,
        gathers the two bitmaps and the field values, and keeps the C1's objects (the JSON text and
        the objects while it parses): 343 MiB traced at 32 GiB, ~48 of them the first task's imports
        and numba kernels. On Ray the C1 is parsed once per proof by its split task and a
        synthesis task keeps only its partition's share (a tenth at 32 GiB): the whole C1 is
        still counted per partition, an upper bound that also covers the split tasks. "inputs"
        synthesizes a few hundred wires by the reference synthesizer. An estimate, checked to lie
        between the traced peak and twice it at 2 KiB (tests/test_synthesis_memory.py; 32 GiB:
        jobs/bench_synthesis_workers.py)."""
        n = self.meta["n_wires"]
        full = min(n, self.meta.get("full_wires", n))
        first = (64 if self.variant == "stacked" else 32) << 20
        largest = max(os.path.getsize(f) for f in self.c1_files)  # a local task, or a split task, parses one C1
        return n + n // 4 + 2 * 32 * full + 2 * largest + first

    def proof_label(self, proof: int) -> str:
        return f"C1 {self.c1_files[proof]}"

    def proof_names(self) -> tuple[str, ...]:
        """Each proof's id in output_dir/proofs/: its C1 file's name less ``.json`` (file_names)."""
        return file_names(self.c1_files, C1_SUFFIX, "c1")

    def proof_info(self, proof: int) -> dict:
        return {"c1": self.c1_files[proof]}

    def write_seal_proofs(self, output_dir, entries: dict, proof_ids=None, vk=None) -> dict:
        """Each C1's MultiProof from its partitions on disk (``entries``: OutputDir.entries),
        written by write_seal_proof; what the manifest's run info records (``seal_proofs``: id ->
        path, digest). A C1 with a partition missing (a failed or stopped run) gets none.
        ``proof_ids``: the entries' ids, one per C1 (default: proof_names(); the service's own ids).
        ``vk``: the verifying key (a service client has the service's, as a VerifyingKey); default
        the .vk file load_key found."""
        written = {}
        for index, name in enumerate(proof_ids or self.proof_names()):
            parts = proof_parts(entries, name)
            seal = self.write_seal_proof(output_dir, index, name, parts, vk)
            if seal is not None:
                written[name] = seal
        return {"seal_proofs": written} if written else {}

    def write_seal_proof(self, output_dir, index: int, name: str, parts: dict, vk=None) -> dict | None:
        """C1 ``index``'s MultiProof from its partitions' entries (``parts``: partition -> entry),
        verified against the C1's public inputs with the bellperson verifier, then written
        (temporary name, rename) as proofs/<name>/seal_proof.bin; its manifest record, or None
        when a partition is missing."""
        from ..filecoin.c1 import read_c1
        from ..filecoin.c2 import write_multiproof
        from ..filecoin.params import read_vk
        from ..formats.native import file_sha256
        from ..formats.snarkjs_json import read_proof

        if sorted(parts) != list(range(self.partitions)):
            return None
        out, c1 = Path(output_dir), self.c1_files[index]
        key = read_vk(self.meta["vk"]) if vk is None else vk
        proofs = [read_proof(out / parts[k].proof) for k in range(self.partitions)]
        path = out / "proofs" / name / SEAL_PROOF
        write_multiproof(path, key, read_c1(c1), proofs)
        return {"path": str(path.relative_to(out)), "sha256": file_sha256(path), "c1": c1,
                "partitions": self.partitions, "verified": True, "vk": self.meta["vk"] if vk is None else None}


def proof_parts(entries: dict, proof_id: str) -> dict:
    """The entries of one proof's partitions on disk (``entries``: OutputDir.entries), by partition."""
    return {e.partition: e for (pid, _), e in entries.items() if pid == proof_id}


class SealProofWriter:
    """A run's MultiProofs, each written as soon as its C1's last partition is on disk, in one
    background thread: a run of many C1s then has no tail of MultiProofs after its last partition
    (~1.5-2.5 s each at 32 GiB: the C1 read, ten pairing checks), and each sector's proof exists
    once it is proved. ``partition_done`` from the run's progress callback; ``finish`` at the end
    (it also writes those of C1s completed by an earlier run, on resume)."""

    def __init__(self, circuit: FilecoinCircuit, output_dir):
        from concurrent.futures import ThreadPoolExecutor

        self.circuit, self.output_dir = circuit, output_dir
        self.names = circuit.proof_names()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="seal-proofs")
        self._started: dict[str, object] = {}  # proof id -> the Future of its MultiProof

    def partition_done(self, index: int, entries: dict) -> None:
        """C1 ``index`` got a partition (``entries``: OutputDir.entries, read here, in the caller's
        thread): once all are on disk, its MultiProof is written in the background."""
        name = self.names[index]
        if name in self._started:
            return
        parts = proof_parts(entries, name)
        if len(parts) == self.circuit.partitions:
            self._started[name] = self._pool.submit(self.circuit.write_seal_proof, self.output_dir, index, name,
                                                    parts)

    def stop(self) -> dict:
        """A run stopped early (Ctrl-C, a full disk): the MultiProof being written finishes, those
        not started are dropped; the manifest's ``seal_proofs`` of those written (its partial
        manifest lists them; a resumed run writes the rest, and these again)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        written = {name: f.result() for name, f in self._started.items()
                   if not f.cancelled() and f.exception() is None and f.result() is not None}
        return {"seal_proofs": written} if written else {}

    def finish(self, entries: dict) -> dict:
        """Wait for the MultiProofs started (an error in one is raised here), write those of the
        other complete C1s; the manifest's ``seal_proofs``."""
        self._pool.shutdown(wait=True)
        written = {name: f.result() for name, f in self._started.items()}
        for index, name in enumerate(self.names):
            if name not in written:
                parts = proof_parts(entries, name)
                written[name] = self.circuit.write_seal_proof(self.output_dir, index, name, parts)
        written = {name: seal for name, seal in written.items() if seal is not None}
        return {"seal_proofs": written} if written else {}


@functools.lru_cache(maxsize=2)
def _setup(proof_type: str, cache_dir: str, variant: str):
    from ..filecoin import c2
    from ..filecoin.registry import registered_seal_proof

    return c2.circuit_setup(registered_seal_proof(proof_type), cache_dir, variant)


def c1_proof_type(path: str, read: Callable[[str], str] | None = None) -> str:
    """The registered proof of the C1 at ``path``, read and checked against that proof's partition
    and challenge counts (check_c1_file; one-line errors naming the file and field) the first time
    it is asked for with this size and mtime, then remembered. Why: a 32 GiB C1 is 38.6 MB of
    JSON, ~1.7 s to parse; the service checks a request's C1 more than once (its key id, its
    partitions, the fitting) and a run checked every C1 twice (from_config, load_key).
    ``read``: what reads it on a miss (default check_c1_file, here; the service runs it in a task
    of its own, since json.loads holds the GIL for ~1 s at 32 GiB)."""
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    with _C1_KINDS_LOCK:
        kind = _C1_KINDS.get(key)
    if kind is None:
        kind = (read or check_c1_file)(path)
        with _C1_KINDS_LOCK:
            _C1_KINDS[key] = kind
            while len(_C1_KINDS) > C1_KINDS_KEPT:
                _C1_KINDS.popitem(last=False)
    return kind


C1_KINDS_KEPT = 256  # C1 files whose registered proof is remembered (by path, size and mtime)
_C1_KINDS: OrderedDict[tuple, str] = OrderedDict()
_C1_KINDS_LOCK = threading.Lock()


def check_c1_file(path: str) -> str:
    """The registered proof of the C1 at ``path``, read and checked (c2.check_c1): what
    c1_proof_type remembers."""
    from ..filecoin.c1 import read_c1
    from ..filecoin.c2 import check_c1

    c1 = read_c1(path)
    check_c1(c1.registered_proof, c1, path)
    return c1.registered_proof.name


@functools.lru_cache(maxsize=2)
def _c1(path: str, mtime_ns: int):
    from ..filecoin.c1 import read_c1

    return read_c1(path)


def split_c1(spec: dict) -> tuple:
    """Each partition's share of the C1 a synth spec names (C1Output.partition_share), from one
    read of the file: what the Ray engine's split task hands the proof's synthesis tasks, so that
    ten tasks do not parse the same 38.6 MB of JSON ten times (~1.7 s each at 32 GiB)."""
    c1 = _c1(spec["c1"], os.stat(spec["c1"]).st_mtime_ns)
    return tuple(c1.partition_share(k) for k in range(len(c1.vanilla_proofs)))


def with_share(spec: dict, share, plan=None) -> dict:
    """The synth spec of a partition handed its share of the C1 (split_c1) and, on a cluster, the
    witness plan (FilecoinCircuit.synthesis_plan): the C1's path dropped, and with a plan the
    partition cache's too, so that its synthesis reads neither (they need not be on its node)."""
    drop = ("c1", "cache_dir") if plan is not None else ("c1",)
    return {**{k: v for k, v in spec.items() if k not in drop}, "c1_share": share,
            **({"plan": plan} if plan is not None else {})}


def synthesize_partition(spec: dict) -> CompactWitness:
    """The compact witness of one partition of a synth spec (``FilecoinCircuit.synth_spec``), made
    where the synthesis task runs: "stacked" replays the partition cache's tape (loaded once per
    process, without the matrices), "inputs" synthesizes the stand-in against its recording. The
    C1 is the spec's ``c1_share`` when the engine split it (with_share), else read from its path."""
    from ..filecoin import c2
    from ..filecoin.registry import registered_seal_proof

    c1 = spec["c1_share"] if "c1_share" in spec else _c1(spec["c1"], os.stat(spec["c1"]).st_mtime_ns)
    if spec["variant"] == "stacked":
        from ..filecoin.circuit.fast_witness import fast_witness

        pl = spec["plan"] if "plan" in spec else c2.witness_plan(registered_seal_proof(spec["proof_type"]),
                                                                 spec["cache_dir"])
        return fast_witness(pl, c1, spec["partition"])
    setup = _setup(spec["proof_type"], spec["cache_dir"], spec["variant"])
    return c2.partition_witness(setup, c1, spec["partition"])
