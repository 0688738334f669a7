"""What the user said: the text of the new user turn in a run's input, whatever its form.

A run is started with the user's words in many shapes: a plain string, a ``("user", "text")``
tuple, a ``{"role": "user", "content": ...}`` dict, a ``HumanMessage``, a prompt value
(``ChatPromptValue``), a list of any of those, ``{"messages": ...}`` holding any of those (the
LangGraph / ``create_agent`` state), the legacy ``{"input": ...}`` of agent executors, a
LangGraph ``Command(update={"messages": ...})``, or the message list of a bare chat-model call.

The user turn is the last human message when the conversation ends with one (system messages
after it are skipped); a conversation ending with an AI or tool message holds no new user turn
(the run continues an earlier one), and neither does empty text (a streamed chain reports
``{"input": ""}`` at its start and its real input only at its end). A LangGraph
``Command(resume=value)`` is the human's answer to an ``interrupt()``: :func:`resume_value`
finds it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, convert_to_messages
from langchain_core.prompt_values import PromptValue

from agentledger.integrations.langchain._values import is_langgraph_object

__all__ = [
    "NO_RESUME",
    "RESUMER_KEYS",
    "UserTurn",
    "resume_text",
    "resume_value",
    "resumer",
    "user_turn",
]

#: Returned by :func:`resume_value` when the input does not resume an interrupted run.
NO_RESUME: Any = object()

_USER_ROLES = frozenset({"user", "human"})


@dataclass(frozen=True, slots=True)
class UserTurn:
    """The new user turn of a run's input."""

    text: str
    #: the message's id, when the input was a message that had one
    message_id: str | None = None


def _last_user_message(messages: Sequence[BaseMessage]) -> UserTurn | None:
    for message in reversed(messages):
        if isinstance(message, SystemMessage):
            continue
        if isinstance(message, HumanMessage):
            return UserTurn(message.text, message.id) if message.text else None
        return None
    return None


def _from_messages(value: Any) -> UserTurn | None:
    """The user turn of a message list (or of one message-like value)."""
    if isinstance(value, str):
        return UserTurn(value) if value else None
    if isinstance(value, PromptValue):
        return _last_user_message(value.to_messages())
    if isinstance(value, BaseMessage | Mapping) or _is_role_tuple(value):
        value = [value]
    if not isinstance(value, Sequence) or not value:
        return None
    try:
        messages = convert_to_messages(value)
    except (ValueError, TypeError, NotImplementedError):
        return None
    return _last_user_message(messages)


def _is_role_tuple(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and value[0] in _USER_ROLES | {"ai", "assistant", "system", "tool"}
    )


def user_turn(inputs: Any) -> UserTurn | None:
    """The new user turn in a run's ``inputs``, or ``None`` when they hold none.

    Never raises for an input it does not understand: anything else is "no user turn".
    """
    if isinstance(inputs, str | PromptValue | BaseMessage) or _is_role_tuple(inputs):
        return _from_messages(inputs)
    if isinstance(inputs, Mapping):
        if "messages" in inputs:
            return _from_messages(inputs["messages"])
        if "input" in inputs:
            return user_turn(inputs["input"])
        if "role" in inputs or "type" in inputs:
            return _from_messages(inputs)
        return None
    if is_langgraph_object(inputs, "Command"):
        update = getattr(inputs, "update", None)
        return user_turn(update) if isinstance(update, Mapping) else None
    if isinstance(inputs, list | tuple) and all(_is_message_like(item) for item in inputs):
        return _from_messages(inputs)  # a list of plain strings is data, not a conversation
    return None


def _is_message_like(value: Any) -> bool:
    return (
        isinstance(value, BaseMessage)
        or _is_role_tuple(value)
        or (isinstance(value, Mapping) and ("role" in value or "type" in value))
    )


def resume_value(inputs: Any) -> Any:
    """The value of a LangGraph ``Command(resume=...)`` input, else :data:`NO_RESUME`."""
    if not is_langgraph_object(inputs, "Command"):
        return NO_RESUME
    value = getattr(inputs, "resume", None)
    return NO_RESUME if value is None else value


def resume_text(value: Any, data: Any) -> str:
    """The text of a resume value: the string itself, else its data as JSON."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(data).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(data)


#: Run metadata keys naming who resumed an interrupted run, in the order they are tried:
#: ``resumed_by`` (set for the resume: ``config={"metadata": {"resumed_by": ...}}``),
#: ``langgraph_auth_user_id`` (LangGraph Server's name of the authenticated user), ``user_id``.
#: Callbacks get the run config's ``metadata``, not its ``configurable``.
RESUMER_KEYS = ("resumed_by", "langgraph_auth_user_id", "user_id")


def resumer(metadata: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """``(who, metadata key)`` of the person who resumed a run, from its run metadata, or
    ``None`` when the metadata names nobody (a string or an integer under
    :data:`RESUMER_KEYS`)."""
    if not isinstance(metadata, Mapping):
        return None
    for key in RESUMER_KEYS:
        value = metadata.get(key)
        if isinstance(value, bool) or not isinstance(value, str | int):
            continue
        text = str(value).strip()
        if text:
            return text[:256], key
    return None
