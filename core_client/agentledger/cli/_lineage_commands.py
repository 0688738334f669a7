"""Lineage commands: ``why`` and ``impact``.

Both print the answer as a tree over the server's causal edges (``agentledger.timeline``):
the asked event first, then its causes (``why``) or effects (``impact``) indented under each
event, every line with the full event id and the edge kind; an event reached twice is printed
once and referred to with ``↑ see <id>`` afterwards; causes not stored and events a bound cut
are marked and explained under the tree. ``--json`` prints the API's answer as it came.
Bounds default to the API's own (``agentledger.protocol.limits``).
"""

from __future__ import annotations

from typing import Annotated, Final

import typer

from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import JsonOpt, KeyOpt, UrlOpt
from agentledger.protocol import limits

__all__ = ["register"]

_RAISE = "--depth or --limit"
#: The wire field a 422 names -> the argument it came from.
_ID: Final = {"event_id": "EVENT_ID"}

LimitOpt = Annotated[
    int,
    typer.Option(
        min=1, max=limits.LINEAGE_LIMIT_MAX, help="Most events in the answer (as the API)."
    ),
]


def why(
    event_id: Annotated[str, typer.Argument(help="The event to explain (its full id).")],
    depth: Annotated[
        int,
        typer.Option(min=0, max=limits.LINEAGE_DEPTH_MAX, help="Most cause hops to follow."),
    ] = limits.WHY_DEPTH_DEFAULT,
    limit: LimitOpt = limits.LINEAGE_LIMIT_DEFAULT,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Why an event happened: the events it was computed from, as a tree of causes."""
    from agentledger.timeline import print_lineage

    with _ledger(url, api_key, None, options=_ID) as ledger:
        result = ledger.why(event_id, depth=depth, limit=limit)
    if as_json:
        _dump(result.raw)  # the API's answer as it came
        return
    print_lineage(_console(), result, how_to_raise=_RAISE)


def impact(
    event_id: Annotated[str, typer.Argument(help="The event whose effects to show.")],
    depth: Annotated[
        int,
        typer.Option(min=0, max=limits.LINEAGE_DEPTH_MAX, help="Most effect hops to follow."),
    ] = limits.IMPACT_DEPTH_DEFAULT,
    limit: LimitOpt = limits.LINEAGE_LIMIT_DEFAULT,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What an event affected: every event computed from it, as a tree of effects."""
    from agentledger.timeline import print_lineage

    with _ledger(url, api_key, None, options=_ID) as ledger:
        result = ledger.impact(event_id, limit=limit, depth=depth)
        if as_json:
            _dump(result.raw)  # the API's answer as it came
            return
        asked = ledger.get_event(event_id)
    print_lineage(_console(), result, asked, how_to_raise=_RAISE)


def register(app: typer.Typer) -> None:
    """Add ``why`` and ``impact`` to the root ``agentledger`` app."""
    app.command("why")(why)
    app.command("impact")(impact)
