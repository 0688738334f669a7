"""Pure converters from LiveKit Agents payloads to event-vocabulary data (no livekit import).

Everything here reads public fields of LiveKit's pydantic payloads by name, so it is cheap to
unit-test and does not care which livekit-agents 1.x minor produced the object. Units: LiveKit
reports seconds (floats); events carry milliseconds (``*_ms``, rounded to 0.1 ms).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "MESSAGE_TAIL",
    "args_object",
    "chat_item",
    "message_latency",
    "ms",
    "request_messages",
    "request_model",
    "request_usage",
    "session_usage",
    "text_of",
    "utc",
]

#: How many chat items ``llm_start.data.messages`` keeps (the tail, oldest first).
MESSAGE_TAIL = 12

_SENT_TYPES = frozenset({"message", "function_call", "function_call_output"})

# ChatMessage.metrics key (seconds) -> our key (ms). Source: livekit-agents 1.8
# ``llm.chat_context.MetricsReport``; absent keys are left out, never reported as 0.
_LATENCY_KEYS = {
    "llm_node_ttft": "llm_ttft_ms",
    "tts_node_ttfb": "tts_ttfb_ms",
    "e2e_latency": "e2e_latency_ms",
    "playback_latency": "playback_latency_ms",
    "transcription_delay": "transcription_delay_ms",
    "end_of_turn_delay": "end_of_turn_delay_ms",
    "on_user_turn_completed_delay": "on_user_turn_completed_delay_ms",
}


def ms(seconds: Any) -> float | None:
    """Seconds (int/float) -> milliseconds rounded to 0.1 ms; negative or non-numbers -> None.

    LiveKit uses ``-1`` for "never measured" (``LLMMetrics.ttft`` of a request that yielded
    no content); that is unknown, not a latency.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        return None
    return round(float(seconds) * 1000.0, 1)


def utc(epoch_s: float) -> dt.datetime:
    """An epoch time in seconds (LiveKit's ``created_at`` / ``timestamp``) as aware UTC."""
    return dt.datetime.fromtimestamp(epoch_s, dt.UTC)


def text_of(message: Any) -> str:
    """The text of a ``ChatMessage`` (``text_content``; non-text parts are skipped)."""
    text = getattr(message, "text_content", None)
    return text if isinstance(text, str) else ""


def args_object(arguments: Any) -> dict[str, Any]:
    """A FunctionCall's ``arguments`` (a JSON string) as an object.

    The vocabulary wants ``args`` as an object, never a repr string. JSON that is not an
    object, or not JSON at all (a model can emit broken arguments; LiveKit then fails the
    call), is kept verbatim under ``"$raw"`` so nothing is lost.
    """
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {"$raw": arguments}
    return parsed if isinstance(parsed, dict) else {"$raw": arguments}


def chat_item(item: Any) -> dict[str, Any]:
    """One chat-context item as a small dict for ``llm_start.data.messages``."""
    kind = getattr(item, "type", None)
    if kind == "message":
        out: dict[str, Any] = {"role": getattr(item, "role", None), "text": text_of(item)}
        if getattr(item, "interrupted", False):
            out["interrupted"] = True
        return out
    if kind == "function_call":
        return {
            "type": "function_call",
            "tool": getattr(item, "name", None),
            "args": args_object(getattr(item, "arguments", None)),
            "call_id": getattr(item, "call_id", None),
        }
    if kind == "function_call_output":
        return {
            "type": "function_call_output",
            "tool": getattr(item, "name", None),
            "output": getattr(item, "output", None),
            "is_error": bool(getattr(item, "is_error", False)),
            "call_id": getattr(item, "call_id", None),
        }
    if kind == "agent_handoff":
        return {
            "type": "agent_handoff",
            "from": getattr(item, "old_agent_id", None),
            "to": getattr(item, "new_agent_id", None),
        }
    return {"type": kind}


