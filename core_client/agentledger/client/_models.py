"""Typed results of the client (frozen dataclasses built from wire JSON).

Every ``from_wire`` is lenient about extra fields (newer servers) and strict about nothing the
client does not need, so a server of the same family with more fields still parses.
Timestamps stay ISO-8601 strings as the server sent them; :meth:`Event.time` parses one.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from agentledger.client._wire import iso_from_ns

__all__ = [
    "AgentInfo",
    "ApiKey",
    "BaselineReport",
    "ChainHead",
    "ChainProblem",
    "ChainReport",
    "Event",
    "EventRef",
    "FlushResult",
    "ForgetResult",
    "ImpactResult",
    "ImportResult",
    "SearchHit",
    "SearchResult",
    "Session",
    "StateAt",
    "Stats",
    "WhyResult",
]


def _get(obj: dict[str, Any], key: str, default: Any = None) -> Any:
    value = obj.get(key, default)
    return default if value is None else value


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
class Event:
    """One stored event, as the server returns it (wire contract, "Event object")."""

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
    extra: dict[str, Any] = field(default_factory=dict)

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
        extra={k: v for k, v in obj.items() if k not in _EVENT_FIELDS and k != "event_type"},
    )


def _events(items: Any) -> list[Event]:
    return [Event.from_wire(e) for e in items or [] if isinstance(e, dict)]


@dataclass(frozen=True, slots=True)
class WhyResult:
    """``why(event_id)``: the causal chain from the root to the event (wire: ``.../why``).

    Attributes:
        chain: events ordered root first, the asked event last.
        chain_complete: the walk reached a root (no parent) within ``depth``.
        missing_parent: id of a parent that is not (yet) stored, else ``None``.
    """

    event_id: str
    chain_length: int
    chain: list[Event]
    chain_complete: bool
    orphan: bool
    depth_truncated: bool
    scoped_agent_limited: bool
    missing_parent: str | None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> WhyResult:
        chain = _events(obj.get("chain"))
        return cls(
            event_id=str(obj.get("event_id", "")),
            chain_length=int(_get(obj, "chain_length", len(chain))),
            chain=chain,
            chain_complete=bool(obj.get("chain_complete", False)),
            orphan=bool(obj.get("orphan", False)),
            depth_truncated=bool(obj.get("depth_truncated", False)),
            scoped_agent_limited=bool(obj.get("scoped_agent_limited", False)),
            missing_parent=obj.get("missing_parent") or None,
        )


@dataclass(frozen=True, slots=True)
class ImpactResult:
    """``impact(event_id)``: every descendant of the event (``truncated`` when capped)."""

    event_id: str
    count: int
    events: list[Event]
    truncated: bool

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ImpactResult:
        events = _events(obj.get("events"))
        return cls(
            event_id=str(obj.get("event_id", "")),
            count=int(_get(obj, "count", len(events))),
            events=events,
            truncated=bool(obj.get("truncated", False)),
        )


@dataclass(frozen=True, slots=True)
class ChainProblem:
    """One defect found by chain verification (``kind`` e.g. ``hash_mismatch``, ``gap``)."""

    kind: str
    event_id: str | None
    sequence_no: int | None


@dataclass(frozen=True, slots=True)
class ChainHead:
    """Last link of an agent's chain; save ``chain_hash`` as an anchor."""

    sequence_no: int
    chain_hash: str


