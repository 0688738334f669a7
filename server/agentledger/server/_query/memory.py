"""Memory context (``POST /v1/memory/context``) and session diff (``GET /v1/memory/diff``).

``context_for(agent, task, max_tokens)``: the agent's recent events, then the events a search
for the task finds, deduplicated, superseded and erased events left out, one line each
(:func:`~agentledger.server._query.text.summarize`), packed in that order until the token
budget is spent. Tokens are counted with tiktoken (``Settings.tiktoken_encoding``, default
``cl100k_base``) when it is installed and its encoding loads, else estimated as one token per
4 characters (rounded up); the response names which (``tokenizer``).

``memory_diff(session)``: what a session did next to the agent's other sessions: new steps
and event types, steps the others nearly always take that it skipped, depth, errors, length.
"""

from __future__ import annotations

import functools
import logging
import math
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from agentledger.server._query.drift import SessionShape, window_summary
from agentledger.server._query.text import summarize

__all__ = ["build_context", "session_diff", "token_counter"]

logger = logging.getLogger("agentledger.server.query")

#: Share of other sessions holding a step for its absence to be reported.
_USUAL = 0.9


def _estimate(text: str) -> int:
    return math.ceil(len(text) / 4)


@functools.lru_cache(maxsize=1)
def token_counter(name: str = "cl100k_base") -> tuple[str, Callable[[str], int]]:
    """``(tokenizer name, count function)``: tiktoken's encoding ``name`` when usable, else
    the estimate."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(name)
    except Exception as error:  # not installed, or the encoding file cannot be loaded
        logger.info("tiktoken unavailable (%s); estimating tokens as chars/4", error)
        return "estimate:chars/4", _estimate

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return f"tiktoken:{name}", count


def _line(event: dict[str, Any]) -> str:
    when = str(event.get("timestamp", ""))[:19].replace("T", " ")
    return f"- [{when}] {summarize(event)}"


def build_context(
    agent: str,
    task: str,
    recent: Sequence[dict[str, Any]],
    relevant: Sequence[dict[str, Any]],
    *,
    max_tokens: int,
    encoding: str = "cl100k_base",
) -> dict[str, Any]:
    """Pack recent (newest first) then relevant events into a text block under the budget;
    tokens counted with tiktoken's ``encoding`` (see :func:`token_counter`).

    Returns:
        ``{context, token_count, max_tokens, tokenizer, sources, truncated}``; ``sources``
        lists ``{event_id, kind, score?}`` of the events included, in order.
    """
    tokenizer, count = token_counter(encoding)
    header = f"Memory of agent {agent!r} for the task: {task[:200]}"
    parts = [header]
    used = count(header)
    sources: list[dict[str, Any]] = []
    seen: set[str] = set()
    truncated = False
    for kind, events in (("recent", recent), ("relevant", relevant)):
        title = "Recent events (newest first):" if kind == "recent" else "Relevant past events:"
        title_cost = count("\n" + title)
        wrote_title = False
        for event in events:
            if event["event_id"] in seen or event.get("erased"):
                continue
            line = _line(event)
            cost = count("\n" + line) + (0 if wrote_title else title_cost)
            if used + cost > max_tokens:
                truncated = True
                break
            if not wrote_title:
                parts.append(title)
                wrote_title = True
            parts.append(line)
            used += cost
            seen.add(event["event_id"])
            source: dict[str, Any] = {"event_id": event["event_id"], "kind": kind}
            if "score" in event:
                source["score"] = event["score"]
            sources.append(source)
    context = "\n".join(parts) if sources else ""
    return {
        "context": context,
        "token_count": count(context) if context else 0,
        "max_tokens": max_tokens,
        "tokenizer": tokenizer,
        "sources": sources,
        "truncated": truncated,
    }


def session_diff(agent: str, shape: SessionShape, others: Sequence[SessionShape]) -> dict[str, Any]:
    """Compare one session's shape with the agent's other sessions.

    Returns:
        ``{session_id, agent, summary, event_count, event_types, causal_depth, duration_s,
        has_errors, new_event_types, new_steps, missing_steps, top_events, compared_to}``.
    """
    usual = window_summary(others)
    seen_types: set[str] = set()
    step_sessions: Counter[str] = Counter()
    for other in others:
        seen_types.update(other.type_seq)
        step_sessions.update(set(other.label_seq))
    labels = shape.labels
    new_types = sorted({t for t in shape.type_seq if t not in seen_types}) if others else []
    new_steps = sorted(s for s in labels if s not in step_sessions) if others else []
    missing = sorted(
        s
        for s, n in step_sessions.items()
        if others and n / len(others) >= _USUAL and s not in labels
    )
    summary = (
        f"Session with agent {agent!r}: {shape.event_count} events over "
        f"{shape.duration_s:.0f}s, causal depth {shape.depth}"
    )
    if shape.errors:
        summary += f", {shape.errors} error event(s)"
    if new_steps:
        summary += f"; new: {', '.join(new_steps[:5])}"
    if missing:
        summary += f"; skipped usual: {', '.join(missing[:5])}"
    summary += "."
    return {
        "session_id": shape.session_id,
        "agent": agent,
        "summary": summary,
        "event_count": shape.event_count,
        "event_types": dict(shape.event_types.most_common()),
        "causal_depth": shape.depth,
        "duration_s": round(shape.duration_s, 3),
        "started_at": shape.started_at,
        "ended_at": shape.ended_at,
        "has_errors": bool(shape.errors),
        "error_events": shape.errors,
        "tokens": shape.tokens,
        "new_event_types": new_types,
        "new_steps": new_steps,
        "missing_steps": missing,
        "top_events": [[label, n] for label, n in labels.most_common(5)],
        "compared_to": {
            "sessions": usual["sessions"],
            "events_per_session": usual["events_per_session"],
            "causal_depth": usual["causal_depth"],
            "session_duration_s": usual["session_duration_s"],
            "error_rate": usual["error_rate"],
            "tokens_per_session": usual["tokens_per_session"],
        },
    }
