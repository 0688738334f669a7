"""Key management: create (raw key shown once), list (no secrets), revoke."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Response

from agentledger.server._auth import Principal, WritePrincipal, new_key
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._ingest import now_ts
from agentledger.server._routes._deps import StoreDep
from agentledger.server._schemas import KeyCreated, KeyCreateIn, KeyInfo
from agentledger.server._store.base import KeyRecord

__all__ = ["router"]

router = APIRouter(prefix="/v1/keys", tags=["keys"], route_class=StrictJSONRoute)


def _admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise HTTPException(
            403, "scope: managing keys needs a read_write key not bound to an agent"
        )


def _info(record: KeyRecord) -> dict[str, Any]:
    return {
        "key_id": record.key_id,
        "name": record.name,
        "agent": record.agent,
        "scope": record.scope,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "revoked_at": record.revoked_at,
        "prefix": record.prefix,
    }


@router.post("", status_code=201, response_model=KeyCreated)
def create_key(body: KeyCreateIn, principal: WritePrincipal, store: StoreDep) -> Response:
    """Create a key; the response's ``key`` is the only time the secret is shown."""
    _admin(principal)
    raw, record = new_key(
        name=body.name, agent=body.agent, scope=body.scope, expires_in_days=body.expires_in_days
    )
    store.create_key(record)
    return json_response({**_info(record), "key": raw}, 201)


@router.get("", response_model=list[KeyInfo])
def list_keys(principal: WritePrincipal, store: StoreDep) -> Response:
    """Every key (revoked ones included), never the secret or its hash."""
    _admin(principal)
    return json_response([_info(record) for record in store.list_keys()])


@router.delete("/{key_id}", response_model=KeyInfo)
def revoke_key(
    key_id: Annotated[str, Path(min_length=1, max_length=64)],
    principal: WritePrincipal,
    store: StoreDep,
) -> Response:
    """Revoke a key: it gets 401 from now on."""
    _admin(principal)
    if not store.revoke_key(key_id, at=now_ts()):
        raise HTTPException(404, f"key_id: no active key {key_id!r}")
    for record in store.list_keys():
        if record.key_id == key_id:
            return json_response(_info(record))
    raise HTTPException(404, f"key_id: no key {key_id!r}")
