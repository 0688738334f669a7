"""Ledger-wide routes: chain verification, NDJSON export, import."""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Query, Request, Response
from fastapi.responses import StreamingResponse

from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_SEQUENCE_NO
from agentledger.server._auth import ReadPrincipal, WritePrincipal
from agentledger.server._chain import ChainReport
from agentledger.server._chain_head import check_head
from agentledger.server._http import StrictJSONRoute, json_response
from agentledger.server._ingest import ItemError, PreparedEvent, now_ts, prepare, validate_item
from agentledger.server._routes._deps import SettingsDep, StoreDep
from agentledger.server._schemas import AGENT_PATTERN, ChainReportOut, ImportIn, ImportResult
from agentledger.server._verify_ranges import verify_chain_of

__all__ = ["router"]

router = APIRouter(prefix="/v1/events", tags=["ledger"], route_class=StrictJSONRoute)

AgentQuery = Annotated[str, Query(pattern=AGENT_PATTERN, max_length=MAX_AGENT_CHARS)]
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

#: Namespace of import ids when events are renamed to another agent (uuid5, deterministic, so a
#: re-run maps to the same ids and returns duplicates).
IMPORT_NAMESPACE = uuid.UUID("6f1d4a52-8c0e-4d8e-9a51-2b7f0c3e9d11")

# Export fields that describe the stored copy, not the event: ignored on import.
_STORED_ONLY = {"sequence_no", "checksum", "chain_hash", "received_at", "erased", "indexed"}


def _query_error(field: str, message: str) -> HTTPException:
    return HTTPException(422, [{"loc": ["query", field], "msg": message, "type": "value_error"}])


