"""Turn the spans of one trace into ledger events with rebuilt causes.

An OTel span parent means "ran inside": it becomes the event's ``scope_id``. Causes come from
the GenAI content instead: a tool span is caused by the model output whose tool calls name its
call id (else the last model call before it in the same run); a model call read the tool
results whose call ids its input messages answer (else the tool spans that ran since the
previous model call), and the first model call of a run read the user's message; the run's
answer was produced by its last model output. Event ids are UUIDs derived from trace id, span
id and role, so a re-sent span yields the same events (duplicates to the store).
"""

from __future__ import annotations

import functools
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from agentledger.protocol import vocabulary as v
from agentledger.server._otlp._attributes import (
    KNOWN_KEYS,
    KNOWN_PREFIXES,
    first,
    input_messages,
    model_name,
    output_messages,
    retrieval,
    span_kind,
    token_usage,
    tool_call,
)

__all__ = ["NAMESPACE", "event_id", "trace_events"]

#: The namespace of the derived event ids (``uuid5(NAMESPACE, "trace/span/role")``).
NAMESPACE = uuid.UUID("5f0c3e0a-8a8e-4f63-9a8c-0a9e51d0c7a1")
_AGENT_OK = re.compile(r"[^A-Za-z0-9._-]+")
_RUN_KINDS = ("agent",)


@functools.lru_cache(maxsize=65536)
def event_id(trace_id: str, span_id: str, role: str) -> str:
    """The stable event id of one role (``start``, ``end``, ``user``, ``answer``) of a span."""
    return str(uuid.uuid5(NAMESPACE, f"{trace_id}/{span_id}/{role}"))


def _ts(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="microseconds")


def agent_name(raw: Any) -> str:
    """A valid agent name from an OTel name (other characters become ``-``)."""
    name = _AGENT_OK.sub("-", str(raw or "")).strip("-._")[:255]
    return name or "otel"


class _Trace:
    def __init__(self, spans: dict[str, dict[str, Any]]) -> None:
        self.spans = spans
        self.kind = {sid: span_kind(s["attributes"]) for sid, s in spans.items()}
        self.children: dict[str, list[str]] = {}
        for sid, span in spans.items():
            parent = span["parent_span_id"]
            if parent in spans:
                self.children.setdefault(parent, []).append(sid)

    def ancestors(self, sid: str) -> list[str]:
        out, seen = [], {sid}
        parent = self.spans[sid]["parent_span_id"]
        while parent in self.spans and parent not in seen:
            out.append(parent)
            seen.add(parent)
            parent = self.spans[parent]["parent_span_id"]
        return out

    def lookup(self, sid: str, *keys: str) -> Any:
        for node in (sid, *self.ancestors(sid)):
            value = first(self.spans[node]["attributes"], *keys)
            if value is not None:
                return value
        return None

    def run_of(self, sid: str) -> str:
        """The agent span a span belongs to, else the trace's top span above it."""
        chain = [sid, *self.ancestors(sid)]
        for node in chain:
            if self.kind[node] in _RUN_KINDS and node != sid:
                return node
        return chain[-1]

    def ordered(self, run: str, kind: str) -> list[str]:
        found = [
            sid
            for sid in self.spans
            if self.kind[sid] == kind and sid != run and self.run_of(sid) == run
        ]
        return sorted(found, key=lambda s: (self.spans[s]["start_ns"], s))


def _run_user(trace: _Trace, run: str) -> str | None:
    """The span whose ``user`` event is the run's user message, if the run has one."""
    chats = trace.ordered(run, "chat")
    if chats and _user_text(input_messages(trace.spans[chats[0]])) is not None:
        return run
    return None


def _user_text(messages: list[dict[str, Any]]) -> str | None:
    users = [m for m in messages if m["role"] in ("user", "human")]
    return users[-1]["text"] if users and users[-1]["text"] else None


