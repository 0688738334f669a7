"""Turn LangChain values into small, JSON-ready data for event ``data`` fields.

Rules follow the event vocabulary (values are sanitized, never dropped) and field cases H06
(odd Python values) and H12 (message objects become nested objects, not escaped strings):

* LangChain messages become ``{"role", "content", ...}`` objects (tool calls as objects);
  documents become ``{"id", "text", "metadata"}``.
* datetime/date/time -> ISO string, UUID/Decimal -> string, bytes -> ``{"$bytes": size,
  "sha256": hex}``, set -> list, pydantic model / dataclass -> dict, numpy -> list or number,
  enum -> its value, a container met again on its own path -> ``{"$cycle": type name}``,
  anything else -> ``repr``.
* Strings longer than ``max_chars`` are cut and end with ``"…[cut, N chars]"`` (N = original
  size; the client's sanitizer uses the same marker); lists longer than :data:`MAX_ITEMS` keep
  their first items and a marker; nesting deeper than :data:`MAX_DEPTH` becomes ``repr``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.prompt_values import PromptValue
from pydantic import BaseModel

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "command_to_data",
    "document_to_data",
    "is_langgraph_object",
    "message_to_data",
    "to_data",
    "tool_content",
    "trim",
]

#: Items kept from one list, tuple or set (the rest is counted in a marker item).
MAX_ITEMS = 200
#: Nesting depth after which values are stored as their ``repr``.
MAX_DEPTH = 16

_SCALARS = (bool, int, float, type(None))


def is_langgraph_object(value: Any, name: str) -> bool:
    """True when ``value`` is an instance of (a subclass of) LangGraph's class ``name``.

    Checked by name along the MRO so the handler works, and imports, without LangGraph.
    """
    return any(
        cls.__name__ == name and cls.__module__.startswith("langgraph")
        for cls in type(value).__mro__
    )


def command_to_data(command: Any, max_chars: int) -> dict[str, Any]:
    """A LangGraph ``Command`` as ``{"type": "command", "update", "goto", "graph", "resume"}``
    (only the parts it sets); a ``Send`` in ``goto`` becomes ``{"send": node, "arg": ...}``."""
    data: dict[str, Any] = {"type": "command"}
    update = getattr(command, "update", None)
    if update is not None:
        data["update"] = to_data(update, max_chars)
    goto = getattr(command, "goto", None)
    targets = goto if isinstance(goto, list | tuple) else [goto] if goto else []
    if targets:
        data["goto"] = [
            {"send": getattr(t, "node", None), "arg": to_data(getattr(t, "arg", None), max_chars)}
            if is_langgraph_object(t, "Send")
            else to_data(t, max_chars)
            for t in targets
        ]
    graph = getattr(command, "graph", None)
    if graph is not None:
        data["graph"] = str(graph)
    resume = getattr(command, "resume", None)
    if resume is not None:
        data["resume"] = to_data(resume, max_chars)
    return data


def tool_content(content: Any) -> Any:
    """A tool's output as the model saw it, with JSON text turned back into JSON.

    LangChain serializes a tool's dict or list result to JSON text in the ``ToolMessage`` it
    gives the model. Stored as a string, that would hide every key from queries (``forget`` by
    key, regression checks on ``tool_result.data.result``); parsed, it is the object the tool
    returned. Any other text is kept as it is.
    """
    if isinstance(content, str) and content[:1] in ("{", "["):
        try:
            parsed = orjson.loads(content)
        except orjson.JSONDecodeError:
            return content
        if isinstance(parsed, dict | list):
            return parsed
    return content


def trim(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars`` characters, ending with a marker naming the original size."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}…[cut, {len(text)} chars]"


def tool_calls_to_data(calls: list[Any], max_chars: int) -> list[Any]:
    """``AIMessage.tool_calls`` as ``[{"name", "args" (object), "id"}]``."""
    out: list[Any] = []
    for call in calls:
        if isinstance(call, Mapping):
            out.append(
                {
                    "name": call.get("name"),
                    "args": to_data(call.get("args"), max_chars),
                    "id": call.get("id"),
                }
            )
        else:
            out.append(to_data(call, max_chars))
    return out


def message_to_data(message: BaseMessage, max_chars: int) -> dict[str, Any]:
    """A LangChain message as ``{"role", "content", ["name", "id", "tool_calls",
    "tool_call_id", "status"]}``; content blocks stay objects (H12)."""
    data: dict[str, Any] = {"role": message.type, "content": to_data(message.content, max_chars)}
    if message.name:
        data["name"] = message.name
    if message.id:
        data["id"] = message.id
    if isinstance(message, AIMessage) and message.tool_calls:
        data["tool_calls"] = tool_calls_to_data(message.tool_calls, max_chars)
    if isinstance(message, ToolMessage):
        data["tool_call_id"] = message.tool_call_id
        if message.status != "success":
            data["status"] = message.status
    return data


def document_to_data(document: Document, max_chars: int) -> dict[str, Any]:
    """A retrieved document as ``{"id", "score", "text", "metadata"}``.

    ``score`` is read from ``metadata["score"]`` or ``metadata["relevance_score"]`` (the keys
    vector stores put it under); ``None`` when absent.
    """
    meta = document.metadata or {}
    score = meta.get("score", meta.get("relevance_score"))
    return {
        "id": document.id or meta.get("id"),
        "score": score if isinstance(score, int | float) else None,
        "text": trim(document.page_content, max_chars),
        "metadata": to_data(meta, max_chars),
    }


def to_data(value: Any, max_chars: int) -> Any:
    """Convert ``value`` into JSON-ready data (see the module docstring). Never raises for a
    value's own misbehaviour: a failing ``repr``/``model_dump`` becomes a marker string."""
    return _convert(value, max_chars, 0, set())


