"""What ``agentledger serve`` and ``agentledger keys-admin`` do, as functions of the server
package (the command line itself lives in :mod:`agentledger.cli`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentledger.server._app import StartupRefused, create_app
from agentledger.server._auth import new_key
from agentledger.server._ingest import now_ts
from agentledger.server._settings import Settings
from agentledger.server._store import open_store

__all__ = ["KeyRow", "StartupRefused", "create_key", "list_keys", "revoke_key", "serve"]


def serve(
    *,
    db: str,
    host: str,
    port: int,
    dev_key: str | None = None,
    chain_key: str | None = None,
    redact_patterns: Sequence[str] | None = None,
    max_body_bytes: int | None = None,
    log_level: str = "warning",
) -> None:
    """Build the app from the environment and these overrides, and run it with uvicorn
    until it is stopped. Prints where it serves on stderr (a database URL without password).

    Args:
        db: the ledger database (file path, ``sqlite:///`` or ``postgresql://`` URL).
        host: interface to listen on; port: TCP port.
        dev_key: a read-write key accepted as is (development only).
        chain_key: HMAC key of the hash chain; ``None`` for plain SHA-256 links.
        redact_patterns: extra redaction pattern names (see ``agentledger.protocol.redaction``).
        max_body_bytes: largest request body accepted (bytes).
        log_level: uvicorn's log level.

    Raises:
        StartupRefused: the settings are unsafe or inconsistent (before anything listens).
        ValueError: a setting is invalid.
    """
    import uvicorn

    settings = Settings.from_env(
        db=db,
        host=host,
        port=port,
        dev_key=dev_key,
        chain_key=chain_key,
        redact_patterns=None if redact_patterns is None else tuple(redact_patterns),
        max_body_bytes=max_body_bytes,
    )
    application = create_app(settings)
    shown = settings.db
    if "://" in shown:  # a database URL: never print its password
        from sqlalchemy.engine.url import make_url

        shown = make_url(shown).render_as_string(hide_password=True)
    sys.stderr.write(f"agentledger serving {shown} on http://{host}:{port}\n")
    token = application.state.dashboard_token
    if token:  # the dev key is honoured: the link that opens the dashboard without a login
        shown_host = f"[{host}]" if ":" in host else host
        sys.stderr.write(f"dashboard: http://{shown_host}:{port}/ui/?token={token}\n")
    sys.stderr.flush()
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    sys.stderr.flush()


@dataclass(frozen=True)
class KeyRow:
    """One API key as ``keys-admin list`` shows it (never the secret)."""

    key_id: str
    name: str
    scope: str
    agent: str | None
    revoked: bool


def create_key(
    db: str,
    *,
    name: str,
    agent: str | None = None,
    scope: Literal["read_write", "read_only"] = "read_write",
    expires_in_days: int | None = None,
) -> tuple[str, str]:
    """Create an API key directly in the database (no running server needed).

    Args:
        db: the ledger database (file path, ``sqlite:///`` or ``postgresql://`` URL).
        name: a label for the key.
        agent: bind the key to this agent only; ``None`` for every agent.
        scope: ``read_write`` or ``read_only``.
        expires_in_days: days until the key stops working; ``None`` for never.

    Returns:
        ``(secret, key_id)``. The secret is shown here once and stored only as a hash.

    Raises:
        ValueError: the database cannot be opened (a PostgreSQL ``StoreStartupError`` is one).
    """
    store = open_store(db)
    try:
        raw, record = new_key(name=name, agent=agent, scope=scope, expires_in_days=expires_in_days)
        store.create_key(record)
        return raw, record.key_id
    finally:
        store.close()


def list_keys(db: str) -> list[KeyRow]:
    """Every API key in ``db`` (path or URL), revoked ones included; never the secrets.

    Raises:
        ValueError: the database cannot be opened.
    """
    store = open_store(db)
    try:
        return [
            KeyRow(rec.key_id, rec.name, rec.scope, rec.agent, bool(rec.revoked_at))
            for rec in store.list_keys()
        ]
    finally:
        store.close()


def revoke_key(db: str, key_id: str) -> bool:
    """Revoke the active key ``key_id`` in ``db`` (path or URL).

    Returns:
        ``True`` when a key was revoked, ``False`` when there is no such active key.

    Raises:
        ValueError: the database cannot be opened.
    """
    store = open_store(db)
    try:
        return bool(store.revoke_key(key_id, at=now_ts()))
    finally:
        store.close()
