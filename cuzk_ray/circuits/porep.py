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

A second shape, ``shape="filecoin"`` (``FilecoinLayout``, ``build_filecoin``, ``synthesize_filecoin``),
has the proportions of Filecoin's 32 GiB PoRep partition (see FilecoinLayout); ``build_circuit``
and ``synthesize`` pick it with ``shape=``. The default shape is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..domain import MAX_LOG_N
from ..field import FR_LIMBS, R_MOD, fr_to_limbs, limbs_to_ints
from ..r1cs import CODE_MINUS_ONE, CODE_ONE, CodedCsr, ConstraintSystem, CsrMatrix
from ..witness import CompactWitness, pack_bits, small_mask

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
    def make(cls, constraints: int, public: int = 4, field_share: float = 0.05) -> PorepLayout:
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

    @property
    def n_field_wires(self) -> int:
        """Wires that hold full field elements (public inputs, field inputs, products, packed words;
        one may be 0 or 1 by chance): the values of a compact witness, at most."""
        return self.public + self.n_field_in + self.n_mul + self.n_pack

    def nnz(self) -> tuple[int, int, int]:
        """Non-zeros of A, B, C (what build_circuit makes, without building it)."""
        a = self.n_bits + self.n_xor + PACK_BITS * self.n_pack + self.n_mul + self.public
        b = 2 * self.n_bits + self.n_xor + self.n_pack + self.n_mul + self.public
        return a, b, 3 * self.n_xor + self.n_pack + self.n_mul + self.public

    def density(self, circuit_seed: int = 0) -> tuple[int, int]:
        """(wires with a point in a_query, in b_g1/b_g2_query) of this circuit's key stored by
        density, counted without building it. A: wire 0 and the public wires (the public-input
        rows of the QAP), every input bit (boolean rows), the field inputs drawn as mul x; B: wire
        0 (boolean, pack and public rows), every input bit, the field inputs drawn as mul y. The
        mul operands are random (circuit_seed), so they are drawn as build_circuit draws them
        (the xor draws before them too: ~1 GB of temporaries at 2^27)."""
        wr = _wiring(self, circuit_seed, mul_only=True)
        a = 1 + self.public + self.n_bits + len(np.unique(wr.mul_x))
        return a, 1 + self.n_bits + len(np.unique(wr.mul_y))

    def density_floor(self) -> tuple[int, int]:
        """A lower bound of density() without its random draws: the wires every key of this
        layout has a point for (A: wire 0, the public wires, the input bits; B: wire 0, the input
        bits), before the mul operands add theirs. For the preflight: a size whose floor does not
        fit is refused before the draws allocate (~1 GB at 2^27, 3.7 TiB at 2^40)."""
        return 1 + self.public + self.n_bits, 1 + self.n_bits

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


def _wiring(lay: PorepLayout, circuit_seed: int, mul_only: bool = False) -> _Wiring:
    """The operands; mul_only: only mul_x and mul_y (the density counts), the others None (the
    xor draws come first in the stream, so they are still drawn, then dropped; no pack draw)."""
    rng = np.random.default_rng([circuit_seed, lay.constraints, lay.public])
    xa = rng.integers(0, lay.n_bits, lay.n_xor)
    step = rng.integers(1, lay.n_bits, lay.n_xor)
    if mul_only:
        del xa, step
        xa = xb = None
    else:
        xb = (xa + step) % lay.n_bits  # b != a
        del step
    mul_x = rng.integers(0, lay.n_field_in, lay.n_mul)
    mul_y = rng.integers(0, lay.n_field_in, lay.n_mul)
    pack = None if mul_only else rng.integers(0, lay.n_bits, (lay.n_pack, PACK_BITS))
    return _Wiring(xa, xb, mul_x, mul_y, pack)


def _cyclic(start: int, count: int, n: int, base: int = 0) -> list[tuple[int, int]]:
    """The wires of _rot(start, count, n, base) as at most two half-open intervals."""
    if count <= 0 or n <= 0:
        return []
    if count >= n:
        return [(base, base + n)]
    s = start % n
    e = s + count
    return [(base + s, base + e)] if e <= n else [(base + s, base + n), (base, base + e - n)]