def _output(span: dict[str, Any]) -> tuple[str, list[dict[str, Any]], Any]:
    outputs = output_messages(span)
    text = "".join(m["text"] for m in outputs)
    calls = [c for m in outputs for c in m["tool_calls"]]
    reasons = span["attributes"].get("gen_ai.response.finish_reasons")
    reason = reasons[0] if isinstance(reasons, list) and reasons else reasons
    if reason is None:
        reason = next((m["finish_reason"] for m in outputs if m.get("finish_reason")), None)
    return text, calls, reason


def _metadata(span: dict[str, Any]) -> dict[str, Any]:
    unknown = {
        k: val
        for k, val in span["attributes"].items()
        if k not in KNOWN_KEYS and not k.startswith(KNOWN_PREFIXES)
    }
    otel: dict[str, Any] = {
        "trace_id": span["trace_id"],
        "span_id": span["span_id"],
        "parent_span_id": span["parent_span_id"],
        "name": span["name"],
        "kind": span["kind"],
        "scope": span["scope"],
        "status": span["status"],
        "attributes": unknown,
        "resource": span["resource"],
    }
    events = [e for e in span["events"] if not str(e["name"]).startswith("gen_ai.")]
    if events:
        otel["events"] = events
    return {"otel": otel}


def trace_events(
    spans: dict[str, dict[str, Any]], targets: set[str], *, bound_agent: str | None
) -> list[dict[str, Any]]:
    """Batch items (``BatchItemIn`` shape) for the ``targets`` spans of a trace, causes first.

    ``spans`` holds every span of the trace received so far (targets included): the causes of
    a target may be events of spans written earlier. The agent of a span's events is the
    ``bound_agent`` stored with the span (the agent of the key that sent it), else the
    ``bound_agent`` argument, else ``gen_ai.agent.name`` on the span or an ancestor, else the
    resource's ``service.name``.
    """
    trace = _Trace(spans)
    out: list[dict[str, Any]] = []
    requested: dict[str, str] = {}  # tool call id -> chat span that asked for it
    answered: dict[str, str] = {}  # tool call id -> tool span
    for sid, kind in trace.kind.items():
        if kind == "chat":
            for call in _output(spans[sid])[1]:
                if call["id"]:
                    requested.setdefault(str(call["id"]), sid)
        elif kind == "tool":
            call_id = tool_call(spans[sid])["call_id"]
            if call_id:
                answered.setdefault(str(call_id), sid)

    for sid in sorted(targets, key=lambda s: (spans[s]["start_ns"], s)):
        _span_events(trace, sid, out, requested, answered, bound_agent)
    return _causes_first(out)


