"""Server commands: ``serve`` and ``keys-admin`` (extra ``server``, imported when they run)."""

from __future__ import annotations

from typing import Annotated

import typer

from agentledger.cli._output import fail, missing_extra

__all__ = ["keys_admin", "serve"]

DbOpt = Annotated[str, typer.Option(help="SQLite file path (or postgresql:// URL).")]


def serve(
    db: DbOpt = "agentledger.db",
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0: any free port, printed).")] = 8765,
    dev_key: Annotated[
        str | None,
        typer.Option(
            envvar="AGENTLEDGER_DEV_KEY",
            help="Full-access key for requests from this machine to localhost only.",
        ),
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
    try:
        from agentledger.server import admin
    except ImportError as error:
        raise missing_extra("serve", "server", error) from error
    try:
        admin.serve(
            db=db,
            host=host,
            port=port,
            dev_key=dev_key,
            chain_key=chain_key,
            redact_patterns=(
                [p.strip() for p in redact.split(",") if p.strip()] if redact is not None else None
            ),
            max_body_bytes=max_body_bytes,
            log_level=log_level,
        )
    except (admin.StartupRefused, ValueError) as error:
        raise fail(f"agentledger serve: {error}", 2) from None


def keys_admin(
    action: Annotated[str, typer.Argument(help="create | list | revoke")],
    db: DbOpt = "agentledger.db",
    name: Annotated[str, typer.Option(help="Key name (create).")] = "admin",
    agent: Annotated[str | None, typer.Option(help="Bind the key to one agent.")] = None,
    scope: Annotated[str, typer.Option(help="read_write | read_only")] = "read_write",
    expires_in_days: Annotated[int | None, typer.Option(help="Expiry in days.")] = None,
    key_id: Annotated[str | None, typer.Option(help="Key id (revoke).")] = None,
) -> None:
    """Manage API keys directly in the database (bootstrap the first key before serving)."""
    try:
        from agentledger.server import admin
    except ImportError as error:
        raise missing_extra("keys-admin", "server", error) from error
    if action == "create":
        if scope not in ("read_write", "read_only"):
            raise typer.BadParameter("scope must be read_write or read_only")
        raw, created = admin.create_key(
            db,
            name=name,
            agent=agent,
            scope="read_only" if scope == "read_only" else "read_write",
            expires_in_days=expires_in_days,
        )
        typer.echo(f"key_id: {created}", err=True)
        typer.echo(raw)
    elif action == "list":
        for row in admin.list_keys(db):
            state = "revoked" if row.revoked else "active"
            typer.echo(f"{row.key_id}\t{row.name}\t{row.scope}\t{row.agent or '*'}\t{state}")
    elif action == "revoke":
        if not key_id or not admin.revoke_key(db, key_id):
            typer.echo(f"no active key {key_id!r}", err=True)
            raise typer.Exit(1)
    else:
        raise typer.BadParameter("action must be create, list or revoke")