def request_messages(items: Iterable[Any], started_at: float) -> list[dict[str, Any]]:
    """The tail of the chat context a model request saw: items created at or before its start.

    Only what a model is sent is kept (messages, function calls and their outputs); handoff
    and configuration markers of the chat context are skipped.

    Args:
        items: ``AgentSession.history.items`` (oldest first).
        started_at: request start, epoch seconds.

    Returns at most :data:`MESSAGE_TAIL` items, oldest first.
    """
    tail: list[dict[str, Any]] = []
    for item in reversed(items if isinstance(items, Sequence) else list(items)):
        if getattr(item, "type", None) not in _SENT_TYPES:
            continue
        created = getattr(item, "created_at", None)
        if isinstance(created, int | float) and created > started_at:
            continue
        tail.append(chat_item(item))
        if len(tail) >= MESSAGE_TAIL:
            break
    tail.reverse()
    return tail


def message_latency(metrics: Any) -> dict[str, float]:
    """Latencies (ms) of a ``ChatMessage.metrics`` report; only the keys LiveKit measured."""
    if not isinstance(metrics, Mapping):
        return {}
    out: dict[str, float] = {}
    for key, name in _LATENCY_KEYS.items():
        value = ms(metrics.get(key))
        if value is not None:
            out[name] = value
    return out


def request_usage(metrics: Any) -> dict[str, Any] | None:
    """``data.token_usage`` of one model request, from LiveKit's ``LLMMetrics``.

    LiveKit's ``prompt_tokens`` already includes cached tokens (``llm.CompletionUsage``
    docstring), matching our invariant: ``input_tokens`` includes ``cache_read_tokens``
    (``prompt_cached_tokens``) and ``cache_write_tokens`` (``cache_creation_tokens``).
    A request that never reported usage has all zeros in LiveKit; that is unknown, so the
    result is ``None`` (never 0).
    """
    prompt = getattr(metrics, "prompt_tokens", 0) or 0
    completion = getattr(metrics, "completion_tokens", 0) or 0
    total = getattr(metrics, "total_tokens", 0) or 0
    if not (prompt or completion or total):
        return None
    model = _metadata(metrics, "model_name")
    return {
        "input_tokens": int(prompt),
        "output_tokens": int(completion),
        "cache_read_tokens": int(getattr(metrics, "prompt_cached_tokens", 0) or 0),
        "cache_write_tokens": int(getattr(metrics, "cache_creation_tokens", 0) or 0),
        "reasoning_tokens": int(getattr(metrics, "reasoning_tokens", 0) or 0),
        "model": model,
    }


def _metadata(metrics: Any, key: str) -> str | None:
    metadata = getattr(metrics, "metadata", None)
    value = getattr(metadata, key, None) if metadata is not None else None
    return value if isinstance(value, str) else None


def request_model(metrics: Any) -> tuple[str | None, str | None]:
    """``(model, provider)`` named in an ``LLMMetrics.metadata``."""
    return _metadata(metrics, "model_name"), _metadata(metrics, "model_provider")


def session_usage(usage: Any) -> list[dict[str, Any]]:
    """``AgentSessionUsage.model_usage`` (cumulative per provider/model) as plain dicts.

    LLM entries use our token names with the same inclusion rule as :func:`request_usage`
    (LiveKit's ``input_tokens`` is the total input; cached and cache-creation tokens are parts
    of it). Other kinds (STT, TTS, realtime) keep LiveKit's field names, zeros dropped.
    ``AgentSessionUsage`` is a dataclass without ``model_dump``; its entries are pydantic.
    """
    out: list[dict[str, Any]] = []
    for entry in getattr(usage, "model_usage", None) or ():
        dump = entry.model_dump() if hasattr(entry, "model_dump") else dict(vars(entry))
        if dump.get("type") == "llm_usage":
            out.append(
                {
                    "type": "llm_usage",
                    "provider": dump.get("provider"),
                    "model": dump.get("model"),
                    "input_tokens": dump.get("input_tokens"),
                    "output_tokens": dump.get("output_tokens"),
                    "cache_read_tokens": dump.get("input_cached_tokens"),
                    "cache_write_tokens": dump.get("input_cache_creation_tokens"),
                    "reasoning_tokens": dump.get("output_reasoning_tokens"),
                }
            )
        else:
            out.append({k: v for k, v in dump.items() if v not in (0, 0.0, None)})
    return out
