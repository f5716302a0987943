"""The output contract (scripts and other tools rely on it):

  output_dir/verification_key.json                       snarkjs format (+ "insecure_dev_setup",
                                                         "setup_seed" for a development key)
  output_dir/proofs/<proof_id>/partition-<k>/proof.json  snarkjs format
  output_dir/proofs/<proof_id>/partition-<k>/public.json
  output_dir/proofs/<proof_id>/seal_proof.bin            circuit=filecoin: the MultiProof (192 bytes per
                                                         partition), verified against the C1 first
  output_dir/journal.jsonl    a run header line, then one line per verified partition, appended
                              and fsync'd as each partition's files are on disk
  output_dir/manifest.json    {"complete": true, "proofs": [entry, ...], "run": {...},
                               "verification_key_sha256", "insecure_dev_setup", "setup_seed", ...}
  output_dir/manifest.partial.json   the same with "complete": false, "failed", "incomplete",
                               "stopped" (why the run ended early), when not every proof is done
  entry = {"proof_id", "partition", "proof", "proof_sha256", "public", "public_sha256",
           "verification_key", "verified", "synthesis_node", "prover_node", "seconds": {stage: s},
           "witness", "witness_sha256" (snarkjs circuits)}    paths relative to output_dir

Why it is cut this way (issue 15):

- **One job per directory**: ``OutputDir.open`` takes an exclusive ``flock`` on
  ``output_dir/.cuzk-ray.lock`` for the job's whole life; a second job refuses at once.
- **A run never mixes with an earlier one**: a directory holding an earlier run's outputs is
  refused unless ``resume=true`` (continue that run: same circuit, key, seed and proofs, checked
  against the journal's header) or ``overwrite=true`` (remove the earlier run's files: only names
  this contract writes; anything else in the directory is the user's and stays).
- **No lost work**: every partition's files are written (temporary name, then rename, fsync'd) as
  soon as it verifies, and its entry appended to the journal; a crash, SIGINT or a full disk keeps
  every finished partition. The manifest is written at the end from what is on disk: manifest.json
  when every proof of the run is done, else manifest.partial.json. Space for the final manifest is
  held in ``.cuzk-ray.reserve`` during the run and released to write it, so a disk that filled up
  mid-run still gets its partial manifest. ``resume=true`` proves only the proofs not yet complete
  on disk (entries whose files are missing or no longer match their SHA-256 are proved again).
- **Outputs that cannot lie**: each entry records the SHA-256 of the bytes written (and of the
  witness file), which ``jobs/verify.py --manifest`` checks.
- Failures writing output_dir (ENOSPC, EACCES, EROFS, ENOTDIR, ...) are one-line ``OutputError``s
  naming the path.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import OutputError
from .formats.native import file_sha256
from .formats.snarkjs_json import (
    json_bytes,
    proof_json,
    public_json,
    verification_key_json,
    write_bytes_atomic,
)
from .locks import check_unlocked, hold_lock, os_error
from .signals import stop_signals_deferred

MANIFEST = "manifest.json"
PARTIAL = "manifest.partial.json"
JOURNAL = "journal.jsonl"
VK = "verification_key.json"
PROOFS = "proofs"
SEAL_PROOF = "seal_proof.bin"  # circuit=filecoin: proofs/<proof_id>/seal_proof.bin
LOCK = ".cuzk-ray.lock"
RESERVE = ".cuzk-ray.reserve"
LOCK_ADVICE = "wait for it or use another output_dir"
EARLIER = (MANIFEST, PARTIAL, JOURNAL, VK, PROOFS)  # what marks a directory as holding a run
JOURNAL_VERSION = 1

# Disk estimate per partition: two small files (a block each on most file systems, more for a
# long public.json), a directory, its journal line and manifest entry.
BLOCK = 4096
ENTRY_BYTES = 1024  # a journal line or a manifest entry, rounded up
MANIFEST_BASE = 16384  # the manifest's fields other than the entries


@contextmanager
def _guard(path) -> Iterator[None]:
    """Turn an OSError while writing ``path`` into a one-line OutputError naming it."""
    try:
        yield
    except OSError as e:
        raise os_error(path, e) from None


# ensure_dir writes this much in a probe file: a disk too full for Hydra's record of the run
# (.hydra/, ~10 KiB, written before the job runs) is refused in one line instead of a traceback.
PROBE_BYTES = 32 * 1024


def ensure_dir(path, what: str = "output_dir") -> Path:
    """Create directory ``path`` (and its parents) and check that a file of PROBE_BYTES can be
    written in it; OutputError naming it if not (not a directory, read-only, full, forbidden)."""
    p = Path(path).expanduser()
    probe = None
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".cuzk-ray-probe.", dir=p)
        with os.fdopen(fd, "wb") as f:
            f.write(bytes(PROBE_BYTES))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise OutputError(f"{what}={path} cannot be written: {os_error(e.filename or p, e)}") from None
    finally:
        if probe is not None:
            Path(probe).unlink(missing_ok=True)
    return p


@dataclass(frozen=True)
class RunIdentity:
    """What a run's outputs belong to: a resumed run must match it field for field."""

    circuit_id: str
    verification_key_sha256: str
    seed: int
    proofs: int
    partitions: int
    witness: tuple[str, ...] = ()  # snarkjs circuits: the witness files, one per proof
    insecure_dev_setup: bool = False
    setup_seed: int | None = None  # the development setup's seed (insecure keys only)

    @classmethod
    def for_key(cls, vk, circuit_id: str, seed: int, proofs: int, partitions: int, witness=(),
                insecure_dev_setup: bool = False, setup_seed: int | None = None) -> RunIdentity:
        """The identity of a run with key ``vk`` (its verification_key.json's SHA-256 computed here)."""
        vk_sha = hashlib.sha256(verification_key_bytes(vk, insecure_dev_setup, setup_seed)).hexdigest()
        return cls(circuit_id, vk_sha, seed, proofs, partitions, tuple(witness), insecure_dev_setup,
                   setup_seed if insecure_dev_setup else None)

    def to_json(self) -> dict:
        d = asdict(self)
        d["witness"] = list(self.witness)
        return d


