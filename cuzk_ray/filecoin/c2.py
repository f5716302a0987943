"""Filecoin's C2 (SealCommitPhase2): a C1 file proved partition by partition with bellperson's QAP.

The pieces, each a function the engine, the job, the ``c2`` command and the service share:

- ``circuit_setup(proof, cache_dir, variant)``: the partition circuit of a registered proof, recorded
  once from the blank circuit and cached by sector size ("stacked": circuit/partition_cache.py, the
  recording and the witness tape from one synthesis; "inputs": record.py's ``cached_recording``);
- ``partition_witness(setup, c1, k)``: partition k's witness as a CompactWitness ("stacked": the
  fast witness, the tape replayed by numba; ``reference_witness`` is the slow reference
  synthesizer, the oracle of the tests); ``witness_plan(proof, cache_dir)`` is all a synthesis
  worker loads (the tape, not the matrices);
- ``dev_key_files`` / ``ensure_dev_params``: a development key (INSECURE, seeded), made once with
  ``qap="bellperson"`` (on the CPU, or on the GPU with ``backend="cuda"``) and streamed into
  Filecoin's ``.params`` + ``.vk`` under the key cache (params_sink.py: disk and host room checked
  first); ``published_params`` finds Filecoin's own files in a directory by their published names;
  ``load_params`` reads either with the recording's densities;
- ``seal_inputs`` and ``check_multiproof``: every partition's public inputs derived from the C1's
  replica_id, comm_d, comm_r and seed (not from the witness), and the MultiProof verified with the
  bellperson verifier against them before it is written (``write_multiproof``).

``variant``: "stacked", the real StackedDRG partition circuit (circuit/stacked.py), or "inputs", a
small stand-in with the same public inputs (circuit/inputs_standin.py: plumbing tests and demos).
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..field import FrVector, fr_to_limbs
from ..formats.snarkjs_json import write_bytes_atomic
from ..groth16.keys import Proof, ProvingKey, VerifyingKey
from ..witness import CompactWitness, compact
from .c1 import C1Output
from .circuit import replay
from .circuit.fast_witness import fast_witness
from .circuit.inputs_standin import blank_standin, standin_values, synthesize_standin
from .circuit.partition_cache import cached_partition, cached_plan, field_wires
from .circuit.record import Recording, cached_recording, witness_only
from .circuit.replay import ReplayPlan
from .circuit.stacked import blank_stacked_circuit, stacked_circuit_from_c1, synthesize_stacked, tree_shape
from .circuit.tape import WitnessTape
from .parameters_json import published_key_names
from .params import QUERIES, BellpersonVerifyingKey, ParamsError, ParamsFile
from .params_sink import write_dev_params
from .proofs import multiproof_to_bytes
from .public_inputs import replica_partitions_inputs
from .registry import PoRepConfig, RegisteredSealProof
from .verifier import prepare_bellperson, verify_proof

VARIANTS = ("stacked", "inputs")
RECORDINGS = "recordings"  # under the cache dir
KEYS = "keys"
DECODE_CHUNK = 1 << 20  # .params points decoded per step into a bundle (~100 MB of G1, ~200 MB of G2)


@dataclass(frozen=True)
class CircuitSetup:
    """A registered proof's partition circuit, recorded: what every partition's witness and the
    key are checked against."""

    proof: RegisteredSealProof
    variant: str
    recording: Recording
    tape: WitnessTape | None = None  # "stacked": the partition's witness tape

    @functools.cached_property
    def plan(self) -> ReplayPlan | None:
        """The tape in replay form, made on first use (the driver of an engine run never needs it)."""
        return None if self.tape is None else replay.plan(self.tape)

    @property
    def config(self) -> PoRepConfig:
        return self.proof.config

    @property
    def name(self) -> str:
        """The circuit's id: variant, layers and challenges per partition, sector size."""
        c = self.config
        return f"filecoin-{self.variant}-l{c.shape.layers}-c{c.challenges_per_partition}-{c.sector_size}"


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"circuit variant {variant!r} is not one of {', '.join(VARIANTS)}")
    return variant


def synthesis(variant: str, config: PoRepConfig, c1: C1Output | None = None, k: int = 0) -> Callable:
    """The synthesis of partition k of ``c1`` (None: the blank circuit) as ``fn(cs)``."""
    if check_variant(variant) == "inputs":
        values = blank_standin(config) if c1 is None else standin_values(c1, k)
        return lambda cs: synthesize_standin(cs, values)
    shape = tree_shape(config)
    circuit = (blank_stacked_circuit(shape, config.shape.layers, config.challenges_per_partition) if c1 is None
               else stacked_circuit_from_c1(c1, k))
    return lambda cs: synthesize_stacked(cs, circuit)


