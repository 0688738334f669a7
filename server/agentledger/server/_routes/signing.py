"""Signed chain heads over HTTP: the public signing keys (``GET /v1/signing-keys``, no key
needed: they are public). Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from agentledger.server._http import json_response
from agentledger.server._settings import Settings
from agentledger.server._signing._keyring import Keyring, KeyringError, default_keyring_path

__all__ = ["keyring_of", "router"]

router = APIRouter(tags=["evidence"])


def keyring_of(request: Request) -> Keyring:
    """The app's keyring, opened (and created when missing) on first use."""
    state = request.app.state
    ring: Keyring | None = getattr(state, "keyring", None)
    if ring is None:
        settings: Settings = state.settings
        ring = Keyring(settings.signing_keys or default_keyring_path(settings.db))
        state.keyring = ring
    return ring


@router.get("/v1/signing-keys")
def signing_keys(request: Request) -> Response:
    """The public keys that sign chain heads, oldest first, with key ids and SHA-256
    fingerprints; retired keys stay listed so old signatures stay verifiable. A key file the
    server cannot use (unreadable, malformed, readable by others) is a 503 that says why: the
    operator's to fix, not the caller's."""
    try:
        return json_response({"keys": keyring_of(request).public_keys()})
    except KeyringError as error:
        return json_response({"detail": f"signing keys unavailable: {error}"}, status_code=503)
