"""neptune's Poseidon circuit (``src/circuit.rs``, neptune 11: the "legacy" circuit Filecoin's keys were
made with), and the entry points rust-fil-proofs calls it through.

The state is a list of elements, each either an ``AllocatedNum`` or a ``Num`` (a linear combination
with its value: neptune's ``Elt``). The mixing layers only scale and add, so they cost no constraint:
they fold the matrices' coefficients into the elements' linear combinations. Constraints come from
the S-boxes, which need an allocated input:

- first full round: element 0 is the domain tag, a constant, so its S-box is computed outside the
  circuit (no constraint); elements 1..t-1 are the allocated preimage: ``(l + pre)^2``, ``^4`` and
  ``l4 * (l + pre) + post`` (3 constraints each);
- every other S-box first allocates its input (``lc * ONE = v``), then ``l^2``, ``l^4`` and
  ``l4 * l + post`` (4 constraints; no ``post`` in the terminal round);
- the digest, element 1 after the last mix, is allocated (1 constraint).

That is 3(t-1) + 4t(R_F-1) + 4R_P + 1 constraints: 311 for arity 2, 505 for 8, 598 for 11. The
constants are the compressed round constants and the pre-sparse / sparse matrices of
``poseidon_preprocessing`` (ported from neptune), consumed in neptune's order.
"""

from __future__ import annotations

from ...field import R_MOD
from ..poseidon_preprocessing import OptimizedConstants, optimized_constants, round_matrix
from .cs import ONE, LinearCombination
from .num import AllocatedNum, Num

Elt = AllocatedNum | Num


def _num_from_fr(value: int) -> Num:
    """A constant element: ``value * ONE`` (neptune's ``Elt::num_from_fr``)."""
    return Num(value % R_MOD, LinearCombination().add(ONE, value))


def _ensure_allocated(cs, elt: Elt) -> AllocatedNum:
    """An allocated element as it is; a Num becomes a new variable v with ``lc * ONE = v``."""
    if isinstance(elt, AllocatedNum):
        return elt
    with cs.namespace("allocate for Elt::Num"):
        v = AllocatedNum.alloc(cs, elt.value)
        if cs.tape is not None:
            cs.tape.linear(v.variable, elt.terms.terms.items())
    cs.enforce("enforce num allocation preserves lc", elt.lc(), LinearCombination().add(ONE),
               LinearCombination().add(v.variable))
    return v


def _scale(elt: Elt, scalar: int) -> Num:
    return (Num.from_allocated(elt) if isinstance(elt, AllocatedNum) else elt).scale(scalar)


def _add(a: Elt, b: Elt) -> Num:
    """a + b for two Nums (neptune refuses an allocated operand here: the circuit never needs one)."""
    if not (isinstance(a, Num) and isinstance(b, Num)):
        raise TypeError("only two Nums may be added")
    return Num(a.value, a.terms.copy()).add(b)


def _scalar_product(elts: list[Elt], scalars) -> Num:
    acc = Num.zero()
    for elt, scalar in zip(elts, scalars):
        acc = acc.add(_scale(elt, scalar))
    return acc


_MUL_SUM_NAMES = {(True, True): "mul sum constraint pre-post-add", (False, True): "mul sum constraint post-add",
                  (True, False): "mul sum constraint pre-add", (False, False): "mul sum constraint"}


def square_sum(cs, to_add: int, num: AllocatedNum) -> AllocatedNum:
    """(num + to_add)^2, one constraint ``(num + to_add) * (num + to_add) = res``."""
    v = None if num.value is None else pow(num.value + to_add, 2, R_MOD)
    res = AllocatedNum(cs.alloc(v, "squared sum"), v)
    if cs.tape is not None:
        cs.tape.mul_add(res.variable, num.variable, to_add, num.variable, to_add, 0)
    cs.enforce("squared sum constraint", LinearCombination().add(num.variable).add(ONE, to_add),
               LinearCombination().add(num.variable).add(ONE, to_add), LinearCombination().add(res.variable))
    return res


def mul_sum(cs, a: AllocatedNum, b: AllocatedNum, pre_add: int | None, post_add: int | None) -> AllocatedNum:
    """a * (b + pre_add) + post_add, one constraint ``(b + pre) * a = res - post``; an absent key adds
    no ONE term (as in Rust; a zero term would be dropped when recorded anyway)."""
    pre, post = pre_add or 0, post_add or 0
    v = None if a.value is None or b.value is None else ((b.value + pre) * a.value + post) % R_MOD
    res = AllocatedNum(cs.alloc(v, "mul_sum"), v)
    if cs.tape is not None:
        cs.tape.mul_add(res.variable, a.variable, 0, b.variable, pre, post)
    lhs, out = LinearCombination().add(b.variable), LinearCombination().add(res.variable)
    if pre_add is not None:
        lhs.add(ONE, pre_add)
    if post_add is not None:
        out.sub(ONE, post_add)
    cs.enforce(_MUL_SUM_NAMES[pre_add is not None, post_add is not None], lhs, LinearCombination().add(a.variable),
               out)
    return res


def quintic_s_box(cs, elt: Elt, post_round_key: int | None) -> AllocatedNum:
    """l^5 + post_round_key of an element, allocating it first when it is a Num (3 or 4 constraints)."""
    with cs.namespace("S-box input"):
        l1 = _ensure_allocated(cs, elt)
    with cs.namespace("l^2"):
        l2 = l1.square(cs)
    with cs.namespace("l^4"):
        l4 = l2.square(cs)
    with cs.namespace("(l4 * l) + rk)"):
        return mul_sum(cs, l4, l1, None, post_round_key)


