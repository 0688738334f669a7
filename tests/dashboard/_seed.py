"""Seeded sessions for the dashboard tests, written over the real HTTP API.

Events carry client ids, parents and timestamps (wire contract: ``event_id``, ``timestamp``
are ours), so a test knows exactly which event is where and the timeline order is fixed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

#: Markup that would run or render if the dashboard did not escape event data.
XSS_TEXT = (
    '<script>window.__xss = "script"</script><img src=x onerror="window.__xss=\'img\'">'
    "<b>not bold</b></pre></details></td></tr></table><textarea>"
)


@dataclass
class Seeded:
    """A session written to the ledger: ids by role, in timeline order."""

    agent: str
    session_id: str
    ids: dict[str, str] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)


def post_events(url: str, headers: dict[str, str], events: list[dict[str, Any]]) -> None:
    """POST ``events`` in batches of 500; fail on any rejected item."""
    with httpx.Client(base_url=url, headers=headers, timeout=60.0) as http:
        for start in range(0, len(events), 500):
            response = http.post("/v1/events/batch", json={"events": events[start : start + 500]})
            response.raise_for_status()
            body = response.json()
            assert body["failed"] == 0, body


def seed_support_session(
    url: str, headers: dict[str, str], agent: str, *, session_id: str | None = None
) -> Seeded:
    """A support-agent session: two model rounds, a tool result, a tool error, an
    interruption, a user message carrying markup (XSS probe), an answer."""
    session = session_id or f"support-{uuid.uuid4().hex[:12]}"
    seeded = Seeded(agent, session)
    t0 = datetime.now(UTC) - timedelta(minutes=5)
    events: list[dict[str, Any]] = []
    clock = [0.0]

    def add(role: str, event: str, data: dict[str, Any], parent: str | None, dt_s: float) -> None:
        clock[0] += dt_s
        event_id = str(uuid.uuid4())
        seeded.ids[role] = event_id
        seeded.order.append(role)
        events.append(
            {
                "event_id": event_id,
                "agent": agent,
                "session_id": session,
                "event": event,
                "data": data,
                "parent_id": seeded.ids[parent] if parent else None,
                "timestamp": (t0 + timedelta(seconds=clock[0])).isoformat(),
            }
        )

    usage = {"input_tokens": 420, "output_tokens": 35, "model": "scripted-1"}
    add("start", "session_start", {"framework": "hand-written"}, None, 0)
    add("user", "user_message", {"text": "I was charged twice for order A-1001"}, "start", 0.2)
    add("step", "step_start", {"name": "support_agent", "kind": "agent"}, "start", 0.1)
    add(
        "llm1",
        "llm_start",
        {"model": "scripted-1", "messages": [{"role": "user", "content": "charged twice"}]},
        "step",
        0.1,
    )
    add(
        "llm1_end",
        "llm_end",
        {
            "text": "",
            "tool_calls": [{"name": "lookup_order", "args": {"order_id": "A-1001"}}],
            "token_usage": usage,
            "duration_ms": 840,
        },
        "llm1",
        0.84,
    )
    add(
        "lookup",
        "tool_call",
        {"tool": "lookup_order", "args": {"order_id": "A-1001"}},
        "llm1_end",
        0.05,
    )
    add(
        "lookup_result",
        "tool_result",
        {"tool": "lookup_order", "result": {"order": "A-1001", "charges": 2}, "duration_ms": 120},
        "lookup",
        0.12,
    )
    add("llm2", "llm_start", {"model": "scripted-1", "messages": []}, "step", 0.05)
    add(
        "llm2_end",
        "llm_end",
        {
            "text": "",
            "tool_calls": [{"name": "verify_charge", "args": {"order_id": "A-1001"}}],
            "token_usage": {"input_tokens": 610, "output_tokens": 22, "model": "scripted-1"},
        },
        "llm2",
        0.6,
    )
    add(
        "verify",
        "tool_call",
        {"tool": "verify_charge", "args": {"order_id": "A-1001"}},
        "llm2_end",
        0.05,
    )
    add(
        "verify_error",
        "tool_error",
        {"tool": "verify_charge", "error": "payment gateway timed out", "type": "TimeoutError"},
        "verify",
        2.0,
    )
    add("interrupt", "interrupted", {"reason": "refund needs human approval"}, "step", 0.1)
    add("xss", "user_message", {"text": XSS_TEXT, "note": XSS_TEXT}, "interrupt", 3.0)
    add(
        "answer",
        "assistant_response",
        {"text": "Refund of 49.90 EUR issued for the duplicate charge."},
        "xss",
        0.4,
    )
    add("step_end", "step_end", {"name": "support_agent", "kind": "agent"}, "step", 0.05)
    post_events(url, headers, events)
    return seeded


def seed_long_session(url: str, headers: dict[str, str], agent: str, *, count: int) -> Seeded:
    """``count`` events in one session: tool call/result pairs under one root."""
    session = f"long-{uuid.uuid4().hex[:12]}"
    seeded = Seeded(agent, session)
    t0 = datetime.now(UTC) - timedelta(hours=1)
    root = str(uuid.uuid4())
    events: list[dict[str, Any]] = [
        {
            "event_id": root,
            "agent": agent,
            "session_id": session,
            "event": "session_start",
            "data": {"framework": "bench"},
            "timestamp": t0.isoformat(),
        }
    ]
    seeded.ids["root"] = root
    call = root
    for i in range(1, count):
        event_id = str(uuid.uuid4())
        is_call = i % 2 == 1
        events.append(
            {
                "event_id": event_id,
                "agent": agent,
                "session_id": session,
                "event": "tool_call" if is_call else "tool_result",
                "data": {"tool": f"tool_{i % 7}", "args": {"i": i}}
                if is_call
                else {"tool": f"tool_{(i - 1) % 7}", "result": f"ok {i}", "duration_ms": 3},
                "parent_id": root if is_call else call,
                "timestamp": (t0 + timedelta(milliseconds=10 * i)).isoformat(),
            }
        )
        if is_call:
            call = event_id
        seeded.order.append(event_id)
    seeded.ids["last"] = events[-1]["event_id"]
    post_events(url, headers, events)
    return seeded


def seed_drifting_sessions(
    url: str, headers: dict[str, str], agent: str, *, sessions: int = 30, recent: int = 10
) -> list[str]:
    """``sessions`` refund sessions, oldest first; in the last ``recent`` of them most runs
    skip ``verify_charge`` (the drift the baseline report must flag)."""
    events: list[dict[str, Any]] = []
    t = datetime.now(UTC) - timedelta(days=3)
    names = []
    for i in range(sessions):
        session = f"refund-{uuid.uuid4().hex[:8]}-{i:03d}"
        names.append(session)
        t += timedelta(minutes=30)
        root = str(uuid.uuid4())
        events.append(
            {
                "event_id": root,
                "agent": agent,
                "session_id": session,
                "event": "session_start",
                "data": {},
                "timestamp": t.isoformat(),
            }
        )
        tools = ["lookup_order", "verify_charge", "issue_refund"]
        if i >= sessions - recent and i % 5 != 0:
            tools = ["lookup_order", "issue_refund"]
        parent = root
        for j, tool in enumerate(tools):
            call, result = str(uuid.uuid4()), str(uuid.uuid4())
            for event_id, kind, data, parent_id, dt in (
                (call, "tool_call", {"tool": tool, "args": {}}, parent, 2 * j + 1),
                (result, "tool_result", {"tool": tool, "result": "ok"}, call, 2 * j + 2),
            ):
                events.append(
                    {
                        "event_id": event_id,
                        "agent": agent,
                        "session_id": session,
                        "event": kind,
                        "data": data,
                        "parent_id": parent_id,
                        "timestamp": (t + timedelta(seconds=dt)).isoformat(),
                    }
                )
            parent = result
    post_events(url, headers, events)
    return names
