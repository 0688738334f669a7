"""``agentledger serve`` (and key bootstrap), registered on the root CLI by ``register``."""

from __future__ import annotations

import importlib.util
import sys
from typing import Annotated

import typer

__all__ = ["register"]

# The app is imported only when ``serve`` runs (start-up time of every other command), so the
# extra is checked here: without it the root CLI registers a stub naming the extra.
for _dependency in ("fastapi", "uvicorn", "sqlalchemy"):
    if importlib.util.find_spec(_dependency) is None:
        raise ImportError(f"No module named {_dependency!r}", name=_dependency)


def register(app: typer.Typer) -> None:
    """Add the server commands to the root ``agentledger`` app."""
    app.command("serve")(serve)
    app.command("keys-admin")(keys_admin)


def serve(
    db: Annotated[str, typer.Option(help="SQLite file path (or postgresql:// URL).")] = (
        "agentledger.db"
    ),
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    dev_key: Annotated[
        str | None,
        typer.Option(envvar="AGENTLEDGER_DEV_KEY", help="Full-access key, loopback only."),
    ] = None,
    chain_key: Annotated[
        str | None,
        typer.Option(envvar="AGENTLEDGER_CHAIN_KEY", help="HMAC-SHA256 key for chain links."),
    ] = None,
    redact: Annotated[
        str | None,
        typer.Option(
            envvar="AGENTLEDGER_REDACT_PATTERNS",
            help="Comma list of extra redaction patterns: email,phone,card,iban,ipv4.",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int | None, typer.Option(help="Request body limit in bytes (413 above).")
    ] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
) -> None:
    """Run the ledger server (uvicorn)."""
    import uvicorn

    from agentledger.server._app import StartupRefused, create_app
    from agentledger.server._settings import Settings

    try:
        settings = Settings.from_env(
            db=db,
            host=host,
            port=port,
            dev_key=dev_key,
            chain_key=chain_key,
            redact_patterns=(
                tuple(p.strip() for p in redact.split(",") if p.strip())
                if redact is not None
                else None
            ),
            max_body_bytes=max_body_bytes,
        )
        application = create_app(settings)
    except (StartupRefused, ValueError) as error:
        typer.echo(f"agentledger serve: {error}", err=True)
        raise typer.Exit(2) from None
    shown = settings.db
    if "://" in shown:  # a database URL: never print its password
        from sqlalchemy.engine.url import make_url

        shown = make_url(shown).render_as_string(hide_password=True)
    typer.echo(f"agentledger serving {shown} on http://{host}:{port}", err=True)
    uvicorn.run(
        application,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    sys.stderr.flush()


def keys_admin(
    action: Annotated[str, typer.Argument(help="create | list | revoke")],
    db: Annotated[str, typer.Option(help="SQLite file path (or postgresql:// URL).")] = (
        "agentledger.db"
    ),
    name: Annotated[str, typer.Option(help="Key name (create).")] = "admin",
    agent: Annotated[str | None, typer.Option(help="Bind the key to one agent.")] = None,
    scope: Annotated[str, typer.Option(help="read_write | read_only")] = "read_write",
    expires_in_days: Annotated[int | None, typer.Option(help="Expiry in days.")] = None,
    key_id: Annotated[str | None, typer.Option(help="Key id (revoke).")] = None,
) -> None:
    """Manage API keys directly in the database (bootstrap the first key before serving)."""
    from agentledger.server._auth import new_key
    from agentledger.server._ingest import now_ts
    from agentledger.server._store import open_store

    store = open_store(db)
    try:
        if action == "create":
            if scope not in ("read_write", "read_only"):
                raise typer.BadParameter("scope must be read_write or read_only")
            raw, record = new_key(
                name=name,
                agent=agent,
                scope="read_only" if scope == "read_only" else "read_write",
                expires_in_days=expires_in_days,
            )
            store.create_key(record)
            typer.echo(f"key_id: {record.key_id}", err=True)
            typer.echo(raw)
        elif action == "list":
            for rec in store.list_keys():
                state = "revoked" if rec.revoked_at else "active"
                typer.echo(f"{rec.key_id}\t{rec.name}\t{rec.scope}\t{rec.agent or '*'}\t{state}")
        elif action == "revoke":
            if not key_id or not store.revoke_key(key_id, at=now_ts()):
                typer.echo(f"no active key {key_id!r}", err=True)
                raise typer.Exit(1)
        else:
            raise typer.BadParameter("action must be create, list or revoke")
    finally:
        store.close()
