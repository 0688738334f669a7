"""``agentledger signing keys|sign|heads|rotate|check``: signed chain heads on a running server
(``/v1/signing-keys``, ``/v1/signed-heads``) and the check of a ledger against the heads it
published. (``agentledger keys`` is about API keys.)

Exit codes: 0 done (``check``: the ledger matches every published head), 1 the server refused
or the ledger does not match, 2 bad input. User docs: ``docs/pages/evidence.md``.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from agentledger.cli._errors import NO_AGENT
from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import fail, missing_extra
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import AgentOpt, JsonOpt, KeyOpt, UrlOpt

__all__ = ["signing_app"]

signing_app = typer.Typer(
    name="signing",
    help="Signed chain heads: the server's signing keys, heads signed now or listed, key "
    "rotation, and the check of a ledger against the heads it published.",
    no_args_is_help=True,
)


@signing_app.command("keys")
def keys(url: UrlOpt = None, api_key: KeyOpt = None, as_json: JsonOpt = False) -> None:
    """The server's public signing keys with their SHA-256 fingerprints (compare one out of
    band, then pass it to `check --fingerprint`)."""
    with _ledger(url, api_key, None) as ledger:
        listed = ledger.signing_keys()
    if as_json:
        _dump({"keys": listed})
        return
    table = Table(title=f"signing keys: {len(listed)}")
    for column in ("key id", "state", "fingerprint (sha256)", "public key (hex)", "created"):
        table.add_column(column, no_wrap=True)
    for key in listed:
        state = "active" if key.active else f"retired {key.retired_at or ''}".strip()
        public = base64.b64decode(key.public_key).hex()
        table.add_row(key.key_id, state, key.fingerprint, public, key.created_at or "")
    _console().print(table)


@signing_app.command("sign")
def sign(
    agent: AgentOpt = None, url: UrlOpt = None, api_key: KeyOpt = None, as_json: JsonOpt = False
) -> None:
    """Sign the agent's chain head now (stored, and published where the server publishes)."""
    with _ledger(url, api_key, agent, options={"agent": "--agent"}) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        head = ledger.sign_head()
    if as_json:
        _dump(head)
        return
    _console().print(
        f"signed {head.agent} #{head.sequence_no} {head.chain_hash} "
        f"by {head.key_id} at {head.signed_at}",
        markup=False,
    )


@signing_app.command("heads")
def heads(
    agent: AgentOpt = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Heads, newest first.")] = 20,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The agent's signed heads, newest first."""
    with _ledger(url, api_key, agent, options={"agent": "--agent", "limit": "--limit"}) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        listed = ledger.signed_heads(limit=limit)
    if as_json:
        _dump({"agent": ledger.agent, "heads": listed})
        return
    table = Table(title=f"signed heads of {ledger.agent}: {len(listed)}")
    for column in ("seq", "chain hash", "signed at", "key id"):
        table.add_column(column, no_wrap=True)
    for head in listed:
        table.add_row(str(head.sequence_no), head.chain_hash, head.signed_at, head.key_id)
    _console().print(table)


@signing_app.command("rotate")
def rotate(url: UrlOpt = None, api_key: KeyOpt = None, as_json: JsonOpt = False) -> None:
    """Retire the active signing key and make a fresh one (an admin key); heads signed before
    keep verifying with the retired public key."""
    with _ledger(url, api_key, None) as ledger:
        rotation = ledger.rotate_signing_key()
    if as_json:
        _dump(rotation)
        return
    new = next((k for k in rotation.keys if k.key_id == rotation.key_id), None)
    _console().print(
        f"retired {rotation.retired_key_id}; active {rotation.key_id}"
        + (f" (fingerprint {new.fingerprint})" if new else ""),
        markup=False,
    )


@signing_app.command("check")
def check(
    published: Annotated[
        Path,
        typer.Option("--published", help="The directory the server publishes head files to."),
    ],
    public_key: Annotated[
        list[str] | None,
        typer.Option(
            "--public-key",
            help="A trusted public key: 64 hex digits, base64, or a file (also the JSON of "
            "`signing keys --json`). Repeatable.",
            show_default=False,
        ),
    ] = None,
    fingerprint: Annotated[
        list[str] | None,
        typer.Option(
            "--fingerprint",
            help="Trust the server's key with this SHA-256 fingerprint. Repeatable.",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="Only this agent's heads (default: all).", show_default=False),
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the ledger against the signed heads published in --published: every head's
    signature with a trusted key, then the ledger's link at each head's sequence number.
    Exit status 1 when a head is refused or the ledger does not match."""
    try:
        import cryptography  # noqa: F401  (the signature check needs it)

        from agentledger.cli._heads_check import KeyInputError, check_published, trusted_keys
    except ImportError as error:
        raise missing_extra("signing check", "evidence", error) from error
    if not published.is_dir():
        raise fail(f"--published: {published} is not a directory", 2)
    if not public_key and not fingerprint:
        raise fail(
            "name the key you trust: --public-key KEY|FILE, or --fingerprint SHA256 of a key "
            "the server lists (`agentledger signing keys`); the server's word alone is not "
            "evidence",
            2,
        )
    with _ledger(url, api_key, None) as ledger:
        try:
            trusted = trusted_keys(public_key or [], fingerprint or [], ledger)
        except KeyInputError as error:
            raise fail(str(error), 2) from error
        report = check_published(ledger, published, trusted, agent=agent)
    if as_json:
        _dump(report.as_dict())
    else:
        out = _console()
        for name, seen in report.agents.items():
            mark = (
                "[green]matches[/green]" if not seen["mismatched"] else "[red]DOES NOT match[/red]"
            )
            out.print(
                f"{escape(name)}: {mark} {seen['checked']} published head(s) "
                f"(newest #{seen['newest_published']}, ledger head #{seen['ledger_head']})"
            )
        for problem in report.problems:
            where = problem.get("agent") or problem.get("path")
            out.print(
                f"  [red]{problem['kind']}[/red] {escape(str(where))}", escape(problem["detail"])
            )
        if not report.files:
            out.print(f"no published head files in {escape(str(published))}")
    if not report.ok:
        raise typer.Exit(1)
    if not report.files:
        raise typer.Exit(1)