def circuit_setup(proof: RegisteredSealProof, cache_dir, variant: str = "stacked") -> CircuitSetup:
    """The recorded partition circuit of ``proof`` (synthesized blank the first time, then read from
    the cache: ``<cache_dir>/partitions`` for "stacked", with its witness tape; ``<cache_dir>/recordings``
    for "inputs")."""
    config = check_config(proof)
    if check_variant(variant) == "stacked":
        cache = cached_partition(Path(cache_dir).expanduser(), config)
        return CircuitSetup(proof, variant, cache.recording, cache.tape)
    name = f"filecoin-{variant}-l{config.shape.layers}-c{config.challenges_per_partition}"
    rec = cached_recording(Path(cache_dir).expanduser() / RECORDINGS, name, config.sector_size,
                           synthesis(variant, config))
    return CircuitSetup(proof, variant, rec)


def check_config(proof: RegisteredSealProof) -> PoRepConfig:
    config = proof.config
    if config.non_interactive:
        raise ValueError(f"{proof.name}: NonInteractivePoRep proofs are aggregated (SnarkPack), not proved by c2")
    return config


@functools.lru_cache(maxsize=2)
def witness_plan(proof: RegisteredSealProof, cache_dir: str) -> ReplayPlan:
    """The replay plan of ``proof``'s partition from the partition cache (recorded there the first
    time; its files' digests checked, its arrays mapped from disk and shared by the processes of a
    machine): what a synthesis worker loads, once per process."""
    return cached_plan(Path(cache_dir).expanduser(), check_config(proof))


def check_c1(proof: RegisteredSealProof, c1: C1Output, source: str = "C1") -> None:
    """The C1 is of registered proof ``proof``, with its partition and challenge counts (one line otherwise)."""
    if c1.registered_proof != proof:
        raise ValueError(f"{source}: registered_proof {c1.registered_proof.name}, the circuit is {proof.name}")
    want = proof.config.partitions
    if len(c1.vanilla_proofs) != want:
        raise ValueError(f"{source}: vanilla_proofs holds {len(c1.vanilla_proofs)} partition(s), {proof.name} "
                         f"has {want}")
    per = proof.config.challenges_per_partition
    for k, proofs in enumerate(c1.vanilla_proofs):
        if len(proofs) != per:
            raise ValueError(f"{source}: vanilla_proofs[{k}] holds {len(proofs)} challenge proof(s), a partition of "
                             f"{proof.name} has {per}")


def partition_witness(setup: CircuitSetup, c1: C1Output, k: int, pl: ReplayPlan | None = None) -> CompactWitness:
    """Partition k's full witness (inputs, then aux, in the recording's columns) as a CompactWitness:
    for "stacked" the fast witness (the tape of ``pl`` or the setup's replayed with the C1's values),
    for "inputs" the stand-in's synthesis. Checked against the recording's wire count."""
    if setup.variant == "inputs":
        return compact(reference_witness(setup, c1, k))
    pl = pl or setup.plan
    if pl is None:
        raise ValueError(f"{setup.name}: no witness tape in this setup (made by circuit_setup with variant stacked)")
    w = fast_witness(pl, c1, k)
    if w.n_wires != setup.recording.cs.n_wires:
        raise ValueError(f"partition {k}: the fast witness has {w.n_wires} wires, the recording "
                         f"{setup.recording.cs.n_wires} (a tape and a recording of different circuits?)")
    return w


def full_wires(setup: CircuitSetup) -> int:
    """An upper bound of a partition's witness wires that hold full field elements (the rest are 0/1
    and travel as bits): from the tape for "stacked", every wire otherwise."""
    if setup.tape is None:
        return setup.recording.cs.n_wires
    return field_wires(setup.tape, setup.config.challenges_per_partition)


def reference_witness(setup: CircuitSetup, c1: C1Output, k: int) -> FrVector:
    """Partition k's witness by the reference synthesizer (slow: the oracle of the fast witness),
    checked against the recording's counts."""
    w = witness_only(synthesis(setup.variant, setup.config, c1, k), setup.recording.shape)
    return FrVector(fr_to_limbs(w))  # reduced by construction (field arithmetic mod r)


# --- keys ------------------------------------------------------------------------------------------------


def dev_key_files(setup: CircuitSetup, cache_dir, setup_seed: int = 0) -> tuple[Path, Path]:
    """Where the development key of ``setup`` made with ``setup_seed`` is cached: (.params, .vk),
    named after the circuit (not a published name: parameters.json's digests do not apply)."""
    stem = Path(cache_dir).expanduser() / KEYS / f"{setup.name}-setup{setup_seed}"
    return stem.with_name(stem.name + ".params"), stem.with_name(stem.name + ".vk")


