"""Event routes: write one, write a batch, list with cursor paging, get, why, impact.

Lineage routes (``/{event_id}``, ``/why``, ``/impact``) are registered by ``create_app`` after
every fixed path under ``/v1/events/`` (``chain``, ``export``, ``import``, ``at``...), so those
never parse as an event id.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Header, HTTPException, Query, Response
from starlette.concurrency import run_in_threadpool

from agentledger.protocol import limits
from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_EVENT_TYPE_CHARS, MAX_SESSION_CHARS
from agentledger.server._auth import Principal, ReadPrincipal, WritePrincipal
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._ingest import (
    ItemError,
    PreparedEvent,
    format_ts,
    now_ts,
    parse_ts,
    prepare,
    validate_items,
)
from agentledger.server._routes._deps import SettingsDep, StoreDep
from agentledger.server._schemas import (
    AGENT_PATTERN,
    BatchIn,
    BatchResult,
    EventIn,
    EventOut,
    ImpactOut,
    LogResultOut,
    UtcDatetime,
    WhyOut,
)
from agentledger.server._store.base import LedgerStore, WouldBlock

__all__ = ["lineage_router", "router", "why_answer"]

router = APIRouter(prefix="/v1/events", tags=["events"], route_class=StrictJSONRoute)
lineage_router = APIRouter(prefix="/v1/events", tags=["lineage"], route_class=StrictJSONRoute)

AgentQuery = Annotated[str, Query(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)]


def _log_result(outcome: Any) -> dict[str, Any]:
    return {
        "event_id": outcome.event_id,
        "timestamp": outcome.timestamp,
        "sequence_no": outcome.sequence_no,
        "checksum": outcome.checksum,
        "chain_hash": outcome.chain_hash,
        # The full-text index is filled by a background worker; every search first
        # catches it up, so a search sees this event once the write has returned.
        "indexed": False,
        "index_status": "pending",
        "duplicate": outcome.duplicate,
    }


@router.post(
    "",
    status_code=201,
    response_model=LogResultOut,
    responses={
        200: {"description": "duplicate: the stored event", "model": LogResultOut},
        409: {"description": "event_id or idempotency_key reused with a different body"},
    },
)
def log_event(
    body: EventIn, principal: WritePrincipal, store: StoreDep, settings: SettingsDep
) -> Response:
    """Write one event. A repeated ``event_id``/``idempotency_key`` with the same body returns
    the stored event with ``duplicate: true`` (200); with a different body, 409."""
    principal.check_agent(body.agent)
    try:
        prepared = prepare(
            body,
            max_depth=settings.max_json_depth,
            patterns=settings.redact_patterns,
            received_at=now_ts(),
        )
    except ItemError as error:
        raise HTTPException(error.status, error.as_fastapi_detail()) from None
    (outcome,) = store.append([prepared], reader_agent=principal.agent)
    if not outcome.ok:
        raise HTTPException(outcome.status, outcome.error)
    return json_response(_log_result(outcome), outcome.status)


#: The RFC 7240 preference a sender states to get counts and failures only.
RETURN_MINIMAL = "return=minimal"


def _wants_minimal(prefer: list[str] | None) -> bool:
    """Whether the ``Prefer`` headers ask for ``return=minimal`` (RFC 7240: every ``Prefer``
    line is one comma-separated list; names are case-blind, a value may be quoted, spaces or
    tabs may stand around ``=``; of a preference given twice the first counts)."""
    for header in prefer or ():
        for part in header.split(","):
            name, _, value = part.split(";", 1)[0].partition("=")
            if name.strip(" \t").lower() == "return":
                return value.strip(" \t").strip('"').lower() == "minimal"
    return False


@router.post("/batch", response_model=BatchResult)
def log_batch(
    body: BatchIn,
    principal: WritePrincipal,
    store: StoreDep,
    settings: SettingsDep,
    prefer: Annotated[
        list[str] | None,
        Header(
            description="`return=minimal` (RFC 7240): `results` lists only the failed items "
            "(each with its `index`); the answer says so in `Preference-Applied`."
        ),
    ] = None,
) -> Response:
    """Write up to 500 events in order; each item succeeds or fails alone (per-item errors).

    An item's ``parent_index`` names an earlier item of the batch, which must succeed. With
    ``Prefer: return=minimal`` the written items' receipts are left out of ``results`` (the
    counts stay), which is what a sender that only needs to know what failed asks for."""
    minimal = _wants_minimal(prefer)
    if len(body.events) > settings.max_batch_items:
        raise HTTPException(
            422,
            [
                {
                    "loc": ["body", "events"],
                    "msg": f"at most {settings.max_batch_items} items per batch",
                    "type": "too_long",
                }
            ],
        )
    received = now_ts()
    results: list[dict[str, Any] | None] = [None] * len(body.events)
    to_store: list[PreparedEvent] = []
    store_pos: dict[int, int] = {}
    positions: list[int] = []
    for index, item in enumerate(validate_items(body.events)):
        try:
            if isinstance(item, ItemError):
                raise item
            if item.agent != principal.agent and principal.agent is not None:
                raise ItemError(403, f"agent: this key is bound to agent {principal.agent!r}")
            parent_index = item.parent_index
            if parent_index is not None:
                if item.parent_id is not None:
                    raise ItemError(422, "parent_index: give parent_id or parent_index, not both")
                if parent_index >= index:
                    raise ItemError(422, f"parent_index: must name an earlier item (< {index})")
                if parent_index not in store_pos:
                    raise ItemError(422, f"parent_index: item {parent_index} was not written")
            prepared = prepare(
                item,
                max_depth=settings.max_json_depth,
                patterns=settings.redact_patterns,
                received_at=received,
                parent_index=parent_index,
            )
            if parent_index is not None:
                prepared.parent_index = store_pos[parent_index]
        except ItemError as error:
            results[index] = {
                "index": index,
                "ok": False,
                "status": error.status,
                "error": f"events.{index}.{error.detail}",
                "duplicate": False,
            }
            continue
        store_pos[index] = len(to_store)
        to_store.append(prepared)
        positions.append(index)
    outcomes = store.append(to_store, reader_agent=principal.agent)
    for index, outcome in zip(positions, outcomes, strict=True):
        if outcome.ok and minimal:
            continue  # counted below, no receipt
        entry: dict[str, Any] = {"index": index, "ok": outcome.ok, "duplicate": outcome.duplicate}
        if outcome.ok:
            entry.update(
                event_id=outcome.event_id,
                sequence_no=outcome.sequence_no,
                timestamp=outcome.timestamp,
                checksum=outcome.checksum,
                chain_hash=outcome.chain_hash,
            )
        else:
            entry.update(status=outcome.status, error=f"events.{index}.{outcome.error}")
        results[index] = entry
    final = [r for r in results if r is not None]
    # only stored items are ok or duplicates; every failure has an entry in either form
    written = sum(1 for o in outcomes if o.ok and not o.duplicate)
    duplicates = sum(1 for o in outcomes if o.duplicate)
    failed = sum(1 for r in final if not r["ok"])
    response = json_response(
        {"written": written, "failed": failed, "duplicates": duplicates, "results": final}
    )
    if minimal:
        response.headers["Preference-Applied"] = RETURN_MINIMAL
    return response


def _parse_cursor(cursor: str) -> tuple[str, int]:
    ts, sep, seq = cursor.rpartition("|")
    try:
        if not sep:
            raise ValueError("no '|'")
        number = int(seq)
        if not 0 <= number <= limits.MAX_SEQUENCE_NO:
            raise ValueError("sequence_no out of range")
        return parse_ts(ts), number
    except ValueError:
        raise HTTPException(
            422,
            [
                {
                    "loc": ["query", "cursor"],
                    "msg": (
                        "cursor must be '<timestamp>|<sequence_no>' of the last row seen "
                        f"(sequence_no 0 to {limits.MAX_SEQUENCE_NO})"
                    ),
                    "type": "value_error",
                }
            ],
        ) from None


@router.get("", response_model=list[EventOut])
def list_events(
    principal: ReadPrincipal,
    store: StoreDep,
    agent: AgentQuery,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    before: UtcDatetime | None = None,
    after: UtcDatetime | None = None,
    event_type: Annotated[str | None, Query(min_length=1, max_length=MAX_EVENT_TYPE_CHARS)] = None,
    session_id: Annotated[str | None, Query(max_length=MAX_SESSION_CHARS)] = None,
    cursor: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    """Events of one agent, newest first by ``(timestamp, sequence_no)``.

    ``cursor`` = ``"<timestamp>|<sequence_no>"`` of the last row seen: the next page holds
    strictly older rows, so paging is stable while writes continue."""
    principal.check_agent(agent)
    rows = store.list_events(
        agent,
        limit=limit,
        offset=offset,
        before=format_ts(before) if before else None,
        after=format_ts(after) if after else None,
        event_type=event_type,
        session_id=session_id,
        cursor=_parse_cursor(cursor) if cursor else None,
    )
    return json_response(rows)


def _visible(event: dict[str, Any] | None, principal: ReadPrincipal, event_id: UUID) -> None:
    if event is None or (principal.agent is not None and event["agent"] != principal.agent):
        raise HTTPException(404, f"event_id: no event {event_id}")


@lineage_router.get("/{event_id}", response_model=EventOut)
async def get_event(event_id: UUID, principal: ReadPrincipal, store: StoreDep) -> Response:
    """One event with its checksum and chain fields."""
    try:  # SQLite: on the event loop (the query costs less than a worker thread's hand-off)
        event = store.get_event_inline(str(event_id))
    except WouldBlock:  # elsewhere, or a large record: read and serialized in a worker thread
        return await run_in_threadpool(_read_event_response, store, principal, event_id)
    return _event_response(event, principal, event_id)


def _event_response(event: dict[str, Any] | None, principal: Principal, event_id: UUID) -> Response:
    _visible(event, principal, event_id)
    return json_response(event)


def _read_event_response(store: LedgerStore, principal: Principal, event_id: UUID) -> Response:
    return _event_response(store.get_event(str(event_id)), principal, event_id)


Depth = Annotated[int, Query(ge=0, le=limits.LINEAGE_DEPTH_MAX, description="hops followed")]
Size = Annotated[
    int, Query(ge=1, le=limits.LINEAGE_LIMIT_MAX, description="most events in the answer")
]


def why_answer(
    event_id: str, principal: Principal, store: LedgerStore, *, depth: int, limit: int
) -> dict[str, Any]:
    """The ``why`` answer for ``event_id`` (404 when the key may not see it)."""
    result = store.why(str(event_id), depth=depth, limit=limit, agent_scope=principal.agent)
    if result is None or (principal.agent is not None and result.anchor_agent != principal.agent):
        raise HTTPException(404, f"event_id: no event {event_id}")
    orphan = bool(result.missing)
    return {
        "event_id": str(event_id),
        "chain_length": len(result.events),
        "chain": result.events,
        "edges": result.edges,
        "roots": result.roots,
        "missing": result.missing,
        "cut_at": result.cut_at,
        "chain_complete": not (orphan or result.cut_at),
        "orphan": orphan,
        "depth_truncated": result.depth_truncated,
        "size_truncated": result.size_truncated,
        "scoped_agent_limited": result.scoped_agent_limited,
        "missing_parent": result.missing[0] if result.missing else None,
    }


@lineage_router.get("/{event_id}/why", response_model=WhyOut)
def why(
    event_id: UUID,
    principal: ReadPrincipal,
    store: StoreDep,
    depth: Depth = limits.WHY_DEPTH_DEFAULT,
    limit: Size = limits.LINEAGE_LIMIT_DEFAULT,
) -> Response:
    """The causal ancestry of the event as a DAG: every event it was computed from, following
    ``parent_id`` and ``caused_by`` (never ``scope_id``) up to ``depth`` hops and ``limit``
    events, in one recursive query. Root causes come first, the event itself last; ``edges``
    connect them. Causes not stored (yet) are listed in ``missing``; ``cut_at`` names the
    events whose causes a bound left unfollowed."""
    return json_response(why_answer(str(event_id), principal, store, depth=depth, limit=limit))


@lineage_router.get("/{event_id}/impact", response_model=ImpactOut)
def impact(
    event_id: UUID,
    principal: ReadPrincipal,
    store: StoreDep,
    depth: Depth = limits.IMPACT_DEPTH_DEFAULT,
    limit: Size = limits.LINEAGE_LIMIT_DEFAULT,
) -> Response:
    """Every causal descendant of the event (the mirror of why) as a DAG, causes before their
    effects, up to ``depth`` hops and ``limit`` events, in one recursive query."""
    result = store.impact(str(event_id), depth=depth, limit=limit, agent_scope=principal.agent)
    if result is None or (principal.agent is not None and result.anchor_agent != principal.agent):
        raise HTTPException(404, f"event_id: no event {event_id}")
    return json_response(
        {
            "event_id": str(event_id),
            "count": len(result.events),
            "events": result.events,
            "edges": result.edges,
            "cut_at": result.cut_at,
            "depth_truncated": result.depth_truncated,
            "truncated": result.size_truncated,
        }
    )
