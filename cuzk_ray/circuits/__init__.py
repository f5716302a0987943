"""Circuit sources for the engine: a circuit knows its id, builds its constraint system and key,
and synthesizes the witness of one partition from a plain-dict spec (what Ray tasks receive)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..field import FrVector, checked_fr
from ..witness import CompactWitness, compact, compact_bytes
from . import porep
from .input_files import expand_files, file_names

MIB = 1 << 20
# What a fresh process's first synthesis task allocates besides its arrays (the modules it imports
# then, numpy's first calls): ~2.3-3 MiB traced for the numpy-only paths.
NUMPY_TASK_BYTES = 4 * MIB


@dataclass(frozen=True)
class PorepCircuit:
    """The built-in PoRep-shaped circuit (``circuit=porep``)."""

    constraints: int = 4096
    public: int = 4
    field_share: float = 0.05
    circuit_seed: int = 0
    partitions: int = 10
    shape: str = "default"  # "filecoin": the proportions of Filecoin's PoRep partition (porep.FilecoinLayout)

    kind = "porep"
    local_files = False
    splits_inputs = False  # each partition is synthesized from its seeds
    key_bundle = True  # the key is a native bundle: on one node the actors map it (not in the object store)

    @classmethod
    def from_config(cls, c: dict) -> PorepCircuit:
        fields = ("constraints", "public", "field_share", "circuit_seed", "partitions", "shape")
        out = cls(**{k: c[k] for k in fields if k in c})
        if out.partitions < 1:
            raise ValueError(f"circuit.partitions={out.partitions}: must be at least 1")
        if out.circuit_seed < 0:  # numpy's seed sequences take none: refused here, naming the field
            raise ValueError(f"circuit.circuit_seed={out.circuit_seed}: must be at least 0")
        out.layout()  # validates sizes
        n = out.constraints
        if n & (n - 1):  # the QAP domain is the constraint count (porep.py): 1000 would be proved as 1024
            raise ValueError(f"circuit.constraints={n}: not a power of two (the QAP domain is the constraint "
                             f"count; {1 << (n.bit_length() - 1)} or {1 << n.bit_length()}?)")
        return out

    def layout(self):
        """The circuit's layout (sizes only, nothing built)."""
        return porep.make_layout(self.constraints, self.public, self.field_share, self.shape)

    def key_shape(self, quick: bool = False):
        """The sizes of this circuit's key (stored by density, as dev_setup makes it) and matrices
        (preflight), from the layout and the circuit seed alone (nothing built). ``quick``: the
        default shape's density counted as its floor (PorepLayout.density_floor: a lower bound,
        no random draws), so that the preflight can refuse a size that cannot fit first."""
        from ..preflight import KeyShape

        lay = self.layout()
        if quick and self.shape == "default":
            a_points, b_points = lay.density_floor()
        else:
            a_points, b_points = lay.density(self.circuit_seed)
        return KeyShape(lay.n_wires, self.public, self.constraints, *lay.nnz(), a_points=a_points, b_points=b_points)

    def key_cached(self, cache_dir, setup_seed: int = 0) -> bool:
        from ..keystore import dev_key_cached

        return dev_key_cached(self, cache_dir, setup_seed)

    @property
    def key_label(self) -> str:
        """How errors name the key (a proof that does not verify names the key and the witness)."""
        return f"the development key of {self.circuit_id}"

    @property
    def circuit_id(self) -> str:
        if self.shape != "default":  # field_share plays no part in the other shapes
            return f"porep-{self.shape}-c{self.constraints}-p{self.public}-s{self.circuit_seed}"
        return f"porep-c{self.constraints}-p{self.public}-f{self.field_share:g}-s{self.circuit_seed}"

    def build(self):
        return porep.build_circuit(self.constraints, self.public, self.field_share, self.circuit_seed, self.shape)

    def load_key(self, cache_dir, setup_seed: int = 0, setup_backend: str = "auto"):
        """The cached development key (made by the INSECURE dev setup on first use)."""
        from ..keystore import ensure_dev_key

        pk, cs, path, created = ensure_dev_key(self, cache_dir, setup_seed, setup_backend)
        m = pk.meta
        made = (f"created by the INSECURE dev setup: build {m.get('build_seconds', 0):.1f} s, scalars "
                f"{m.get('setup_scalars_seconds', 0):.1f} s, setup {m.get('setup_seconds', 0):.1f} s")
        return pk, cs, {"key": str(path), "note": made if created else "cached"}

    def synth_spec(self, seed: int, proof: int, partition: int) -> dict:
        return {"kind": self.kind, "constraints": self.constraints, "public": self.public,
                "field_share": self.field_share, "circuit_seed": self.circuit_seed,
                "seed": seed, "proof": proof, "partition": partition, "shape": self.shape}

    def domain_size(self) -> int:
        return self.constraints

    def witness_bytes(self) -> int:
        """Bytes of the full witness (standard-form limbs)."""
        return self.layout().n_wires * 32

    def partition_batch_bytes(self) -> int:
        """Bytes of one partition's compact witness (its Arrow batch), from the layout: every wire
        that can hold a full field element counted as one (an upper bound: a few may be 0 or 1)."""
        lay = self.layout()
        return compact_bytes(lay.n_wires, lay.n_field_wires)

    def synthesis_bytes(self) -> int:
        """Peak heap of one synthesis task, a fresh process's first (admission counts it for every
        partition in flight). The default shape makes the full witness, then compacts it: ~60 bytes
        a wire traced. The filecoin shape makes its bits, words and fields apart: ~4-5 bytes a wire,
        plus ~37 MiB the first time a process runs its numba products. An estimate, checked to lie
        between the traced peak and twice it (tests/test_synthesis_memory.py)."""
        n = self.layout().n_wires
        if self.shape == "default":
            return 64 * n + NUMPY_TASK_BYTES
        return 6 * n + 48 * MIB

    def proof_label(self, proof: int) -> str:
        """How errors name the proof-th proof."""
        return f"proof-{proof:03d}"

    def proof_names(self) -> None:
        """None: the engine's default ids (proof-000, proof-001, ...)."""
        return None

    def proof_info(self, proof: int) -> dict:
        return {}