def _convert(value: Any, max_chars: int, depth: int, path: set[int]) -> Any:
    kind = type(value)
    # Fast paths by exact type: most LangChain inputs are str/dict/list of plain values.
    if kind is str:
        return value if len(value) <= max_chars else trim(value, max_chars)
    if kind in _SCALARS:
        return value
    if depth >= MAX_DEPTH:
        return _repr(value, max_chars)
    if kind is dict or kind is list:
        key = id(value)
        if key in path:
            return {"$cycle": kind.__name__}
        path.add(key)
        try:
            if kind is dict:
                return {
                    (k if type(k) is str else str(k)): _convert(v, max_chars, depth + 1, path)
                    for k, v in value.items()
                }
            items = [_convert(v, max_chars, depth + 1, path) for v in value[:MAX_ITEMS]]
            if len(value) > MAX_ITEMS:
                items.append(f"…[cut, {len(value)} items]")
            return items
        finally:
            path.discard(key)
    if isinstance(value, str):  # str subclasses, e.g. LangChain's TextAccessor
        return trim(str(value), max_chars)
    if isinstance(value, BaseMessage):
        return message_to_data(value, max_chars)
    if isinstance(value, PromptValue):
        return {"messages": [message_to_data(m, max_chars) for m in value.to_messages()]}
    if isinstance(value, Document):
        return document_to_data(value, max_chars)
    if is_langgraph_object(value, "Command"):
        return command_to_data(value, max_chars)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return {"$bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}
    if isinstance(value, enum.Enum):
        return _convert(value.value, max_chars, depth + 1, path)
    if isinstance(value, bool | int | float):  # subclasses such as numpy.float64
        if isinstance(value, bool):
            return bool(value)
        return float(value) if isinstance(value, float) else int(value)

    key = id(value)
    if key in path:
        return {"$cycle": type(value).__name__}
    path.add(key)
    try:
        return _convert_container(value, max_chars, depth + 1, path)
    finally:
        path.discard(key)


def _convert_container(value: Any, max_chars: int, depth: int, path: set[int]) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = k if isinstance(k, str) else str(k)
            out[name] = _convert(v, max_chars, depth, path)
        return out
    if isinstance(value, list | tuple | set | frozenset):
        items = list(value)
        converted = [_convert(v, max_chars, depth, path) for v in items[:MAX_ITEMS]]
        if len(items) > MAX_ITEMS:
            converted.append(f"…[cut, {len(items)} items]")
        return converted
    if isinstance(value, BaseModel):
        try:
            dumped = value.model_dump(mode="python")
        except Exception:
            return _repr(value, max_chars)
        return _convert(dumped, max_chars, depth, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _convert(getattr(value, f.name, None), max_chars, depth, path)
            for f in dataclasses.fields(value)
        }
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and hasattr(value, "dtype"):  # numpy arrays and scalars
        try:
            return _convert(tolist(), max_chars, depth, path)
        except Exception:
            return _repr(value, max_chars)
    return _repr(value, max_chars)


def _repr(value: Any, max_chars: int) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<unrepresentable {type(value).__name__}>"
    return trim(text, max_chars)