def dev_meta(setup_seed: int) -> dict:
    return {"insecure_dev_setup": True, "seed": setup_seed, "qap": "bellperson"}


def ensure_dev_params(setup: CircuitSetup, cache_dir, setup_seed: int = 0, backend: str = "cpu") -> tuple[Path, bool]:
    """(the .params path, made now?): the cached development key, or a new one made by the setup on
    ``backend`` ("cpu", or "cuda": the GPU computes the scalars and points) with bellperson's QAP,
    streamed into the .params as it is made (params_sink.py: room checked first, .vk written, the
    .params renamed into place last, which marks the key complete)."""
    params, vk = dev_key_files(setup, cache_dir, setup_seed)
    if params.is_file() and vk.is_file():
        return params, False
    params.parent.mkdir(parents=True, exist_ok=True)
    write_dev_params(params, vk, setup.recording.cs, setup_seed, meta={"circuit_id": setup.name}, backend=backend)
    return params, True


def ensure_dev_bundle(setup: CircuitSetup, cache_dir, setup_seed: int = 0,
                      backend: str = "cpu") -> tuple[ProvingKey, Path, bool]:
    """(key, .vk path, made now?): the development key of ``setup`` (the same key ensure_dev_params
    writes as .params) as a native key bundle under the key cache, memory-mapped. What a run on one
    node wants at 32 GiB: the prover actors map the bundle (one page-cache copy, none in Ray's
    object store), where a key decoded from .params sits in the driver's memory and again in the
    object store (2 x 48 GB: the H200's 128 GiB host ran out). The matrices are hard links to the
    partition cache's files; disk room is checked first (one line, need vs have)."""
    from ..formats.native import load_bundle
    from ..groth16.setup import dev_setup_bundle
    from .params import write_vk
    from .params_sink import check_room, params_layout, setup_host_bytes

    params, vk = dev_key_files(setup, cache_dir, setup_seed)
    path = params.with_suffix(".bundle")
    made = not (path / "manifest.json").is_file()
    if made:
        cs = setup.recording.cs
        layout = params_layout(cs)
        check_room(path, layout.total_bytes, setup_host_bytes(layout, cs.n_wires, backend),
                   what=f"the development key bundle of {cs.name}")
        meta = {"circuit_id": setup.name, **dev_meta(setup_seed)}
        dev_setup_bundle(path, cs, setup_seed, meta=meta, backend=backend, qap="bellperson")
    pk, _cs = load_bundle(path, verify_hashes=False)  # written here by this code; shapes still checked
    if pk.qap != "bellperson" or pk.n_wires != setup.recording.cs.n_wires:
        raise ValueError(f"{path}: a key of {pk.n_wires} wires, {pk.qap} H; the {setup.name} circuit has "
                         f"{setup.recording.cs.n_wires} wires (bellperson H): remove it to make it again")
    if made or not vk.is_file():
        write_vk(vk, BellpersonVerifyingKey.from_proving_key(pk))
    return pk, vk, made


def published_params(params_dir, setup: CircuitSetup) -> tuple[Path, Path]:
    """(.params, .vk) of Filecoin's published key for the setup's sector size in ``params_dir``,
    named as parameters.json names them; ValueError naming the missing file."""
    names = published_key_names(setup.config.sector_size)
    paths = tuple(Path(params_dir).expanduser() / n for n in names)
    for p in paths:
        if not p.is_file():
            raise ValueError(f"circuit.params={params_dir}: no {p.name} (the published {p.suffix} of "
                             f"{setup.config.sector_size}-byte sectors, as parameters.json names it)")
    return paths


