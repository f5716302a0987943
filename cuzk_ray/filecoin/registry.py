"""Filecoin's registered seal proofs and the PoRep configuration each one implies.

Sources (read, not copied): rust-filecoin-proofs-api src/registry.rs (the enum, its indices and
``porep_id``), rust-fil-proofs filecoin-proofs/src/constants.rs (partitions, layers, minimum
challenges, tree shapes), filecoin-proofs/src/parameters.rs (challenges per partition),
storage-proofs-core/src/api_version.rs (ApiVersion, ApiFeature) and drgraph.rs / graph.rs (degrees).

Every variant of one sector size shares one circuit and one ``.params``/``.vk``; they differ in
``porep_id`` (graph seeds), ApiVersion (DRG parent order) and features (how challenges are drawn).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

NODE_BYTES = 32
DRG_DEGREE = 6  # storage-proofs-core drgraph.rs BASE_DEGREE
EXP_DEGREE = 8  # storage-proofs-porep stacked/vanilla/graph.rs EXP_DEGREE
MAX_CHALLENGES_PER_PARTITION = 18

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


class ApiVersion(enum.Enum):
    """Network-mandated proof behaviour; V1_0 differs from V1_1+ in where the DRG predecessor sits
    and (for sectors over 2^29 nodes) how expander parents are truncated."""

    V1_0 = "1.0.0"
    V1_1 = "1.1.0"
    V1_2 = "1.2.0"

    @classmethod
    def parse(cls, text: str) -> ApiVersion:
        """'1.1.0' (semver, as rust prints it) or 'V1_1_0' (serde's name in JSON records)."""
        for v in cls:
            if text in (v.value, "V" + v.value.replace(".", "_")):
                return v
        raise ValueError(f"api_version: {text!r} is not one of 1.0.0, 1.1.0, 1.2.0 (or V1_0_0, V1_1_0, V1_2_0)")


class ApiFeature(enum.Enum):
    """Optional PoRep features (both from ApiVersion 1.2.0 on; mutually exclusive)."""

    SYNTHETIC_POREP = "SyntheticPoRep"
    NON_INTERACTIVE_POREP = "NonInteractivePoRep"

    @classmethod
    def parse(cls, text: str) -> ApiFeature:
        """serde's name ('SyntheticPoRep') or rust's Display ('synthetic-porep')."""
        for f in cls:
            if text in (f.value, f.name.lower().replace("_", "-")):
                return f
        raise ValueError(f"api_features: {text!r} is not SyntheticPoRep or NonInteractivePoRep")


@dataclass(frozen=True)
class SectorShape:
    """Per sector size: the graph, the layers, the partition and challenge counts, and the
    arities of trees C and R_last (base/sub/top; 0 = no such level)."""

    sector_size: int
    layers: int
    partitions: int  # interactive (and synthetic) PoRep
    min_challenges: int  # interactive, over all partitions
    ni_partitions: int
    ni_min_challenges: int
    base_arity: int
    sub_arity: int
    top_arity: int

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_BYTES


# filecoin-proofs constants.rs: POREP_PARTITIONS, LAYERS, get_porep_*_minimum_challenges,
# get_porep_non_interactive_partitions, SectorShape{2KiB,8MiB,512MiB,32GiB,64GiB}.
SECTOR_SHAPES = {
    2 * KIB: SectorShape(2 * KIB, 2, 1, 2, 13, 26, 8, 0, 0),
    8 * MIB: SectorShape(8 * MIB, 2, 1, 2, 13, 26, 8, 0, 0),
    512 * MIB: SectorShape(512 * MIB, 2, 1, 2, 13, 26, 8, 0, 0),
    32 * GIB: SectorShape(32 * GIB, 11, 10, 176, 126, 2253, 8, 8, 0),
    64 * GIB: SectorShape(64 * GIB, 11, 10, 176, 126, 2253, 8, 8, 2),
}


def sector_shape(sector_size: int) -> SectorShape:
    """The shape of a published sector size; a one-line error for any other."""
    try:
        return SECTOR_SHAPES[sector_size]
    except KeyError:
        sizes = ", ".join(str(s) for s in SECTOR_SHAPES)
        raise ValueError(f"sector_size: {sector_size} is not a published sector size ({sizes})") from None


def porep_id_for(index: int, nonce: int = 0) -> bytes:
    """registry.rs ``porep_id``: u64_le(registered proof index) || u64_le(nonce) || 16 zero bytes."""
    return index.to_bytes(8, "little") + nonce.to_bytes(8, "little") + bytes(16)


@dataclass(frozen=True)
class PoRepConfig:
    """What a verifier needs to rebuild a sector's public inputs (filecoin-proofs ``PoRepConfig``):
    a regression record carries exactly these fields, and a registered proof implies them."""

    sector_size: int
    partitions: int
    porep_id: bytes
    api_version: ApiVersion
    features: tuple[ApiFeature, ...] = ()

    def __post_init__(self):
        shape = sector_shape(self.sector_size)
        if len(self.porep_id) != 32:
            raise ValueError(f"porep_id: need 32 bytes, have {len(self.porep_id)}")
        if self.features and self.api_version is not ApiVersion.V1_2:
            raise ValueError(f"api_features: {self.features[0].value} needs ApiVersion 1.2.0, have "
                             f"{self.api_version.value}")
        if len(set(self.features)) > 1:
            raise ValueError("api_features: SyntheticPoRep and NonInteractivePoRep exclude each other")
        if self.partitions < 1:
            raise ValueError(f"partitions: need at least 1, have {self.partitions}")
        if self.challenges_per_partition > MAX_CHALLENGES_PER_PARTITION:
            raise ValueError(f"partitions: {self.partitions} gives {self.challenges_per_partition} challenges per "
                             f"partition for {shape.sector_size} bytes, the circuit takes at most "
                             f"{MAX_CHALLENGES_PER_PARTITION}")

    @property
    def shape(self) -> SectorShape:
        return sector_shape(self.sector_size)

    @property
    def nodes(self) -> int:
        return self.shape.nodes

    @property
    def synthetic(self) -> bool:
        return ApiFeature.SYNTHETIC_POREP in self.features

    @property
    def non_interactive(self) -> bool:
        return ApiFeature.NON_INTERACTIVE_POREP in self.features

    @property
    def challenges_per_partition(self) -> int:
        """parameters.rs ``select_challenges``: the minimum total divided over the partitions,
        rounded up (NI-PoRep has its own minimum)."""
        shape = self.shape
        total = shape.ni_min_challenges if self.non_interactive else shape.min_challenges
        return -(-total // self.partitions)


@dataclass(frozen=True)
class RegisteredSealProof:
    """One entry of rust-filecoin-proofs-api's ``RegisteredSealProof`` enum."""

    name: str
    index: int  # the enum's position, which is also its porep_id's first 8 bytes
    sector_size: int
    api_version: ApiVersion
    features: tuple[ApiFeature, ...]

    @property
    def porep_id(self) -> bytes:
        return porep_id_for(self.index)

    @property
    def config(self) -> PoRepConfig:
        """The PoRepConfig this proof type implies (registry.rs ``as_v1_config``)."""
        shape = sector_shape(self.sector_size)
        ni = ApiFeature.NON_INTERACTIVE_POREP in self.features
        return PoRepConfig(self.sector_size, shape.ni_partitions if ni else shape.partitions, self.porep_id,
                           self.api_version, self.features)


def _registered() -> tuple[RegisteredSealProof, ...]:
    # registry.rs: five sizes per group, groups in this order; the enum is append-only.
    sizes = (("2KiB", 2 * KIB), ("8MiB", 8 * MIB), ("512MiB", 512 * MIB), ("32GiB", 32 * GIB), ("64GiB", 64 * GIB))
    groups = (("V1", ApiVersion.V1_0, ()),
              ("V1_1", ApiVersion.V1_1, ()),
              ("V1_1_Feat_SyntheticPoRep", ApiVersion.V1_2, (ApiFeature.SYNTHETIC_POREP,)),
              ("V1_2_Feat_NonInteractivePoRep", ApiVersion.V1_2, (ApiFeature.NON_INTERACTIVE_POREP,)))
    out = []
    for suffix, version, features in groups:
        for label, size in sizes:
            out.append(RegisteredSealProof(f"StackedDrg{label}{suffix}", len(out), size, version, features))
    return tuple(out)


SEAL_PROOFS = _registered()
SEAL_PROOFS_BY_NAME = {p.name: p for p in SEAL_PROOFS}


def registered_seal_proof(name_or_index: str | int) -> RegisteredSealProof:
    """A registered seal proof by its rust name ('StackedDrg2KiBV1_1') or enum index (5)."""
    if isinstance(name_or_index, int):
        if not 0 <= name_or_index < len(SEAL_PROOFS):
            raise ValueError(f"registered seal proof: index {name_or_index} is not in 0..{len(SEAL_PROOFS) - 1}")
        return SEAL_PROOFS[name_or_index]
    try:
        return SEAL_PROOFS_BY_NAME[name_or_index]
    except KeyError:
        raise ValueError(f"registered seal proof: {name_or_index!r} is not a known name") from None
