"""Lineage commands: ``why`` and ``impact``.

Both print the answer as a tree over the server's causal edges (``agentledger.timeline``):
the asked event first, then its causes (``why``) or effects (``impact``) indented under each
event, every line with the full event id and the edge kind; an event reached twice is printed
once and referred to with ``↑ see <id>`` afterwards; causes not stored and events a bound cut
are marked and explained under the tree. ``--json`` prints the API's answer as it came.
Bounds default to the API's own (``agentledger.protocol.limits``).
"""

from __future__ import annotations

from typing import Annotated, Any, Final
from urllib.parse import quote

import httpx
import typer

from agentledger.cli._errors import exit_status, explain
from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import fail as _fail
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import JsonOpt, KeyOpt, UrlOpt
from agentledger.client import (
    APIStatusError,
    AuthenticationError,
    ConfigurationError,
    LedgerError,
    NotFoundError,
    PermissionDeniedError,
    TransportError,
    UnprocessableEntityError,
    resolve_api_key,
    resolve_url,
)
from agentledger.protocol import limits

__all__ = ["register"]

_RAISE = "--depth or --limit"
#: The wire field a 422 names -> the argument it came from.
_ID: Final = {"event_id": "EVENT_ID"}
#: How long ``--json`` waits for the API's answer (seconds).
_TIMEOUT_S: Final = 60.0

LimitOpt = Annotated[
    int,
    typer.Option(
        min=1, max=limits.LINEAGE_LIMIT_MAX, help="Most events in the answer (as the API)."
    ),
]


_BY_STATUS: Final[dict[int, type[APIStatusError]]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: UnprocessableEntityError,
}


def _api_answer(
    url: str | None, api_key: str | None, what: str, event_id: str, depth: int, limit: int
) -> Any:
    """The API's JSON answer to one lineage read, as it came (for ``--json``; the client's
    result objects keep only the members they name). An error is told as the client's
    errors are (``_errors``)."""
    try:
        base = resolve_url(url)
        key = resolve_api_key(api_key)
        if not key:
            raise ConfigurationError("an API key is required")
    except LedgerError as error:
        raise _fail(explain(error, url or ""), exit_status(error)) from error
    path = f"/v1/events/{quote(event_id, safe='')}/{what}"
    try:
        try:
            response = httpx.get(
                base + path,
                params={"depth": depth, "limit": limit},
                headers={"Authorization": f"Bearer {key}"},
                timeout=_TIMEOUT_S,
            )
        except httpx.HTTPError as error:
            raise TransportError(str(error), method="GET", url=base + path) from error
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text
            kind = _BY_STATUS.get(response.status_code, APIStatusError)
            raise kind(
                f"GET {path} -> {response.status_code}",
                status_code=response.status_code,
                detail=detail,
                request_id=response.headers.get("x-request-id"),
            )
    except LedgerError as error:
        raise _fail(explain(error, base, _ID), exit_status(error)) from error
    return response.json()


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

    if as_json:
        _dump(_api_answer(url, api_key, "why", event_id, depth, limit))
        return
    with _ledger(url, api_key, None, options=_ID) as ledger:
        result = ledger.why(event_id, depth=depth, limit=limit)
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

    if as_json:
        _dump(_api_answer(url, api_key, "impact", event_id, depth, limit))
        return
    with _ledger(url, api_key, None, options=_ID) as ledger:
        result = ledger.impact(event_id, limit=limit, depth=depth)
        asked = ledger.get_event(event_id)
    print_lineage(_console(), result, asked, how_to_raise=_RAISE)


def register(app: typer.Typer) -> None:
    """Add ``why`` and ``impact`` to the root ``agentledger`` app."""
    app.command("why")(why)
    app.command("impact")(impact)
