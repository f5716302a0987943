"""A sector's public data on the command line: sizes, 32-byte hex values, commitment CIDs, and the
PoRep config, turned into the typed records the verbs work on (``Sector``).

The config comes from ``--registered-proof NAME`` (rust-filecoin-proofs-api's name, which implies
size, ApiVersion, features and porep_id) or from ``--sector-size`` with ``--api-version`` (and
``--feature``); ``--porep-id`` overrides the implied porep_id (test vectors made with their own,
such as polka-storage's all-zero one). Every bad value is a ValueError naming its flag.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from .cid import SEALED, UNSEALED, CommitmentKind, cid_to_commitment
from .public_inputs import SealPublicData
from .registry import SEAL_PROOFS, ApiFeature, ApiVersion, PoRepConfig, registered_seal_proof, sector_shape

SIZE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_SIZE = re.compile(r"(\d+)\s*([a-z]*)")
_HEX32 = re.compile(r"(0x)?[0-9a-f]{64}")


def parse_size(text: str, flag: str = "--sector-size") -> int:
    """'2KiB', '8MiB', '32GiB', '64GiB' or plain bytes ('2048') as a byte count."""
    m = _SIZE.fullmatch(text.strip().lower())
    if not m or m.group(2) not in SIZE_UNITS:
        raise ValueError(f"{flag}: {text!r} is not a size (bytes, or a number with KiB, MiB, GiB or TiB)")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def parse_hex(text: str, flag: str, length: int = 32) -> bytes:
    """``length`` bytes from hex (an optional 0x prefix), in the order written."""
    body = text.strip().lower().removeprefix("0x")
    try:
        value = bytes.fromhex(body)
    except ValueError:
        raise ValueError(f"{flag}: {text!r} is not hex") from None
    if len(value) != length:
        raise ValueError(f"{flag}: need {length} bytes ({2 * length} hex digits), have {len(value)}")
    return value


def parse_commitment(text: str, kind: CommitmentKind, flag: str) -> bytes:
    """A commitment as its CID ('baga6ea4sea...', 'bagboea4b5abc...') or as 64 hex digits of its
    32 bytes (the order Filecoin stores them: little-endian field element)."""
    if _HEX32.fullmatch(text.strip().lower()):
        return parse_hex(text, flag)
    try:
        return cid_to_commitment(text.strip(), kind)
    except ValueError as e:
        raise ValueError(f"{flag}: not 64 hex digits, and not a {kind.name} CID: {e}") from None


def parse_u64(text: str, flag: str) -> int:
    """A decimal u64 (a sector number)."""
    if not text.strip().isdigit() or int(text) >= 1 << 64:
        raise ValueError(f"{flag}: {text!r} is not a decimal number in 0..2^64-1")
    return int(text)


def add_config_arguments(ap: argparse.ArgumentParser) -> None:
    """The flags that choose a PoRep config (what ``config_from_args`` reads)."""
    g = ap.add_argument_group("proof type (one of --registered-proof, or --sector-size with --api-version)")
    g.add_argument("--registered-proof", metavar="NAME", help="e.g. StackedDrg2KiBV1_1, StackedDrg32GiBV1_1")
    g.add_argument("--sector-size", metavar="SIZE", help="2KiB, 8MiB, 512MiB, 32GiB, 64GiB (or bytes)")
    g.add_argument("--api-version", metavar="V", help="1.0.0, 1.1.0 or 1.2.0")
    g.add_argument("--feature", metavar="F", help="SyntheticPoRep or NonInteractivePoRep (ApiVersion 1.2.0)")
    g.add_argument("--porep-id", metavar="HEX", help="32 bytes; default: the registered proof's")


def add_sector_arguments(ap: argparse.ArgumentParser) -> None:
    """The config flags and the sector's public data (what ``sector_from_args`` reads)."""
    add_config_arguments(ap)
    g = ap.add_argument_group("the sector's public data")
    g.add_argument("--comm-r", required=True, metavar="CID|HEX", help="bagboea4b5abc... or 32 bytes hex")
    g.add_argument("--comm-d", required=True, metavar="CID|HEX", help="baga6ea4sea... or 32 bytes hex")
    g.add_argument("--prover-id", required=True, metavar="HEX", help="32 bytes")
    g.add_argument("--sector-id", required=True, metavar="N", help="the sector number (u64)")
    g.add_argument("--ticket", required=True, metavar="HEX", help="32 bytes (the PreCommit randomness)")
    g.add_argument("--seed", required=True, metavar="HEX", help="32 bytes (the interactive challenge seed)")
    g.add_argument("--partition", metavar="K", help="only partition K (0-based); default: every partition")


