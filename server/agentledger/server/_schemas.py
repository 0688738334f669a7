"""Request and response models: the wire names of ``wire-contract.md``.

Request models forbid unknown fields (422 naming the field). Response models document the
shapes in ``/openapi.json``; hot routes return pre-serialized JSON with the same shape.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from agentledger.protocol import limits
from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_EVENT_TYPE_CHARS, MAX_SESSION_CHARS

__all__ = [
    "AGENT_PATTERN",
    "UUID_PATTERN",
    "AgentInfo",
    "BatchIn",
    "BatchItemIn",
    "BatchItemResult",
    "BatchResult",
    "CauseIn",
    "CauseOut",
    "ChainHead",
    "ChainProblem",
    "ChainReportOut",
    "EdgeOut",
    "EventIn",
    "EventOut",
    "ImpactOut",
    "ImportIn",
    "ImportResult",
    "KeyCreateIn",
    "KeyCreated",
    "KeyInfo",
    "LogResultOut",
    "SessionEventsOut",
    "SessionInfo",
    "UtcDatetime",
    "WhyOut",
]

#: Agent names (wire contract, "Event object").
AGENT_PATTERN = limits.AGENT_PATTERN

#: A UUID in its canonical 8-4-4-4-12 hex form (any case; stored lowercase). Validated as a
#: string: building ``uuid.UUID`` objects cost half of batch validation.
UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"

AgentName = Annotated[str, Field(pattern=AGENT_PATTERN, min_length=1, max_length=MAX_AGENT_CHARS)]
UUIDStr = Annotated[str, Field(pattern=UUID_PATTERN, min_length=36, max_length=36)]
# U+0000 cannot be stored as text by PostgreSQL: refused at the API on every store.
NO_NUL = limits.NO_NUL_PATTERN
EventType = Annotated[str, Field(min_length=1, max_length=MAX_EVENT_TYPE_CHARS, pattern=NO_NUL)]
SessionId = Annotated[str, Field(max_length=MAX_SESSION_CHARS, pattern=NO_NUL)]
IdempotencyKey = Annotated[str, Field(min_length=1, max_length=255, pattern=NO_NUL)]
Importance = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def _utc_representable(value: datetime) -> datetime:
    """Refuse a time whose UTC form leaves years 1..9999 (``0001-01-01T00:00+01:00``)."""
    try:
        (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range: in UTC the time must lie in years 1 to 9999") from None
    return value


#: Every time the API takes (ISO-8601; naive means UTC), storable in the one UTC format.
UtcDatetime = Annotated[datetime, AfterValidator(_utc_representable)]

#: A UTC time with microseconds, ``Z`` or ``+00:00``: the form the clients send and the one the
#: ledger stores. Linear: the length is checked before the (anchored, fixed-width) pattern.
_STORED_FORM = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(?:Z|\+00:00)")


def _stored_form(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """An event time already in the stored form stays text (normalised to ``+00:00``): no
    ``datetime`` is built and formatted back. Anything else is validated as a time."""
    if type(value) is str and len(value) in (27, 32) and _STORED_FORM.fullmatch(value):
        try:
            datetime.fromisoformat(value[:26])  # a real date and time (no 30 February)
        except ValueError:
            pass  # the time validator names what is wrong
        else:
            return value[:26] + "+00:00"
    return handler(value)


if TYPE_CHECKING:
    #: An event's time: text in the stored form, or a ``datetime`` to format.
    EventTime = datetime | str
else:
    EventTime = Annotated[UtcDatetime, WrapValidator(_stored_form)]


EdgeKind = Annotated[str, Field(pattern=limits.EDGE_KIND_PATTERN, max_length=32)]


class CauseIn(BaseModel):
    """One further cause of an event, labelled with the kind of edge."""

    model_config = ConfigDict(extra="forbid")

    event_id: UUIDStr
    kind: EdgeKind | None = Field(
        default=None, description="edge kind (read, requested, produced, ...); default cause"
    )


class EventIn(BaseModel):
    """One event to write (POST ``/v1/events``)."""

    model_config = ConfigDict(extra="forbid")

    agent: AgentName
    event: EventType
    data: dict[str, Any]
    parent_id: UUIDStr | None = Field(
        default=None, description="the event's primary cause (may not be stored yet)"
    )
    caused_by: Annotated[list[UUIDStr | CauseIn], Field(max_length=limits.MAX_CAUSES)] | None = (
        Field(
            default=None,
            description=(
                "further causes: event ids or {event_id, kind}; an entry naming parent_id "
                "labels the parent edge"
            ),
        )
    )
    scope_id: UUIDStr | None = Field(
        default=None,
        description="the step this event ran inside; shown, never followed as a cause",
    )
    session_id: SessionId | None = None
    metadata: dict[str, Any] | None = None
    idempotency_key: IdempotencyKey | None = None
    supersedes: UUIDStr | None = None
    importance: Importance | None = None
    event_id: UUIDStr | None = Field(
        default=None, description="client-supplied id (UUIDv7 recommended); generated if absent"
    )
    timestamp: EventTime | None = Field(
        default=None, description="event time (ISO-8601; naive means UTC); server clock if absent"
    )


class BatchItemIn(EventIn):
    """A batch item: an event plus ``parent_index`` (an earlier item of the same batch)."""

    parent_index: Annotated[int, Field(ge=0, le=499)] | None = None


class BatchIn(BaseModel):
    """POST ``/v1/events/batch``: up to 500 items, written in order, validated one by one."""

    model_config = ConfigDict(extra="forbid")

    events: Annotated[
        list[Any],
        Field(
            min_length=1,
            max_length=500,
            description="items shaped like BatchItemIn; a bad item fails alone",
            json_schema_extra={"items": BatchItemIn.model_json_schema()},
        ),
    ]


class ImportIn(BaseModel):
    """POST ``/v1/events/import``: export lines, optionally renamed to ``agent``."""

    model_config = ConfigDict(extra="forbid")

    events: Annotated[list[dict[str, Any]], Field(max_length=10_000)]
    agent: AgentName | None = None


class LogResultOut(BaseModel):
    """Response of POST ``/v1/events``."""

    event_id: str
    timestamp: str
    sequence_no: int
    checksum: str
    chain_hash: str
    indexed: bool = False
    index_status: str = "pending"
    duplicate: bool = False


class BatchItemResult(BaseModel):
    """One batch item's outcome."""

    index: int
    ok: bool
    event_id: str | None = None
    sequence_no: int | None = None
    timestamp: str | None = None
    checksum: str | None = None
    chain_hash: str | None = None
    duplicate: bool = False
    status: int | None = None
    error: str | None = None