def _span_events(
    trace: _Trace,
    sid: str,
    out: list[dict[str, Any]],
    requested: dict[str, str],
    answered: dict[str, str],
    bound_agent: str | None,
) -> None:
    """Append the events of span ``sid`` to ``out``."""
    spans = trace.spans

    def ident(span_id: str, role: str) -> str:
        return event_id(spans[span_id]["trace_id"], span_id, role)

    span = spans[sid]
    trace_id = span["trace_id"]
    kind = trace.kind[sid]
    agent = (
        span.get("bound_agent")
        or bound_agent
        or agent_name(
            trace.lookup(sid, "gen_ai.agent.name", "agent.name")
            or span["resource"].get("service.name")
        )
    )
    session = str(trace.lookup(sid, "session.id", "gen_ai.conversation.id") or trace_id)[:255]
    user = trace.lookup(sid, "user.id", "enduser.id")
    parent = span["parent_span_id"]
    scope = ident(parent, "start") if parent in spans else None
    base_meta = {"user_id": str(user)} if user is not None else {}

    def item(
        role: str,
        event: str,
        data: dict[str, Any],
        ts: int,
        *,
        parent_id: str | None = None,
        causes: list[tuple[str, str]] = (),  # type: ignore[assignment]
        scope_id: str | None = scope,
        full_meta: bool = False,
    ) -> None:
        meta: dict[str, Any] = dict(base_meta)
        if full_meta:
            meta.update(_metadata(span))
        else:
            meta["otel"] = {"trace_id": trace_id, "span_id": sid}
        entry: dict[str, Any] = {
            "event_id": ident(sid, role),
            "agent": agent,
            "event": event,
            "data": data,
            "session_id": session,
            "timestamp": _ts(ts),
            "metadata": meta,
        }
        if parent_id is not None:
            entry["parent_id"] = parent_id
        if causes:
            entry["caused_by"] = [{"event_id": c, "kind": k} for c, k in causes]
        if scope_id is not None:
            entry["scope_id"] = scope_id
        out.append(entry)

    start, end = span["start_ns"], span["end_ns"]
    error = span["status"]["code"] == "error"
    if kind in ("chat", "embeddings"):
        run = trace.run_of(sid)
        chats = trace.ordered(run, "chat")
        messages = input_messages(span)
        reads: list[str] = []
        for message in messages:
            call = message.get("tool_call_id")
            if message["role"] == "tool" and call and str(call) in answered:
                reads.append(ident(answered[str(call)], "end"))
        position = chats.index(sid) if sid in chats else -1
        since = spans[chats[position - 1]]["start_ns"] if position > 0 else None
        if not reads and since is not None:
            for tool in trace.ordered(run, "tool"):
                t = spans[tool]
                if since <= t["start_ns"] and t["end_ns"] <= start:
                    reads.append(ident(tool, "end"))
        tool_reads = list(reads)
        # the documents retrieved since the previous model call (any before the first one)
        for found in trace.ordered(run, "retriever"):
            r = spans[found]
            if (since is None or since <= r["start_ns"]) and r["end_ns"] <= start:
                reads.append(ident(found, "start"))
        if kind == "chat" and position == 0 and _user_text(messages) is not None:
            reads.insert(0, ident(run, "user"))
        elif kind == "embeddings" and not reads and _run_user(trace, run) is not None:
            reads.append(ident(run, "user"))
        if not reads and position > 0:
            reads.append(ident(chats[position - 1], "end"))
        model = model_name(span["attributes"])
        data: dict[str, Any] = {
            "model": model,
            "messages": [
                {k: m[k] for k in ("role", "text", "tool_calls", "tool_call_id") if m.get(k)}
                for m in messages
            ],
            "provider": first(
                span["attributes"], "gen_ai.provider.name", "gen_ai.system", "llm.provider"
            ),
        }
        if kind == "embeddings":
            data["api"] = "embeddings"
        system = [m["text"] for m in messages if m["role"] in ("system", "developer")]
        if system:
            data["system_prompt"] = "\n".join(system)
        if tool_reads:
            data["tool_result_ids"] = tool_reads
        item(
            "start",
            v.LLM_START,
            data,
            start,
            parent_id=reads[-1] if reads else None,
            causes=[(r, v.EDGE_READ) for r in reads],
            full_meta=True,
        )
        text, calls, reason = _output(span)
        response_model = span["attributes"].get("gen_ai.response.model")
        if response_model == "unknown":
            response_model = None
        if error:
            item(
                "end",
                v.LLM_ERROR,
                {
                    "error": span["status"]["message"] or "error",
                    "type": "otel.status_error",
                    "duration_ms": (end - start) / 1e6,
                },
                end,
                parent_id=ident(sid, "start"),
            )
        else:
            item(
                "end",
                v.LLM_END,
                {
                    "text": text,
                    "token_usage": token_usage(span["attributes"], response_model or model),
                    "tool_calls": calls,
                    "finish_reason": reason,
                    "response_model": response_model,
                    "duration_ms": (end - start) / 1e6,
                },
                end,
                parent_id=ident(sid, "start"),
            )
    elif kind == "tool":
        call = tool_call(span)
        run = trace.run_of(sid)
        asker = requested.get(str(call["call_id"])) if call["call_id"] else None
        if asker is None:
            before = [c for c in trace.ordered(run, "chat") if spans[c]["end_ns"] <= start]
            asker = before[-1] if before else None
        cause = ident(asker, "end") if asker else None
        item(
            "start",
            v.TOOL_CALL,
            {"tool": call["tool"], "args": call["args"], "call_id": call["call_id"]},
            start,
            parent_id=cause,
            causes=[(cause, v.EDGE_REQUESTED)] if cause else [],
            full_meta=True,
        )
        closing: dict[str, Any] = {
            "tool": call["tool"],
            "call_id": call["call_id"],
            "duration_ms": (end - start) / 1e6,
        }
        if error:
            closing.update(error=span["status"]["message"] or "error", type="otel.status_error")
            item("end", v.TOOL_ERROR, closing, end, parent_id=ident(sid, "start"))
        else:
            closing["result"] = call["result"]
            item("end", v.TOOL_RESULT, closing, end, parent_id=ident(sid, "start"))
    elif kind == "retriever":
        # asked for by the model call that ended before it in the run, else by the user's
        # message of the run; a later model call reads it (above)
        run = trace.run_of(sid)
        before = [c for c in trace.ordered(run, "chat") if spans[c]["end_ns"] <= start]
        user = _run_user(trace, run)
        if before:
            causes = [(ident(before[-1], "end"), v.EDGE_REQUESTED)]
        elif user is not None:
            causes = [(ident(user, "user"), v.EDGE_READ)]
        else:
            causes = []
        item(
            "start",
            v.RETRIEVAL,
            retrieval(span["attributes"]) | {"duration_ms": (end - start) / 1e6},
            end,
            parent_id=causes[0][0] if causes else None,
            causes=causes,
            full_meta=True,
        )
    else:
        step_kind = "agent" if kind == "agent" else "chain"
        name = str(first(span["attributes"], "gen_ai.agent.name", "agent.name") or span["name"])
        item("start", v.STEP_START, {"name": name, "kind": step_kind}, start, full_meta=True)
        is_run = kind in _RUN_KINDS or parent not in spans
        chats = trace.ordered(sid, "chat") if is_run else []
        if chats:
            first_chat = spans[chats[0]]
            user_text = _user_text(input_messages(first_chat))
            if user_text is not None:
                item(
                    "user",
                    v.USER_MESSAGE,
                    {"text": user_text, "role": "user"},
                    start,  # the message came in when the run started
                    scope_id=ident(sid, "start"),
                )
            last = max(chats, key=lambda c: (spans[c]["end_ns"], c))
            answer = _output(spans[last])[0] or _agent_output(span)
            if answer and trace.kind[last] == "chat":
                item(
                    "answer",
                    v.ASSISTANT_RESPONSE,
                    {"text": answer},
                    spans[last]["end_ns"],
                    parent_id=ident(last, "end"),
                    causes=[(ident(last, "end"), v.EDGE_PRODUCED)],
                    scope_id=ident(sid, "start"),
                )
        item(
            "end",
            v.STEP_ERROR if error else v.STEP_END,
            {"name": name, "kind": step_kind}
            | ({"error": span["status"]["message"] or "error"} if error else {}),
            end,
            parent_id=ident(sid, "start"),
        )


def _agent_output(span: dict[str, Any]) -> str:
    outputs = output_messages(span)
    return "".join(m["text"] for m in outputs)


def _causes_first(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Items by time, each after the items of this batch it names as a cause."""
    ordered = sorted(items, key=lambda e: e["timestamp"])
    ids = {e["event_id"] for e in ordered}
    done: set[str] = set()
    out: list[dict[str, Any]] = []
    while ordered:
        rest = []
        for entry in ordered:
            causes = {c["event_id"] for c in entry.get("caused_by", ())}
            if entry.get("parent_id"):
                causes.add(entry["parent_id"])
            if all(c in done or c not in ids for c in causes):
                out.append(entry)
                done.add(entry["event_id"])
            else:
                rest.append(entry)
        if len(rest) == len(ordered):  # a cycle: keep the time order for the rest
            out.extend(rest)
            break
        ordered = rest
    return out
