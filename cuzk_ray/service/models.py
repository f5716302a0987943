"""The service's typed records: what a request asks (SubmitRequest, parsed and checked once, here,
naming the field that is wrong), what the store keeps (ProofRecord) and what a handler answers
(Reply), with the errors that map to HTTP status codes (ServiceError and its kinds).

Bodies are checked by hand rather than by pydantic models: the API answers every error as
``{"error": "<one line>"}`` naming the field, in the batch job's words (``circuit.partitions=0:
must be at least 1``), which FastAPI's own 422 (a list of pydantic error objects) is not."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from ..engines.types import Priority, ProofState

REQUEST_ID_MAX = 200  # characters of a request_id
PRIORITIES = tuple(p.name.lower() for p in Priority)

# The keys a request's circuit takes, per kind (issue 16): the job's circuit config, plus the
# witness seed and, for the built-in circuit, the proof's number in its batch (which proof of a
# batch it is: part of its witness, so that a batch sent by jobs/prove.py service.url=... proves
# the same statements as a local run).
POREP_INT = ("constraints", "partitions", "public", "circuit_seed", "seed", "proof")
CIRCUIT_KEYS = {"porep": ("kind", *POREP_INT, "field_share", "shape"), "snarkjs": ("kind", "zkey", "witness", "r1cs"),
                "filecoin-c2": ("kind", "c1", "params", "variant")}
FILE_KEYS = ("zkey", "witness", "r1cs", "c1")
# proof ids per GET /v1/proofs?ids=...: a URL of ~6.6 KB (HTTP servers cap a request line at 8-16 KB)
STATUS_IDS_MAX = 200


class ServiceError(Exception):
    """An answer other than success: its HTTP status and one line."""

    status = 500


class Invalid(ServiceError):
    """A malformed body, or a file that cannot be read or parsed (the message names it)."""

    status = 422


class Unauthorized(ServiceError):
    status = 401


class Forbidden(ServiceError):
    """A path outside service.input_roots."""

    status = 403


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    """The request id is taken by another body; the proof is not done (result) or already done (cancel)."""

    status = 409


class Gone(ServiceError):
    """A done proof whose result files were removed from output_dir."""

    status = 410


class TooLarge(ServiceError):
    """A request body above the ingress's limit (app.BODY_MAX)."""

    status = 413


class Damaged(ServiceError):
    """A done proof's result files are there but not what the service wrote (changed on disk)."""

    status = 500


class Unavailable(ServiceError):
    """The service is not up yet (or its engine is gone)."""

    status = 503


@dataclass(frozen=True)
class Reply:
    """What a handler answers: an HTTP status and a JSON body."""

    status: int
    body: dict

    @classmethod
    def error(cls, e: ServiceError) -> Reply:
        return cls(e.status, {"error": one_line(str(e))})


def one_line(text: str, limit: int = 500) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters."""
    first = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return first[:limit]


@dataclass(frozen=True)
class SubmitRequest:
    """POST /v1/proofs, checked: ``circuit`` holds every key of its kind (defaults filled in)."""

    request_id: str
    circuit: dict
    priority: Priority = Priority.NORMAL

    @property
    def body_sha256(self) -> str:
        """The hash the 409 rule compares: the request as understood (defaults filled in), so a
        body that spells out a default is the same request as one that leaves it out."""
        canon = {"request_id": self.request_id, "circuit": self.circuit, "priority": self.priority.name.lower()}
        return hashlib.sha256(json.dumps(canon, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class ProofRecord:
    """One accepted request, as the store keeps it (``seq``: order of arrival)."""

    seq: int
    proof_id: str
    request_id: str
    body_sha256: str
    circuit: dict
    key_id: str
    priority: Priority
    state: ProofState
    partitions: int
    partitions_done: int = 0
    timings: dict = field(default_factory=dict)
    error: str | None = None
    created: float = 0.0
    started: float | None = None
    finished: float | None = None

    @property
    def finished_state(self) -> bool:
        return self.state in (ProofState.DONE, ProofState.FAILED, ProofState.CANCELLED)

    def view(self) -> dict:
        """GET /v1/proofs/{proof_id}: exactly the issue's fields."""
        return {"proof_id": self.proof_id, "request_id": self.request_id, "state": self.state.value,
                "partitions": self.partitions, "partitions_done": self.partitions_done,
                "timings": dict(self.timings), "error": self.error}


def parse_submit(body, defaults: dict) -> SubmitRequest:
    """POST /v1/proofs's body -> SubmitRequest (Invalid naming the field). ``defaults``: the
    service's config (its ``circuit`` and ``seed`` fill what a porep circuit leaves out)."""
    if not isinstance(body, dict):
        raise Invalid("body: expected a JSON object {\"request_id\", \"circuit\", \"priority\"}")
    unknown = sorted(set(body) - {"request_id", "circuit", "priority"})
    if unknown:
        raise Invalid(f"{unknown[0]}: not a field of a proof request (fields: request_id, circuit, priority)")
    rid = body.get("request_id")
    if not isinstance(rid, str) or not rid.strip():
        raise Invalid("request_id: required, a non-empty string")
    if len(rid) > REQUEST_ID_MAX or not rid.isprintable():
        raise Invalid(f"request_id: at most {REQUEST_ID_MAX} printable characters")
    pr = body.get("priority", "normal")
    if not isinstance(pr, str) or pr.lower() not in PRIORITIES:
        raise Invalid(f"priority: {pr!r} is not one of {', '.join(PRIORITIES)}")
    return SubmitRequest(rid, parse_circuit(body.get("circuit"), defaults), Priority.parse(pr))


