"""What the service checks before it accepts a request or starts: a request's files (inside
service.input_roots, regular files, well formed), its sizes (the batch job's checks, a partition
cap, the batch job's preflight when its key is not resident yet), and that no other service owns
the database or the output directory (an exclusive lock on each, held for the service's life).

Every refusal is a models.ServiceError naming the field (``circuit.partitions=1000000: at most
1024 ...``) or the file, in the batch job's words."""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable
from pathlib import Path
from typing import NamedTuple

from ..circuits.filecoin import c1_proof_type
from ..errors import user_errors
from ..locks import check_unlocked, hold_lock
from ..outputs import LOCK, LOCK_ADVICE
from .keys import fitted, key_circuit, key_id
from .models import FILE_KEYS, Forbidden, Invalid, one_line

# A request is one proof; its partitions are proved and answered together. Filecoin's proofs have
# at most 10 partitions (PoRep 32/64 GiB); a batch of many proofs is many requests.
PARTITIONS_MAX = 1024
DB_LOCK_SUFFIX = ".lock"  # service.db's lock: service.db.lock, next to it


class Accepted(NamedTuple):
    """A request's circuit as checked: the resident key it needs and its partition count."""

    key_id: str
    partitions: int


def check_request(circuit: dict, cfg: dict, settings, roots: Iterable[Path], key_only: bool = False,
                  resident: Container[str] = (), vram: int | None = None,
                  read_c1: Callable[[str], str] | None = None) -> Accepted:
    """The key and partitions of a request's (parsed, resolved) circuit, or the ServiceError that
    refuses it: Forbidden for a path outside ``roots``; Invalid for a file that is not a regular
    file or not well formed, a size the batch job refuses, more than PARTITIONS_MAX partitions,
    or a key (not in ``resident``) whose preflight does not fit this machine (``vram``: the room
    the prover pool measured, Engine.device_room; None: this process's GPU, if any). ``read_c1``:
    what reads a filecoin-c2 request's C1 the first time (circuits.filecoin.c1_proof_type's
    ``read``; None: here)."""
    check_paths(circuit, tuple(roots))
    params = circuit.get("params") if circuit["kind"] == "filecoin-c2" else None
    if params and not confined(params, tuple(roots)):
        raise Forbidden(f"circuit.params={params}: outside service.input_roots ({', '.join(map(str, roots))})")
    try:
        if circuit["kind"] == "filecoin-c2":  # read once, by read_c1; the checks below find it remembered
            c1_proof_type(circuit["c1"], read_c1)
        kid = key_id(circuit, cfg["setup_seed"])
        if circuit["kind"] in ("porep", "filecoin-c2"):  # filecoin-c2: the C1 read, naming a bad field
            partitions = check_partitions(key_circuit(circuit).partitions)
        else:
            check_snarkjs_files(circuit, key_only)
            partitions = 1
        if kid not in resident:  # a resident key passed its preflight when it was loaded
            check_fits(kid, circuit, cfg, settings, vram)
        return Accepted(kid, partitions)
    except (*user_errors(), OSError) as e:
        raise Invalid(one_line(message(e))) from None


def check_paths(circuit: dict, roots: tuple[Path, ...]) -> None:
    """Each file of the request inside one of ``roots`` (symlinks resolved; else Forbidden) and a
    regular file (else Invalid: a FIFO would block the reader, a device never end)."""
    from ..formats.regular import open_regular

    for k in FILE_KEYS:
        path = circuit.get(k)
        if not path:
            continue
        if not confined(path, roots):
            raise Forbidden(f"circuit.{k}={path}: outside service.input_roots ({', '.join(map(str, roots))})")
        try:
            open_regular(path).close()
        except FileNotFoundError:
            raise Invalid(f"circuit.{k}={path}: file not found") from None
        except (ValueError, OSError) as e:  # NotRegularFile names the path and what it is
            raise Invalid(f"circuit.{k}={path}: {one_line(message(e)).removeprefix(f'{path}: ')}") from None


def confined(path: str, roots: tuple[Path, ...]) -> bool:
    """Whether ``path`` (symlinks resolved) lies under one of ``roots``."""
    real = Path(os.path.realpath(path))
    return any(real == r or r in real.parents for r in roots)


def check_partitions(n: int) -> int:
    if n > PARTITIONS_MAX:
        raise ValueError(f"circuit.partitions={n}: at most {PARTITIONS_MAX} per request (one request is one "
                         f"proof; send a batch as several requests)")
    return n


def check_fits(kid: str, circuit: dict, cfg: dict, settings, vram: int | None = None) -> None:
    """The batch job's preflight, quick pass (sizes only: nothing allocated or hashed), for a key
    that would have to be loaded, at the gpu_concurrency its partitions fit (keys.fitted, against
    ``vram``: see check_request): a size this machine cannot hold is refused now, not failed later."""
    from ..preflight import PreflightError, preflight_quick

    base = key_circuit(circuit)
    try:
        preflight_quick(fitted(settings, base, cfg, vram, quiet=True), base, cfg["cache_dir"], cfg["setup_seed"], vram)
    except PreflightError as e:
        raise ValueError(f"circuit: key {kid}: {e}") from None


def check_snarkjs_files(circuit: dict, key_only: bool) -> None:
    """The files of a snarkjs request, read as the batch job reads them (errors name the file):
    the zkey's headers, the witness (its wire count against the zkey's), the r1cs's header."""
    from ..formats.snarkjs import read_r1cs, read_wtns, read_zkey_sizes

    z = read_zkey_sizes(circuit["zkey"])
    if not key_only:
        read_wtns(circuit["witness"], z.n_vars)
    if circuit.get("r1cs"):
        cs = read_r1cs(circuit["r1cs"])
        if (cs.n_wires, cs.n_public) != (z.n_vars, z.n_public):
            raise ValueError(f"{circuit['r1cs']}: {cs.n_wires} wires and {cs.n_public} public inputs, the zkey "
                             f"{circuit['zkey']} has {z.n_vars} and {z.n_public}: not this key's circuit")


def message(e: BaseException) -> str:
    """An exception as one readable line (an OSError names its file)."""
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or e}"
    return str(e) or type(e).__name__


class ServiceLocks:
    """The service's exclusive locks on its database (``<db>.lock``) and its output directory
    (the batch job's ``output_dir/.cuzk-ray.lock``: a batch job cannot write into it either),
    held from ``take`` to ``release``; a second service on either is refused in one line
    naming it and the holder's pid."""

    def __init__(self, db: Path, output_dir: Path):
        self.targets = ((Path(f"{db}{DB_LOCK_SUFFIX}"), f"service.db={db}", "stop that service or use another "
                         "service.db"), (output_dir / LOCK, f"service.output_dir={output_dir}", LOCK_ADVICE))
        self.fds: list[int] = []

    def check(self) -> None:
        """Refuse (OutputError) if another process holds either lock; takes nothing (before Ray starts)."""
        for lock, owner, advice in self.targets:
            check_unlocked(lock, owner, advice)

    def take(self) -> None:
        try:
            for lock, owner, advice in self.targets:
                lock.parent.mkdir(parents=True, exist_ok=True)
                self.fds.append(hold_lock(lock, owner, advice))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        while self.fds:
            os.close(self.fds.pop())