@router.get("/chain", response_model=ChainReportOut)
def verify_chain(
    request: Request,
    principal: ReadPrincipal,
    store: StoreDep,
    agent: AgentQuery,
    after_seq: Annotated[str | None, Query(max_length=20)] = None,
    anchor: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """Verify the agent's hash chain and pinpoint each problem.

    ``after_seq`` + ``anchor`` (a ``chain_head`` saved earlier) verify only what came after it
    and detect a truncated tail. An empty ``after_seq=`` (sent by zizkadb-sdk 0.5.0 when only
    ``anchor`` is given) counts as absent."""
    principal.check_agent(agent)
    start: int | None = None
    if after_seq:
        message = f"after_seq must be an integer from 0 to {MAX_SEQUENCE_NO}"
        try:
            start = int(after_seq)
        except ValueError:
            raise _query_error("after_seq", message) from None
        if not 0 <= start <= MAX_SEQUENCE_NO:
            raise _query_error("after_seq", message)
    anchor = anchor or None
    if anchor is not None and not _HEX64.match(anchor):
        raise _query_error("anchor", "anchor must be a chain_hash (64 lowercase hex digits)")
    report = ChainReport()
    start_seq, previous = 0, None
    if anchor is not None or start:
        row = None
        if start:
            row = store.chain_row_at(agent, start)
        elif anchor is not None:
            row = store.chain_row_by_hash(agent, anchor)
        if row is None:
            report.problems.append(
                {
                    "kind": "truncated_after_anchor",
                    "event_id": None,
                    "sequence_no": start,
                    "detail": "the anchored event is gone: the chain ends before the anchor",
                }
            )
        elif anchor is not None and row.chain_hash != anchor:
            report.problems.append(
                {
                    "kind": "anchor_mismatch",
                    "event_id": row.event_id,
                    "sequence_no": row.sequence_no,
                    "detail": "the event at the anchor's sequence_no has another chain_hash",
                }
            )
            start_seq, previous = row.sequence_no, row.chain_hash
        else:
            start_seq, previous = row.sequence_no, row.chain_hash
    # head and the last rows from one read snapshot: a live agent's writes land meanwhile
    head = verify_chain_of(
        store,
        agent,
        report,
        start_seq=start_seq,
        previous_hash=previous,
        verifier=request.app.state.verifier,
    )
    check_head(report, head)
    return json_response(report.as_dict(agent))


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
def export_events(principal: ReadPrincipal, store: StoreDep, agent: AgentQuery) -> Response:
    """Every event of the agent as NDJSON, oldest first, streamed in bounded memory."""
    principal.check_agent(agent)
    return StreamingResponse(store.export_lines(agent), media_type="application/x-ndjson")


@router.post("/import", response_model=ImportResult)
def import_events(
    body: ImportIn, principal: WritePrincipal, store: StoreDep, settings: SettingsDep
) -> Response:
    """Import export lines (oldest first): original timestamps kept, parents remapped, fresh
    checksums and chain links. Renaming to ``agent`` maps ids deterministically (uuid5), so a
    re-run returns duplicates, never copies; a cause (``parent_id`` or a ``caused_by`` entry)
    found neither in the import nor in the ledger is dropped (counted in ``parents_dropped``)."""
    received = now_ts()
    errors: list[dict[str, Any]] = []
    prepared: list[PreparedEvent] = []
    id_map: dict[str, str] = {}
    parents_dropped = 0
    pending: list[tuple[int, PreparedEvent, str | None]] = []
    for index, line in enumerate(body.events):
        try:
            fields = {k: v for k, v in line.items() if k not in _STORED_ONLY}
            original_agent = fields.get("agent")
            if body.agent is not None:
                fields["agent"] = body.agent
            original_id = fields.get("event_id")
            if original_id is None:
                raise ItemError(422, "event_id: required on import lines")
            item = validate_item(fields)
            principal.check_agent(item.agent)
            original = str(item.event_id).lower()
            new_id = original
            if body.agent is not None and body.agent != original_agent:
                new_id = str(uuid.uuid5(IMPORT_NAMESPACE, f"{body.agent}/{original}"))
            id_map[original] = new_id
            parent = item.parent_id.lower() if item.parent_id is not None else None
            item = item.model_copy(update={"event_id": new_id, "parent_id": None})
            pending.append(
                (
                    index,
                    prepare(
                        item,
                        max_depth=settings.max_json_depth,
                        patterns=settings.redact_patterns,
                        received_at=received,
                    ),
                    parent,
                )
            )
        except ItemError as error:
            errors.append({"index": index, "detail": error.detail})
        except HTTPException as error:
            errors.append({"index": index, "detail": str(error.detail)})

    def readable(ref: str) -> bool:
        # a bound key's cause stored under another agent is dropped like an unknown one
        event = store.get_event(ref)
        return event is not None and principal.agent in (None, event["agent"])

    def resolve(ref: str) -> str | None:
        mapped = id_map.get(ref)
        if mapped is None:
            renamed = (
                str(uuid.uuid5(IMPORT_NAMESPACE, f"{body.agent}/{ref}")) if body.agent else None
            )
            if renamed and readable(renamed):
                mapped = renamed
            elif readable(ref):
                mapped = ref
        return mapped

    for _index, event, parent in pending:
        if parent is not None:
            mapped = resolve(parent)
            if mapped is None:
                parents_dropped += 1
            event.parent_id = mapped
        if event.caused_by:
            causes = [(resolve(cause), kind) for cause, kind in event.caused_by]
            parents_dropped += sum(1 for cause, _ in causes if cause is None)
            event.caused_by = tuple((c, k) for c, k in causes if c is not None)
        if event.scope_id is not None:
            event.scope_id = id_map.get(event.scope_id, event.scope_id)
        if event.supersedes is not None:  # a renamed event replaces the renamed copy
            event.supersedes = id_map.get(event.supersedes, event.supersedes)
        prepared.append(event)
    # The fingerprint must cover the resolved parent, so a re-run compares like with like.
    for event in prepared:
        event.fingerprint = _refingerprint(event)
    outcomes = store.append(prepared, reader_agent=principal.agent)
    imported = duplicates = 0
    for (index, _event, _parent), outcome in zip(pending, outcomes, strict=True):
        if outcome.ok and outcome.duplicate:
            duplicates += 1
        elif outcome.ok:
            imported += 1
        else:
            errors.append({"index": index, "detail": outcome.error})
    return json_response(
        {
            "imported": imported,
            "duplicates": duplicates,
            "failed": len(errors),
            "parents_dropped": parents_dropped,
            "errors": sorted(errors, key=lambda e: e["index"]),
        }
    )


def _refingerprint(event: PreparedEvent) -> str:
    resolved: list[Any] = [event.fingerprint, event.parent_id]
    if event.caused_by:
        resolved.append([list(cause) for cause in event.caused_by])
    return hashlib.sha256(orjson.dumps(resolved)).hexdigest()
