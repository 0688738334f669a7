"""``agentledger keys create|list|revoke``: API keys over HTTP (``/v1/keys``), with a key that
may manage keys (read_write, not bound to an agent; the server's dev key is one).

``keys-admin`` (``_server_commands``) does the same directly in a database file, to make the
first key before any server runs.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import fail
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import JsonOpt, KeyOpt, UrlOpt

__all__ = ["keys_app"]

keys_app = typer.Typer(
    name="keys",
    help="API keys on a running server: create, list, revoke.",
    no_args_is_help=True,
)

_SCOPES = ("read_write", "read_only")


@keys_app.command("create")
def create(
    name: Annotated[str, typer.Option(help="A name saying who or what uses the key.")],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent", help="Bind the key to this agent (default: every agent).", show_default=False
        ),
    ] = None,
    scope: Annotated[str, typer.Option(help="read_write | read_only")] = "read_write",
    expires_in_days: Annotated[
        int | None, typer.Option(min=1, help="Expire after this many days (default: never).")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a key; the secret is printed once, on stdout (its id goes to stderr)."""
    if scope not in _SCOPES:
        raise fail(f"bad --scope {scope!r}: use read_write or read_only", 2)
    options = {"name": "--name", "agent": "--agent", "expires_in_days": "--expires-in-days"}
    with _ledger(url, api_key, None, options=options) as ledger:
        created = ledger.create_key(name, agent=agent, scope=scope, expires_in_days=expires_in_days)
    if as_json:
        _dump(created)
        return
    _console(stderr=True).print(
        f"key_id: {created.key_id} ({created.scope}, agent {created.agent or '*'}); "
        "the secret below is shown this once",
        markup=False,
    )
    typer.echo(created.key)


@keys_app.command("list")
def list_(url: UrlOpt = None, api_key: KeyOpt = None, as_json: JsonOpt = False) -> None:
    """Every key on the server, revoked ones too (never a secret)."""
    with _ledger(url, api_key, None) as ledger:
        rows = ledger.list_keys()
    if as_json:
        _dump(rows)
        return
    table = Table(title=f"keys: {len(rows)}")
    for column in ("key id", "name", "scope", "agent", "created", "expires", "state"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(
            row.key_id,
            row.name or "",
            row.scope or "",
            row.agent or "*",
            row.created_at or "",
            row.expires_at or "never",
            "revoked" if row.revoked_at else "active",
        )
    _console().print(table)


@keys_app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(help="The key's id (`agentledger keys list`).")],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke a key: requests with it get 401 from now on."""
    with _ledger(url, api_key, None, options={"key_id": "KEY_ID"}) as ledger:
        ledger.revoke_key(key_id)
    if as_json:
        _dump({"key_id": key_id, "revoked": True})
        return
    _console().print(f"revoked {key_id}", markup=False)
