"""Circuit sources for the engine: a circuit knows its id, builds its constraint system and key,
and synthesizes the witness of one partition from a plain-dict spec (what Ray tasks receive)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import porep


@dataclass(frozen=True)
class PorepCircuit:
    """The built-in PoRep-shaped circuit (``circuit=porep``)."""

    constraints: int = 4096
    public: int = 4
    field_share: float = 0.05
    circuit_seed: int = 0
    partitions: int = 10

    kind = "porep"

    @classmethod
    def from_config(cls, c: dict) -> "PorepCircuit":
        fields = ("constraints", "public", "field_share", "circuit_seed", "partitions")
        out = cls(**{k: c[k] for k in fields if k in c})
        if out.partitions < 1:
            raise ValueError(f"circuit.partitions={out.partitions}: must be at least 1")
        porep.PorepLayout.make(out.constraints, out.public, out.field_share)  # validates sizes
        return out

    @property
    def circuit_id(self) -> str:
        return f"porep-c{self.constraints}-p{self.public}-f{self.field_share:g}-s{self.circuit_seed}"

    def build(self):
        return porep.build_circuit(self.constraints, self.public, self.field_share, self.circuit_seed)

    def synth_spec(self, seed: int, proof: int, partition: int) -> dict:
        return {"kind": self.kind, "constraints": self.constraints, "public": self.public,
                "field_share": self.field_share, "circuit_seed": self.circuit_seed,
                "seed": seed, "proof": proof, "partition": partition}

    def domain_size(self) -> int:
        return self.constraints

    def witness_bytes(self) -> int:
        return porep.PorepLayout.make(self.constraints, self.public, self.field_share).n_wires * 32


def synthesize(spec: dict) -> np.ndarray:
    """Witness limbs for a synthesis spec made by a circuit's ``synth_spec``."""
    if spec["kind"] == "porep":
        return porep.synthesize(spec["constraints"], spec["public"], spec["field_share"],
                                spec["circuit_seed"], spec["seed"], spec["proof"], spec["partition"])
    raise ValueError(f"unknown circuit kind {spec['kind']!r}")


def make_circuit(c: dict):
    kind = c.get("kind", "porep")
    if kind == "porep":
        return PorepCircuit.from_config(c)
    raise ValueError(f"circuit.kind={kind!r} is not a known circuit (known: porep)")
