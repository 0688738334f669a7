"""API keys and request authorization (wire contract, "General").

* ``Authorization: Bearer <key>``; a missing or unknown key is 401, a valid key without the
  scope or agent for the request is 403.
* Keys are stored only as SHA-256 hashes; the raw key (``al_`` + 43 URL-safe characters, 256
  bits) is returned once by ``POST /v1/keys``.
* ``read_only`` keys get 403 on every write and delete route. A key bound to an agent may only
  read and write that agent's events and cannot manage keys.
* The dev key (``--dev-key``) is a full-access principal, honoured only on a loopback bind and
  only for a request from this machine to a loopback host name (:mod:`._loopback`); anywhere
  else it is a 403 that says which header gave the request away.
* While the dev key is honoured, the reference client's own local dev key
  (:data:`REFERENCE_DEV_KEY`, what ``zizkadb-sdk`` sends to a localhost host when given no key)
  is the same principal under the same local-request rule. Without a dev key it is a 401 that
  says how to start the server.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from agentledger.server._ingest import now_ts
from agentledger.server._loopback import dev_key_refusal
from agentledger.server._store._inline import read_inline_or_in_thread
from agentledger.server._store.base import KeyRecord, LedgerStore

__all__ = [
    "REFERENCE_DEV_KEY",
    "Principal",
    "ReadPrincipal",
    "WritePrincipal",
    "hash_key",
    "new_key",
]

_bearer = HTTPBearer(auto_error=False, description="an agentledger API key")

Scope = Literal["read_write", "read_only"]

#: The key ``zizkadb-sdk`` 0.5.0 sends to a localhost host when it is given no key.
REFERENCE_DEV_KEY = "zizkadb_dev_local"


def hash_key(raw: str) -> str:
    """SHA-256 hex of a raw key (what is stored)."""
    return hashlib.sha256(raw.encode()).hexdigest()


def new_key(
    *, name: str, agent: str | None, scope: Scope, expires_in_days: int | None
) -> tuple[str, KeyRecord]:
    """A fresh key: ``(raw secret, record to store)``."""
    raw = "al_" + secrets.token_urlsafe(32)
    created = datetime.now(UTC)
    expires = (
        (created + timedelta(days=expires_in_days)).isoformat(timespec="microseconds")
        if expires_in_days
        else None
    )
    record = KeyRecord(
        key_id="key_" + secrets.token_hex(8),
        name=name,
        key_hash=hash_key(raw),
        prefix=raw[:8],
        agent=agent,
        scope=scope,
        created_at=created.isoformat(timespec="microseconds"),
        expires_at=expires,
    )
    return raw, record


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a stored key or the dev key."""

    key_id: str
    scope: Scope
    agent: str | None

    @property
    def can_write(self) -> bool:
        """``read_write`` scope."""
        return self.scope == "read_write"

    @property
    def is_admin(self) -> bool:
        """May manage keys: read-write and not bound to an agent."""
        return self.can_write and self.agent is None

    def check_agent(self, agent: str) -> None:
        """Raise 403 when the key is bound to another agent."""
        if self.agent is not None and agent != self.agent:
            raise HTTPException(
                403, f"agent: this key is bound to agent {self.agent!r}, not {agent!r}"
            )


def _is_dev_key(raw: str, dev_key: str) -> bool:
    """The configured dev key, or the reference client's local dev key (both compared in
    constant time)."""
    given = raw.encode()
    return hmac.compare_digest(given, dev_key.encode()) | hmac.compare_digest(
        given, REFERENCE_DEV_KEY.encode()
    )


async def _principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    if credentials is None or not credentials.credentials:
        raise HTTPException(
            401, "missing API key: send Authorization: Bearer <key>", {"WWW-Authenticate": "Bearer"}
        )
    raw = credentials.credentials
    state = request.app.state
    dev_key: str | None = state.dev_key
    if dev_key is not None and _is_dev_key(raw, dev_key):
        refusal = dev_key_refusal(request)
        if refusal is not None:
            raise HTTPException(
                403,
                f"dev key refused: {refusal}; the dev key is honoured only for requests from "
                "this machine to a loopback host name (use an API key from elsewhere)",
            )
        return Principal(key_id="dev", scope="read_write", agent=None)
    store: LedgerStore = state.store
    record = await read_inline_or_in_thread(
        store.key_by_hash_inline, store.key_by_hash, hash_key(raw)
    )
    if record is None and raw == REFERENCE_DEV_KEY:
        raise HTTPException(
            401,
            f"{REFERENCE_DEV_KEY} (the reference client's local dev key) is accepted only while "
            "the server runs with a dev key on a loopback address (agentledger serve --dev-key "
            "...); otherwise pass an API key of this server",
            {"WWW-Authenticate": "Bearer"},
        )
    if record is None or record.revoked_at is not None:
        raise HTTPException(401, "unknown or revoked API key", {"WWW-Authenticate": "Bearer"})
    if record.expires_at is not None and record.expires_at <= now_ts():
        raise HTTPException(401, "expired API key", {"WWW-Authenticate": "Bearer"})
    scope: Scope = "read_only" if record.scope == "read_only" else "read_write"
    return Principal(key_id=record.key_id, scope=scope, agent=record.agent)


async def _reader(principal: Annotated[Principal, Depends(_principal)]) -> Principal:
    return principal


async def _writer(principal: Annotated[Principal, Depends(_principal)]) -> Principal:
    if not principal.can_write:
        raise HTTPException(403, "scope: this key is read_only; writes and deletes need read_write")
    return principal


#: Dependency: any valid key.
ReadPrincipal = Annotated[Principal, Depends(_reader)]
#: Dependency: a ``read_write`` key (403 for ``read_only``).
WritePrincipal = Annotated[Principal, Depends(_writer)]
