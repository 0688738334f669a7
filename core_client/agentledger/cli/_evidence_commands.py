"""``agentledger evidence EVENT_ID --out bundle.zip`` downloads an event's evidence bundle;
``agentledger evidence verify bundle.zip --public-key KEY [--agent A]`` checks one offline
(no server, no database). Verification exits 1 with one line per failed check, or with the
reason the bundle cannot be checked at all (corrupt, missing file, wrong key, other agent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import fail
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import JsonOpt, KeyOpt, UrlOpt

__all__ = ["evidence"]

_USAGE = (
    "usage: agentledger evidence EVENT_ID --out bundle.zip | "
    "agentledger evidence verify bundle.zip --public-key KEY"
)


def _verify(bundle: Path, public_keys: list[str], agent: str | None, as_json: bool) -> None:
    from agentledger.evidence import BundleError, verify_bundle

    if not public_keys:
        raise fail("evidence verify needs --public-key (hex, base64, PEM or a key file)", 2)
    try:
        report = verify_bundle(bundle, public_key=public_keys, agent=agent)
    except BundleError as error:
        raise fail(f"{bundle}: {error}") from error
    if as_json:
        _dump(
            {
                "ok": report.ok,
                "summary": report.summary(),
                "event_id": report.event_id,
                "agent": report.agent,
                "records": report.records,
                "erased": report.erased,
                "links_checked": report.links_checked,
                "unanchored": report.unanchored,
                "heads": report.heads,
                "notes": report.notes,
                "problems": [str(p) for p in report.problems],
            }
        )
    else:
        console = _console()
        mark = "[green]verified[/green]" if report.ok else "[red]NOT verified[/red]"
        console.print(f"{bundle}: {mark}  {escape(report.summary())}")
        for head in report.heads:
            console.print(
                f"  signed head of {escape(head['agent'])} at #{head['sequence_no']} "
                f"({head['key_id']}, signed_at {head['signed_at']})"
            )
        for note in report.notes:
            console.print(f"  note: {escape(note)}")
        if report.unanchored:
            console.print(
                f"  note: {len(report.unanchored)} records lie before an erased event and no "
                "signed head reaches them through links"
            )
        for problem in report.problems:
            console.print(f"  [red]{escape(str(problem))}[/red]")
    if not report.ok:
        raise typer.Exit(1)


def evidence(
    target: Annotated[
        str, typer.Argument(help="An event id to download, or `verify` to check a bundle.")
    ],
    bundle: Annotated[
        Path | None, typer.Argument(help="With `verify`: the bundle zip.", show_default=False)
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Where to write the downloaded bundle.")
    ] = None,
    public_key: Annotated[
        list[str] | None,
        typer.Option(
            "--public-key",
            help="With `verify`: the server's public key (hex, base64, PEM, a file, or the JSON "
            "of GET /v1/signing-keys); repeat for several.",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="With `verify`: the agent the bundle must be about."),
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Download an event's evidence bundle, or verify one offline."""
    if target == "verify":
        if bundle is None:
            raise fail(_USAGE, 2)
        _verify(bundle, public_key or [], agent, as_json)
        return
    if bundle is not None or out is None:
        raise fail(_USAGE, 2)
    with _ledger(url, api_key, None) as ledger:
        data = ledger.evidence_bundle(target)
    out.write_bytes(data)
    if as_json:
        _dump({"event_id": target, "output": str(out), "bytes": len(data)})
    else:
        _console(stderr=True).print(f"wrote the evidence bundle of {target} to {out}")
