"""The ``log()`` family shared by both twins: it only queues (no I/O, never raises)."""

from __future__ import annotations

import collections
import datetime as dt
import re
import threading
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

import uuid_utils

from agentledger.client._batcher import BatchSender
from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._models import EventRef
from agentledger.client._wire import Item
from agentledger.client.sanitize import snapshot
from agentledger.protocol import limits
from agentledger.protocol import vocabulary as vocab

__all__ = ["CauseRef", "EventWrites", "ParentRef"]

#: A ``parent_id`` may be given as the id string, a UUID, or the :class:`EventRef` of ``log()``.
ParentRef = str | uuid.UUID | EventRef | None
#: One entry of ``caused_by``: an event reference, or ``(reference, kind)`` with an edge kind of
#: :mod:`agentledger.protocol.vocabulary` (``"read"``, ``"requested"``...).
CauseRef = str | uuid.UUID | EventRef | tuple[str | uuid.UUID | EventRef, str]

_EDGE_KIND: Final = re.compile(limits.EDGE_KIND_PATTERN)
#: ``call_id`` -> ``tool_call`` event id remembered for :meth:`EventWrites.log_tool_result`.
_REMEMBERED_CALLS: Final = 4096

_MAX_EVENT_TYPE_CHARS: Final = limits.MAX_EVENT_TYPE_CHARS
_MAX_SESSION_CHARS: Final = limits.MAX_SESSION_CHARS

_VOCABULARY: Final = frozenset(vocab.EVENT_TYPES)
#: Event types outside the vocabulary already warned about in this process.
_WARNED_TYPES: set[str] = set()
_WARNED_LOCK: Final = threading.Lock()


def _warn_if_outside_vocabulary(event: str) -> None:
    """Warn once per process and type when ``event`` is not a vocabulary name (it is still
    logged: custom types are allowed, but a typo of ``tool_call`` would silently stay out
    of every view that reads the vocabulary). A namespaced type (``livekit.metrics``) is an
    integration's own on purpose and is not warned about."""
    if event in _VOCABULARY or event in _WARNED_TYPES or "." in event:
        return
    with _WARNED_LOCK:
        if event in _WARNED_TYPES:
            return
        _WARNED_TYPES.add(event)
    logger.warning(
        "agentledger: event type %r is not in the event vocabulary "
        "(agentledger.client.vocabulary.EVENT_TYPES); it is logged as a custom type. "
        "Shown once per type.",
        event,
    )


def _time_ns(value: dt.datetime | str | float | None) -> int:
    if value is None:
        return time.time_ns()
    if isinstance(value, int | float):
        return int(value * 1_000_000_000)
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return int(value.timestamp()) * 1_000_000_000 + value.microsecond * 1000


def _parent(value: ParentRef) -> str | None:
    if value is None:
        return None
    if isinstance(value, EventRef):
        return value.event_id
    return str(value)


def _causes(
    caused_by: Iterable[CauseRef], event_id: str, parent_id: str | None
) -> tuple[tuple[str, str | None], ...] | None:
    """``caused_by`` as ``(event_id, kind)`` pairs: canonical UUIDs, each cause once, at most
    ``limits.MAX_CAUSES``. A bad entry is left out with a warning (the event is still logged);
    an entry naming ``parent_id`` is kept only when it labels the parent edge with a kind."""
    out: dict[str, str | None] = {}
    for entry in caused_by:
        ref, kind = entry if isinstance(entry, tuple) else (entry, None)
        try:
            cause = str(uuid.UUID(_parent(ref) or ""))
        except (TypeError, ValueError):
            logger.warning("agentledger: caused_by entry %r is not an event id; left out", ref)
            continue
        if kind is not None and (not isinstance(kind, str) or not _EDGE_KIND.match(kind)):
            logger.warning("agentledger: caused_by kind %r is not an edge kind; left out", kind)
            kind = None
        if cause == event_id:
            logger.warning("agentledger: an event cannot be its own cause; %s left out", cause)
            continue
        if cause == parent_id and kind is None:
            continue
        if cause not in out or out[cause] is None:
            out[cause] = kind
    if len(out) > limits.MAX_CAUSES:
        logger.warning(
            "agentledger: %d causes given, the first %d kept", len(out), limits.MAX_CAUSES
        )
    return tuple(list(out.items())[: limits.MAX_CAUSES]) or None


