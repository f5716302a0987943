"""Groth16 keys and proofs (names as in the paper and arkworks).

All point arrays are affine, standard form (see cuzk_ray.curve): G1 ``uint64[n, 2, k]``,
G2 ``uint64[n, 2, 2, k]``, k the Fp limbs of the key's curve (6 for BLS12-381, 4 for BN254;
``meta["curve"]``, cuzk_ray.curves); single points are arrays with n = 1.

The key is in the snarkjs convention (DESIGN.md section 4), for our own circuits too, so one
prover serves both: ``a_query``/``b_g1_query``/``b_g2_query`` hold one point per wire of their
density, ``l_query`` the private wires (n_public + 1 ..), ``h_query`` the n odd Lagrange points of
the 2n domain over delta.

Density (as bellperson's parameter files): a wire that never appears in A (the public-input rows
included, so wires 0..n_public always do) has u_i(tau) = 0, its a_query point is infinity and adds
nothing to the MSM; likewise for B (b_g1 and b_g2 together). A key stored by density keeps only
the other points: ``a_wires`` lists the wires of a_query's points, ``b_wires`` those of b_g1_query
and b_g2_query, sorted, unique, ``uint32`` (n_wires < 2^32: half the bytes of int64, and the GPU
kernels index with 32-bit integers too); ``None`` means every wire (a dense query, as keys made
before densities were stored). The prover gathers the witness values of those wires for the MSMs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..curves import Curve, key_curve

WIRE_INDEX_DTYPE = np.dtype(np.uint32)  # a_wires / b_wires (see the module docstring)


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
    a_query: np.ndarray  # G1[len(a_wires)] (G1[n_wires] when a_wires is None)
    b_g1_query: np.ndarray  # G1[len(b_wires)] (G1[n_wires] when b_wires is None)
    b_g2_query: np.ndarray  # G2[len(b_wires)] (G2[n_wires] when b_wires is None)
    l_query: np.ndarray  # G1[n_wires - n_public - 1]
    h_query: np.ndarray  # G1[domain_size]
    meta: dict = field(default_factory=dict)  # circuit id, n_constraints, provenance, ...
    a_wires: np.ndarray | None = None  # uint32[k]: the wires of a_query's points; None: every wire
    b_wires: np.ndarray | None = None  # uint32[k]: the wires of b_g1_query's and b_g2_query's points

    QUERIES = ("a_query", "b_g1_query", "b_g2_query", "l_query", "h_query")
    DENSITIES = ("a_wires", "b_wires")  # index arrays of a key stored by density (None: dense)
    VK_ARRAYS = ("alpha_g1", "beta_g2", "gamma_g2", "delta_g2", "ic")
    PK_ARRAYS = ("beta_g1", "delta_g1") + QUERIES

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict | None = None) -> ProvingKey:
        """A key from its arrays by name (VK_ARRAYS, PK_ARRAYS, and DENSITIES when the key is
        stored by density): what a key bundle and the dev setup's sinks hold."""
        vk = VerifyingKey(**{n: arrays[n] for n in cls.VK_ARRAYS})
        density = {n: arrays[n] for n in cls.DENSITIES if n in arrays}
        return cls(vk=vk, meta=dict(meta or {}), **{n: arrays[n] for n in cls.PK_ARRAYS}, **density)

    @property
    def nbytes(self) -> int:
        """Bytes of what is stored: the queries (the bulk of the key: what a copy in the object
        store holds) and the density index arrays."""
        return (sum(int(getattr(self, q).nbytes) for q in self.QUERIES)
                + sum(int(x.nbytes) for x in (self.a_wires, self.b_wires) if x is not None))

    @property
    def n_wires(self) -> int:
        # not len(a_query): a key stored by density has fewer a points than wires
        return len(self.l_query) + self.n_public + 1

    @property
    def n_public(self) -> int:
        return self.vk.n_public

    @property
    def domain_size(self) -> int:
        return len(self.h_query)

    @property
    def qap(self) -> str:
        """The H convention the h_query follows (meta "qap"): "snarkjs" (n odd-coset Lagrange
        points, the default) or "bellperson" (m - 1 points tau^i Z(tau) / delta, FILECOIN.md 2.3)."""
        return self.meta.get("qap", "snarkjs")

    @property
    def curve(self) -> Curve:
        """The curve of the key (meta "curve", set by whoever made it; BLS12-381 when absent)."""
        return key_curve(self.meta)

    @property
    def dense(self) -> bool:
        """True when a_query and the b queries hold a point for every wire (no index arrays)."""
        return self.a_wires is None and self.b_wires is None

    def density_index(self, wires: str) -> np.ndarray | None:
        """a_wires or b_wires by name (None: dense there); ValueError naming the known ones otherwise."""
        if wires not in self.DENSITIES:
            raise ValueError(f"proving key: {wires!r} is not a density (known: {', '.join(self.DENSITIES)})")
        return getattr(self, wires)

    def validate(self) -> None:
        """Cross-check the sizes of the queries and the density index arrays; raises ValueError
        naming the inconsistent one. O(points of the indices), never reads the queries' points."""
        m, p = self.n_wires, self.n_public
        k = self.curve.fp_limbs
        for name in ("a_query", "b_g1_query", "l_query", "h_query", "beta_g1", "delta_g1"):
            if getattr(self, name).shape[1:] != (2, k):
                raise ValueError(f"proving key: {name} has shape {getattr(self, name).shape}, expected (n, 2, {k}) "
                                 f"({self.curve.name})")
        for name, arr in (("b_g2_query", self.b_g2_query), ("delta_g2", self.vk.delta_g2)):
            if arr.shape[1:] != (2, 2, k):
                raise ValueError(f"proving key: {name} has shape {arr.shape}, expected (n, 2, 2, {k}) "
                                 f"({self.curve.name})")
        if not 0 <= p < m:
            raise ValueError(f"proving key: {p} public inputs (IC has {p + 1} points) but {m} wires")
        if m > 1 << 32:
            raise ValueError(f"proving key: {m} wires, at most 2^32 (the density indices are uint32)")
        for wires, queries in (("a_wires", ("a_query",)), ("b_wires", ("b_g1_query", "b_g2_query"))):
            idx = getattr(self, wires)
            size = m if idx is None else len(idx)
            if idx is not None:
                _check_wire_index(wires, idx, m)
            for name in queries:
                if len(getattr(self, name)) != size:
                    want = f"{size} (one per wire)" if idx is None else f"{size} (one per wire of {wires})"
                    raise ValueError(f"proving key: {name} has {len(getattr(self, name))} points, expected {want}")
        n = self.domain_size
        m = n + 1 if self.qap == "bellperson" else n  # bellperson's H drops the last coefficient
        if m < 2 or m & (m - 1):
            want = "a power of two minus one (bellperson's H)" if self.qap == "bellperson" else "a power of two"
            raise ValueError(f"proving key: h_query has {n} points, expected {want}")

    def by_density(self) -> ProvingKey:
        """This key with the points at infinity of a_query, b_g1_query and b_g2_query dropped and
        a_wires / b_wires set to the wires kept (left None where no point is at infinity). The
        proofs are the same: an infinity point adds nothing to an MSM. Raises ValueError when
        b_g1_query and b_g2_query disagree on which wires are at infinity (one index serves both).
        Reads every point of the three queries once (a 2^27 dense key: ~31 GB)."""
        a_keep = present_points(self.a_query)
        b1, b2 = present_points(self.b_g1_query), present_points(self.b_g2_query)
        if not np.array_equal(b1, b2):
            bad = int(np.flatnonzero(b1 != b2)[0])
            wire = bad if self.b_wires is None else int(self.b_wires[bad])
            raise ValueError(f"proving key: b_g1_query and b_g2_query disagree on which wires are at infinity "
                             f"(wire {wire} at infinity in {'b_g2_query' if b1[bad] else 'b_g1_query'} only; "
                             f"{int((b1 != b2).sum())} wires differ); a key stored by density needs one "
                             "b_wires for both")
        a_wires, a_q = _keep(self.a_wires, self.a_query, a_keep)
        b_wires, b1_q = _keep(self.b_wires, self.b_g1_query, b1)
        _, b2_q = _keep(self.b_wires, self.b_g2_query, b1)
        out = replace(self, a_query=a_q, b_g1_query=b1_q, b_g2_query=b2_q, a_wires=a_wires, b_wires=b_wires)
        out.validate()
        return out

    def to_dense(self) -> ProvingKey:
        """This key with a point for every wire in a_query, b_g1_query, b_g2_query (infinity,
        all zero, for the wires not in a_wires / b_wires) and no index arrays: for tests and tools
        that want the dense layout (a 2^27 key dense is ~77 GB)."""
        m = self.n_wires

        def spread(idx, q):
            if idx is None:
                return q
            out = np.zeros((m, *q.shape[1:]), dtype=q.dtype)
            out[idx] = q
            return out

        return replace(self, a_query=spread(self.a_wires, self.a_query),
                       b_g1_query=spread(self.b_wires, self.b_g1_query),
                       b_g2_query=spread(self.b_wires, self.b_g2_query), a_wires=None, b_wires=None)