class BatchResult(BaseModel):
    """Response of POST ``/v1/events/batch``."""

    written: int
    failed: int
    duplicates: int = 0
    results: list[BatchItemResult]


class CauseOut(BaseModel):
    """A further cause as stored in an event's record."""

    event_id: str
    kind: str


class EventOut(BaseModel):
    """A stored event."""

    event_id: str
    agent: str
    sequence_no: int
    timestamp: str
    received_at: str
    event: str
    data: dict[str, Any]
    parent_id: str | None = None
    caused_by: list[CauseOut] | None = None
    scope_id: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    supersedes: str | None = None
    importance: float | None = None
    idempotency_key: str | None = None
    checksum: str | None = None
    chain_hash: str
    erased: bool = False


class EdgeOut(BaseModel):
    """A causal edge: ``effect`` was computed from ``cause``'s output."""

    effect: str
    cause: str
    kind: str


class WhyOut(BaseModel):
    """GET ``/v1/events/{id}/why``: the causal ancestry as a DAG.

    ``chain`` holds each ancestor once, root causes first, the asked event last (an order in
    which every cause comes before its effects); ``edges`` connect them."""

    event_id: str
    chain_length: int
    chain: list[EventOut]
    edges: list[EdgeOut]
    roots: list[str] = Field(description="events of the chain that have no causes")
    missing: list[str] = Field(
        description="causes named by the chain's events that are not stored (or not readable)"
    )
    cut_at: list[str] = Field(
        description="events of the chain whose causes were not followed (depth or size bound)"
    )
    chain_complete: bool
    orphan: bool
    depth_truncated: bool
    size_truncated: bool
    scoped_agent_limited: bool
    missing_parent: str | None = None


class ImpactOut(BaseModel):
    """GET ``/v1/events/{id}/impact``: every causal descendant of the event as a DAG, causes
    before their effects (the asked event itself excluded; ``edges`` include its own)."""

    event_id: str
    count: int
    events: list[EventOut]
    edges: list[EdgeOut]
    cut_at: list[str] = Field(
        description="events whose effects were not followed (depth or size bound)"
    )
    depth_truncated: bool
    truncated: bool


class SessionInfo(BaseModel):
    """One row of GET ``/v1/sessions``."""

    session_id: str
    event_count: int
    event_types: list[str]
    started_at: str
    ended_at: str
    agents: list[str]


class SessionEventsOut(BaseModel):
    """GET ``/v1/sessions/{sid}/events``: replay, oldest first."""

    session_id: str
    events: list[EventOut]


class AgentInfo(BaseModel):
    """One row of GET ``/v1/agents``."""

    agent: str
    first_seen: str
    last_seen: str
    event_count: int


class ChainProblem(BaseModel):
    """One verification finding."""

    kind: str
    event_id: str | None
    sequence_no: int
    detail: str


class ChainHead(BaseModel):
    """The last link: save it outside the ledger and pass it back as ``anchor``/``after_seq``."""

    sequence_no: int
    chain_hash: str | None


class ChainReportOut(BaseModel):
    """GET ``/v1/events/chain``."""

    intact: bool
    summary: str
    problems: list[ChainProblem]
    chain_head: ChainHead
    verified: int
    erased: int


class ImportResult(BaseModel):
    """POST ``/v1/events/import``."""

    imported: int
    duplicates: int
    failed: int
    parents_dropped: int
    errors: list[dict[str, Any]]


class KeyCreateIn(BaseModel):
    """POST ``/v1/keys``."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, Field(min_length=1, max_length=255, pattern=NO_NUL)]
    agent: AgentName | None = None
    scope: Literal["read_write", "read_only"] = "read_write"
    expires_in_days: Annotated[int, Field(ge=1, le=36_500)] | None = None


class KeyInfo(BaseModel):
    """A key as listed (never the secret)."""

    key_id: str
    name: str
    agent: str | None
    scope: str
    created_at: str
    expires_at: str | None
    revoked_at: str | None = None
    prefix: str


class KeyCreated(KeyInfo):
    """A new key: ``key`` is the raw secret, shown this once."""

    key: str
