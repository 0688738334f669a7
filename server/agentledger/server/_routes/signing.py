"""Signed chain heads over HTTP. Design: ``docs/design/evidence.md``; user docs:
``docs/pages/evidence.md`` ("Signed chain heads").

* ``GET /v1/signing-keys``: the public signing keys (no key needed: they are public).
* ``POST /v1/signing-keys/rotate``: retire the active key, make a fresh one (admin only: a
  ``read_write`` key not bound to an agent).
* ``POST /v1/signed-heads`` ``{"agent": ...}``: sign the agent's head now (``read_write``; a key
  bound to an agent signs only its own agent's head).
* ``GET /v1/signed-heads?agent=&limit=``: the agent's signed heads, newest first (any key that
  may read the agent).

The router's lifespan runs the background signer (:meth:`HeadSigner.run`) every
``Settings.sign_interval_s`` seconds when that is above 0 (heads that moved since the last round
are signed by the next round after a restart), and on shutdown waits for a round in progress
and lets the webhook thread deliver what is queued. A key file the server
cannot use is a 503 that says why: the operator's to fix, not the caller's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from agentledger.protocol.limits import MAX_AGENT_CHARS
from agentledger.server._auth import Principal, ReadPrincipal, WritePrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._schemas import AGENT_PATTERN
from agentledger.server._settings import Settings
from agentledger.server._signing._heads import HeadSigner, SigningRefused
from agentledger.server._signing._keyring import Keyring, KeyringError, default_keyring_path
from agentledger.server._signing._publish import HeadPublisher
from agentledger.server._store._sql import SQLStore

__all__ = ["keyring_of", "router", "signer_of"]

logger = logging.getLogger("agentledger.server")

AgentName = Annotated[str, Field(pattern=AGENT_PATTERN, min_length=1, max_length=MAX_AGENT_CHARS)]


def _keyring(app: FastAPI) -> Keyring:
    ring: Keyring | None = getattr(app.state, "keyring", None)
    if ring is None:
        settings: Settings = app.state.settings
        ring = Keyring(settings.signing_keys or default_keyring_path(settings.db))
        app.state.keyring = ring
    return ring


def keyring_of(request: Request) -> Keyring:
    """The app's keyring, opened (and created when missing) on first use.

    Raises:
        KeyringError: the key file cannot be used.
    """
    return _keyring(request.app)


def signer_of(app: FastAPI) -> HeadSigner:
    """The app's one :class:`HeadSigner` (``app.state.head_signer``), made on first use with
    the publisher of ``Settings.publish_heads_dir`` / ``publish_heads_url``; its keyring opens
    when it first signs."""
    signer: HeadSigner | None = getattr(app.state, "head_signer", None)
    if signer is None:
        settings: Settings = app.state.settings
        publisher = HeadPublisher(settings.publish_heads_dir, settings.publish_heads_url)
        signer = HeadSigner(app.state.store, lambda: _keyring(app), publisher)
        app.state.head_signer = signer
    return signer


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    signer = signer_of(app)
    task: asyncio.Task[None] | None = None
    if settings.sign_interval_s > 0:
        task = asyncio.create_task(signer.run(settings.sign_interval_s), name="head-signer")
    try:
        yield
    finally:
        if task is not None:
            task.cancel()  # waits for a round in progress
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await run_in_threadpool(signer.publisher.close)


router = APIRouter(tags=["evidence"], route_class=StrictJSONRoute, lifespan=_lifespan)


def _unavailable(error: KeyringError) -> Response:
    return json_response({"detail": f"signing keys unavailable: {error}"}, status_code=503)


def _unknown_agent(loc: list[str], agent: str) -> HTTPException:
    return HTTPException(
        404, [{"loc": loc, "msg": f"no events of agent {agent!r} are stored", "type": "not_found"}]
    )


def _admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise HTTPException(
            403, "scope: rotating the signing key needs a read_write key not bound to an agent"
        )


class SignIn(BaseModel):
    """``POST /v1/signed-heads``."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentName


@router.get("/v1/signing-keys")
def signing_keys(request: Request) -> Response:
    """The public keys that sign chain heads, oldest first, with key ids and SHA-256
    fingerprints; retired keys stay listed so old signatures stay verifiable."""
    try:
        return json_response({"keys": keyring_of(request).public_keys()})
    except KeyringError as error:
        return _unavailable(error)


@router.post("/v1/signing-keys/rotate")
def rotate_signing_key(principal: WritePrincipal, request: Request) -> Response:
    """Retire the active key (its private half is deleted, its public half stays listed) and
    make a fresh one active; heads signed before still verify with the retired key."""
    _admin(principal)
    try:
        ring = keyring_of(request)
        retired = ring.active_id
        active = ring.rotate()
        keys = ring.public_keys()
    except KeyringError as error:
        return _unavailable(error)
    logger.warning("signing key rotated: %s retired, %s active", retired, active)
    return json_response({"key_id": active, "retired_key_id": retired, "keys": keys})


@router.post("/v1/signed-heads")
def sign_head(body: SignIn, principal: WritePrincipal, request: Request) -> Response:
    """Sign the agent's current head now (a new signed head each call), store and publish it."""
    principal.check_agent(body.agent)
    store: SQLStore = request.app.state.store
    if store.chain_head(body.agent) is None:
        raise _unknown_agent(["body", "agent"], body.agent)
    try:
        head = signer_of(request.app).sign(body.agent)
    except KeyringError as error:
        return _unavailable(error)
    except SigningRefused as refusal:
        raise HTTPException(
            409, [{"loc": ["body", "agent"], "msg": str(refusal), "type": "conflict"}]
        ) from None
    return json_response(head)


@router.get("/v1/signed-heads")
def list_signed_heads(
    principal: ReadPrincipal,
    request: Request,
    agent: Annotated[str, Query(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)],
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """The agent's signed heads, newest first (highest ``sequence_no``, then latest signed)."""
    principal.check_agent(agent)
    store: SQLStore = request.app.state.store
    if store.chain_head(agent) is None:
        raise _unknown_agent(["query", "agent"], agent)
    heads = signer_of(request.app).heads(agent, limit=limit)
    return json_response({"agent": agent, "heads": heads})