def quintic_s_box_pre_add(cs, elt: Elt, pre_round_key: int, post_round_key: int) -> AllocatedNum:
    """(l + pre)^5 + post of an allocated element (the first round's S-box: 3 constraints)."""
    with cs.namespace("S-box input"):
        l1 = _ensure_allocated(cs, elt)
    with cs.namespace("(l+rk)^2"):
        l2 = square_sum(cs, pre_round_key, l1)
    with cs.namespace("l^4"):
        l4 = l2.square(cs)
    with cs.namespace("l4 * (l + rk)"):
        return mul_sum(cs, l4, l1, pre_round_key, post_round_key)


def _constant_s_box(tag: int, pre: int, post: int) -> Num:
    """The domain tag's first S-box, computed as a constant (no constraint)."""
    return _num_from_fr(pow(tag + pre, 5, R_MOD) + post)


class _PoseidonCircuit:
    """neptune's ``PoseidonCircuit``: the state, the next compressed constant, the round counter."""

    def __init__(self, elements: list[Elt], oc: OptimizedConstants):
        self.elements, self.oc = elements, oc
        self.width = oc.base.width
        self.offset = 0
        self.current_round = 0

    def _keys(self, n: int) -> list[int]:
        keys = list(self.oc.compressed_round_constants[self.offset : self.offset + n])
        self.offset += n
        return keys

    def hash(self, cs) -> AllocatedNum:
        half = self.oc.base.full_rounds // 2
        with cs.namespace("first round"):
            self.first_round(cs)
        for i in range(1, half):
            with cs.namespace(f"initial full round {i}"):
                self.full_round(cs, last_round=False)
        for i in range(self.oc.base.partial_rounds):
            with cs.namespace(f"partial round {i}"):
                self.partial_round(cs)
        for i in range(half - 1):
            with cs.namespace(f"final full round {i}"):
                self.full_round(cs, last_round=False)
        with cs.namespace("terminal full round"):
            self.full_round(cs, last_round=True)
        with cs.namespace("hash result"):
            return _ensure_allocated(cs, self.elements[1])

    def first_round(self, cs) -> None:
        pre, post = self._keys(self.width), self._keys(self.width)
        els = self.elements
        els[0] = _constant_s_box(els[0].value, pre[0], post[0])
        for i in range(1, self.width):
            with cs.namespace(f"quintic s-box {i}"):
                els[i] = quintic_s_box_pre_add(cs, els[i], pre[i], post[i])
        self.product_mds()

    def full_round(self, cs, last_round: bool) -> None:
        post = [None] * self.width if last_round else self._keys(self.width)
        for i in range(self.width):
            with cs.namespace(f"quintic s-box {i}"):
                self.elements[i] = quintic_s_box(cs, self.elements[i], post[i])
        self.product_mds()

    def partial_round(self, cs) -> None:
        (key,) = self._keys(1)
        with cs.namespace("solitary quintic s-box"):
            self.elements[0] = quintic_s_box(cs, self.elements[0], key)
        self.product_mds()

    def product_mds(self) -> None:
        """Mix with this round's matrix: M, the pre-sparse matrix, or a sparse M''."""
        kind, m = round_matrix(self.oc, self.current_round)
        els = self.elements
        if kind == "dense":
            self.elements = [_scalar_product(els, [m[i][j] for i in range(self.width)]) for j in range(self.width)]
        else:
            self.elements = [_scalar_product(els, m.w_hat)] + [
                _add(els[j], _scale(els[0], m.v_rest[j - 1])) for j in range(1, self.width)]
        self.current_round += 1


def poseidon_hash(cs, preimage: list[AllocatedNum], oc: OptimizedConstants | None = None) -> AllocatedNum:
    """neptune's ``circuit::poseidon_hash``: the digest of ``preimage`` as a new allocated number, with
    ``oc`` (by default the MerkleTree / Standard constants of arity ``len(preimage)``, domain tag
    2^arity - 1, which every Filecoin gadget uses)."""
    if not preimage:
        raise ValueError("poseidon_hash: the preimage is empty (arity must be >= 1)")
    oc = oc or optimized_constants(len(preimage))
    if oc.base.arity != len(preimage):
        raise ValueError(f"poseidon_hash: {len(preimage)} inputs for constants of arity {oc.base.arity}")
    circuit = _PoseidonCircuit([_num_from_fr(oc.base.domain_tag), *preimage], oc)
    digest = circuit.hash(cs)
    if circuit.offset != len(oc.compressed_round_constants):
        raise AssertionError(f"consumed {circuit.offset} of {len(oc.compressed_round_constants)} constants")
    return digest


def hash2_circuit(cs, a: AllocatedNum, b: AllocatedNum) -> AllocatedNum:
    """filecoin-hashers' ``PoseidonFunction::hash2_circuit`` (and ``hash_leaf_circuit``): arity 2."""
    return poseidon_hash(cs, [a, b])


def hash_multi_leaf_circuit(cs, leaves: list[AllocatedNum], height: int = 0) -> AllocatedNum:
    """filecoin-hashers' ``PoseidonFunction::hash_multi_leaf_circuit``: arity ``len(leaves)`` (the
    height is unused, as in Rust)."""
    return poseidon_hash(cs, leaves)


def hash_single_column(cs, column: list[AllocatedNum]) -> AllocatedNum:
    """storage-proofs-porep's ``stacked/circuit/hash.rs``: a column of 2 or 11 labels hashed with
    the Poseidon of that arity."""
    if len(column) not in (2, 11):
        raise ValueError(f"hash_single_column: unsupported column size {len(column)} (need 2 or 11)")
    return poseidon_hash(cs, column)
