"""What mapping a CrewAI event produces, and the value converters its builders share.

A :class:`Rule` says how one CrewAI event type maps: its :class:`Role` in its scope, the scope
kind and a builder returning :class:`Out` items (ledger event type and ``data``). The
converters cut strings to ``max_chars`` with the client's marker and make any value JSON-able.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentledger.client.sanitize import cut_string, jsonable

__all__ = [
    "Builder",
    "Out",
    "Role",
    "Rule",
    "as_json",
    "chat_messages",
    "cut",
    "error_type",
    "parse_tool_args",
    "raw_output",
]


class Role(enum.Enum):
    """Where a CrewAI event sits in its scope."""

    START = "start"
    END = "end"
    POINT = "point"


@dataclass(frozen=True, slots=True)
class Out:
    """One ledger event built from a CrewAI event.

    Attributes:
        event: vocabulary event type.
        data: the event's ``data`` object.
        suffix: ``""`` for the main event; a distinct label for an extra event built from the
            same CrewAI event (its id is derived from the CrewAI id plus this label).
    """

    event: str
    data: dict[str, Any]
    suffix: str = ""


Builder = Callable[[Any, Any, int], list[Out]]


@dataclass(frozen=True, slots=True)
class Rule:
    """How one CrewAI event type maps.

    Attributes:
        role: start, end or point.
        kind: the scope kind (``crew``, ``task``, ``agent``, ``flow``, ``llm``, ``tool``...).
        build: ``(source, event, max_chars) -> [Out, ...]``.
        rollup: task and crew scopes sum the token usage of the model calls below them.
    """

    role: Role
    kind: str
    build: Builder
    rollup: bool = False


def cut(value: Any, max_chars: int) -> str | None:
    if value is None:
        return None
    return cut_string(value if isinstance(value, str) else str(value), max_chars)


def as_json(value: Any, max_chars: int) -> Any:
    return jsonable(value, max_string_chars=max_chars)


def error_type(error: Any, default: str) -> str:
    if isinstance(error, BaseException):
        return type(error).__name__
    return default


def raw_output(output: Any, max_chars: int) -> dict[str, Any]:
    """``TaskOutput`` / ``CrewOutput`` -> ``{"raw", "json"?}``; anything else as JSON."""
    raw = getattr(output, "raw", None)
    if raw is None:
        return {"raw": as_json(output, max_chars)}
    out: dict[str, Any] = {"raw": cut(raw, max_chars)}
    json_dict = getattr(output, "json_dict", None)
    if json_dict:
        out["json"] = as_json(json_dict, max_chars)
    return out


def parse_tool_args(args: Any, max_chars: int) -> dict[str, Any]:
    """CrewAI's tool input (a dict, or the model's JSON text) -> a JSON object (field case H04).

    A string that is not a JSON object is kept whole as ``{"input": text}``.
    """
    if isinstance(args, str):
        text = args.strip()
        try:
            parsed = json.loads(text) if text else {}
        except ValueError:
            return {"input": cut(args, max_chars)}
        args = parsed
    if isinstance(args, Mapping):
        converted = as_json(dict(args), max_chars)
        return converted if isinstance(converted, dict) else {"input": converted}
    return {"input": as_json(args, max_chars)}


def chat_messages(messages: Any, max_chars: int) -> Any:
    if isinstance(messages, str):
        return [{"role": "user", "content": cut(messages, max_chars)}]
    if not isinstance(messages, Sequence):
        return as_json(messages, max_chars)
    out: list[Any] = []
    for message in messages:
        if isinstance(message, Mapping):
            item = {
                "role": message.get("role"),
                "content": as_json(message.get("content"), max_chars),
            }
            for key in ("tool_calls", "tool_call_id", "name"):
                if message.get(key) is not None:
                    item[key] = as_json(message[key], max_chars)
            out.append(item)
        else:
            out.append(as_json(message, max_chars))
    return out
