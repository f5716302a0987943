"""A partition's witness in compact form: the 0/1 wires as a bitmap, the other wires' field elements
in wire order. A PoRep partition is ~97 % bits, so this is ~0.16 GiB at 2^27 instead of 4 GiB.

    CompactWitness(n_wires, full, bits, values)
      full    uint8[ceil(n/8)]  packed bitmap (np.packbits, bitorder="little"): bit i set when
                                wire i holds a full field element (a value >= 2)
      bits    uint8[ceil(n/8)]  packed bitmap: the value of wire i when it is 0 or 1 (0 where full)
      values  uint64[k, 4]      standard-form limbs of the full wires, in wire order, every value < r
    Padding bits past n_wires are 0 in both bitmaps.

The form is canonical: ``compact`` puts every wire whose value is exactly 0 or 1 in the bitmap,
so two witnesses with the same values have the same compact form (``==`` compares the arrays).
``expand`` gives the FrVector back bit for bit; ``wires(a, b)`` reads a few wires (the public
inputs) without expanding the rest. Built straight from its parts by synthesis
(circuits.porep.compact_filecoin, ``pack_bits``), expanded on the host (backends.cpu) or on the
device (cuda.witness, backends.cuda)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .field import FR_LIMBS, FrVector, checked_fr


def bitmap_bytes(n: int) -> int:
    """Bytes of a packed bitmap of n bits."""
    return (n + 7) // 8


def compact_bytes(n_wires: int, n_full: int) -> int:
    """``CompactWitness.nbytes`` of n_wires wires of which n_full hold full field elements (the
    estimate admission and preflight use, from a circuit's layout)."""
    return 2 * bitmap_bytes(n_wires) + n_full * 8 * FR_LIMBS


def popcount(packed: np.ndarray) -> int:
    """Set bits of a packed uint8 bitmap."""
    return int(np.bitwise_count(packed).sum(dtype=np.int64))


@dataclass(frozen=True, eq=False, repr=False)
class CompactWitness:
    """See the module docstring. Like FrVector the values are trusted (checked where they were
    made: ``compact`` takes an FrVector or checks raw limbs); the shapes are checked here."""

    n_wires: int
    full: np.ndarray
    bits: np.ndarray
    values: np.ndarray

    def __post_init__(self):
        nb = bitmap_bytes(self.n_wires)
        for name in ("full", "bits"):
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.dtype != np.uint8 or a.shape != (nb,):
                raise ValueError(f"CompactWitness.{name}: need uint8[{nb}] (a packed bitmap of {self.n_wires} "
                                 f"wires), have {getattr(a, 'dtype', type(a).__name__)}{list(getattr(a, 'shape', ()))}")
            if self.n_wires % 8 and int(a[-1]) >> (self.n_wires % 8):
                raise ValueError(f"CompactWitness.{name}: padding bits past wire {self.n_wires - 1} must be 0")
        k = popcount(self.full)
        v = self.values
        if not isinstance(v, np.ndarray) or v.dtype != np.uint64 or v.shape != (k, FR_LIMBS):
            raise ValueError(f"CompactWitness.values: need uint64[{k}, {FR_LIMBS}] (one per set bit of full), have "
                             f"{getattr(v, 'dtype', type(v).__name__)}{list(getattr(v, 'shape', ()))}")
        if not v.flags.c_contiguous:
            raise ValueError("CompactWitness.values: must be C-contiguous")

    def __len__(self) -> int:
        return self.n_wires

    def __eq__(self, other) -> bool:
        return (isinstance(other, CompactWitness) and self.n_wires == other.n_wires
                and np.array_equal(self.full, other.full) and np.array_equal(self.bits, other.bits)
                and np.array_equal(self.values, other.values))

    __hash__ = None

    def __repr__(self) -> str:
        return f"CompactWitness(n_wires={self.n_wires}, n_full={self.n_full}, nbytes={self.nbytes})"

    @property
    def n_full(self) -> int:
        """Wires holding a full field element (rows of ``values``)."""
        return int(self.values.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the three arrays (what the partition's Arrow batch carries, less ~100 B)."""
        return int(self.full.nbytes + self.bits.nbytes + self.values.nbytes)

    def expand(self) -> FrVector:
        """The full witness, standard-form ``uint64[n_wires, 4]`` on the host (a new array). Three
        vectorized passes: the bits into limb 0, the full wires' indices, their values scattered."""
        n = self.n_wires
        # np.zeros (calloc: pages come zeroed from the kernel) then limb 0 written: measured 0.4-0.5 s
        # at 2^26 against 0.8 s for np.empty and zeroing limbs 1..3 (warm; the first touch of fresh
        # pages in a process varies 1-4 s on a shared 2-core box either way)
        out = np.zeros((n, FR_LIMBS), dtype=np.uint64)
        out[:, 0] = np.unpackbits(self.bits, count=n, bitorder="little")
        if self.n_full:
            out[np.flatnonzero(np.unpackbits(self.full, count=n, bitorder="little"))] = self.values
        return FrVector(out)

    def wires(self, start: int, stop: int) -> np.ndarray:
        """Standard-form ``uint64[stop - start, 4]`` of wires start..stop-1 (e.g. the public inputs
        1..p) without expanding the rest: it reads the bitmaps up to ``stop`` only."""
        if not 0 <= start <= stop <= self.n_wires:
            raise IndexError(f"CompactWitness.wires({start}, {stop}): the witness has {self.n_wires} wires")
        nb = bitmap_bytes(stop)
        full = np.unpackbits(self.full[:nb], count=stop, bitorder="little").astype(bool)
        rank = int(np.count_nonzero(full[:start]))
        out = np.zeros((stop - start, FR_LIMBS), dtype=np.uint64)
        out[:, 0] = np.unpackbits(self.bits[:nb], count=stop, bitorder="little")[start:]
        sel = full[start:]
        out[sel] = self.values[rank : rank + int(np.count_nonzero(sel))]
        return out


Witness = CompactWitness | FrVector  # what a Partition carries and a backend's stage() takes


def small_mask(limbs: np.ndarray) -> np.ndarray:
    """bool[n]: which rows of standard-form limbs ``uint64[n, 4]`` are exactly 0 or 1."""
    return ((limbs[:, 1] | limbs[:, 2] | limbs[:, 3]) == 0) & (limbs[:, 0] <= 1)


def compact(witness) -> CompactWitness:
    """The compact form of an FrVector or of raw standard-form limbs ``uint64[n, 4]`` (range-checked
    first, as checked_fr does). Wires whose value is exactly 0 or 1 go to the bitmap."""
    limbs = np.asarray(checked_fr(witness, "witness").limbs)
    small = small_mask(limbs)
    bits = np.packbits(limbs[:, 0].astype(np.uint8) & small, bitorder="little")
    full = np.packbits(~small, bitorder="little")
    return CompactWitness(len(limbs), full, bits, np.ascontiguousarray(limbs[~small]))


def pack_bits(n: int, segments) -> np.ndarray:
    """A packed bitmap (bitorder little) of n bits from ``segments``: (offset, 0/1 values as uint8
    or bool) in ascending offsets, not overlapping; bits outside every segment are 0. Each segment
    is packed where it lies (a head of up to 7 bits, then np.packbits of the byte-aligned rest), so
    no n-byte array of the whole witness is made."""
    out = np.zeros(bitmap_bytes(n), dtype=np.uint8)
    for offset, values in segments:
        v = np.asarray(values, dtype=np.uint8)
        if offset < 0 or offset + len(v) > n:
            raise ValueError(f"pack_bits: segment [{offset}, {offset + len(v)}) is outside [0, {n})")
        head = min(len(v), -offset % 8)
        for j in range(head):  # up to 7 bits into the byte that the previous segment ends in
            out[(offset + j) >> 3] |= (v[j] & 1) << ((offset + j) & 7)
        body = v[head:]
        if len(body):
            b0 = (offset + head) >> 3
            packed = np.packbits(body, bitorder="little")
            out[b0 : b0 + len(packed)] |= packed
    return out


def read_wires(witness: Witness, start: int, stop: int) -> np.ndarray:
    """Standard-form host ``uint64[stop - start, 4]`` of wires start..stop-1 of either form."""
    if isinstance(witness, CompactWitness):
        return witness.wires(start, stop)
    return np.asarray(witness.limbs[start:stop])


def expand_on_host(witness: Witness) -> FrVector:
    """An FrVector of either form (a CompactWitness expanded, an FrVector as it is)."""
    return witness.expand() if isinstance(witness, CompactWitness) else witness