@dataclass(frozen=True)
class Sector:
    """A sector as the verbs see it: its PoRep config, its public data, and which partitions."""

    config: PoRepConfig
    data: SealPublicData
    partition: int | None  # None: every partition
    registered_proof: str | None

    @property
    def partitions(self) -> list[int]:
        return list(range(self.config.partitions)) if self.partition is None else [self.partition]


def config_from_args(args: argparse.Namespace) -> tuple[PoRepConfig, str | None]:
    """(config, registered proof name or None) from the proof-type flags."""
    porep_id = None if args.porep_id is None else parse_hex(args.porep_id, "--porep-id")
    if args.registered_proof is not None:
        if args.sector_size or args.api_version or args.feature:
            raise ValueError("--registered-proof implies the sector size, ApiVersion and features: give it alone, "
                             "or --sector-size with --api-version")
        p = registered_seal_proof(args.registered_proof)
        c = p.config
        return PoRepConfig(c.sector_size, c.partitions, porep_id or c.porep_id, c.api_version, c.features), p.name
    if args.sector_size is None or args.api_version is None:
        raise ValueError("the proof type: give --registered-proof NAME, or --sector-size with --api-version")
    size = parse_size(args.sector_size)
    shape = sector_shape(size)
    version = ApiVersion.parse(args.api_version)
    features = () if args.feature is None else (ApiFeature.parse(args.feature),)
    name = _registered_name(size, version, features)
    if porep_id is None:
        if name is None:
            raise ValueError(f"--porep-id: no registered seal proof has {size} bytes, ApiVersion {version.value} "
                             f"and features {[f.value for f in features]}; give --porep-id")
        porep_id = registered_seal_proof(name).porep_id
    partitions = shape.ni_partitions if ApiFeature.NON_INTERACTIVE_POREP in features else shape.partitions
    if name is not None and registered_seal_proof(name).porep_id != porep_id:
        name = None  # a porep_id of its own: not that registered proof
    return PoRepConfig(size, partitions, porep_id, version, features), name


def _registered_name(size: int, version: ApiVersion, features: tuple[ApiFeature, ...]) -> str | None:
    for p in SEAL_PROOFS:
        if (p.sector_size, p.api_version, p.features) == (size, version, features):
            return p.name
    return None


def sector_from_args(args: argparse.Namespace) -> Sector:
    """The Sector the flags of ``add_sector_arguments`` describe (one-line ValueError otherwise)."""
    config, name = config_from_args(args)
    data = SealPublicData(comm_r=parse_commitment(args.comm_r, SEALED, "--comm-r"),
                          comm_d=parse_commitment(args.comm_d, UNSEALED, "--comm-d"),
                          prover_id=parse_hex(args.prover_id, "--prover-id"),
                          sector_id=parse_u64(args.sector_id, "--sector-id"),
                          ticket=parse_hex(args.ticket, "--ticket"), seed=parse_hex(args.seed, "--seed"))
    partition = None
    if args.partition is not None:
        partition = parse_u64(args.partition, "--partition")
        if partition >= config.partitions:
            raise ValueError(f"--partition: {partition} is outside 0..{config.partitions - 1} "
                             f"({config.partitions} partitions for this proof type)")
    return Sector(config, data, partition, name)