@dataclass(frozen=True, slots=True)
class ChainReport:
    """``verify_chain()``: whether the agent's hash chain is intact (wire: ``/v1/events/chain``)."""

    intact: bool
    summary: str
    problems: list[ChainProblem]
    chain_head: ChainHead | None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ChainReport:
        head = obj.get("chain_head")
        known = {"intact", "summary", "problems", "chain_head"}
        return cls(
            intact=bool(obj.get("intact", False)),
            summary=str(_get(obj, "summary", "")),
            problems=[
                ChainProblem(
                    kind=str(p.get("kind", "")),
                    event_id=p.get("event_id"),
                    sequence_no=p.get("sequence_no"),
                )
                for p in obj.get("problems") or []
                if isinstance(p, dict)
            ],
            chain_head=(
                ChainHead(
                    sequence_no=int(head.get("sequence_no") or 0),
                    chain_hash=str(head.get("chain_hash") or ""),
                )
                if isinstance(head, dict)
                else None
            ),
            extra={k: v for k, v in obj.items() if k not in known},
        )


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
            event_count=int(_get(obj, "event_count", 0)),
            event_types=list(_get(obj, "event_types", [])),
            started_at=obj.get("started_at"),
            ended_at=obj.get("ended_at"),
            agents=list(_get(obj, "agents", [])),
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
            event_count=int(_get(obj, "event_count", 0)),
        )