@dataclass(frozen=True)
class SnarkjsCircuit:
    """A circom circuit set up with snarkjs (``circuit=snarkjs``): the key is the zkey, each
    ``.wtns`` file is one proof of one partition. Witness files are read where the driver runs
    (synthesis is pinned to the driver's node), so they need not exist on other nodes."""

    zkey: str
    witness: tuple = ()
    r1cs: str | None = None
    meta: dict = field(default_factory=dict, compare=False)  # filled by load_key: n_wires, domain, sha

    kind = "snarkjs"
    partitions = 1
    local_files = True
    splits_inputs = False  # one .wtns file per proof, one partition
    key_bundle = False  # the converted key is put in the object store, even on one node

    @classmethod
    def from_config(cls, c: dict) -> SnarkjsCircuit:
        if not c.get("zkey"):
            raise ValueError("circuit=snarkjs needs circuit.zkey=PATH (a Groth16 .zkey over BLS12-381 or BN254)")
        witness = expand_witnesses(c.get("witness"))
        return cls(os.path.abspath(c["zkey"]), witness, os.path.abspath(c["r1cs"]) if c.get("r1cs") else None)

    def load_key(self, cache_dir, setup_seed: int = 0, setup_backend: str = "auto"):
        """(pk, cs, info) from the zkey (converted once, cached by SHA-256), cross-checked against the
        .r1cs when given, and every witness file checked against the key's wire count."""
        from ..formats.snarkjs import CircuitSizes, check_zkey_against_r1cs, read_r1cs, read_wtns
        from ..formats.zkey_cache import load_zkey_cached

        pk, cs = load_zkey_cached(self.zkey, self.zkey_cache_dir(cache_dir))
        if self.r1cs:
            sizes = CircuitSizes(cs.n_wires, cs.n_public, cs.n_constraints, os.path.basename(self.zkey))
            check_zkey_against_r1cs(cs, read_r1cs(self.r1cs, sizes), self.zkey)  # headers compared first
        # every file is read here anyway: its compact size is the partition's batch (the largest counts)
        of = os.path.basename(self.zkey)  # a witness of another curve is refused naming both
        batch = max((compact(read_wtns(w, pk.n_wires, pk.curve, of)).nbytes for w in self.witness),
                    default=compact_bytes(pk.n_wires, pk.n_wires))
        self.meta.update(n_wires=pk.n_wires, domain=pk.domain_size, sha256=pk.meta.get("sha256", ""), batch_bytes=batch)
        note = "converted from the zkey" if pk.meta.get("cache") == "miss" else "converted key cached"
        return pk, cs, {"key": self.zkey, "note": f"{note}, {len(self.witness)} witness file(s) checked"}

    def key_shape(self, quick: bool = False):
        """The key's sizes from the zkey's headers (formats.snarkjs.read_zkey_sizes; nothing else
        read) for the preflight: wires, public inputs, domain, and section 4's coefficient count as
        the non-zeros of A and B (C is not stored). Which points are at infinity is known only once
        the sections are read, so the queries are counted dense: an upper bound (``dense_bound``;
        the need says so). Keeps n_wires and domain in ``meta`` for the estimates made before
        load_key (partition_batch_bytes). ``quick`` changes nothing: the headers are cheap."""
        from ..formats.snarkjs import read_zkey_sizes
        from ..preflight import ZKEY_BYTES_PER_NNZ, KeyShape

        z = read_zkey_sizes(self.zkey)
        self.meta.setdefault("n_wires", z.n_vars)
        self.meta.setdefault("domain", z.domain)
        return KeyShape(z.n_vars, z.n_public, z.domain, z.n_coefficients, 0, 0,
                        bytes_per_nnz=ZKEY_BYTES_PER_NNZ, dense_bound=True)

    def key_cached(self, cache_dir, setup_seed: int = 0) -> bool:
        """Whether this zkey's conversion (checked points) is in the cache (by SHA-256)."""
        from ..formats.zkey_cache import zkey_cached

        return zkey_cached(self.zkey, self.zkey_cache_dir(cache_dir))

    @staticmethod
    def zkey_cache_dir(cache_dir) -> str:
        """Where converted zkeys are cached under the job's cache_dir."""
        return os.path.join(os.path.expanduser(os.fspath(cache_dir)), "zkeys")

    @property
    def key_label(self) -> str:
        """How errors name the key: the zkey's file name."""
        return os.path.basename(self.zkey)

    @property
    def circuit_id(self) -> str:
        return f"snarkjs-{os.path.basename(self.zkey)}-{self.meta.get('sha256', '')[:12]}"

    def synth_spec(self, seed: int, proof: int, partition: int) -> dict:
        return {"kind": "wtns", "path": self.witness[proof], "n_wires": self.meta["n_wires"], "partition": partition}

    def domain_size(self) -> int:
        return self.meta["domain"]

    def witness_bytes(self) -> int:
        """Bytes of the full witness (standard-form limbs); needs load_key first."""
        return self.meta["n_wires"] * 32

    def partition_batch_bytes(self) -> int:
        """Bytes of the largest witness file's compact form, measured when load_key read them;
        before any file is read, the upper bound of a witness of full field elements only
        (``compact_bytes(n_wires, n_wires)``: the full size plus two bitmaps)."""
        n = self.meta["n_wires"]
        return self.meta.get("batch_bytes", compact_bytes(n, n))

    def synthesis_bytes(self) -> int:
        """Peak heap of one synthesis task (read_wtns's checked copy of the values, then the compact
        form's masks): ~41 bytes a wire traced (tests/test_synthesis_memory.py)."""
        return 48 * self.meta["n_wires"] + NUMPY_TASK_BYTES

    def proof_label(self, proof: int) -> str:
        return f"witness {self.witness[proof]}"

    def proof_names(self) -> tuple[str, ...]:
        """Each proof's id in output_dir/proofs/: its witness file's name (see witness_names)."""
        return witness_names(self.witness)

    def proof_info(self, proof: int) -> dict:
        return {"witness": self.witness[proof]}