class EventWrites:
    """``log()``, ``log_tool()``, ``log_tool_result()`` and ``log_batch()``."""

    agent: str | None
    max_string_chars: int
    _sender: BatchSender
    #: ``call_id`` -> ``tool_call`` event id, newest last (see :meth:`log_tool_result`)
    _calls_by_id: collections.OrderedDict[str, str]
    _calls_lock: threading.Lock

    def log(
        self,
        event: str,
        data: Any = None,
        *,
        session_id: str | None = None,
        parent_id: ParentRef = None,
        metadata: Mapping[str, Any] | None = None,
        token_usage: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        supersedes: str | None = None,
        importance: float | None = None,
        timestamp: dt.datetime | str | float | None = None,
        agent: str | None = None,
        event_id: str | uuid.UUID | None = None,
        caused_by: Iterable[CauseRef] = (),
        scope_id: ParentRef = None,
    ) -> EventRef:
        """Queue one event and return its id at once (no network I/O in this thread).

        Args:
            event: event type, 1–255 chars; use the constants of
                :mod:`agentledger.client.vocabulary` (``"tool_call"``...).
            data: a JSON object (dict); any other value is stored as ``{"value": ...}``.
                Snapshotted now (later mutation by the agent does not change the event) and
                sanitized per the vocabulary doc (datetime, bytes, pydantic, numpy, cycles...).
            session_id: session the event belongs to (≤ 255 chars) or ``None``.
            parent_id: the causing event (the primary cause): an id string, UUID, or the
                :class:`EventRef` of an earlier ``log()``; it may not be stored yet.
            caused_by: further causes, each a reference as for ``parent_id`` or a
                ``(reference, kind)`` pair naming the edge kind (``"read"``, ``"requested"``,
                ... of :mod:`agentledger.protocol.vocabulary`); at most 32. ``why()`` and
                ``impact()`` follow them as they follow ``parent_id``. An entry equal to
                ``parent_id`` labels the parent edge with its kind.
            scope_id: the step this event ran inside (a graph node, a task), when that is
                not its cause. Stored and shown, never followed by ``why()``/``impact()``.
            metadata: free JSON object stored next to ``data``.
            token_usage: stored as ``data["token_usage"]`` (keys of
                ``vocabulary.TOKEN_USAGE_KEYS``; ``input_tokens`` includes the cache parts).
            idempotency_key: unique per agent; a repeated key is stored once.
            supersedes: event_id this event replaces in search/memory.
            importance: 0..1.
            timestamp: event time (datetime, ISO string or epoch seconds); default now.
            agent: agent name for this event (default: the client's ``agent``).
            event_id: a UUID chosen by the caller instead of a fresh UUIDv7, for integrations
                that derive ids from their framework's own ids (e.g. UUIDv5 of a CrewAI event
                id, so parent links hold whatever order events arrive in). A repeated id with
                the same body is stored once (the server answers ``duplicate``).

        Returns:
            :class:`EventRef` with the ``event_id`` (client-made UUIDv7 unless given).

        Never raises: a bad argument or an internal failure is logged to the
        ``agentledger`` logger and counted in :meth:`stats` (``failed``/``dropped``).
        """
        if event_id is None:
            event_id = str(uuid_utils.uuid7())
        else:
            try:
                event_id = str(uuid.UUID(str(event_id)))
            except ValueError:
                bad = str(event_id)
                event_id = str(uuid_utils.uuid7())
                self._sender.reject(f"event_id {bad!r} is not a UUID", event_id)
                return EventRef(event_id, agent or self.agent or "", session_id, time.time_ns())
        time_ns = time.time_ns() if timestamp is None else 0
        name = agent or self.agent
        try:
            if timestamp is not None:
                time_ns = _time_ns(timestamp)
            if token_usage is not None:
                data = (
                    {**data, "token_usage": token_usage}
                    if isinstance(data, Mapping)
                    else {"value": data, "token_usage": token_usage}
                )
            problem = self._check(event, name, session_id)
            if problem is not None:
                self._sender.reject(problem, event_id)
                return EventRef(event_id, name or "", session_id, time_ns)
            _warn_if_outside_vocabulary(event)
            max_chars = self.max_string_chars
            raw = b"{}" if data is None else snapshot(data, max_string_chars=max_chars)
            if raw[:1] != b"{":  # data must be a JSON object: wrap anything else
                raw = b'{"value":' + raw + b"}"
            self._sender.put(
                Item(
                    event_id,
                    name,  # type: ignore[arg-type]  # checked above
                    event,
                    raw,
                    time_ns,
                    session_id,
                    None if parent_id is None else _parent(parent_id),
                    None if metadata is None else snapshot(metadata, max_string_chars=max_chars),
                    idempotency_key,
                    supersedes,
                    importance,
                    None if not caused_by else _causes(caused_by, event_id, _parent(parent_id)),
                    _parent(scope_id),
                )
            )
        except Exception:
            logger.error("agentledger internal error in client.log", exc_info=True)
            with capture_internal_exceptions("client.log_count"):
                self._sender.reject("internal error", event_id)
        return EventRef(event_id, name or "", session_id, time_ns)

    @staticmethod
    def _check(event: Any, agent: str | None, session_id: Any) -> str | None:
        if agent is None:
            return "no agent: pass agent= to the client or to log(), or set AGENTLEDGER_AGENT"
        if not isinstance(event, str) or not 1 <= len(event) <= _MAX_EVENT_TYPE_CHARS:
            return f"event type must be a str of 1-{_MAX_EVENT_TYPE_CHARS} chars, got {event!r}"
        if session_id is not None and (
            not isinstance(session_id, str) or len(session_id) > _MAX_SESSION_CHARS
        ):
            return f"session_id must be a str of at most {_MAX_SESSION_CHARS} chars"
        return None

    def log_tool(
        self,
        tool: str,
        args: Any,
        *,
        call_id: str | None = None,
        session_id: str | None = None,
        parent_id: ParentRef = None,
        metadata: Mapping[str, Any] | None = None,
        agent: str | None = None,
        timestamp: dt.datetime | str | float | None = None,
    ) -> EventRef:
        """Log a ``tool_call``: ``data = {"tool": tool, "args": args[, "call_id"]}``.

        ``args`` should be the arguments object (dict), not a repr string (field case H04).
        ``timestamp`` as in :meth:`log` (default now). Returns the :class:`EventRef` to pass as
        ``parent_id`` of :meth:`log_tool_result`. Never raises.
        """
        data: dict[str, Any] = {"tool": tool, "args": args}
        if call_id is not None:
            data["call_id"] = call_id
        ref = self.log(
            vocab.TOOL_CALL,
            data,
            session_id=session_id,
            parent_id=parent_id,
            metadata=metadata,
            agent=agent,
            timestamp=timestamp,
        )
        if call_id is not None:
            with capture_internal_exceptions("client.log_tool"), self._calls_lock:
                calls = self._calls_by_id
                calls[str(call_id)] = ref.event_id
                calls.move_to_end(str(call_id))
                if len(calls) > _REMEMBERED_CALLS:
                    calls.popitem(last=False)
        return ref

    def log_tool_result(
        self,
        tool: str,
        result: Any = None,
        error: BaseException | str | None = None,
        duration_ms: float | None = None,
        *,
        call_id: str | None = None,
        session_id: str | None = None,
        parent_id: ParentRef = None,
        metadata: Mapping[str, Any] | None = None,
        agent: str | None = None,
        status: str | None = None,
        error_type: str | None = None,
        extra: Mapping[str, Any] | None = None,
        timestamp: dt.datetime | str | float | None = None,
    ) -> EventRef:
        """Log the outcome of a tool call: ``tool_result``, or ``tool_error`` when ``error``.

        Args:
            tool: tool name.
            result: the tool's return value (ignored when ``error`` is given).
            error: the exception (or message) the tool failed with.
            duration_ms: wall time of the call (milliseconds).
            parent_id: the ``tool_call`` event (vocabulary: results are its children). When
                omitted, the ``tool_call`` this client logged with the same ``call_id`` (the
                last 4,096 call ids are remembered).
            status: ``data.status`` of a ``tool_result`` (vocabulary: e.g. ``"ok"``).
            error_type: ``data.type`` of a ``tool_error`` (default: the exception's class
                name, or ``"error"`` for a message).
            extra: further ``data`` members (e.g. ``{"code": -32001}``); they never replace
                the members above.
            timestamp: as in :meth:`log` (default now).

        Never raises (as :meth:`log`).
        """
        data: dict[str, Any] = {"tool": tool}
        if error is not None:
            event = vocab.TOOL_ERROR
            data["error"] = str(error)
            data["type"] = error_type or (
                type(error).__name__ if isinstance(error, BaseException) else "error"
            )
        else:
            event = vocab.TOOL_RESULT
            data["result"] = result
            if status is not None:
                data["status"] = status
        if call_id is not None:
            data["call_id"] = call_id
        if duration_ms is not None:
            data["duration_ms"] = duration_ms
        if extra:
            data = {**extra, **data}
        if parent_id is None and call_id is not None:
            with self._calls_lock:
                parent_id = self._calls_by_id.get(str(call_id))
        return self.log(
            event,
            data,
            session_id=session_id,
            parent_id=parent_id,
            metadata=metadata,
            agent=agent,
            timestamp=timestamp,
        )

    def log_batch(self, events: Iterable[Mapping[str, Any]]) -> list[EventRef]:
        """Queue several events; each mapping holds :meth:`log`'s arguments by name
        (``event`` and ``data`` required), and may give ``parent_index``: the index of an
        earlier item of the same call to use as ``parent_id``. Never raises."""
        refs: list[EventRef] = []
        for spec in events:
            fields = dict(spec)
            index = fields.pop("parent_index", None)
            if isinstance(index, int) and 0 <= index < len(refs):
                fields["parent_id"] = refs[index]
            event = fields.pop("event", None)
            data = fields.pop("data", None)
            known = {
                k: fields[k]
                for k in (
                    "session_id",
                    "parent_id",
                    "metadata",
                    "token_usage",
                    "idempotency_key",
                    "supersedes",
                    "importance",
                    "timestamp",
                    "agent",
                    "event_id",
                    "caused_by",
                    "scope_id",
                )
                if k in fields
            }
            refs.append(self.log(event, data, **known))
        return refs