def mapped_params(path, setup: CircuitSetup, cache_dir, meta: dict | None = None) -> ProvingKey:
    """The key of a .params file as ``load_params`` gives it, but memory-mapped from a native key
    bundle under the key cache, decoded into it once (query by query, DECODE_CHUNK points at a
    time: host memory stays bounded) and found again while the .params is the same file (path,
    size, mtime). Why: a 32 GiB key decoded into the driver's memory (48 GB) gets a second copy in
    Ray's object store, which a 128 GiB host cannot hold; a mapped bundle is one page-cache copy
    that the prover actors map too (engines/ray_executor.key_source). Disk room is checked first
    (~ the .params' size; the matrices are hard links to the partition cache's files)."""
    from ..formats.native import KeyBundleError, load_bundle

    path = Path(path).expanduser().resolve()
    st = path.stat()
    source = {"params": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    bundle = Path(cache_dir).expanduser() / KEYS / f"{path.name}.bundle"  # beside a dev key bundle, not it
    try:
        pk, _ = load_bundle(bundle, verify_hashes=False)
        if pk.meta.get("params_source") == source:
            return pk
    except KeyBundleError:
        pass  # none yet, or a half-removed one: decode again
    decode_params(path, bundle, setup, {"source": str(path), "qap": "bellperson", **(meta or {}),
                                        "params_source": source})
    try:
        return load_bundle(bundle, verify_hashes=False)[0]
    except KeyBundleError as e:  # the counts of a key of another circuit: nothing kept
        shutil.rmtree(bundle, ignore_errors=True)
        raise ParamsError(f"{path}: {e}") from None


def decode_params(path: Path, bundle: Path, setup: CircuitSetup, meta: dict) -> Path:
    """Decode .params ``path`` into a native key bundle at ``bundle`` (replacing one there), its a/b
    queries on the recording's densities, counts checked against the circuit first."""
    from ..formats.native import BundleWriter, bundle_manifest, matrix_arrays
    from .params_sink import check_room

    cs, d = setup.recording.cs, setup.recording.densities
    wires = {"a_wires": d.a_wires().astype("uint32"), "b_wires": d.b_wires().astype("uint32")}
    with ParamsFile(path) as pf:
        check_key_counts(pf, setup, path)
        check_room(bundle, path.stat().st_size, what=f"the key of {path.name} as a mapped bundle")
        with BundleWriter(bundle, overwrite=True) as w:
            for name in ProvingKey.VK_ARRAYS + ("beta_g1", "delta_g1"):
                w.add(name, getattr(pf.vk, name))
            for qname, span in pf.spans.items():
                field = QUERIES[qname][1]
                with w.stream(field, "uint64", (span.count, *span.group.shape)) as out:
                    for beg in range(0, span.count, DECODE_CHUNK):
                        out.write(pf.query(qname, beg, beg + DECODE_CHUNK))
            for name, arr in {**wires, **matrix_arrays(cs)}.items():
                w.add(name, arr)
            return w.commit(bundle_manifest(meta, cs.n_wires, cs.n_public, pf.spans["h"].count, cs))


def check_key_counts(pf: ParamsFile, setup: CircuitSetup, path) -> None:
    """ParamsError naming the .params when its public inputs are not the circuit's."""
    shape = setup.recording.shape
    if pf.vk.n_inputs != shape.num_inputs - 1:
        raise ParamsError(f"{path}: the key takes {pf.vk.n_inputs} public inputs, the {setup.name} circuit has "
                          f"{shape.num_inputs - 1} (a key of another circuit or sector size?)")


def load_params(path, setup: CircuitSetup, meta: dict | None = None) -> ProvingKey:
    """The proving key of a .params file (authenticated by digest when its name is a published one),
    its a/b queries placed on the recording's densities, checked against the circuit's counts."""
    d = setup.recording.densities
    a_wires, b_wires = (x.astype("uint32") for x in (d.a_wires(), d.b_wires()))
    with ParamsFile(path) as pf:
        check_key_counts(pf, setup, path)
        return pf.proving_key(a_wires, b_wires, meta={"source": str(path), "qap": "bellperson", **(meta or {})})


# --- the seal proof ----------------------------------------------------------------------------------------


def seal_inputs(c1: C1Output) -> list[list[int]]:
    """Every partition's public inputs, from the C1's replica_id, comm_d, comm_r and seed (the
    challenges and parents derived again, as a verifier does)."""
    config = c1.registered_proof.config
    return replica_partitions_inputs(config, c1.replica_id, c1.comm_d, c1.comm_r, c1.seed,
                                     list(range(config.partitions)))


def check_multiproof(vk: BellpersonVerifyingKey | VerifyingKey, c1: C1Output, proofs: list[Proof]) -> None:
    """ValueError naming the partitions whose proof does not verify (bellperson's verifier) against
    the inputs derived from the C1 (``seal_inputs``)."""
    inputs = seal_inputs(c1)
    if len(proofs) != len(inputs):
        raise ValueError(f"seal proof: {len(proofs)} partition proof(s), the C1 has {len(inputs)} partition(s)")
    pvk = prepare_bellperson(vk)
    bad = [k for k, (p, x) in enumerate(zip(proofs, inputs)) if not verify_proof(pvk, p, x)]
    if bad:
        raise ValueError(f"seal proof: partition(s) {', '.join(map(str, bad))} do not verify against the C1's "
                         "public inputs")


def write_multiproof(path, vk: BellpersonVerifyingKey | VerifyingKey, c1: C1Output, proofs: list[Proof]) -> bytes:
    """Verify (check_multiproof), then write the 192-byte-per-partition MultiProof (temporary name,
    fsync, rename); returns its bytes."""
    check_multiproof(vk, c1, proofs)
    data = multiproof_to_bytes(proofs)
    write_bytes_atomic(path, data, fsync=True)
    return data