WITNESS_SUFFIX = ".wtns"
WITNESS_USAGE = ("circuit=snarkjs needs circuit.witness=W.wtns, a list [W1.wtns,...], a folder or a glob "
                 "(one proof per witness file)")


def expand_witnesses(given) -> tuple[str, ...]:
    """``circuit.witness`` as absolute paths, in order (see expand_files)."""
    return expand_files(given, WITNESS_SUFFIX, "circuit.witness", WITNESS_USAGE)


def witness_names(paths) -> tuple[str, ...]:
    """Proof ids named after the witness files (see file_names)."""
    return file_names(paths, WITNESS_SUFFIX, "witness")


def synthesize(spec: dict) -> CompactWitness:
    """The compact witness for a synthesis spec made by a circuit's ``synth_spec`` (a plain dict:
    what Ray tasks receive). Checked here, once: porep values are reduced by construction, a .wtns
    file is range-checked by its reader. The filecoin shape is compacted from its parts (its full
    witness is never made); the default shape and .wtns files are compacted from the full vector."""
    if spec["kind"] == "porep":
        shape = spec.get("shape", "default")
        c, p, seeds = spec["constraints"], spec["public"], (spec["seed"], spec["proof"], spec["partition"])
        if shape == "filecoin":
            lay = porep.make_layout(c, p, spec["field_share"], shape)
            return porep.compact_filecoin(lay, porep.synthesize_filecoin_parts(c, p, spec["circuit_seed"], *seeds))
        limbs = porep.synthesize(c, p, spec["field_share"], spec["circuit_seed"], *seeds, shape=shape)
        return compact(FrVector(limbs))  # reduced by construction: no range check
    if spec["kind"] == "wtns":
        from ..formats.snarkjs import read_wtns

        return compact(checked_fr(read_wtns(spec["path"], spec["n_wires"]), spec["path"]))  # an FrVector passes
    if spec["kind"] == "filecoin":
        from .filecoin import synthesize_partition

        return synthesize_partition(spec)  # reduced by construction (field arithmetic mod r)
    raise ValueError(f"unknown circuit kind {spec['kind']!r}")


