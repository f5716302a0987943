"""The service's durable queue: every accepted request is a row of a SQLite database, committed
before the request is acknowledged (WAL mode, synchronous=FULL: a commit survives a power cut).
The engine actor is its only writer; its handlers and its loop thread share one connection under
a lock. On start, the queued and running rows are the work to complete (service.ProvingService)."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from ..engines.types import Priority, ProofState
from .models import ProofRecord, SubmitRequest

SCHEMA = """
CREATE TABLE IF NOT EXISTS proofs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    proof_id TEXT NOT NULL UNIQUE,
    request_id TEXT NOT NULL UNIQUE,
    body_sha256 TEXT NOT NULL,
    circuit TEXT NOT NULL,
    key_id TEXT NOT NULL,
    priority INTEGER NOT NULL,
    state TEXT NOT NULL,
    partitions INTEGER NOT NULL,
    partitions_done INTEGER NOT NULL DEFAULT 0,
    timings TEXT NOT NULL DEFAULT '{}',
    error TEXT,
    created REAL NOT NULL,
    started REAL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS proofs_state ON proofs (state);
"""
COLUMNS = ("seq", "proof_id", "request_id", "body_sha256", "circuit", "key_id", "priority", "state", "partitions",
           "partitions_done", "timings", "error", "created", "started", "finished")
UNFINISHED = (ProofState.QUEUED.value, ProofState.RUNNING.value)


class Store:
    """The requests table (one row per accepted request; ``request_id`` unique)."""

    def __init__(self, path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=30)
        if fresh:
            os.chmod(self.path, 0o600)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def insert(self, proof_id: str, req: SubmitRequest, key_id: str, partitions: int) -> ProofRecord | None:
        """Add an accepted request (committed when this returns); None when its request_id is
        already taken (the caller compares bodies: the same answers 200, another 409)."""
        now = time.time()
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO proofs (proof_id, request_id, body_sha256, circuit, key_id, priority, state, "
                    "partitions, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (proof_id, req.request_id, req.body_sha256, json.dumps(req.circuit, sort_keys=True), key_id,
                     int(req.priority), ProofState.QUEUED.value, partitions, now))
            except sqlite3.IntegrityError:
                return None
        return self.get(proof_id)

    def get(self, proof_id: str) -> ProofRecord | None:
        return self._one("SELECT * FROM proofs WHERE proof_id = ?", (proof_id,))

    def by_request(self, request_id: str) -> ProofRecord | None:
        return self._one("SELECT * FROM proofs WHERE request_id = ?", (request_id,))

    def unfinished(self) -> list[ProofRecord]:
        """Queued and running proofs, in order of arrival."""
        return self._all("SELECT * FROM proofs WHERE state IN (?, ?) ORDER BY seq", UNFINISHED)

    def counts(self) -> dict[str, int]:
        """Proofs by state (every state named)."""
        out = {s.value: 0 for s in ProofState}
        with self._lock:
            for state, n in self._db.execute("SELECT state, COUNT(*) FROM proofs GROUP BY state"):
                out[state] = n
        return out

    def queued_by_priority(self) -> dict[str, int]:
        """Proofs not started yet, by priority (every priority named)."""
        out = {p.name.lower(): 0 for p in Priority}
        with self._lock:
            rows = self._db.execute("SELECT priority, COUNT(*) FROM proofs WHERE state = ? GROUP BY priority",
                                    (ProofState.QUEUED.value,)).fetchall()
        for pr, n in rows:
            out[Priority(pr).name.lower()] = n
        return out

    def set_state(self, proof_id: str, state: ProofState, error: str | None = None) -> None:
        """Move a proof to ``state`` (running: its start time; a finished state: its end time)."""
        now = time.time()
        with self._lock:
            if state is ProofState.RUNNING:
                self._db.execute("UPDATE proofs SET state = ?, started = COALESCE(started, ?) WHERE proof_id = ?",
                                 (state.value, now, proof_id))
            else:
                finished = now if state in (ProofState.DONE, ProofState.FAILED, ProofState.CANCELLED) else None
                self._db.execute("UPDATE proofs SET state = ?, error = ?, finished = ? WHERE proof_id = ?",
                                 (state.value, error, finished, proof_id))

    def set_progress(self, proof_id: str, done: int, timings: dict) -> None:
        with self._lock:
            self._db.execute("UPDATE proofs SET partitions_done = ?, timings = ? WHERE proof_id = ?",
                             (done, json.dumps(timings), proof_id))

    def _one(self, sql: str, args: tuple) -> ProofRecord | None:
        rows = self._all(sql, args)
        return rows[0] if rows else None

    def _all(self, sql: str, args: tuple) -> list[ProofRecord]:
        with self._lock:
            rows = self._db.execute(sql, args).fetchall()
        return [record(dict(zip(COLUMNS, r))) for r in rows]


def record(row: dict) -> ProofRecord:
    """A row of the proofs table as a ProofRecord."""
    return ProofRecord(seq=row["seq"], proof_id=row["proof_id"], request_id=row["request_id"],
                       body_sha256=row["body_sha256"], circuit=json.loads(row["circuit"]), key_id=row["key_id"],
                       priority=Priority(row["priority"]), state=ProofState(row["state"]),
                       partitions=row["partitions"], partitions_done=row["partitions_done"],
                       timings=json.loads(row["timings"]), error=row["error"], created=row["created"],
                       started=row["started"], finished=row["finished"])
