"""The non-I/O half shared by :class:`Ledger` and :class:`AsyncLedger` (style.md point 2).

It resolves configuration, builds the background sender, implements the non-blocking
``log()`` family (identical in both twins), and describes every read as a :class:`Call`
(method, path, params, body, parser) that each twin executes with its own httpx client.
"""

from __future__ import annotations

import atexit
import datetime as dt
import os
import time
import uuid
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar
from urllib.parse import quote

import httpx
import uuid_utils

from agentledger.client._batcher import BatchSender
from agentledger.client._config import (
    DEFAULT,
    Default,
    resolve_agent,
    resolve_api_key,
    resolve_spill_dir,
    resolve_url,
)
from agentledger.client._errors import ConfigurationError, status_error_from_response
from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._models import (
    AgentInfo,
    ApiKey,
    BaselineReport,
    ChainReport,
    Event,
    EventRef,
    ForgetResult,
    ImpactResult,
    MemoryContext,
    SearchResult,
    Session,
    SessionDiff,
    StateAt,
    Stats,
    WhyResult,
)
from agentledger.client._redaction import ClientRedactor
from agentledger.client._retry import RetryPolicy
from agentledger.client._sanitize import DEFAULT_MAX_STRING_CHARS, snapshot
from agentledger.client._spill import DEFAULT_MAX_SPILL_BYTES, SpillStore, destination_dir
from agentledger.client._wire import Item
from agentledger.protocol import limits
from agentledger.protocol import vocabulary as vocab

__all__ = ["DEFAULT_TIMEOUT_S", "BaseLedger", "Call", "ParentRef", "RedactSetting"]

T = TypeVar("T")

#: Default timeout of one HTTP request (seconds).
DEFAULT_TIMEOUT_S: Final = 10.0

#: Read requests: fewer attempts and a short deadline (the caller is waiting).
READ_RETRY: Final = RetryPolicy(deadline_s=10.0, max_attempts=3)

#: ``redact=``: ``True`` (secret-named keys), ``False`` (off), or pattern names to add
#: (see ``agentledger.protocol.redaction.PATTERN_NAMES``: email, phone, card, iban, ipv4).
RedactSetting = bool | Collection[str]

#: A ``parent_id`` may be given as the id string, a UUID, or the :class:`EventRef` of ``log()``.
ParentRef = str | uuid.UUID | EventRef | None

_MAX_EVENT_TYPE_CHARS: Final = limits.MAX_EVENT_TYPE_CHARS
_MAX_SESSION_CHARS: Final = limits.MAX_SESSION_CHARS


@dataclass(frozen=True)
class Call(Generic[T]):
    """One read request and how to parse its JSON answer."""

    method: str
    path: str
    parse: Callable[[Any], T]
    params: dict[str, Any] | None = None
    json: Any = None
    expect_json: bool = True


def _seg(value: str) -> str:
    """``value`` as one URL path segment: every reserved character percent-encoded (RFC 3986
    section 3.3), so a session id such as ``a/b``, ``x?y`` or ``../other`` names exactly itself
    (httpx would otherwise split it or remove its dot segments)."""
    return quote(str(value), safe="")