def split_inputs(spec: dict) -> tuple:
    """Each partition's share of the input a proof's synthesis spec names, read once (for the
    circuits whose ``splits_inputs`` is true: Filecoin's C1), indexed by partition."""
    if spec["kind"] == "filecoin":
        from .filecoin import split_c1

        return split_c1(spec)
    raise ValueError(f"circuit kind {spec['kind']!r} does not split its inputs")


def with_share(spec: dict, share, plan=None) -> dict:
    """A partition's synthesis spec with its share of the proof's input (split_inputs) in place
    of what names the input (its file: synthesis then cannot read it), and ``plan`` (the
    circuit's synthesis_plan, on a cluster) in place of the files it comes from."""
    if spec["kind"] == "filecoin":
        from .filecoin import with_share as filecoin_share

        return filecoin_share(spec, share, plan)
    raise ValueError(f"circuit kind {spec['kind']!r} does not split its inputs")


def make_circuit(c: dict):
    kind = c.get("kind", "porep")
    if kind == "porep":
        return PorepCircuit.from_config(c)
    if kind == "snarkjs":
        return SnarkjsCircuit.from_config(c)
    if kind == "filecoin":
        from .filecoin import FilecoinCircuit

        return FilecoinCircuit.from_config(c)
    raise ValueError(f"circuit.kind={kind!r} is not a known circuit (known: porep, snarkjs, filecoin)")
