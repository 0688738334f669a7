"""The decision-time view of one event (``GET /v1/events/{id}/decision``).

One answer for a reviewer looking at one step of an agent (an answer, a tool call, a model
call): the agent's state when the step happened (what ``at()`` gives), the model call behind
the step with its exact inputs (stored messages, model, parameters, system prompt and its
hash), the inputs that model call read (tool results with the tool calls that produced them,
the user's message, retrievals), and the human approvals of the turn (an ``interrupted`` event,
the ``user_message`` that resumed it, the value given and who gave it).

Everything is found by **cause** edges (``parent_id`` and ``caused_by``, one ``why()`` walk),
never by scope: the model call behind an event is the nearest ``llm_start`` among its causes,
the walk not going past a human's input (a ``user_message``: what a human typed is no model's
decision). The approvals of the turn are the resumes among the causes reached before the
``user_message`` that started the turn. Design and fields: ``docs/pages/query.md``
("The decision behind an event").

:func:`decision_view` takes only the store and the event id (the evidence bundle writer calls
it like that); ``agent_scope`` is what a key bound to one agent may read.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Final

import orjson
from sqlalchemy import select

from agentledger.protocol import vocabulary as v
from agentledger.server._query.queries import QueryStore
from agentledger.server._store._rows import EVENT_COLS, event_dict
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import events

__all__ = ["DECISION_DEPTH", "DECISION_LIMIT", "MODEL_INPUT_FIELDS", "decision_view"]

#: Bounds of the cause walk behind a decision (the ``why()`` defaults).
DECISION_DEPTH: Final = 1000
DECISION_LIMIT: Final = 10_000
#: Events of the agent folded into its state at most (``at()``'s bound).
STATE_MAX_EVENTS: Final = 1_000_000

#: ``llm_start.data`` fields copied into ``model_call`` as the exact inputs of the call.
MODEL_INPUT_FIELDS: Final = (
    "model",
    "provider",
    "name",
    "api",
    "messages",
    "system_prompt",
    "prompt_hash",
    "invocation_params",
    "tools",
    "tool_schemas",
    "tool_result_ids",
)
#: ``llm_start.metadata`` keys naming a prompt or configuration version.
VERSION_KEYS: Final = ("prompt_version", "config_version", "agent_version", "version", "release")
#: Outputs of a tool (what a model call reads from a tool).
TOOL_OUTCOMES: Final = frozenset({v.TOOL_RESULT, v.TOOL_ERROR})


def _plain(items: list[Any]) -> list[dict[str, Any]]:
    """Wire-shaped events (dicts or ``orjson.Fragment``) as plain dicts."""
    return list(orjson.loads(orjson.dumps(items)))


def _data(event: dict[str, Any] | None) -> dict[str, Any]:
    data = (event or {}).get("data")
    return data if isinstance(data, dict) else {}


class _Walk:
    """The ``why()`` answer of one event as lookups: events by id and causes by effect."""

    def __init__(self, lineage: Any) -> None:
        self.events = {e["event_id"]: e for e in _plain(lineage.events)}
        self.causes: dict[str, list[tuple[str, str]]] = {}
        for edge in lineage.edges:
            self.causes.setdefault(edge["effect"], []).append((edge["cause"], edge["kind"]))
        self.missing: list[str] = list(lineage.missing)
        self.cut_at: list[str] = list(lineage.cut_at)
        self.truncated = bool(lineage.depth_truncated or lineage.size_truncated)

    def order(self, event_id: str) -> list[str]:
        """``event_id``'s causes breadth first (nearest first; at one distance the newest
        first), each once, without going past a ``user_message`` (it is listed, its causes
        are not followed)."""
        seen = {event_id}
        queue = deque([event_id])
        out: list[str] = []
        while queue:
            node = queue.popleft()
            out.append(node)
            event = self.events.get(node)
            if event is not None and event.get("event") == v.USER_MESSAGE and node != event_id:
                continue
            near = [c for c, _ in self.causes.get(node, ()) if c not in seen and c in self.events]
            near.sort(key=self._when, reverse=True)
            for cause in near:
                seen.add(cause)
                queue.append(cause)
        return out

    def _when(self, event_id: str) -> tuple[str, int]:
        event = self.events[event_id]
        return str(event.get("timestamp", "")), int(event.get("sequence_no") or 0)


def _find_model_call(walk: _Walk, event: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The ``llm_start`` behind ``event`` and a sentence saying how it was found (or why
    there is none)."""
    kind = event.get("event")
    event_id = event["event_id"]
    if kind == v.LLM_START:
        return event, "the event is the model call"
    if kind == v.USER_MESSAGE:
        what = "a human's resume of an interrupted run" if "resume" in _data(event) else "input"
        return None, f"a user_message is {what}, not the output of a model call"
    for node in walk.order(event_id)[1:]:
        found = walk.events[node]
        if found.get("event") == v.LLM_START:
            return found, f"the nearest model call among the event's causes ({kind})"
    if walk.missing or walk.cut_at:
        return None, (
            "no model call among the causes that could be read; some causes are not stored, "
            "not readable with this key, or beyond the walk's bounds (see lineage)"
        )
    return None, "no model call among the event's causes (it was not computed by a model)"


