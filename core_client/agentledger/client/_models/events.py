"""Events and the reads that return events: ``log()``'s reference, stored events, ``why()``,
``impact()``, sessions, agents and search hits."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from agentledger.client._models._json import value_or
from agentledger.client._wire import iso_from_ns

__all__ = [
    "AgentInfo",
    "Cause",
    "Edge",
    "Event",
    "EventRef",
    "ImpactResult",
    "SearchHit",
    "SearchResult",
    "Session",
    "WhyResult",
    "events_from_wire",
]


@dataclass(frozen=True, slots=True)
class EventRef:
    """What ``log()`` returns at once, before any network round trip.

    Attributes:
        event_id: the client-made UUIDv7 (str); pass it as ``parent_id`` of the next event.
        agent: agent the event is logged under.
        session_id: its session, or ``None``.
        time_ns: event time the client stamped (nanoseconds since the epoch);
            :attr:`timestamp` is the ISO-8601 string sent to the server.
    """

    event_id: str
    agent: str
    session_id: str | None
    time_ns: int

    @property
    def timestamp(self) -> str:
        """Event time as sent to the server (ISO-8601 UTC, microseconds, ``Z``)."""
        return iso_from_ns(self.time_ns)

    def __str__(self) -> str:
        return self.event_id


@dataclass(frozen=True, slots=True)
class Cause:
    """A further cause an event names (``caused_by``): its id and the kind of edge."""

    event_id: str
    kind: str


@dataclass(frozen=True, slots=True)
class Edge:
    """A causal edge of a :class:`WhyResult` or :class:`ImpactResult`: ``effect`` was computed
    from ``cause``'s output; ``kind`` says how (``"read"``, ``"requested"``, ``"closes"``...)."""

    effect: str
    cause: str
    kind: str


def _edges(items: Any) -> list[Edge]:
    return [
        Edge(str(e.get("effect", "")), str(e.get("cause", "")), str(e.get("kind", "cause")))
        for e in items or []
        if isinstance(e, dict)
    ]