def present_points(points: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """bool[n]: which affine points (G1 or G2 array) are not the point at infinity (all zero),
    a chunk at a time (no copy of the whole array: a memory-mapped query is read once)."""
    n = len(points)
    out = np.empty(n, dtype=bool)
    for lo in range(0, n, chunk):
        out[lo : lo + chunk] = np.asarray(points[lo : lo + chunk]).reshape(min(chunk, n - lo), -1).any(axis=1)
    return out


def _keep(idx, points, keep):
    """(index array, points) after dropping the points not kept; the index stays None when all are."""
    if idx is None and keep.all():
        return None, points
    wires = np.flatnonzero(keep).astype(WIRE_INDEX_DTYPE) if idx is None else np.asarray(idx)[keep]
    return np.ascontiguousarray(wires, dtype=WIRE_INDEX_DTYPE), np.ascontiguousarray(points[keep])


def _check_wire_index(name: str, idx, n_wires: int) -> None:
    """A density index: 1-d uint32, strictly increasing (sorted, unique), every wire < n_wires."""
    if getattr(idx, "ndim", None) != 1 or idx.dtype != WIRE_INDEX_DTYPE:
        raise ValueError(f"proving key: {name} is {getattr(idx, 'dtype', type(idx).__name__)}"
                         f"{list(getattr(idx, 'shape', ()))}, expected a 1-d {WIRE_INDEX_DTYPE} array of wire indices")
    if len(idx) > n_wires:
        raise ValueError(f"proving key: {name} has {len(idx)} wires, the key has {n_wires}")
    if len(idx) and int(idx[-1]) >= n_wires:
        raise ValueError(f"proving key: {name} holds wire {int(idx[-1])}, the key has {n_wires} wires "
                         f"(0..{n_wires - 1})")
    if len(idx) > 1:
        bad = np.flatnonzero(idx[1:] <= idx[:-1])
        if len(bad):
            k = int(bad[0])
            raise ValueError(f"proving key: {name} is not sorted and unique: wire {int(idx[k + 1])} at position "
                             f"{k + 1} after wire {int(idx[k])}")


@dataclass(frozen=True)
class Proof:
    a: np.ndarray  # G1[1]
    b: np.ndarray  # G2[1]
    c: np.ndarray  # G1[1]