def _model_end(store: SQLStore, walk: _Walk, start_id: str, agent: str) -> dict[str, Any] | None:
    """The ``llm_end`` (or ``llm_error``) that closes ``start_id``: from the walk when the
    asked event descends from it, else one indexed read by parent."""
    for event in walk.events.values():
        if event.get("parent_id") == start_id and event.get("event") in (v.LLM_END, v.LLM_ERROR):
            return event
    query = (
        select(*EVENT_COLS)
        .where(
            events.c.parent_id == start_id,
            events.c.agent == agent,
            events.c.event.in_((v.LLM_END, v.LLM_ERROR)),
        )
        .order_by(events.c.timestamp, events.c.sequence_no)
        .limit(1)
    )
    with store.reader() as conn:
        row = conn.execute(query).first()
    return event_dict(row) if row is not None else None


def _model_call(store: SQLStore, walk: _Walk, start: dict[str, Any], *, via: str) -> dict[str, Any]:
    """``model_call``: the exact inputs stored on the ``llm_start`` and its outcome."""
    data = _data(start)
    metadata = start.get("metadata") if isinstance(start.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    inputs = {name: data.get(name) for name in MODEL_INPUT_FIELDS}
    end = _model_end(store, walk, start["event_id"], start["agent"])
    end_data = _data(end)
    return {
        "event_id": start["event_id"],
        "session_id": start.get("session_id"),
        "timestamp": start.get("timestamp"),
        "found": via,
        "erased": bool(start.get("erased")),
        **inputs,
        "versions": {key: metadata[key] for key in VERSION_KEYS if key in metadata},
        "metadata": metadata or None,
        "start": start,
        "end": end,
        "output": (
            {
                "event_id": end["event_id"],
                "event": end.get("event"),
                "text": end_data.get("text"),
                "tool_calls": end_data.get("tool_calls"),
                "finish_reason": end_data.get("finish_reason"),
                "token_usage": end_data.get("token_usage"),
                "error": end_data.get("error"),
            }
            if end is not None
            else None
        ),
    }


def _reads(walk: _Walk, start: dict[str, Any]) -> list[dict[str, Any]]:
    """What the model call read: its cause edges (and the tool results its prompt ended
    with, ``tool_result_ids``), each with the tool call behind a tool outcome."""
    wanted: dict[str, str] = {}
    for cause, kind in walk.causes.get(start["event_id"], ()):
        if kind != v.EDGE_CLOSES:
            wanted.setdefault(cause, kind)
    listed = _data(start).get("tool_result_ids")
    for cause in listed if isinstance(listed, list) else ():
        if isinstance(cause, str):
            wanted.setdefault(cause, v.EDGE_READ)
    out: list[dict[str, Any]] = []
    for cause, kind in wanted.items():
        event = walk.events.get(cause)
        if event is None:
            out.append({"event_id": cause, "kind": kind, "event": None, "tool_call": None})
            continue
        tool_call = None
        if event.get("event") in TOOL_OUTCOMES:
            parent = walk.events.get(str(event.get("parent_id")))
            if parent is not None and parent.get("event") == v.TOOL_CALL:
                tool_call = parent
        out.append(
            {
                "event_id": cause,
                "kind": kind,
                "type": event.get("event"),
                "tool": _data(event).get("tool"),
                "call_id": _data(event).get("call_id"),
                "event": event,
                "tool_call": tool_call,
            }
        )
    return out


#: Keys of ``user_message.data`` naming who resumed an interrupted run (the LangChain
#: integration's ``resumed_by``; hand-written events may use ``user_id`` or ``speaker``).
RESUMER_KEYS: Final = ("resumed_by", "user_id", "speaker")


def _approvals(walk: _Walk, event_id: str) -> list[dict[str, Any]]:
    """The human approvals of the event's turn: every resume (a ``user_message`` with
    ``data.resume``) among its causes up to the ``user_message`` that started the turn, the
    ``interrupted`` event each answered, the value given and who gave it; oldest first."""
    found: list[dict[str, Any]] = []
    seen = {event_id}
    queue = deque([event_id])
    while queue:
        node = queue.popleft()
        event = walk.events.get(node)
        if event is None:
            continue
        is_human = event.get("event") == v.USER_MESSAGE
        data = _data(event)
        if is_human and "resume" not in data:
            continue  # the turn started here: earlier turns are not this step's approvals
        if is_human:
            interrupt = None
            for cause, _ in walk.causes.get(node, ()):
                candidate = walk.events.get(cause)
                if candidate is not None and candidate.get("event") == v.INTERRUPTED:
                    interrupt = candidate
            who = next((data[k] for k in RESUMER_KEYS if data.get(k) not in (None, "")), None)
            found.append(
                {
                    "interrupt": interrupt,
                    "interrupt_id": interrupt["event_id"] if interrupt else event.get("parent_id"),
                    "asked": _data(interrupt).get("interrupts") if interrupt else None,
                    "resume": event,
                    "resume_id": node,
                    "value": data.get("resume"),
                    "resumed_by": who,
                    "resumed_by_source": data.get("resumed_by_source"),
                    "timestamp": event.get("timestamp"),
                }
            )
        for cause, _ in walk.causes.get(node, ()):
            if cause not in seen:
                seen.add(cause)
                queue.append(cause)
    found.sort(key=lambda a: (str(a["timestamp"]), int(a["resume"].get("sequence_no") or 0)))
    return found


def decision_view(
    store: SQLStore,
    event_id: str,
    *,
    agent_scope: str | None = None,
    depth: int = DECISION_DEPTH,
    limit: int = DECISION_LIMIT,
) -> dict[str, Any] | None:
    """The decision-time view of ``event_id`` as a plain JSON-ready dict, or ``None`` when the
    event is not stored (or, with ``agent_scope``, not that agent's).

    With ``agent_scope`` (a key bound to one agent) the walk follows only that agent's edges
    and another agent's cause is listed in ``lineage.missing`` like an id never stored."""
    lineage = store.why(event_id, depth=depth, limit=limit, agent_scope=agent_scope)
    if lineage is None or (agent_scope is not None and lineage.anchor_agent != agent_scope):
        return None
    walk = _Walk(lineage)
    event = walk.events.get(event_id)
    if event is None:  # pragma: no cover - the asked event is always in its own answer
        return None
    start, how = _find_model_call(walk, event)
    model_call = _model_call(store, walk, start, via=how) if start is not None else None
    reads = _reads(walk, start) if start is not None else []
    timestamp = str(event.get("timestamp"))
    state = QueryStore(store).state_at(event["agent"], timestamp, max_events=STATE_MAX_EVENTS)
    approvals = _approvals(walk, event_id)
    notes = [how]
    if start is not None and start.get("erased"):
        notes.append("the model call's record was erased (forget): its inputs are gone")
    if not approvals:
        notes.append("no human approval (interrupt and resume) in this turn's causes")
    return {
        "event_id": event_id,
        "event": event,
        "agent": event["agent"],
        "session_id": event.get("session_id"),
        "timestamp": timestamp,
        "has_model_call": model_call is not None,
        "model_call": model_call,
        "reads": reads,
        "tool_results": [r for r in reads if r.get("type") in TOOL_OUTCOMES],
        "approvals": approvals,
        "approval": approvals[-1] if approvals else None,
        "state": {
            "agent": event["agent"],
            "at": timestamp,
            "event_count": state.event_count,
            "truncated": state.truncated,
            "state": state.state,
            "model_call": state.model_call,
        },
        "lineage": {
            "events": len(walk.events),
            "missing": walk.missing,
            "cut_at": walk.cut_at,
            "complete": not (walk.missing or walk.cut_at),
            "truncated": walk.truncated,
        },
        "notes": notes,
    }