def _causes(items: Any) -> tuple[Cause, ...]:
    out = []
    for item in items or []:
        if isinstance(item, dict):
            out.append(Cause(str(item.get("event_id", "")), str(item.get("kind", "cause"))))
        elif isinstance(item, str):
            out.append(Cause(item, "cause"))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Event:
    """One stored event, as the server returns it (wire contract, "Event object").

    ``parent_id`` is its primary cause and ``caused_by`` its further causes; ``scope_id`` the
    step it ran inside (not a cause)."""

    event_id: str
    agent: str
    event: str
    data: dict[str, Any]
    timestamp: str
    session_id: str | None = None
    parent_id: str | None = None
    metadata: dict[str, Any] | None = None
    sequence_no: int | None = None
    checksum: str | None = None
    chain_hash: str | None = None
    idempotency_key: str | None = None
    supersedes: str | None = None
    importance: float | None = None
    received_at: str | None = None
    caused_by: tuple[Cause, ...] = ()
    scope_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def causes(self) -> list[str]:
        """Every cause's id: ``parent_id`` first, then ``caused_by``, each once."""
        ids = [self.parent_id] if self.parent_id else []
        ids.extend(c.event_id for c in self.caused_by if c.event_id not in ids)
        return ids

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Event:
        """Build from one JSON event object (unknown members go to ``extra``)."""
        return _event_from_wire(obj)

    def time(self) -> dt.datetime:
        """``timestamp`` parsed (timezone-aware, UTC when the string has no offset)."""
        parsed = dt.datetime.fromisoformat(self.timestamp.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


_EVENT_FIELDS = frozenset(
    {
        "event_id",
        "agent",
        "event",
        "data",
        "timestamp",
        "session_id",
        "parent_id",
        "metadata",
        "sequence_no",
        "checksum",
        "chain_hash",
        "idempotency_key",
        "supersedes",
        "importance",
        "received_at",
        "caused_by",
        "scope_id",
    }
)


def _event_from_wire(obj: dict[str, Any]) -> Event:
    data = obj.get("data")
    return Event(
        event_id=str(obj.get("event_id", "")),
        agent=str(obj.get("agent", "")),
        event=str(obj.get("event", obj.get("event_type", ""))),
        data=data if isinstance(data, dict) else {},
        timestamp=str(obj.get("timestamp", "")),
        session_id=obj.get("session_id"),
        parent_id=obj.get("parent_id"),
        metadata=obj.get("metadata"),
        sequence_no=obj.get("sequence_no"),
        checksum=obj.get("checksum"),
        chain_hash=obj.get("chain_hash"),
        idempotency_key=obj.get("idempotency_key"),
        supersedes=obj.get("supersedes"),
        importance=obj.get("importance"),
        received_at=obj.get("received_at"),
        caused_by=_causes(obj.get("caused_by")),
        scope_id=obj.get("scope_id"),
        extra={k: v for k, v in obj.items() if k not in _EVENT_FIELDS and k != "event_type"},
    )


def events_from_wire(items: Any) -> list[Event]:
    """The :class:`Event` of every JSON object in ``items`` (``None`` counts as empty)."""
    return [Event.from_wire(e) for e in items or [] if isinstance(e, dict)]


@dataclass(frozen=True, slots=True)
class WhyResult:
    """``why(event_id)``: the causal ancestry of the event as a DAG (wire: ``.../why``).

    Attributes:
        chain: every ancestor once, root causes first, the asked event last (each cause
            comes before its effects).
        edges: the causal edges between them (and to ``missing`` causes).
        roots: events of ``chain`` that have no causes: where the answer starts.
        missing: causes named in the chain that are not stored (or this key may not read).
        cut_at: events whose causes were not followed (``depth`` or ``limit`` reached).
        chain_complete: nothing missing and nothing cut.
        missing_parent: the first of ``missing``, else ``None``.
        raw: the whole answer as it came (members the server adds too).
    """

    event_id: str
    chain_length: int
    chain: list[Event]
    chain_complete: bool
    orphan: bool
    depth_truncated: bool
    scoped_agent_limited: bool
    missing_parent: str | None
    edges: list[Edge] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    cut_at: list[str] = field(default_factory=list)
    size_truncated: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> WhyResult:
        chain = events_from_wire(obj.get("chain"))
        return cls(
            event_id=str(obj.get("event_id", "")),
            chain_length=int(value_or(obj, "chain_length", len(chain))),
            chain=chain,
            chain_complete=bool(obj.get("chain_complete", False)),
            orphan=bool(obj.get("orphan", False)),
            depth_truncated=bool(obj.get("depth_truncated", False)),
            scoped_agent_limited=bool(obj.get("scoped_agent_limited", False)),
            missing_parent=obj.get("missing_parent") or None,
            edges=_edges(obj.get("edges")),
            roots=[str(r) for r in obj.get("roots") or []],
            missing=[str(m) for m in obj.get("missing") or []],
            cut_at=[str(c) for c in obj.get("cut_at") or []],
            size_truncated=bool(obj.get("size_truncated", False)),
            raw=dict(obj),
        )

    def causes_of(self, event_id: str) -> list[Edge]:
        """The edges from ``event_id`` to its causes within this answer."""
        return [e for e in self.edges if e.effect == event_id]


@dataclass(frozen=True, slots=True)
class ImpactResult:
    """``impact(event_id)``: every causal descendant of the event as a DAG, causes before
    their effects (the asked event itself is not in ``events``; ``edges`` include its own).
    ``truncated`` when ``limit`` cut the answer, ``depth_truncated`` when ``depth`` did;
    ``cut_at`` names where. ``raw`` is the whole answer as it came."""

    event_id: str
    count: int
    events: list[Event]
    truncated: bool
    edges: list[Edge] = field(default_factory=list)
    cut_at: list[str] = field(default_factory=list)
    depth_truncated: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ImpactResult:
        events = events_from_wire(obj.get("events"))
        return cls(
            event_id=str(obj.get("event_id", "")),
            count=int(value_or(obj, "count", len(events))),
            events=events,
            truncated=bool(obj.get("truncated", False)),
            edges=_edges(obj.get("edges")),
            cut_at=[str(c) for c in obj.get("cut_at") or []],
            depth_truncated=bool(obj.get("depth_truncated", False)),
            raw=dict(obj),
        )

    def effects_of(self, event_id: str) -> list[Edge]:
        """The edges from ``event_id`` to the events computed from it, within this answer."""
        return [e for e in self.edges if e.cause == event_id]


@dataclass(frozen=True, slots=True)
class Session:
    """One session summary (wire: ``GET /v1/sessions``)."""

    session_id: str
    event_count: int
    event_types: list[str]
    started_at: str | None
    ended_at: str | None
    agents: list[str]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Session:
        return cls(
            session_id=str(obj.get("session_id", "")),
            event_count=int(value_or(obj, "event_count", 0)),
            event_types=list(value_or(obj, "event_types", [])),
            started_at=obj.get("started_at"),
            ended_at=obj.get("ended_at"),
            agents=list(value_or(obj, "agents", [])),
        )


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """One agent known to the server (wire: ``GET /v1/agents``)."""

    agent: str
    first_seen: str | None
    last_seen: str | None
    event_count: int

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> AgentInfo:
        return cls(
            agent=str(obj.get("agent", "")),
            first_seen=obj.get("first_seen"),
            last_seen=obj.get("last_seen"),
            event_count=int(value_or(obj, "event_count", 0)),
        )


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result: the event and its score (higher is better)."""

    event: Event
    score: float | None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """``search()`` (wire: ``POST /v1/search``)."""

    query: str
    results: list[SearchHit]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> SearchResult:
        hits = [
            SearchHit(event=Event.from_wire(r), score=r.get("score"))
            for r in obj.get("results") or []
            if isinstance(r, dict)
        ]
        return cls(query=str(obj.get("query", "")), results=hits)
