"""Proof of retrievability: a leaf's Merkle path up to a root, as rust-fil-proofs'
``storage-proofs-core/src/gadgets/por.rs`` (``PoRCircuit``, ``AuthPath``, ``SubPath``).

A path is split as the tree is: base levels (arity ``base``), then at most one sub level and one top
level. Per level: the index bits (``log2 arity`` allocated bits), the siblings (allocated numbers),
``insertion.insert`` of the current node among them, and the level's hash (Poseidon of that arity by
default; tree D passes SHA-256). Then all index bits, base first, are packed into public inputs
(one input while there are at most 254 bits), the computed root is enforced equal to the allocated
root (``computed * ONE = root``), and a public root is made an input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import boolean, constraint
from .boolean import Boolean, Is
from .insertion import insert
from .multipack import pack_into_inputs
from .num import AllocatedNum
from .poseidon import hash_multi_leaf_circuit

HashMultiLeaf = Callable[[object, list[AllocatedNum], int], AllocatedNum]  # (cs, children, height) -> node
Root = AllocatedNum | int | None  # rust-fil-proofs' Root::Var, or Root::Val (None: no witness)


@dataclass(frozen=True)
class PathElement:
    """One level: the siblings' values (None without a witness) and the node's position among them."""

    hashes: tuple[int | None, ...]
    index: int | None


@dataclass(frozen=True)
class SubPath:
    """Consecutive levels of one arity (0: no such part of the tree)."""

    arity: int
    path: tuple[PathElement, ...]


@dataclass(frozen=True)
class AuthPath:
    """A path split as rust-fil-proofs' ``AuthPath``: base levels, then the sub and top levels."""

    base: SubPath
    sub: SubPath
    top: SubPath


def auth_path(levels: Sequence[tuple[Sequence[int | None], int | None]], base: int, sub: int = 0,
              top: int = 0) -> AuthPath:
    """Split a path's levels (siblings, index), bottom up, for a tree of arities base / sub / top
    (``From<Vec<(Vec<Option<Fr>>, Option<usize>)>> for AuthPath``): the last level is the top's when
    there is one, the one before it the sub's."""
    tail = 2 if top else 1 if sub else 0
    if len(levels) < tail:
        raise ValueError(f"a path of {len(levels)} levels is too short for a {base}-{sub}-{top} tree")
    elements = [PathElement(tuple(h), i) for h, i in levels]
    split = len(elements) - tail
    parts = [(base, elements[:split]), (sub, elements[split : split + (1 if sub else 0)]),
             (top, elements[split + (1 if sub else 0) :])]
    for arity, part in parts:
        for k, el in enumerate(part):
            if len(el.hashes) != arity - 1:
                raise ValueError(f"path level {k} of arity {arity} has {len(el.hashes)} siblings, need {arity - 1}")
    return AuthPath(*(SubPath(arity, tuple(part)) for arity, part in parts))


def blank_auth_path(base_levels: int, base: int, sub: int = 0, top: int = 0) -> AuthPath:
    """A path with no witness (``AuthPath::blank``): the shape of the circuit alone."""
    def level(arity: int) -> tuple[tuple[None, ...], None]:
        return (None,) * (arity - 1), None

    levels = [level(base)] * base_levels + [level(a) for a in (sub, top) if a]
    return auth_path(levels, base, sub, top)


def _synthesize_sub_path(cs, sub: SubPath, cur: AllocatedNum, hash_fn: HashMultiLeaf
                         ) -> tuple[AllocatedNum, list[Boolean]]:
    """Climb the levels of one arity: index bits, siblings, insertion, hash (``SubPath::synthesize``)."""
    if sub.arity == 0:
        return cur, []
    if sub.arity & (sub.arity - 1):
        raise ValueError(f"arity must be a power of two, is {sub.arity}")
    bit_count = sub.arity.bit_length() - 1
    path_bits: list[Boolean] = []
    for i, element in enumerate(sub.path):
        with cs.namespace(f"merkle tree hash {i}"):
            index_bits = []
            for j in range(bit_count):
                with cs.namespace(f"index bit {j}"):
                    value = None if element.index is None else bool(element.index >> j & 1)
                    index_bits.append(Is(boolean.alloc_bit(cs, value)))
            if cs.tape is not None and index_bits:
                cs.tape.free_bits(index_bits[0].bit.variable, bit_count)
            path_bits += index_bits
            siblings = []
            for j, h in enumerate(element.hashes):
                with cs.namespace(f"path element {j}"):
                    siblings.append(AllocatedNum.alloc_witness(cs, h))
            inserted = insert(cs, cur, index_bits, siblings)
            with cs.namespace("computation of commitment hash"):
                cur = hash_fn(cs, inserted, i)
    return cur, path_bits


def _allocated(cs, root: Root) -> AllocatedNum:
    """``Root::allocated``: a Var as it is, a Val as a new number."""
    return root if isinstance(root, AllocatedNum) else AllocatedNum.alloc_witness(cs, root)


def por_circuit(cs, value: Root, path: AuthPath, root: Root, private: bool,
                hash_fn: HashMultiLeaf = hash_multi_leaf_circuit) -> None:
    """``PoRCircuit::synthesize``: ``value``'s path hashes up to ``root``; the path bits become
    public input(s), and the root too unless ``private``."""
    with cs.namespace("value"):
        cur = _allocated(cs, value)
    bits: list[Boolean] = []
    for name, sub in (("base", path.base), ("sub", path.sub), ("top", path.top)):
        with cs.namespace(name):
            cur, sub_bits = _synthesize_sub_path(cs, sub, cur, hash_fn)
        bits += sub_bits
    with cs.namespace("path"):
        pack_into_inputs(cs, bits)
    with cs.namespace("root_value"):
        rt = _allocated(cs, root)
    constraint.equal(cs, "enforce root is correct", cur, rt)
    if not private:
        with cs.namespace("root"):
            rt.inputize(cs)


def challenge_into_auth_path_bits(challenge: int, leaves: int) -> list[bool]:
    """The challenge's log2(leaves) bits, least significant first (what the path input packs)."""
    if leaves <= 0 or leaves & (leaves - 1):
        raise ValueError(f"leaves must be a power of two, is {leaves}")
    return [bool(challenge >> i & 1) for i in range(leaves.bit_length() - 1)]
