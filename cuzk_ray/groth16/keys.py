"""Groth16 keys and proofs (names as in the paper and arkworks).

All point arrays are affine, standard form (see cuzk_ray.curve): G1 ``uint64[n, 2, 6]``,
G2 ``uint64[n, 2, 2, 6]``; single points are arrays with n = 1.

The key is in the snarkjs convention (DESIGN.md section 4), for our own circuits too, so one
prover serves both: ``a_query``/``b_g1_query``/``b_g2_query`` cover all wires, ``l_query`` the
private wires (n_public + 1 ..), ``h_query`` the n odd Lagrange points of the 2n domain over delta.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class VerifyingKey:
    alpha_g1: np.ndarray
    beta_g2: np.ndarray
    gamma_g2: np.ndarray
    delta_g2: np.ndarray
    ic: np.ndarray  # G1[n_public + 1]: gamma^-1 (beta u_i + alpha v_i + w_i) for public wires

    @property
    def n_public(self) -> int:
        return len(self.ic) - 1


@dataclass(frozen=True)
class ProvingKey:
    vk: VerifyingKey
    beta_g1: np.ndarray
    delta_g1: np.ndarray
    a_query: np.ndarray  # G1[n_wires]
    b_g1_query: np.ndarray  # G1[n_wires]
    b_g2_query: np.ndarray  # G2[n_wires]
    l_query: np.ndarray  # G1[n_wires - n_public - 1]
    h_query: np.ndarray  # G1[domain_size]
    meta: dict = field(default_factory=dict)  # circuit id, n_constraints, provenance, ...

    QUERIES = ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query")
    VK_ARRAYS = ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic")
    PK_ARRAYS = ("beta_g1", "delta_g1") + QUERIES
    DENSITY_ARRAYS = ("a_wires", "b_wires")

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict | None = None) -> ProvingKey:
        """A key from its arrays by name (VK_ARRAYS, PK_ARRAYS, and DENSITY_ARRAYS when the key
        is stored by density): what a key bundle and the dev setup's sinks hold."""
        vk = VerifyingKey(**{n: arrays[n] for n in cls.VK_ARRAYS})
        density = {n: arrays[n] for n in cls.DENSITY_ARRAYS if n in arrays}
        return cls(vk=vk, meta=dict(meta or {}), **{n: arrays[n] for n in cls.PK_ARRAYS}, **density)

    @property
    def nbytes(self) -> int:
        """Bytes of the queries (the bulk of the key: what a copy in the object store holds)."""
        return sum(int(getattr(self, q).nbytes) for q in self.QUERIES)

    @property
    def n_wires(self) -> int:
        return len(self.a_query)

    @property
    def n_public(self) -> int:
        return self.vk.n_public

    @property
    def domain_size(self) -> int:
        return len(self.h_query)

    def validate(self) -> None:
        """Cross-check the sizes of the queries; raises ValueError naming the inconsistent one."""
        m, p = self.n_wires, self.n_public
        for name in ("a_query", "b_g1_query", "l_query", "h_query", "beta_g1", "delta_g1"):
            if getattr(self, name).shape[1:] != (2, 6):
                raise ValueError(f"proving key: {name} has shape {getattr(self, name).shape}, expected (n, 2, 6)")
        for name, arr in (("b_g2_query", self.b_g2_query), ("delta_g2", self.vk.delta_g2)):
            if arr.shape[1:] != (2, 2, 6):
                raise ValueError(f"proving key: {name} has shape {arr.shape}, expected (n, 2, 2, 6)")
        if not 0 <= p < m:
            raise ValueError(f"proving key: {p} public inputs (IC has {p + 1} points) but {m} wires")
        expect = {
            "b_g1_query": m, "b_g2_query": m, "l_query": m - p - 1,
        }
        for name, size in expect.items():
            if len(getattr(self, name)) != size:
                raise ValueError(f"proving key: {name} has {len(getattr(self, name))} points, expected {size}")
        n = self.domain_size
        if n < 2 or n & (n - 1):
            raise ValueError(f"proving key: h_query has {n} points, expected a power of two")


@dataclass(frozen=True)
class Proof:
    a: np.ndarray  # G1[1]
    b: np.ndarray  # G2[1]
    c: np.ndarray  # G1[1]
