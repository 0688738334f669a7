"""The OpenAI SDK's request and response values as plain JSON, and the turns of a call's input.

Chat Completions messages and Responses input items come as dicts (the SDK's ``TypedDict``
params) or as the SDK's pydantic objects (an app often appends ``choice.message`` or
``response.output`` to its history); both read the same here. Nothing in this module imports
the SDK: its sentinels (``NOT_GIVEN``, ``omit``) are recognised by class name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from agentledger.integrations._prompt import content_text

__all__ = [
    "Turn",
    "field",
    "input_messages",
    "invocation_params",
    "is_given",
    "parse_args",
    "plain",
    "result_value",
    "tool_schemas",
    "turns_of",
]

#: Keywords of ``create()`` that are not invocation parameters (they are logged on their own).
NOT_PARAMS = frozenset({"messages", "input", "tools", "stream", "instructions"})

_SENTINELS = frozenset({"NotGiven", "Omit"})

Kind = Literal["system", "user", "assistant", "call", "tool", "other"]


def is_given(value: Any) -> bool:
    """False for the SDK's "argument not given" sentinels (``NOT_GIVEN``, ``omit``)."""
    return type(value).__name__ not in _SENTINELS


def field(value: Any, name: str) -> Any:
    """``value[name]`` of a mapping, else the attribute ``name`` (``None`` when absent)."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def plain(value: Any) -> Any:
    """``value`` as plain JSON values: pydantic models dumped (``None`` fields dropped),
    mappings and sequences converted item by item, SDK sentinels dropped. What is left over
    (an ``httpx`` timeout, say) is for the client's sanitizer to store."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return plain(dump(mode="json", exclude_none=True))
        except Exception:
            return repr(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items() if v is not None and is_given(v)}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def parse_args(arguments: Any) -> Any:
    """A tool call's arguments as a JSON object; the raw value when it is not one."""
    if isinstance(arguments, Mapping):
        return plain(arguments)
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
        if isinstance(parsed, dict):
            return parsed
    return arguments


def result_value(content: Any) -> Any:
    """A tool result as the app sent it back: JSON text becomes the object or list it holds
    (so queries see its keys), other text and content parts stay as they are."""
    if isinstance(content, str):
        if content[:1] in ("{", "["):
            try:
                parsed = orjson.loads(content)
            except orjson.JSONDecodeError:
                return content
            if isinstance(parsed, dict | list):
                return parsed
        return content
    return plain(content)


def invocation_params(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Every keyword given to ``create()`` except the input, the tools and ``stream``."""
    return {
        key: plain(value)
        for key, value in kwargs.items()
        if key not in NOT_PARAMS and is_given(value) and value is not None
    }


def _items(value: Any) -> list[Any] | None:
    """A list or tuple as a list; ``None`` for anything else (a generator is never consumed:
    the SDK must still see all of it)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return None


def input_messages(api: str, kwargs: Mapping[str, Any]) -> list[Any]:
    """The call's whole input as plain JSON: chat ``messages``; for Responses the
    ``instructions`` as a system message followed by ``input`` (a string becomes one user
    message, a list is kept item by item)."""
    if api == "chat":
        return [plain(m) for m in _items(kwargs.get("messages")) or []]
    out: list[Any] = []
    instructions = kwargs.get("instructions")
    if isinstance(instructions, str) and instructions:
        out.append({"role": "system", "content": instructions})
    given = kwargs.get("input")
    if isinstance(given, str):
        out.append({"role": "user", "content": given})
    else:
        out.extend(plain(item) for item in _items(given) or [])
    return out


@dataclass(frozen=True)
class Turn:
    """One message or item of a call's input, as the capture reads it."""

    kind: Kind
    text: str = ""
    call_id: str | None = None
    #: a tool name: of the call (``call``) or of the result when the message names it
    name: str | None = None
    result: Any = None
    #: the calls an assistant message asks for: ``(call_id, name)``
    calls: tuple[tuple[str, str], ...] = ()


def _chat_turn(message: Any) -> Turn:
    role = field(message, "role")
    if role == "tool":
        content = field(message, "content")
        return Turn("tool", call_id=field(message, "tool_call_id"), result=result_value(content))
    if role == "assistant":
        calls = []
        for call in field(message, "tool_calls") or ():
            function = field(call, "function") or field(call, "custom")
            call_id, name = field(call, "id"), field(function, "name")
            if isinstance(call_id, str):
                calls.append((call_id, name if isinstance(name, str) else "tool"))
        return Turn("assistant", content_text(field(message, "content")), calls=tuple(calls))
    if role in ("system", "developer"):
        return Turn("system", content_text(field(message, "content")))
    if role == "user":
        return Turn("user", content_text(field(message, "content")))
    return Turn("other")


def _response_turn(item: Any) -> Turn:
    kind = field(item, "type")
    if kind in ("function_call_output", "custom_tool_call_output"):
        return Turn(
            "tool", call_id=field(item, "call_id"), result=result_value(field(item, "output"))
        )
    if kind in ("function_call", "custom_tool_call"):
        call_id, name = field(item, "call_id"), field(item, "name")
        if isinstance(call_id, str):
            return Turn("call", calls=((call_id, name if isinstance(name, str) else "tool"),))
        return Turn("call")
    if kind in (None, "message"):
        turn = _chat_turn(item)
        if turn.kind != "other":
            return turn
    return Turn("other")  # reasoning items, built-in tool calls, item references


def turns_of(api: str, kwargs: Mapping[str, Any]) -> list[Turn]:
    """The turns of a call's input, in order (the Responses ``instructions`` first)."""
    if api == "chat":
        return [_chat_turn(m) for m in _items(kwargs.get("messages")) or []]
    turns: list[Turn] = []
    if isinstance(kwargs.get("instructions"), str):
        turns.append(Turn("system", kwargs["instructions"]))
    given = kwargs.get("input")
    if isinstance(given, str):
        turns.append(Turn("user", given))
    else:
        turns.extend(_response_turn(item) for item in _items(given) or [])
    return turns


def tool_schemas(tools: Any) -> list[Any] | None:
    """The tools' full JSON definitions, or ``None`` when there are none."""
    items = _items(tools) if is_given(tools) else None
    return [plain(t) for t in items] if items else None