@dataclass(frozen=True, slots=True)
class ImportResult:
    """``import_events()`` totals over every chunk sent (wire: ``POST /v1/events/import``).

    ``errors`` holds ``{"index": i, "detail": ...}`` with ``i`` counted over the whole input.
    """

    imported: int = 0
    duplicates: int = 0
    failed: int = 0
    parents_dropped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def plus(self, obj: dict[str, Any], offset: int) -> ImportResult:
        """This result plus one chunk's answer (``offset`` = index of the chunk's first line)."""
        errors = [
            {**e, "index": int(e.get("index", 0)) + offset}
            for e in obj.get("errors") or []
            if isinstance(e, dict)
        ]
        return ImportResult(
            imported=self.imported + int(_get(obj, "imported", 0)),
            duplicates=self.duplicates + int(_get(obj, "duplicates", 0)),
            failed=self.failed + int(_get(obj, "failed", 0)),
            parents_dropped=self.parents_dropped + int(_get(obj, "parents_dropped", 0)),
            errors=[*self.errors, *errors],
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


@dataclass(frozen=True, slots=True)
class StateAt:
    """``at(timestamp)``: the agent's key/value state at a time (``state_set``/``state_delete``)."""

    agent: str
    at: str
    event_count: int
    truncated: bool
    state: dict[str, Any]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> StateAt:
        return cls(
            agent=str(obj.get("agent", "")),
            at=str(obj.get("at", "")),
            event_count=int(_get(obj, "event_count", 0)),
            truncated=bool(obj.get("truncated", False)),
            state=dict(_get(obj, "state", {})),
        )


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """``context_for(task)``: a prompt-ready memory block under a token budget.

    ``context`` is the packed text; ``token_count`` its size in tokens as counted by
    ``tokenizer`` (tiktoken's name when the server has it, else ``"estimate"``: chars / 4);
    ``sources`` the events it came from (``{"event_id", "kind": "recent"|"relevant", ...}``).
    """

    agent: str
    task: str
    context: str
    token_count: int
    max_tokens: int
    tokenizer: str
    truncated: bool
    search_mode: str
    sources: list[dict[str, Any]]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> MemoryContext:
        return cls(
            agent=str(obj.get("agent", "")),
            task=str(obj.get("task", "")),
            context=str(obj.get("context", "")),
            token_count=int(_get(obj, "token_count", 0)),
            max_tokens=int(_get(obj, "max_tokens", 0)),
            tokenizer=str(obj.get("tokenizer", "")),
            truncated=bool(obj.get("truncated", False)),
            search_mode=str(obj.get("search_mode", "")),
            sources=list(_get(obj, "sources", [])),
        )


@dataclass(frozen=True, slots=True)
class SessionDiff:
    """``memory_diff(session_id)``: one session next to the agent's usual sessions.

    ``raw`` keeps the whole answer (``compared_to``, ``top_events``...); the common members
    are lifted out. ``duration_s`` is in seconds.
    """

    session_id: str
    agent: str
    summary: str
    event_count: int
    causal_depth: int
    duration_s: float
    has_errors: bool
    new_event_types: list[Any]
    new_steps: list[Any]
    missing_steps: list[Any]
    raw: dict[str, Any]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> SessionDiff:
        return cls(
            session_id=str(obj.get("session_id", "")),
            agent=str(obj.get("agent", "")),
            summary=str(obj.get("summary", "")),
            event_count=int(_get(obj, "event_count", 0)),
            causal_depth=int(_get(obj, "causal_depth", 0)),
            duration_s=float(_get(obj, "duration_s", 0.0)),
            has_errors=bool(obj.get("has_errors", False)),
            new_event_types=list(_get(obj, "new_event_types", [])),
            new_steps=list(_get(obj, "new_steps", [])),
            missing_steps=list(_get(obj, "missing_steps", [])),
            raw=dict(obj),
        )


@dataclass(frozen=True, slots=True)
class BaselineReport:
    """``baseline()`` / ``behavior_change()``: drift of an agent's behaviour.

    ``raw`` keeps the whole answer (distributions); the common members are lifted out.
    """

    agent: str
    drift_score: float | None
    verdict: str | None
    raw: dict[str, Any]

    @classmethod
    def from_wire(cls, agent: str, obj: dict[str, Any]) -> BaselineReport:
        score = obj.get("drift_score")
        return cls(
            agent=str(obj.get("agent", agent)),
            drift_score=float(score) if isinstance(score, int | float) else None,
            verdict=obj.get("verdict"),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """``forget()``: how many events were erased (tombstones keep the chain verifiable)."""

    deleted_events: int
    filter: dict[str, Any]
    event_ids: list[str] = field(default_factory=list)
    dry_run: bool = False

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ForgetResult:
        return cls(
            deleted_events=int(_get(obj, "deleted_events", 0)),
            filter=dict(_get(obj, "filter", {})),
            event_ids=[str(x) for x in _get(obj, "event_ids", [])],
            dry_run=bool(obj.get("dry_run", False)),
        )


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key; ``key`` (the secret) is set only in the answer that created it."""

    key_id: str
    name: str | None
    agent: str | None
    scope: str | None
    created_at: str | None = None
    expires_at: str | None = None
    revoked_at: str | None = None
    prefix: str | None = None
    key: str | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ApiKey:
        return cls(
            key_id=str(obj.get("key_id", obj.get("id", ""))),
            name=obj.get("name"),
            agent=obj.get("agent"),
            scope=obj.get("scope"),
            created_at=obj.get("created_at"),
            expires_at=obj.get("expires_at"),
            revoked_at=obj.get("revoked_at"),
            prefix=obj.get("prefix"),
            key=obj.get("key") or obj.get("api_key"),
        )


@dataclass(frozen=True, slots=True)
class FlushResult:
    """What ``flush(timeout_s)`` achieved.

    Attributes:
        complete: every event logged before the call was settled (sent, spilled or dropped).
        sent: events the server acknowledged during the flush.
        spilled: events written to the disk spill during the flush.
        dropped: events lost during the flush (queue overflow without spill, rejected items).
        pending: events still queued or in flight when the flush returned.
        elapsed_s: wall time the flush took (seconds).
    """

    complete: bool
    sent: int
    spilled: int
    dropped: int
    pending: int
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class Stats:
    """Counters since the client was made (``stats()``); all are event counts.

    Attributes:
        enqueued: events accepted by ``log()``.
        sent: events the server acknowledged (including ``duplicate`` answers).
        duplicates: acknowledged events the server already had (retries, spill resends).
        retried: send attempts repeated after a retryable failure (counted per event).
        spilled: events written to the disk spill.
        unspilled: spilled events later delivered from the spill.
        dropped: events lost (queue full without spill, spill cap reached).
        failed: events the server rejected for good (422 on the item).
        queue_depth: events waiting in memory now.
        spill_bytes: bytes in this client's spill directory now.
    """

    enqueued: int
    sent: int
    duplicates: int
    retried: int
    spilled: int
    unspilled: int
    dropped: int
    failed: int
    queue_depth: int
    spill_bytes: int