def _union_size(intervals: list[tuple[int, int]]) -> int:
    """How many integers the half-open intervals cover together."""
    total, end = 0, None
    for lo, hi in sorted(i for i in intervals if i[1] > i[0]):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def _coeffs(small: np.ndarray) -> np.ndarray:
    """int64 coefficients (-1 meaning r - 1) -> standard-form uint64[nnz, 4]."""
    out = np.zeros((len(small), FR_LIMBS), dtype=np.uint64)
    out[:, 0] = np.where(small >= 0, small, 0).astype(np.uint64)
    out[small == -1] = _MINUS_ONE
    return out


SHAPES = ("default", "filecoin")


MAX_CONSTRAINTS = 1 << MAX_LOG_N  # the domain is the constraint count (a power of two for filecoin)


def make_layout(constraints: int, public: int = 4, field_share: float = 0.05, shape: str = "default"):
    """The layout of either shape (validates the sizes; ``n_wires``, ``n_rows`` on both)."""
    if constraints > MAX_CONSTRAINTS:  # refused before any size is computed from it
        raise ValueError(f"circuit.constraints={constraints}: must be at most 2^{MAX_LOG_N} = {MAX_CONSTRAINTS} "
                         f"(the QAP domain needs the 2n-th roots of unity; Fr has them up to 2^{MAX_LOG_N + 1})")
    if shape == "default":
        return PorepLayout.make(constraints, public, field_share)
    if shape == "filecoin":
        return FilecoinLayout.make(constraints, public)
    raise ValueError(f"circuit.shape={shape!r} is not a known shape (known: {', '.join(SHAPES)})")


def build_circuit(constraints: int, public: int = 4, field_share: float = 0.05, circuit_seed: int = 0,
                  shape: str = "default") -> ConstraintSystem:
    """The constraint system (same for every partition). ``field_share`` is ignored by the filecoin shape."""
    if shape != "default":
        make_layout(constraints, public, field_share, shape)
        return build_filecoin(constraints, public, circuit_seed)
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
             (r_mul, off["field_in"] + wr.mul_y, ones(lay.n_mul)),
             (r_pub, zero(lay.public, np.int64), ones(lay.public))])
    C = mat([(r_xor, xa, ones(lay.n_xor)), (r_xor, xb, ones(lay.n_xor)), (r_xor, w_xor, -ones(lay.n_xor)),
             (r_pack, w_pack, ones(lay.n_pack)), (r_mul, w_mul, ones(lay.n_mul)),
             (r_pub, w_mul[: lay.public], ones(lay.public))])
    return ConstraintSystem(lay.n_wires, lay.public, A, B, C, name=f"porep-{constraints}")


def synthesize(constraints: int, public: int = 4, field_share: float = 0.05, circuit_seed: int = 0,
               seed: int = 0, proof: int = 0, partition: int = 0, shape: str = "default") -> np.ndarray:
    """The witness of one partition as standard-form ``uint64[n_wires, 4]`` (vectorized)."""
    if shape != "default":
        make_layout(constraints, public, field_share, shape)
        return synthesize_filecoin(constraints, public, circuit_seed, seed, proof, partition)
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


# ---------------------------------------------------------------------------------------------
# The filecoin shape: the proportions of Filecoin's 32 GiB PoRep partition, scaled to the domain.

# Published figures (Curio's cuzk docs, ../shared/DESIGN.md section 5), at the domain 2^27.
PUB_DOMAIN = 1 << 27
PUB_ROWS = 130_278_869
PUB_PRIVATE = 130_169_893
PUB_NNZ = (309_400_000, 130_300_000, 282_700_000)  # A, B, C
PUB_B_SHARE = 0.254  # share of the private wires that B touches (A touches 99.7 %: here all of them)
FIELD_PACK_SHARE = 0.003  # rows packing 254 bits into a field element (the rest packs 32-bit words)
GATE_LAYERS = 8
WORD_BITS = 32
FIELD_BITS = 254  # 2^254 < r: a packed value needs no reduction
_SHAPE_TAG = 0xF11EC0  # keeps this shape's random streams apart from the default shape's