def parse_key_request(body, defaults: dict) -> dict:
    """POST /v1/keys's body ``{"circuit": {...}}`` -> the checked circuit (Invalid naming the field)."""
    if not isinstance(body, dict) or set(body) != {"circuit"}:
        raise Invalid("body: expected a JSON object {\"circuit\": {...}}")
    return parse_circuit(body["circuit"], defaults, key_only=True)


def parse_circuit(obj, defaults: dict, key_only: bool = False) -> dict:
    """A request's ``circuit`` with its kind's keys checked and the absent ones filled in (porep:
    from the service's config; snarkjs: r1cs is optional). ``key_only``: a key request (no witness)."""
    if not isinstance(obj, dict):
        raise Invalid("circuit: required, a JSON object with \"kind\": \"porep\", \"snarkjs\" or \"filecoin-c2\"")
    kind = obj.get("kind", "porep")
    if kind not in CIRCUIT_KEYS:
        raise Invalid(f"circuit.kind: {kind!r} is not one of {', '.join(CIRCUIT_KEYS)}")
    known = CIRCUIT_KEYS[kind]
    unknown = sorted(set(obj) - set(known))
    if unknown:
        raise Invalid(f"circuit.{unknown[0]}: not a key of a {kind} circuit (keys: {', '.join(known)})")
    if kind == "filecoin-c2":
        return filecoin_c2_circuit(obj)
    return porep_circuit(obj, defaults) if kind == "porep" else snarkjs_circuit(obj, key_only)


def porep_circuit(obj: dict, defaults: dict) -> dict:
    base = defaults.get("circuit") or {}
    base = base if base.get("kind", "porep") == "porep" else {}
    from ..config import CircuitConf

    conf = CircuitConf()
    out = {"kind": "porep"}
    for k in ("constraints", "partitions", "public", "circuit_seed", "field_share", "shape"):
        out[k] = base.get(k, getattr(conf, k))
    out["seed"], out["proof"] = int(defaults.get("seed", 0)), 0
    for k, v in obj.items():
        if k == "kind":
            continue
        if k in POREP_INT and (type(v) is not int):
            raise Invalid(f"circuit.{k}: {v!r} is not an integer")
        if k == "field_share" and (isinstance(v, bool) or not isinstance(v, int | float)):
            raise Invalid(f"circuit.field_share: {v!r} is not a number")
        if k == "shape" and not isinstance(v, str):
            raise Invalid(f"circuit.shape: {v!r} is not a string")
        out[k] = v
    for k in ("seed", "proof"):
        if out[k] < 0:
            raise Invalid(f"circuit.{k}={out[k]}: must be at least 0")
    out["field_share"] = float(out["field_share"])
    return out


def snarkjs_circuit(obj: dict, key_only: bool) -> dict:
    out = {"kind": "snarkjs", "zkey": obj.get("zkey"), "witness": obj.get("witness"), "r1cs": obj.get("r1cs")}
    if not isinstance(out["zkey"], str) or not out["zkey"]:
        raise Invalid("circuit.zkey: required for a snarkjs circuit, a path to a Groth16 BLS12-381 .zkey")
    if key_only:
        out["witness"] = None
    elif not isinstance(out["witness"], str) or not out["witness"]:
        raise Invalid("circuit.witness: required for a snarkjs circuit, the path of one .wtns file (one proof "
                      "per request)")
    if out["r1cs"] is not None and (not isinstance(out["r1cs"], str) or not out["r1cs"]):
        raise Invalid("circuit.r1cs: a path to the circuit's .r1cs, or absent")
    return out


def filecoin_c2_circuit(obj: dict) -> dict:
    """A Filecoin C2 request: the C1 file (one proof per request; a key request names one too: its
    registered proof picks the key), the folder of Filecoin's .params (absent: a development key),
    and the circuit variant (stacked, or the inputs stand-in)."""
    out = {"kind": "filecoin-c2", "c1": obj.get("c1"), "params": obj.get("params"), "variant": obj.get("variant",
                                                                                                        "stacked")}
    if not isinstance(out["c1"], str) or not out["c1"]:
        raise Invalid("circuit.c1: required for a filecoin-c2 request, the path of a C1 JSON file")
    if out["params"] is not None and (not isinstance(out["params"], str) or not out["params"]):
        raise Invalid("circuit.params: the folder of Filecoin's .params/.vk, or absent (a development key)")
    if out["variant"] not in ("stacked", "inputs"):
        raise Invalid(f"circuit.variant: {out['variant']!r} is not one of stacked, inputs")
    return out
