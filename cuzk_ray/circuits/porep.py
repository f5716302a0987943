"""A PoRep-shaped built-in circuit: one fixed constraint system per configuration, many
partitions whose witnesses are mostly bits (like the SHA-256-heavy Filecoin circuits) with a
configurable share of full field elements. Everything is vectorized numpy and deterministic.

Wires: [1 | public (P) | input bits | xor bits | field inputs | products | packed words]
Rows (m = constraints - P - 1, so the QAP domain is exactly ``constraints`` for a power of two):
  boolean   b * (b - 1) = 0                 A={b:1}          B={b:1, 1:-1}   C={}
  xor       (2a) * b = a + b - c            A={a:2}          B={b:1}         C={a:1, b:1, c:-1}
  pack      (sum_k 2^k bit_k) * 1 = word    A={bit_k:2^k}    B={1:1}         C={word:1}
  mul       x * y = z                       A={x:1}          B={y:1}         C={z:1}
  public    pub_k * 1 = z_k                 A={pub_k:1}      B={1:1}         C={z_k:1}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..field import FR_LIMBS, R_MOD, fr_to_limbs, limbs_to_ints
from ..r1cs import ConstraintSystem, CsrMatrix

PACK_BITS = 32
_MINUS_ONE = fr_to_limbs([R_MOD - 1])[0]


@dataclass(frozen=True)
class PorepLayout:
    constraints: int
    public: int
    n_bits: int
    n_xor: int
    n_field_in: int
    n_mul: int
    n_pack: int

    @classmethod
    def make(cls, constraints: int, public: int = 4, field_share: float = 0.05) -> "PorepLayout":
        if public < 1:
            raise ValueError(f"circuit.public={public}: at least one public input is needed")
        if not 0.0 <= field_share <= 0.5:
            raise ValueError(f"circuit.field_share={field_share}: must be within [0, 0.5]")
        m = constraints - public - 1
        n_mul = max(public, round(field_share * m))
        n_pack = m // 64
        rest = m - public - n_mul - n_pack
        if constraints < 64 or rest < 4:
            raise ValueError(f"circuit.constraints={constraints}: too small for {public} public inputs (need >= 64)")
        n_bits = (rest + 1) // 2
        return cls(constraints, public, n_bits, rest - n_bits, max(2, n_mul // 4), n_mul, n_pack)

    @property
    def n_rows(self) -> int:
        return self.n_bits + self.n_xor + self.n_pack + self.n_mul + self.public

    @property
    def n_wires(self) -> int:
        return 1 + self.public + self.n_bits + self.n_xor + self.n_field_in + self.n_mul + self.n_pack

    def offsets(self) -> dict:
        o, out = 1 + self.public, {}
        for name in ("bits", "xor", "field_in", "mul", "pack"):
            out[name] = o
            o += {"bits": self.n_bits, "xor": self.n_xor, "field_in": self.n_field_in,
                  "mul": self.n_mul, "pack": self.n_pack}[name]
        return out


@dataclass(frozen=True)
class _Wiring:
    """The random but fixed choice of operands (from the circuit seed)."""

    xor_a: np.ndarray
    xor_b: np.ndarray
    mul_x: np.ndarray
    mul_y: np.ndarray
    pack_bits: np.ndarray  # [n_pack, 32] indices into the input bits


def _wiring(lay: PorepLayout, circuit_seed: int) -> _Wiring:
    rng = np.random.default_rng([circuit_seed, lay.constraints, lay.public])
    xa = rng.integers(0, lay.n_bits, lay.n_xor)
    xb = (xa + rng.integers(1, lay.n_bits, lay.n_xor)) % lay.n_bits  # b != a
    return _Wiring(xa, xb, rng.integers(0, lay.n_field_in, lay.n_mul), rng.integers(0, lay.n_field_in, lay.n_mul),
                   rng.integers(0, lay.n_bits, (lay.n_pack, PACK_BITS)))


def _coeffs(small: np.ndarray) -> np.ndarray:
    """int64 coefficients (-1 meaning r - 1) -> standard-form uint64[nnz, 4]."""
    out = np.zeros((len(small), FR_LIMBS), dtype=np.uint64)
    out[:, 0] = np.where(small >= 0, small, 0).astype(np.uint64)
    out[small == -1] = _MINUS_ONE
    return out


def build_circuit(constraints: int, public: int = 4, field_share: float = 0.05, circuit_seed: int = 0) -> ConstraintSystem:
    """The constraint system (same for every partition)."""
    lay = PorepLayout.make(constraints, public, field_share)
    wr = _wiring(lay, circuit_seed)
    off = lay.offsets()
    row0 = {"bits": 0}
    row0["xor"] = lay.n_bits
    row0["pack"] = row0["xor"] + lay.n_xor
    row0["mul"] = row0["pack"] + lay.n_pack
    row0["public"] = row0["mul"] + lay.n_mul
    r_bits = np.arange(lay.n_bits) + row0["bits"]
    r_xor = np.arange(lay.n_xor) + row0["xor"]
    r_pack = np.arange(lay.n_pack) + row0["pack"]
    r_mul = np.arange(lay.n_mul) + row0["mul"]
    r_pub = np.arange(lay.public) + row0["public"]
    w_bits = off["bits"] + np.arange(lay.n_bits)
    xa, xb = off["bits"] + wr.xor_a, off["bits"] + wr.xor_b
    w_xor = off["xor"] + np.arange(lay.n_xor)
    w_mul = off["mul"] + np.arange(lay.n_mul)
    w_pack = off["pack"] + np.arange(lay.n_pack)
    w_pub = 1 + np.arange(lay.public)
    ones = lambda n: np.ones(n, dtype=np.int64)  # noqa: E731
    pack_k = np.tile(np.int64(1) << np.arange(PACK_BITS, dtype=np.int64), lay.n_pack)

    def mat(parts):
        rows = np.concatenate([p[0] for p in parts])
        cols = np.concatenate([p[1] for p in parts])
        vals = np.concatenate([p[2] for p in parts])
        return CsrMatrix.from_coo(rows, cols, _coeffs(vals), lay.n_rows, lay.n_wires)

    A = mat([(r_bits, w_bits, ones(lay.n_bits)), (r_xor, xa, 2 * ones(lay.n_xor)),
             (np.repeat(r_pack, PACK_BITS), off["bits"] + wr.pack_bits.reshape(-1), pack_k),
             (r_mul, off["field_in"] + wr.mul_x, ones(lay.n_mul)), (r_pub, w_pub, ones(lay.public))])
    zero = np.zeros
    B = mat([(r_bits, w_bits, ones(lay.n_bits)), (r_bits, zero(lay.n_bits, np.int64), -ones(lay.n_bits)),
             (r_xor, xb, ones(lay.n_xor)), (r_pack, zero(lay.n_pack, np.int64), ones(lay.n_pack)),
             (r_mul, off["field_in"] + wr.mul_y, ones(lay.n_mul)), (r_pub, zero(lay.public, np.int64), ones(lay.public))])
    C = mat([(r_xor, xa, ones(lay.n_xor)), (r_xor, xb, ones(lay.n_xor)), (r_xor, w_xor, -ones(lay.n_xor)),
             (r_pack, w_pack, ones(lay.n_pack)), (r_mul, w_mul, ones(lay.n_mul)),
             (r_pub, w_mul[: lay.public], ones(lay.public))])
    return ConstraintSystem(lay.n_wires, lay.public, A, B, C, name=f"porep-{constraints}")


def synthesize(constraints: int, public: int = 4, field_share: float = 0.05, circuit_seed: int = 0,
               seed: int = 0, proof: int = 0, partition: int = 0) -> np.ndarray:
    """The witness of one partition as standard-form ``uint64[n_wires, 4]`` (vectorized)."""
    lay = PorepLayout.make(constraints, public, field_share)
    wr = _wiring(lay, circuit_seed)
    off = lay.offsets()
    rng = np.random.default_rng([seed, proof, partition, constraints])
    w = np.zeros((lay.n_wires, FR_LIMBS), dtype=np.uint64)
    w[0, 0] = 1
    bits = rng.integers(0, 2, lay.n_bits, dtype=np.uint64)
    w[off["bits"] : off["bits"] + lay.n_bits, 0] = bits
    w[off["xor"] : off["xor"] + lay.n_xor, 0] = bits[wr.xor_a] ^ bits[wr.xor_b]
    words = (bits[wr.pack_bits] << np.arange(PACK_BITS, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    w[off["pack"] : off["pack"] + lay.n_pack, 0] = words
    # Full field elements: random 255-bit values reduced mod r, and their products.
    raw = rng.integers(0, 2**64, (lay.n_field_in, FR_LIMBS), dtype=np.uint64)
    fin = limbs_to_ints(raw) % R_MOD
    prod = (fin[wr.mul_x] * fin[wr.mul_y]) % R_MOD
    w[off["field_in"] : off["field_in"] + lay.n_field_in] = fr_to_limbs(fin)
    w[off["mul"] : off["mul"] + lay.n_mul] = fr_to_limbs(prod)
    w[1 : 1 + public] = w[off["mul"] : off["mul"] + public]
    return w


def public_inputs(witness: np.ndarray, public: int) -> list[int]:
    return [int(x) for x in limbs_to_ints(witness[1 : 1 + public])]