@dataclass(frozen=True)
class FilecoinLayout:
    """Counts of each constraint kind of the filecoin shape.

    Wires: [1 | public (P) | input bits | gate bits, layer by layer (xor, then and) | words | fields | z]
    Rows (n_rows = round(constraints * 130,278,869 / 2^27), so 2^27 fills like PoRep's domain):
      bool     b * b = b                          A={b:1}           B={b:1}   C={b:1}
      xor      (2a) * b = a + b - c               A={a:2}           B={b:1}   C={a:1, b:1, c:-1}
      and      a * b = c                          A={a:1}           B={b:1}   C={c:1}
      recheck  c * c = c (a gate bit again)       A={c:1}           B={c:1}   C={c:1}
      word     (sum_k 2^k bit_k) * 1 = word       A=32 bits         B={1:1}   C={word:1}
      field    (sum_k 2^k bit_k) * 1 = f, k < 254 A=254 bits        B={1:1}   C={f:1}
      fmul     (z' + l1 + l2) * y = z             A={z' or 1, l1, l2} B={y:1} C={z:1}
      public   z_end * 1 = pub_k                  A={z_end:1}       B={1:1}   C={pub_k:1}
    Gate operands: ``a`` from the layer before (input bits for the first), at a fixed rotation
    (like SHA-256's rotations); ``b`` from the input bits, so B touches the input bits, the
    rechecked bits and the fields used as ``y`` (25.4 % of the private wires). Words and fields
    pack consecutive bits of one stream over all bit wires (covering every one); l1, l2 are words
    and fields in turn, y a field, z' the previous product of the same chain (one chain per public
    input, its end constrained equal to that input). Every private wire appears in A.
    Non-zeros per row: A = 1 + (31 words + 253 fields + 2 fmul) / rows, B = 1, C = 1 + 2 xor / rows.
    """

    constraints: int
    public: int
    n_rows: int
    n_bits: int
    n_xor: int
    n_and: int
    n_recheck: int
    n_words: int
    n_fields: int
    n_fmul: int
    n_chains: int
    layer_sizes: tuple
    layer_xors: tuple

    @classmethod
    def make(cls, constraints: int, public: int = 327) -> FilecoinLayout:
        if public < 1:
            raise ValueError(f"circuit.public={public}: at least one public input is needed")
        if constraints < 1024 or constraints & (constraints - 1):
            raise ValueError(f"circuit.constraints={constraints}: the filecoin shape needs a power of two >= 1024 "
                             "(the QAP domain size)")
        m = (constraints * PUB_ROWS + PUB_DOMAIN // 2) // PUB_DOMAIN
        if m + public >= constraints:
            raise ValueError(f"circuit.constraints={constraints}: {m} rows and {public} public inputs do not fit "
                             f"the domain (rows + public must stay below {constraints})")
        n_recheck = max(0, round(m * (PUB_ROWS - PUB_PRIVATE) / PUB_ROWS) - public)
        private = m - n_recheck - public
        n_xor = round((PUB_NNZ[2] / PUB_ROWS - 1) * m / 2)
        n_fields = max(1, round(FIELD_PACK_SHARE * m))
        n_words = max(1, round(((PUB_NNZ[0] / PUB_ROWS - 1) * m - FIELD_BITS * n_fields) / WORD_BITS))
        n_fmul = (n_words + n_fields + 1) // 2  # two leaves per product: each word and field used once
        n_bits = round(PUB_B_SHARE * private) - min(n_fmul, n_fields) - n_recheck
        n_gates = private - n_bits - n_words - n_fields - n_fmul
        if n_gates < n_xor or n_gates < GATE_LAYERS or n_bits < 2:
            raise ValueError(f"circuit.constraints={constraints}: too small for the filecoin shape")
        # layers grow by at most one gate, so each layer's rotation of the one before covers it
        sizes = tuple(n_gates // GATE_LAYERS + (i >= GATE_LAYERS - n_gates % GATE_LAYERS) for i in range(GATE_LAYERS))
        xors = tuple(n_xor // GATE_LAYERS + (i >= GATE_LAYERS - n_xor % GATE_LAYERS) for i in range(GATE_LAYERS))
        return cls(constraints, public, m, n_bits, n_xor, n_gates - n_xor, n_recheck, n_words, n_fields, n_fmul,
                   min(public, n_fmul), sizes, xors)

    @property
    def n_gates(self) -> int:
        return self.n_xor + self.n_and

    @property
    def n_private(self) -> int:
        return self.n_bits + self.n_gates + self.n_words + self.n_fields + self.n_fmul

    @property
    def n_wires(self) -> int:
        return 1 + self.public + self.n_private

    @property
    def n_field_wires(self) -> int:
        """Wires that hold full field elements (public inputs, words, fields, products; one may be
        0 or 1 by chance): the values of a compact witness, at most."""
        return self.public + self.n_words + self.n_fields + self.n_fmul

    @property
    def n_pool(self) -> int:
        """Bit wires (input bits and gate outputs), contiguous from ``offsets()['bits']``."""
        return self.n_bits + self.n_gates

    @property
    def n_stream(self) -> int:
        return WORD_BITS * self.n_words + FIELD_BITS * self.n_fields

    def offsets(self) -> dict:
        bits = 1 + self.public
        gates = bits + self.n_bits
        words = gates + self.n_gates
        fields = words + self.n_words
        return {"bits": bits, "gates": gates, "words": words, "fields": fields, "z": fields + self.n_fields}

    def nnz(self) -> tuple[int, int, int]:
        """Non-zeros of A, B, C (what build_filecoin makes, without building it)."""
        ones = self.n_bits + self.n_recheck + self.n_words + self.n_fields + self.n_fmul + self.public
        a = ones + self.n_gates + (WORD_BITS - 1) * self.n_words + (FIELD_BITS - 1) * self.n_fields + 2 * self.n_fmul
        return a, self.n_rows, ones + 3 * self.n_xor + self.n_and

    def b_wires(self) -> int:
        """Private wires B touches: input bits, rechecked bits, fields used as y."""
        return self.n_bits + self.n_recheck + min(self.n_fmul, self.n_fields)

    def density(self, circuit_seed: int = 0) -> tuple[int, int]:
        """(wires with a point in a_query, in b_g1/b_g2_query) of this circuit's key stored by
        density, counted from the layout and the rotations (intervals; nothing built). A: wire 0
        and the public wires (public-input rows), the input bits (bool rows), each gate layer as
        the next layer's a operands, the rechecked bits of the last layer and the pack stream,
        the words and fields used as leaves, the products used as z' and the chain ends (public
        rows). B: wire 0 (pack and public rows), the input bits, the rechecked bits, the fields
        used as y (gate b operands are input bits)."""
        wr = _filecoin_wiring(self, circuit_seed)
        off = self.offsets()
        a = [(0, 1 + self.public), (off["bits"], off["bits"] + self.n_bits)]
        prev_base, prev_n, base = off["bits"], self.n_bits, off["gates"]
        for size, ra in zip(self.layer_sizes, wr.rot_a):
            a += _cyclic(ra, size, prev_n, prev_base)
            prev_base, prev_n, base = base, size, base + size
        recheck = _cyclic(0, self.n_recheck, prev_n, prev_base)
        a += recheck + _cyclic(wr.stream0, self.n_stream, self.n_pool, off["bits"])
        a.append((off["words"], off["words"] + min(2 * self.n_fmul, self.n_words + self.n_fields)))
        a.append((off["z"], off["z"] + self.n_fmul - self.n_chains))
        ends = np.unique(self.chain_ends()[np.arange(self.public) % self.n_chains])
        a += [(off["z"] + int(e), off["z"] + int(e) + 1) for e in ends]
        b = [(0, 1), (off["bits"], off["bits"] + self.n_bits), *recheck,
             (off["fields"], off["fields"] + min(self.n_fmul, self.n_fields))]
        return _union_size(a), _union_size(b)

    def chain_ends(self) -> np.ndarray:
        """Index (among the fmul rows) of each chain's last product."""
        ch = np.arange(self.n_chains, dtype=np.int64)
        return ch + self.n_chains * ((self.n_fmul - 1 - ch) // self.n_chains)

    def expected(self) -> dict:
        """The published proportions this layout aims at (per row, shares of private wires)."""
        return {"nnz_a": PUB_NNZ[0] / PUB_ROWS, "nnz_b": PUB_NNZ[1] / PUB_ROWS, "nnz_c": PUB_NNZ[2] / PUB_ROWS,
                "private_per_row": PUB_PRIVATE / PUB_ROWS, "b_share": PUB_B_SHARE}


@dataclass(frozen=True)
class _FilecoinWiring:
    """Rotations (from the circuit seed): a and b operands per gate layer, start of the pack stream."""

    rot_a: tuple
    rot_b: tuple
    stream0: int


def _filecoin_wiring(lay: FilecoinLayout, circuit_seed: int) -> _FilecoinWiring:
    rng = np.random.default_rng([circuit_seed, lay.constraints, lay.public, _SHAPE_TAG])
    rot_a, rot_b = [], []
    for i in range(GATE_LAYERS):
        n_prev = lay.n_bits if i == 0 else lay.layer_sizes[i - 1]
        ra = int(rng.integers(n_prev))
        rot_a.append(ra)
        # first layer: both operands are input bits, never the same one
        rb = (ra + 1 + int(rng.integers(lay.n_bits - 1))) % lay.n_bits if i == 0 else int(rng.integers(lay.n_bits))
        rot_b.append(rb)
    return _FilecoinWiring(tuple(rot_a), tuple(rot_b), int(rng.integers(lay.n_pool)))


def _rot(start: int, count: int, n: int, base: int = 0) -> np.ndarray:
    """base + (start + arange(count)) % n as int64."""
    out = np.arange(start, start + count, dtype=np.int64)
    np.remainder(out, n, out=out)
    out += base
    return out


def _rot_values(arr: np.ndarray, start: int, count: int) -> np.ndarray:
    """arr[(start + arange(count)) % len(arr)] without index arithmetic (slices, cyclic repeat)."""
    rolled = np.concatenate((arr[start:], arr[:start])) if start else arr
    return rolled if count == len(rolled) else np.resize(rolled, count)


def _empty_zeros(shape, dtype) -> np.ndarray:
    """np.zeros through np.empty: numpy asks for huge pages on large np.empty blocks (madvise), not
    on np.zeros (calloc), and first-touch faults of 4 KiB pages cost 10-20x the fill here."""
    out = np.empty(shape, dtype=dtype)
    out.fill(0)
    return out


# The coefficient table of the filecoin shape's matrices (r1cs.CodedCsr): 1, -1, then 2^1 .. 2^255
# (mod r), so 2^j has code j + 1 (2^0 = 1 is code 0).
POW2_TABLE_BITS = 256


def _pow2_table() -> np.ndarray:
    return fr_to_limbs([1, R_MOD - 1] + [pow(2, j, R_MOD) for j in range(1, POW2_TABLE_BITS)])


def _small_code(v: int) -> int:
    """The table code of coefficient v (1, -1 or a power of two)."""
    if v == 1:
        return CODE_ONE
    if v == -1:
        return CODE_MINUS_ONE
    if v > 1 and v & (v - 1) == 0 and v.bit_length() <= POW2_TABLE_BITS:
        return v.bit_length()  # 2^j -> j + 1
    raise ValueError(f"coefficient {v}: only 1, -1 and powers of two here")


def _csr(blocks: list, n_rows: int, n_cols: int) -> CodedCsr:
    """A CodedCsr from row blocks in row order (8 bytes per non-zero: the build never holds
    32-byte coefficients). Each block is (cols int64[n, k], coefficients): ``("small", v)`` with v
    an int or int64[k] (per column: 1, -1 or a power of two), or ``("pow2", k)``: 2^j for the
    j-th column (j < 256). Rows whose columns are not ascending (a cyclic stream that wraps,
    operands in either order) are sorted with their codes; no two entries of a row may share a
    column."""
    nnz = sum(c.size for c, _ in blocks)
    if nnz >= 2**32 - 2 or n_cols >= 2**32:
        raise ValueError(f"filecoin shape: {nnz} non-zeros over {n_cols} columns; the layout indexes with 32 bits")
    indptr = np.empty(n_rows + 1, dtype=np.int64)
    indptr[0] = 0
    entries = np.empty((nnz, 2), dtype=np.uint32)
    r = o = 0
    for cols, (kind, v) in blocks:
        n, k = cols.shape
        indptr[r + 1 : r + n + 1] = np.arange(o + k, o + k * n + 1, k, dtype=np.int64)
        e = entries[o : o + n * k].reshape(n, k, 2)
        e[:, :, 0] = cols
        if kind == "small":
            vals = np.broadcast_to(np.asarray(v, dtype=np.int64), (k,)).tolist()
            code = np.array([_small_code(int(x)) for x in vals], dtype=np.uint32)
        else:  # 2^j for column j: code j + 1, and 2^0 = 1 is code 0
            code = np.arange(1, k + 1, dtype=np.uint32)
            code[0] = CODE_ONE
        e[:, :, 1] = code
        if k > 1:
            bad = np.flatnonzero((np.diff(e[:, :, 0].astype(np.int64), axis=1) <= 0).any(axis=1))
            if len(bad):
                order = np.argsort(e[bad, :, 0], axis=1, kind="stable")
                e[bad] = np.take_along_axis(e[bad], order[:, :, None], axis=1)
                if (np.diff(e[bad, :, 0].astype(np.int64), axis=1) <= 0).any():
                    raise AssertionError("filecoin shape: a row holds the same wire twice")
        r, o = r + n, o + n * k
    assert r == n_rows and o == nnz
    return CodedCsr(indptr, entries, _pow2_table(), n_cols)


def build_filecoin(constraints: int, public: int = 327, circuit_seed: int = 0) -> ConstraintSystem:
    """The filecoin shape's constraint system (same for every partition); see FilecoinLayout."""
    lay = FilecoinLayout.make(constraints, public)
    wr = _filecoin_wiring(lay, circuit_seed)
    off = lay.offsets()
    A, B, C = [], [], []
    col = lambda x: x.reshape(-1, 1)  # noqa: E731
    const = lambda n: np.zeros((n, 1), dtype=np.int64)  # noqa: E731  (wire 0, the constant 1)
    one = ("small", 1)
    # bool rows: the input bits
    w_bits = col(np.arange(off["bits"], off["bits"] + lay.n_bits, dtype=np.int64))
    A.append((w_bits, one))
    B.append((w_bits, one))
    C.append((w_bits, one))
    # gate layers
    prev_base, prev_n, out_base = off["bits"], lay.n_bits, off["gates"]
    for size, nx, ra, rb in zip(lay.layer_sizes, lay.layer_xors, wr.rot_a, wr.rot_b):
        a = _rot(ra, size, prev_n, prev_base)
        b = _rot(rb, size, lay.n_bits, off["bits"])
        c = np.arange(out_base, out_base + size, dtype=np.int64)
        A.append((col(a[:nx]), ("small", 2)))
        A.append((col(a[nx:]), one))
        B.append((col(b), one))
        xc = np.empty((nx, 3), dtype=np.int64)
        np.minimum(a[:nx], b[:nx], out=xc[:, 0])
        np.maximum(a[:nx], b[:nx], out=xc[:, 1])
        xc[:, 2] = c[:nx]
        C.append((xc, ("small", np.array([1, 1, -1]))))
        C.append((col(c[nx:]), one))
        del a, b, xc
        prev_base, prev_n, out_base = out_base, size, out_base + size
    # rechecks: bits of the last layer again
    w_rc = col(_rot(0, lay.n_recheck, prev_n, prev_base))
    for M in (A, B, C):
        M.append((w_rc, one))
    # packing: one stream of consecutive bit wires (cyclic over all of them), words then fields
    nw = WORD_BITS * lay.n_words
    stream = _rot(wr.stream0, lay.n_stream, lay.n_pool, off["bits"])
    A.append((stream[:nw].reshape(lay.n_words, WORD_BITS), ("pow2", WORD_BITS)))
    A.append((stream[nw:].reshape(lay.n_fields, FIELD_BITS), ("pow2", FIELD_BITS)))
    del stream
    B.append((const(lay.n_words + lay.n_fields), one))
    C.append((col(np.arange(off["words"], off["fields"] + lay.n_fields, dtype=np.int64)), one))
    # products: chains of (z' + l1 + l2) * y = z
    j = np.arange(lay.n_fmul, dtype=np.int64)
    n_leaves = lay.n_words + lay.n_fields
    fa = np.empty((lay.n_fmul, 3), dtype=np.int64)
    fa[:, 0] = np.where(j < lay.n_chains, 0, off["z"] + j - lay.n_chains)
    fa[:, 1] = off["words"] + (2 * j) % n_leaves
    fa[:, 2] = off["words"] + (2 * j + 1) % n_leaves
    A.append((fa, one))
    B.append((col(off["fields"] + j % lay.n_fields), one))
    C.append((col(off["z"] + j), one))
    # public rows: the end of chain k mod n_chains equals public input k
    ends = off["z"] + lay.chain_ends()
    A.append((col(ends[np.arange(lay.public) % lay.n_chains]), one))
    B.append((const(lay.public), one))
    C.append((col(np.arange(1, 1 + lay.public, dtype=np.int64)), one))
    mats = [_csr(M, lay.n_rows, lay.n_wires) for M in (A, B, C)]
    return ConstraintSystem(lay.n_wires, lay.public, *mats, name=f"porep-filecoin-{constraints}")


def _chain_products(leaves, fields, n_chains, r2, z):
    """z[j] = (z[j - n_chains] (or 1) + leaves[2j] + leaves[2j + 1]) * fields[j] (indices cyclic),
    standard form; compiled by numba (``_chain_kernel``) with fr_kernels' mod_add and mont_mul."""
    nl, nf = leaves.shape[0], fields.shape[0]
    for j in range(z.shape[0]):
        if j < n_chains:
            p0, p1, p2, p3 = np.uint64(1), np.uint64(0), np.uint64(0), np.uint64(0)
        else:
            k = j - n_chains
            p0, p1, p2, p3 = z[k, 0], z[k, 1], z[k, 2], z[k, 3]
        q = (2 * j) % nl
        s = _mod_add(p0, p1, p2, p3, leaves[q, 0], leaves[q, 1], leaves[q, 2], leaves[q, 3])
        q = (2 * j + 1) % nl
        s = _mod_add(*s, leaves[q, 0], leaves[q, 1], leaves[q, 2], leaves[q, 3])
        y = j % nf
        t = _mont_mul(*s, fields[y, 0], fields[y, 1], fields[y, 2], fields[y, 3])  # s * y / 2^256
        t = _mont_mul(*t, r2[0], r2[1], r2[2], r2[3])  # * 2^512 / 2^256: s * y
        z[j, 0], z[j, 1], z[j, 2], z[j, 3] = t


def _chain_kernel():
    """``_chain_products`` compiled on first use (numba imported only then; cached on disk: a
    module-level function whose helpers are globals, which numba's cache can key)."""
    global _CHAIN, _mod_add, _mont_mul
    if _CHAIN is None:
        from numba import njit

        from ..fast.fr_kernels import mod_add, mont_mul

        _mod_add, _mont_mul = mod_add, mont_mul
        _CHAIN = njit(nogil=True, cache=True)(_chain_products)
    return _CHAIN


_CHAIN = _mod_add = _mont_mul = None
_R2 = fr_to_limbs([pow(2, 512, R_MOD)])[0]


@dataclass(frozen=True)
class FilecoinParts:
    """A filecoin-shape witness before expansion: ``bits`` uint8[n_pool] (0/1: the input and gate
    bits, wires ``offsets()['bits']`` on), ``tail`` standard-form uint64[n_words + n_fields + n_fmul, 4]
    (words, fields, products: every wire from ``offsets()['words']`` on) and ``public``
    uint64[public, 4]. ``compact_filecoin`` packs them into a CompactWitness (~0.16 GiB at 2^27)
    without the full array (4 GiB there)."""

    bits: np.ndarray
    tail: np.ndarray
    public: np.ndarray


def synthesize_filecoin_parts(constraints: int, public: int = 327, circuit_seed: int = 0, seed: int = 0,
                              proof: int = 0, partition: int = 0) -> FilecoinParts:
    """The filecoin shape's witness values: bits as uint8 slices (rotations, xor/and), words and
    fields by np.packbits, products in numba (one pass over the chains)."""
    lay = FilecoinLayout.make(constraints, public)
    wr = _filecoin_wiring(lay, circuit_seed)
    rng = np.random.default_rng([seed, proof, partition, constraints, _SHAPE_TAG])
    pool = np.empty(lay.n_pool, dtype=np.uint8)
    inputs = pool[: lay.n_bits]
    inputs[:] = np.unpackbits(np.frombuffer(rng.bytes((lay.n_bits + 7) // 8), dtype=np.uint8))[: lay.n_bits]
    prev, o = inputs, lay.n_bits
    for size, nx, ra, rb in zip(lay.layer_sizes, lay.layer_xors, wr.rot_a, wr.rot_b):
        a, b = _rot_values(prev, ra, size), _rot_values(inputs, rb, size)
        out = pool[o : o + size]
        np.bitwise_xor(a[:nx], b[:nx], out=out[:nx])
        np.bitwise_and(a[nx:], b[nx:], out=out[nx:])
        prev, o = out, o + size
    stream = _rot_values(pool, wr.stream0, lay.n_stream)
    nw, n_leaves = WORD_BITS * lay.n_words, lay.n_words + lay.n_fields
    tail = _empty_zeros((n_leaves + lay.n_fmul, FR_LIMBS), np.uint64)
    tail[: lay.n_words, 0] = np.packbits(stream[:nw].reshape(lay.n_words, WORD_BITS), axis=1,
                                         bitorder="little").view("<u4")[:, 0]
    fbits = np.zeros((lay.n_fields, 256), dtype=np.uint8)
    fbits[:, :FIELD_BITS] = stream[nw:].reshape(lay.n_fields, FIELD_BITS)
    del stream
    tail[lay.n_words : n_leaves] = np.packbits(fbits, axis=1, bitorder="little").view("<u8")
    z = tail[n_leaves:]
    _chain_kernel()(tail[:n_leaves], tail[lay.n_words : n_leaves], lay.n_chains, _R2, z)
    return FilecoinParts(pool, tail, z[lay.chain_ends()[np.arange(public) % lay.n_chains]])


def expand_filecoin(lay: FilecoinLayout, parts: FilecoinParts) -> np.ndarray:
    """The full standard-form ``uint64[n_wires, 4]`` witness from its parts."""
    off = lay.offsets()
    w = _empty_zeros((lay.n_wires, FR_LIMBS), np.uint64)
    w[0, 0] = 1
    w[1 : 1 + lay.public] = parts.public
    w[off["bits"] : off["bits"] + lay.n_pool, 0] = parts.bits
    w[off["words"] :] = parts.tail
    return w


def compact_filecoin(lay: FilecoinLayout, parts: FilecoinParts) -> CompactWitness:
    """The compact witness straight from its parts, equal to compact(expand_filecoin(lay, parts))
    without making the full array: the bitmaps are packed segment by segment (wire 0, public,
    the bit pool, the tail), and public or tail values that are exactly 0 or 1 go to the bitmap
    as compact() puts them (canonical form). Host bytes: 2 n/8 for the bitmaps plus one copy of
    the tail's full values (~0.16 GiB at 2^27), beside the parts."""
    off = lay.offsets()
    pub_small, tail_small = small_mask(parts.public), small_mask(parts.tail)
    bit_segments = [(0, np.ones(1, dtype=np.uint8)),  # wire 0, the constant 1
                    (1, parts.public[:, 0].astype(np.uint8) & pub_small), (off["bits"], parts.bits),
                    (off["words"], parts.tail[:, 0].astype(np.uint8) & tail_small)]
    bits = pack_bits(lay.n_wires, bit_segments)
    full = pack_bits(lay.n_wires, [(1, ~pub_small), (off["words"], ~tail_small)])
    tail = parts.tail if not tail_small.any() else parts.tail[~tail_small]
    values = np.concatenate((parts.public[~pub_small], tail))
    return CompactWitness(lay.n_wires, full, bits, values)


def synthesize_filecoin(constraints: int, public: int = 327, circuit_seed: int = 0, seed: int = 0, proof: int = 0,
                        partition: int = 0) -> np.ndarray:
    """The filecoin shape's witness of one partition, standard-form ``uint64[n_wires, 4]``."""
    parts = synthesize_filecoin_parts(constraints, public, circuit_seed, seed, proof, partition)
    return expand_filecoin(FilecoinLayout.make(constraints, public), parts)


def shape_stats(cs: ConstraintSystem, witness: np.ndarray | None = None) -> dict:
    """Proportions of a constraint system (any shape): non-zeros per row, the share of private
    wires each of A, B, C touches, and with a witness the share of its wires that are 0 or 1
    (``bits``) and of those >= 2^64 (``field``)."""
    rows, first = cs.n_constraints, 1 + cs.n_public
    out = {"rows": rows, "wires": cs.n_wires, "private": cs.n_wires - first}
    for name, m in (("a", cs.A), ("b", cs.B), ("c", cs.C)):
        out[f"nnz_{name}"] = m.nnz / rows
        touched = np.zeros(cs.n_wires, dtype=bool)
        touched[m.indices] = True
        out[f"touch_{name}"] = float(touched[first:].mean())
    if witness is not None:
        high = (witness[:, 1] != 0) | (witness[:, 2] != 0) | (witness[:, 3] != 0)  # >= 2^64: full field elements
        out["bits"] = float(((witness[:, 0] <= 1) & ~high).mean())
        out["field"] = float(high.mean())
    return out