@dataclass(frozen=True)
class ManifestEntry:
    """One verified partition on disk (a journal line, a manifest entry)."""

    proof_id: str
    proof_index: int
    partition: int
    proof: str  # relative to output_dir
    proof_sha256: str
    public: str
    public_sha256: str
    verification_key: str
    verified: bool
    synthesis_node: str | None
    prover_node: str | None
    seconds: dict[str, float] = field(default_factory=dict)
    witness: str | None = None
    witness_sha256: str | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        if self.witness is None:
            del d["witness"], d["witness_sha256"]
        return d

    @classmethod
    def from_json(cls, d: dict) -> ManifestEntry:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class OutputDir:
    """output_dir for one job: locked, checked, written partition by partition.

    ``OutputDir.open(path, resume, overwrite)`` -> ``start(identity, vk, n_public)`` (disk space
    checked there) -> the proofs still to do -> ``add(result)`` per verified partition ->
    ``finish(...)``; use it as a context manager (the lock is held until exit)."""

    path: Path
    resume: bool = False
    overwrite: bool = False
    identity: RunIdentity | None = None
    entries: dict[tuple[str, int], ManifestEntry] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)  # resume: entries whose files changed or vanished
    removed: int = 0  # overwrite: files of the earlier run removed
    manifest_path: Path | None = None
    _lock_fd: int | None = None
    _journal = None

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def open(cls, path, resume: bool = False, overwrite: bool = False) -> OutputDir:
        """Create and lock ``path``; refuse a directory another job holds, or one with an earlier
        run's outputs unless ``resume`` or ``overwrite`` says what to do with them."""
        if resume and overwrite:
            raise OutputError("resume=true and overwrite=true: give one (resume continues the earlier run, "
                              "overwrite replaces it)")
        out = cls(ensure_dir(path), resume, overwrite)
        out._lock()
        try:
            earlier = [n for n in EARLIER if (out.path / n).exists()]
            if earlier and not (resume or overwrite):
                raise OutputError(f"output_dir={out.path} holds an earlier run's outputs ({', '.join(earlier)}): "
                                  f"resume=true finishes that run, overwrite=true replaces its files, or use "
                                  f"another output_dir")
            if resume and earlier and not (out.path / JOURNAL).is_file():
                raise OutputError(f"resume=true: {out.path / JOURNAL} is missing, so what is on disk cannot be "
                                  f"trusted; overwrite=true replaces the earlier outputs")
            if overwrite:
                out.removed = out._remove_earlier()
            with _guard(out.path / RESERVE):
                (out.path / RESERVE).unlink(missing_ok=True)  # left by a run that was killed
        except BaseException:
            out.close()
            raise
        return out

    @staticmethod
    def check_not_locked(path) -> None:
        """Refuse (OutputError) if another job holds ``path``'s lock; creates nothing. The jobs call
        it before Hydra writes its record (.hydra/) into the directory, so a refused job leaves the
        running job's record alone; the lock itself is taken by ``open``."""
        p = Path(path).expanduser()
        check_unlocked(p / LOCK, f"output_dir={p}", LOCK_ADVICE)

    def _lock(self) -> None:
        self._lock_fd = hold_lock(self.path / LOCK, f"output_dir={self.path}", LOCK_ADVICE)

    def _remove_earlier(self) -> int:
        """Remove the files an earlier run of this contract wrote, by their names only (and the
        temporary files of its atomic writes, left by a run that was killed); directories under
        proofs/ that are left empty go too. Returns how many files were removed."""
        ours = (MANIFEST, PARTIAL, JOURNAL, VK)
        temp = tuple(f".{n}." for n in ours + ("proof.json", "public.json", SEAL_PROOF))  # write_bytes_atomic's
        n = 0
        with _guard(self.path):
            for f in self.path.iterdir():
                if f.is_file() and (f.name in ours or f.name.startswith(temp)):
                    f.unlink()
                    n += 1
            proofs = self.path / PROOFS
            if proofs.is_dir():
                for f in list(proofs.glob("*/partition-*/*")) + list(proofs.glob(f"*/*{SEAL_PROOF}*")):
                    if f.is_file() and (f.name in ("proof.json", "public.json", SEAL_PROOF) or f.name.startswith(temp)):
                        f.unlink()
                        n += 1
                for d in sorted((p for p in proofs.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
                    if not any(d.iterdir()):
                        d.rmdir()
                if not any(proofs.iterdir()):
                    proofs.rmdir()
        return n

    # -- the run -------------------------------------------------------------------------------

    def start(self, identity: RunIdentity, vk, n_public: int) -> list[int]:
        """Check (resume) the journal against this run, check the disk has room for what is left,
        then write the verification key and (fresh) the journal header; returns the proof indices
        still to prove, in order. Nothing is written when it refuses."""
        self.identity = identity
        vk_bytes = verification_key_bytes(vk, identity.insecure_dev_setup, identity.setup_seed)
        if hashlib.sha256(vk_bytes).hexdigest() != identity.verification_key_sha256:
            raise ValueError("RunIdentity.verification_key_sha256 is not the SHA-256 of the key's JSON "
                             "(use RunIdentity.for_key)")
        journal = self.path / JOURNAL
        resuming = self.resume and journal.is_file()
        if resuming:
            self._load_journal(journal)
        done = self.done_proofs()
        todo = [p for p in range(identity.proofs) if p not in done]
        self.check_space(len(todo) * identity.partitions, n_public, len(vk_bytes))
        if not resuming:
            with _guard(journal):
                header = {"journal": JOURNAL_VERSION, "run": identity.to_json()}
                write_bytes_atomic(journal, json.dumps(header).encode() + b"\n", fsync=True)
        vk_path = self.path / VK
        if not vk_path.is_file() or file_sha256(vk_path) != identity.verification_key_sha256:
            with _guard(vk_path):
                write_bytes_atomic(vk_path, vk_bytes, fsync=True)
        with _guard(journal):
            self._journal = open(journal, "ab", buffering=0)  # unbuffered: nothing left to flush at close
        return todo

    def _load_journal(self, journal: Path) -> None:
        """Read the journal of the run being resumed: its header must match this run; its entries
        count only where the files are on disk with the recorded SHA-256."""
        with _guard(journal):
            raw = journal.read_bytes()
            if raw and not raw.endswith(b"\n"):  # a line torn by a crash or a full disk: drop it
                raw = raw[: raw.rfind(b"\n") + 1]
                with open(journal, "r+b") as f:
                    f.truncate(len(raw))
        lines = raw.decode(errors="replace").splitlines()
        try:
            header = json.loads(lines[0]) if lines else {}
            theirs = header["run"]
        except (ValueError, KeyError, TypeError):
            raise OutputError(f"{journal}: line 1 is not a cuzk-ray journal header; overwrite=true "
                              f"replaces the earlier outputs") from None
        mine = self.identity.to_json()
        for k, v in mine.items():
            if theirs.get(k) != v:
                raise OutputError(f"resume=true: {journal} is a run with {k}={theirs.get(k)!r}, this one has "
                                  f"{k}={v!r}; resume continues the same run only (overwrite=true replaces it)")
        for n, line in enumerate(lines[1:], start=2):
            try:
                e = ManifestEntry.from_json(json.loads(line))
            except (ValueError, TypeError) as err:
                raise OutputError(f"{journal}: line {n} is not a journal entry ({err})") from None
            self.entries.pop((e.proof_id, e.partition), None)
            if self._on_disk(e):
                self.entries[(e.proof_id, e.partition)] = e
            else:
                self.dropped.append(e.proof)

    def _on_disk(self, e: ManifestEntry) -> bool:
        """The entry names its partition's own files (a journal line cannot point elsewhere) and
        they hold the bytes it records."""
        d = f"{PROOFS}/{e.proof_id}/partition-{e.partition}"
        if "/" in str(e.proof_id) or ".." in str(e.proof_id) or (e.proof, e.public) != (f"{d}/proof.json",
                                                                                         f"{d}/public.json"):
            return False
        try:
            return (file_sha256(self.path / e.proof) == e.proof_sha256
                    and file_sha256(self.path / e.public) == e.public_sha256)
        except OSError:
            return False

    def done_proofs(self) -> set[int]:
        """Proof indices whose every partition is on disk."""
        count: dict[int, int] = {}
        for e in self.entries.values():
            count[e.proof_index] = count.get(e.proof_index, 0) + 1
        return {p for p, n in count.items() if n == self.identity.partitions}

    def check_space(self, partitions: int, n_public: int, vk_bytes: int = 0) -> int:
        """Refuse to start when the file system cannot hold ``partitions`` partitions' outputs and
        the manifest (an estimate: a few KiB each); then hold the manifest's space in a reserve
        file. Returns the bytes needed."""
        public_blocks = -(-(80 * n_public + 8) // BLOCK)
        per_partition = (1 + public_blocks + 1) * BLOCK + ENTRY_BYTES  # proof, public, dir; journal line
        total_entries = len(self.entries) + partitions
        reserve = MANIFEST_BASE + ENTRY_BYTES * total_entries
        need = per_partition * partitions + reserve + -(-vk_bytes // BLOCK) * BLOCK + BLOCK  # + the journal
        with _guard(self.path):
            st = os.statvfs(self.path)
        have = st.f_bavail * st.f_frsize
        if need > have:
            raise OutputError(f"output_dir={self.path}: need {need // 1024} KiB free for {partitions} partition(s) "
                              f"and the manifest, have {have // 1024} KiB")
        if st.f_files and st.f_favail < 3 * partitions + 8:
            raise OutputError(f"output_dir={self.path}: need {3 * partitions + 8} free inodes, have {st.f_favail}")
        res = self.path / RESERVE
        with _guard(res):
            fd = os.open(res, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.posix_fallocate(fd, 0, reserve)
            finally:
                os.close(fd)
        return need

    def add(self, res, info: dict | None = None) -> ManifestEntry:
        """Write one verified partition (``engines.types.PartitionResult``): proof.json and
        public.json (temporary name, rename, fsync), then its journal line (fsync'd).
        ``info``: the circuit's fields for the proof (``witness``, ``witness_sha256``)."""
        d = self.path / PROOFS / res.proof_id / f"partition-{res.partition}"
        proof_b, public_b = json_bytes(proof_json(res.proof)), json_bytes(public_json(res.public))
        info = info or {}
        entry = ManifestEntry(
            proof_id=res.proof_id, proof_index=res.proof_index, partition=res.partition,
            proof=str((d / "proof.json").relative_to(self.path)), proof_sha256=hashlib.sha256(proof_b).hexdigest(),
            public=str((d / "public.json").relative_to(self.path)),
            public_sha256=hashlib.sha256(public_b).hexdigest(), verification_key=VK, verified=bool(res.verified),
            synthesis_node=res.synthesis_node, prover_node=res.prover_node,
            seconds={k: round(v, 6) for k, v in res.times.items()},
            witness=info.get("witness"), witness_sha256=info.get("witness_sha256"))
        with stop_signals_deferred():
            with _guard(d):
                d.mkdir(parents=True, exist_ok=True)
            with _guard(d / "proof.json"):
                write_bytes_atomic(d / "proof.json", proof_b, fsync=True)
            with _guard(d / "public.json"):
                write_bytes_atomic(d / "public.json", public_b, fsync=True)
            line = json.dumps(entry.to_json()).encode() + b"\n"
            with _guard(self.path / JOURNAL):
                view = memoryview(line)
                while view:  # a raw file may take part of it
                    view = view[self._journal.write(view):]
                os.fsync(self._journal.fileno())
            self.entries[(entry.proof_id, entry.partition)] = entry
        return entry

    def finish(self, info: dict | None = None, failed: dict | None = None, stopped: str | None = None) -> Path:
        """Write the manifest from what is on disk: manifest.json when every proof of the run is
        done, else manifest.partial.json (with ``failed``: label -> why, and ``stopped``: why the
        run ended early). The reserve is released first, so a full disk still gets it."""
        ident = self.identity
        (self.path / RESERVE).unlink(missing_ok=True)
        done = self.done_proofs()
        complete = len(done) == ident.proofs and not failed and stopped is None
        entries = sorted(self.entries.values(), key=lambda e: (e.proof_id, e.partition))
        manifest = {"proofs": [e.to_json() for e in entries], "complete": complete, "run": ident.to_json(),
                    "verification_key": VK, "verification_key_sha256": ident.verification_key_sha256,
                    "insecure_dev_setup": ident.insecure_dev_setup, "setup_seed": ident.setup_seed}
        manifest.update(info or {})
        if not complete:
            manifest.update(failed=dict(failed or {}), stopped=stopped,
                            incomplete=sorted({e.proof_id for e in entries if e.proof_index not in done}))
        path = self.path / (MANIFEST if complete else PARTIAL)
        with _guard(path):
            write_bytes_atomic(path, json_bytes(manifest), fsync=True)
            (self.path / (PARTIAL if complete else MANIFEST)).unlink(missing_ok=True)  # an earlier state's
        self.manifest_path = path
        return path

    @property
    def started(self) -> bool:
        return self._journal is not None

    def close(self) -> None:
        """Close the journal, drop the reserve and release the lock (the lock file stays: removing
        it would let two jobs lock two different files)."""
        if self._journal is not None:
            try:
                self._journal.close()
            except OSError:
                pass  # every entry was fsync'd as it was written; nothing is lost here
            self._journal = None
        try:
            (self.path / RESERVE).unlink(missing_ok=True)
        except OSError:
            pass
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> OutputDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def verification_key_bytes(vk, insecure_dev_setup: bool = False, setup_seed: int | None = None) -> bytes:
    """verification_key.json's bytes for this key; a development key's says so in two extra
    fields (snarkjs ignores fields it does not know): ``insecure_dev_setup`` and ``setup_seed``."""
    obj = verification_key_json(vk)
    if insecure_dev_setup:
        obj.update(insecure_dev_setup=True, setup_seed=setup_seed)
    return json_bytes(obj)
