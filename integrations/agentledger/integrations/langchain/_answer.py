"""The answer a root run finished with, whatever its output form.

A run ends on its answer in several shapes: a LangGraph / ``create_agent`` state whose last
message is an AI message without tool calls, a state with a ``structured_response``
(``response_format=``), an ``AIMessage`` (a chain ending with a model), a string (a chain
ending with an output parser), the legacy ``{"output": ...}`` of agent executors, or a
pydantic model (``with_structured_output``). A run that stopped at an ``interrupt()`` or whose
last message still asks for tools has not answered yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import BaseModel

from agentledger.integrations.langchain._values import to_data

__all__ = ["Answer", "final_answer", "structured_answer"]

_INTERRUPT_KEY = "__interrupt__"


@dataclass(frozen=True, slots=True)
class Answer:
    """What a run answered."""

    text: str
    #: the AI message carrying the answer (its id names the ``llm_end`` that produced it)
    message: AIMessage | None = None
    #: the structured answer as data, when the run returned one
    structured: Any = None


def _last_ai(messages: Any) -> AIMessage | None:
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        return None
    last = messages[-1]
    return last if isinstance(last, AIMessage) else None


def _json_text(data: Any) -> str:
    try:
        return orjson.dumps(data).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(data)


def structured_answer(value: Any, max_chars: int, message: AIMessage | None = None) -> Answer:
    """An :class:`Answer` for a structured value: its data, and as text its JSON."""
    data = to_data(value, max_chars)
    return Answer(_json_text(data), message, data)


def final_answer(outputs: Any, max_chars: int) -> Answer | None:
    """The answer in a root run's ``outputs``, or ``None`` when they hold none."""
    if isinstance(outputs, Mapping):
        if _INTERRUPT_KEY in outputs:
            return None
        messages = outputs.get("messages")
        if outputs.get("structured_response") is not None:
            return structured_answer(outputs["structured_response"], max_chars, _last_ai(messages))
        if messages is not None:
            last = _last_ai(messages)
            if last is None or last.tool_calls:
                return None
            return Answer(last.text, last)
        output = outputs.get("output")
        return Answer(output) if isinstance(output, str) else None
    if isinstance(outputs, AIMessage):
        return None if outputs.tool_calls else Answer(outputs.text, outputs)
    if isinstance(outputs, str):
        return Answer(outputs)
    if isinstance(outputs, BaseModel) and not isinstance(outputs, BaseMessage):
        return structured_answer(outputs, max_chars)
    return None
