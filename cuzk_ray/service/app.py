"""The HTTP API: a Ray Serve ingress (FastAPI), thin. It checks the bearer token (every route but
/healthz), reads the JSON body, asks the engine actor (engine_actor.EngineActor, found by name)
and passes its Reply on. Errors are ``{"error": "<one line>"}``; FastAPI's own documentation
routes are off. Imports Ray Serve: load it only once Ray's environment is prepared
(server.start_service)."""

# (no `from __future__ import annotations`: FastAPI reads the route signatures, Request included)

import hashlib
import hmac
import json

import ray
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from ray import serve
from starlette.exceptions import HTTPException

from .models import Invalid, Reply, ServiceError, TooLarge, Unauthorized, Unavailable, one_line

APP_NAME = "cuzk-service"
BODY_MAX = 1 << 20  # bytes of a request body
BODY_DEPTH_MAX = 32  # levels of nesting in a request body (a proof request has 2)

api = FastAPI(title="cuzk-ray proving service", docs_url=None, redoc_url=None, openapi_url=None)


@api.exception_handler(HTTPException)
async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """FastAPI's own answers (no such route, method not allowed) in the API's error shape."""
    text = {404: f"no such endpoint: {request.method} {request.url.path}",
            405: f"method {request.method} not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
    return JSONResponse({"error": text}, status_code=exc.status_code)


@api.exception_handler(Exception)
async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """Anything the routes did not answer themselves (a bug): still the one-line JSON error, not
    Starlette's plain-text 500; the traceback stays in the replica's log."""
    return JSONResponse({"error": internal_line(exc)}, status_code=500)


def internal_line(exc: BaseException) -> str:
    return one_line(f"internal error: {type(exc).__name__}: {exc}")


async def read_body(request: Request) -> object:
    """The request's JSON body, never buffering more than BODY_MAX bytes: refused (413) by its
    Content-Length before anything is read, else (chunked) as soon as the stream passes the limit;
    422 for a body that is not JSON (nesting too deep for the parser included)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise Invalid(f"Content-Length: {declared!r} is not a byte count")
        if int(declared) > BODY_MAX:
            raise TooLarge(f"body: {int(declared)} bytes (Content-Length), at most {BODY_MAX}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > BODY_MAX:
            raise TooLarge(f"body: more than {BODY_MAX} bytes (stopped reading at {size}), at most {BODY_MAX}")
        chunks.append(chunk)
    try:
        parsed = json.loads(b"".join(chunks))
    except RecursionError:
        raise Invalid(f"body: nested more than {BODY_DEPTH_MAX} levels deep") from None
    except ValueError as e:
        raise Invalid(f"body: not JSON ({one_line(str(e), 200)})") from None
    if depth(parsed) > BODY_DEPTH_MAX:  # a request is 2 levels; a deep one could not be passed on (pickled)
        raise Invalid(f"body: nested more than {BODY_DEPTH_MAX} levels deep")
    return parsed


def depth(value) -> int:
    """How deeply lists and objects nest in a parsed JSON value (a scalar: 0), without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        v, d = todo.pop()
        items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        if items is not None:
            deepest = max(deepest, d)
            todo.extend((x, d + 1) for x in items)
    return deepest


def token_digest(token: str) -> str:
    """What the ingress holds of the token (its SHA-256: the token itself is not in Serve's config)."""
    return hashlib.sha256(token.encode()).hexdigest()


def answer(reply: Reply) -> JSONResponse:
    try:
        return JSONResponse(reply.body, status_code=reply.status)
    except (ValueError, TypeError, RecursionError) as e:  # a body JSON cannot carry (NaN, too deep): a bug
        return JSONResponse({"error": internal_line(e)}, status_code=500)


@serve.deployment(name="CuzkIngress", num_replicas=1, ray_actor_options={"num_cpus": 0})
@serve.ingress(api)
class Ingress:
    """The routes of issue 16 (docs/SERVICE.md)."""

    def __init__(self, token_sha256: str, actor_name: str, namespace: str):
        self.token_sha256, self.actor_name, self.namespace = token_sha256, actor_name, namespace
        self._engine = None

    def _authorized(self, request: Request) -> None:
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not presented:
            raise Unauthorized("missing Authorization: Bearer <token> (the token file is named when the service "
                               "starts)")
        if not hmac.compare_digest(token_digest(presented.strip()), self.token_sha256):
            raise Unauthorized("wrong token")

    async def _ask(self, method: str, *args) -> JSONResponse:
        """The engine actor's Reply to ``method(*args)``; 503 while it is not there."""
        try:
            if self._engine is None:
                self._engine = ray.get_actor(self.actor_name, namespace=self.namespace)
            return answer(await getattr(self._engine, method).remote(*args))
        except ValueError:  # no actor of that name (yet)
            return answer(Reply.error(Unavailable("the engine actor is not running (starting, or stopped)")))
        except ray.exceptions.RayActorError as e:
            self._engine = None
            return answer(Reply.error(Unavailable(f"the engine actor is not available: {one_line(str(e), 200)}")))

    async def _call(self, request: Request, method: str, *args, body: bool = False) -> JSONResponse:
        try:
            self._authorized(request)  # before the body is read: an unauthenticated body is not read at all
            if body:
                args = (await read_body(request),)
        except ServiceError as e:
            return answer(Reply.error(e))
        return await self._ask(method, *args)

    @api.get("/healthz")
    async def healthz(self) -> JSONResponse:
        return await self._ask("health")

    @api.post("/v1/proofs")
    async def submit(self, request: Request) -> JSONResponse:
        return await self._call(request, "submit", body=True)

    @api.get("/v1/proofs")
    async def proofs(self, request: Request, ids: str = "") -> JSONResponse:
        return await self._call(request, "proofs", ids)

    @api.get("/v1/proofs/{proof_id}")
    async def proof(self, proof_id: str, request: Request) -> JSONResponse:
        return await self._call(request, "proof", proof_id)

    @api.get("/v1/proofs/{proof_id}/result")
    async def result(self, proof_id: str, request: Request) -> JSONResponse:
        return await self._call(request, "result", proof_id)

    @api.delete("/v1/proofs/{proof_id}")
    async def cancel(self, proof_id: str, request: Request) -> JSONResponse:
        return await self._call(request, "cancel", proof_id)

    @api.get("/v1/status")
    async def status(self, request: Request) -> JSONResponse:
        return await self._call(request, "status")

    @api.post("/v1/keys")
    async def preload(self, request: Request) -> JSONResponse:
        return await self._call(request, "preload", body=True)

    @api.delete("/v1/keys/{key_id}")
    async def evict(self, key_id: str, request: Request) -> JSONResponse:
        return await self._call(request, "evict", key_id)