def _drop_none(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


def _iso(value: dt.datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.isoformat()


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


def _list_of(parse: Callable[[dict[str, Any]], T]) -> Callable[[Any], list[T]]:
    def parse_list(body: Any) -> list[T]:
        if isinstance(body, dict):  # tolerate {"items": [...]} style answers
            for key in ("items", "events", "sessions", "agents", "keys", "results"):
                if isinstance(body.get(key), list):
                    body = body[key]
                    break
        return [parse(x) for x in body or [] if isinstance(x, dict)]

    return parse_list


def _replay_events(body: Any) -> list[Event]:
    events = body.get("events") if isinstance(body, dict) else body
    return [Event.from_wire(e) for e in events or [] if isinstance(e, dict)]


def _close_at_exit(sender: BatchSender, timeout_s: float) -> None:
    """Interpreter exit: flush within ``timeout_s``, then spill (or count) the rest."""
    with capture_internal_exceptions("client.atexit"):
        if sender.closed:
            return
        result = sender.close(timeout_s)
        if result.pending or result.dropped:
            logger.warning(
                "agentledger: at exit %d events pending, %d dropped, %d spilled",
                result.pending,
                result.dropped,
                result.spilled,
            )


class BaseLedger:
    """Configuration, the sender and ``log()``; see :class:`agentledger.client.Ledger`."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        agent: str | None = None,
        *,
        spill_dir: str | os.PathLike[str] | Default | None = DEFAULT,
        flush_interval_s: float = 0.2,
        max_batch_events: int = 500,
        max_queue_events: int = 10_000,
        flush_timeout_s: float = 5.0,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT_S,
        redact: RedactSetting = True,
        sender_transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        max_spill_bytes: int = DEFAULT_MAX_SPILL_BYTES,
        max_string_chars: int = DEFAULT_MAX_STRING_CHARS,
    ) -> None:
        self.url: str = resolve_url(url)
        self.agent: str | None = resolve_agent(agent)
        key = resolve_api_key(api_key)
        if not key:
            raise ConfigurationError(
                "an API key is required: pass api_key= or set AGENTLEDGER_API_KEY"
            )
        if not 1 <= max_batch_events <= 500:
            raise ConfigurationError("max_batch_events must be 1..500 (server batch limit)")
        if max_queue_events < max_batch_events:
            raise ConfigurationError("max_queue_events must be >= max_batch_events")
        if flush_interval_s <= 0 or flush_timeout_s < 0:
            raise ConfigurationError("flush_interval_s must be > 0 and flush_timeout_s >= 0")
        self.flush_timeout_s = float(flush_timeout_s)
        self.max_string_chars = max_string_chars
        self._headers = {
            "Authorization": f"Bearer {key}",
            "User-Agent": "agentledger-client/0.1",
        }
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self.spill_dir = resolve_spill_dir(spill_dir)
        spill = (
            SpillStore(destination_dir(self.spill_dir, self.url), max_bytes=max_spill_bytes)
            if self.spill_dir is not None
            else None
        )
        self._sender = BatchSender(
            url=self.url,
            headers=self._headers,
            transport=sender_transport,
            timeout=self._timeout,
            policy=retry or RetryPolicy(),
            spill=spill,
            redactor=self._make_redactor(redact),
            flush_interval_s=flush_interval_s,
            max_batch_events=max_batch_events,
            max_queue_events=max_queue_events,
        )
        self._register_process_hooks()

    @staticmethod
    def _make_redactor(setting: RedactSetting) -> ClientRedactor | None:
        if setting is False:
            return None
        patterns: tuple[str, ...] = () if setting is True else tuple(setting)  # type: ignore[arg-type]
        try:
            return ClientRedactor(patterns)
        except ValueError as error:
            raise ConfigurationError(str(error)) from error

    def _register_process_hooks(self) -> None:
        # The exit hook holds the *sender* weakly (its worker thread keeps it alive while
        # events are pending), so an unclosed client that was garbage-collected still flushes.
        sender_ref = weakref.ref(self._sender)
        ledger_ref = weakref.ref(self)
        timeout_s = self.flush_timeout_s

        def at_exit() -> None:
            sender = sender_ref()
            if sender is not None:
                _close_at_exit(sender, timeout_s)

        def in_child() -> None:
            sender = sender_ref()
            if sender is not None:
                sender.after_fork_in_child()
            ledger = ledger_ref()
            if ledger is not None:
                ledger._after_fork_in_child()

        self._at_exit = at_exit
        atexit.register(at_exit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=in_child)

    def _after_fork_in_child(self) -> None:
        """Twins drop their HTTP client here (its sockets belong to the parent)."""

    def _unregister_exit(self) -> None:
        atexit.unregister(self._at_exit)

    # -- writes (identical in both twins; never block, never raise) --------------------------

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
    ) -> EventRef:
        """Queue one event and return its id at once (no network I/O in this thread).

        Args:
            event: event type, 1–255 chars; use the constants of
                :mod:`agentledger.client.vocabulary` (``"tool_call"``...).
            data: a JSON object (dict); any other value is stored as ``{"value": ...}``.
                Snapshotted now (later mutation by the agent does not change the event) and
                sanitized per the vocabulary doc (datetime, bytes, pydantic, numpy, cycles...).
            session_id: session the event belongs to (≤ 255 chars) or ``None``.
            parent_id: the causing event: an id string, UUID, or the :class:`EventRef` of an
                earlier ``log()``; it may not be stored yet.
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
        return self.log(
            vocab.TOOL_CALL,
            data,
            session_id=session_id,
            parent_id=parent_id,
            metadata=metadata,
            agent=agent,
            timestamp=timestamp,
        )

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
            parent_id: the ``tool_call`` event (vocabulary: results are its children).
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
                )
                if k in fields
            }
            refs.append(self.log(event, data, **known))  # type: ignore[arg-type]
        return refs

    def stats(self) -> Stats:
        """Counters of the sender: enqueued, sent, duplicates, retried, spilled, unspilled,
        dropped, failed, queue depth and spill size (see :class:`Stats`)."""
        return self._sender.stats()

    # -- read calls (executed by the twins) ------------------------------------------------

    def _agent_param(self, agent: str | None) -> str:
        name = agent or self.agent
        if not name:
            raise ConfigurationError("this read needs an agent: pass agent= or set one")
        return name

    def _call_get_event(self, event_id: str) -> Call[Event]:
        return Call("GET", f"/v1/events/{_seg(event_id)}", Event.from_wire)

    def _call_why(self, event_id: str, depth: int) -> Call[WhyResult]:
        return Call(
            "GET", f"/v1/events/{_seg(event_id)}/why", WhyResult.from_wire, {"depth": depth}
        )

    def _call_impact(self, event_id: str, limit: int | None) -> Call[ImpactResult]:
        return Call(
            "GET",
            f"/v1/events/{_seg(event_id)}/impact",
            ImpactResult.from_wire,
            _drop_none({"limit": limit}),
        )

    def _call_replay(
        self, session_id: str, agent: str | None, limit: int, all_agents: bool
    ) -> Call[list[Event]]:
        params = _drop_none({"agent": None if all_agents else agent or self.agent, "limit": limit})
        return Call("GET", f"/v1/sessions/{_seg(session_id)}/events", _replay_events, params)

    def _call_sessions(self, agent: str | None, limit: int) -> Call[list[Session]]:
        params = _drop_none({"agent": agent or self.agent, "limit": limit})
        return Call("GET", "/v1/sessions", _list_of(Session.from_wire), params)

    def _call_events_page(
        self,
        agent: str | None,
        *,
        limit: int,
        event_type: str | None,
        session_id: str | None,
        before: dt.datetime | str | None,
        after: dt.datetime | str | None,
        cursor: str | None,
    ) -> Call[list[Event]]:
        params = _drop_none(
            {
                "agent": self._agent_param(agent),
                "limit": limit,
                "event_type": event_type,
                "session_id": session_id,
                "before": _iso(before),
                "after": _iso(after),
                "cursor": cursor,
            }
        )
        return Call("GET", "/v1/events", _list_of(Event.from_wire), params)

    def _call_verify(
        self, agent: str | None, anchor: str | None, after_seq: int | None
    ) -> Call[ChainReport]:
        params = _drop_none(
            {"agent": self._agent_param(agent), "anchor": anchor, "after_seq": after_seq}
        )
        return Call("GET", "/v1/events/chain", ChainReport.from_wire, params)

    def _call_search(
        self,
        query: str,
        agent: str | None,
        limit: int,
        mode: str,
        include_superseded: bool,
    ) -> Call[SearchResult]:
        body = _drop_none(
            {
                "query": query,
                "agent": agent or self.agent,
                "limit": limit,
                "mode": mode,
                "include_superseded": include_superseded,
            }
        )
        return Call("POST", "/v1/search", SearchResult.from_wire, json=body)

    def _call_baseline(
        self, agent: str | None, recent_window: str | int | None, window: str | None
    ) -> Call[BaselineReport]:
        name = self._agent_param(agent)
        params = _drop_none({"recent_window": recent_window, "window": window})
        return Call(
            "GET",
            f"/v1/agents/{_seg(name)}/baseline",
            lambda body: BaselineReport.from_wire(name, body),
            params,
        )

    def _call_behavior_change(
        self,
        agent: str | None,
        window: str | None,
        from_ts: dt.datetime | str | None,
        to_ts: dt.datetime | str | None,
    ) -> Call[BaselineReport]:
        name = self._agent_param(agent)
        params = _drop_none({"window": window, "from_ts": _iso(from_ts), "to_ts": _iso(to_ts)})
        return Call(
            "GET",
            f"/v1/agents/{_seg(name)}/behavior-change",
            lambda body: BaselineReport.from_wire(name, body),
            params,
        )

    def _call_at(self, timestamp: dt.datetime | str, agent: str | None) -> Call[StateAt]:
        params = {"agent": self._agent_param(agent), "timestamp": _iso(timestamp)}
        return Call("GET", "/v1/events/at", StateAt.from_wire, params)

    def _call_forget(
        self,
        filter_key: str,
        filter_value: str | int | float | bool,
        agent: str | None,
        dry_run: bool,
    ) -> Call[ForgetResult]:
        body = {
            "filter_key": filter_key,
            "filter_value": filter_value,
            "agent": self._agent_param(agent),
            "dry_run": dry_run,
        }
        return Call("DELETE", "/v1/memory/forget", ForgetResult.from_wire, json=body)

    def _call_context_for(
        self, task: str, agent: str | None, max_tokens: int, session_id: str | None
    ) -> Call[MemoryContext]:
        body = _drop_none(
            {
                "agent": self._agent_param(agent),
                "task": task,
                "max_tokens": max_tokens,
                "session_id": session_id,
            }
        )
        return Call("POST", "/v1/memory/context", MemoryContext.from_wire, json=body)

    def _call_memory_diff(self, session_id: str, agent: str | None) -> Call[SessionDiff]:
        params = _drop_none({"agent": agent or self.agent})
        return Call("GET", f"/v1/memory/diff/{_seg(session_id)}", SessionDiff.from_wire, params)

    def _call_agents(self) -> Call[list[AgentInfo]]:
        return Call("GET", "/v1/agents", _list_of(AgentInfo.from_wire))

    def _call_create_key(
        self, name: str, agent: str | None, scope: str, expires_in_days: int | None
    ) -> Call[ApiKey]:
        body = _drop_none(
            {"name": name, "agent": agent, "scope": scope, "expires_in_days": expires_in_days}
        )
        return Call("POST", "/v1/keys", ApiKey.from_wire, json=body)

    def _call_list_keys(self) -> Call[list[ApiKey]]:
        return Call("GET", "/v1/keys", _list_of(ApiKey.from_wire))

    def _call_revoke_key(self, key_id: str) -> Call[None]:
        return Call("DELETE", f"/v1/keys/{_seg(key_id)}", lambda _: None, expect_json=False)

    def _call_health(self) -> Call[dict[str, Any]]:
        return Call("GET", "/health", lambda body: dict(body or {}))

    @staticmethod
    def _parse(call: Call[T], response: httpx.Response) -> T:
        """Raise the mapped error for a 4xx/5xx, else parse the JSON body."""
        if response.status_code >= 400:
            raise status_error_from_response(response)
        if not call.expect_json or not response.content:
            return call.parse(None)
        return call.parse(response.json())
