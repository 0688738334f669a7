"""Bounded per-speech and per-tool-call state of :class:`LedgerSessionObserver`.

A LiveKit speech (``SpeechHandle``, id ``speech_…``) is one agent reply: one or more model
requests with tool batches between them, then the spoken answer. State is kept per live
speech and per running tool call, evicted when the speech is done or the call ended, and
capped (oldest first) so a session that never closes cannot grow memory without bound.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agentledger.integrations._shared import InvalidOptionError

__all__ = ["Call", "Capped", "Speech"]

_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass(slots=True)
class Speech:
    """What the observer knows about one speech.

    Attributes:
        speech_id: LiveKit's ``SpeechHandle.id``.
        handle: the ``SpeechHandle`` (``None`` for a speech first seen through an id only).
        created_at: epoch seconds of ``speech_created``.
        anchor: event id the speech's steps descend from (the user message it answers, else
            the current agent step, else ``session_start``); bound at the speech's first step.
        open_start: ``llm_start`` id of the model request in flight (not yet ended).
        open_end: the id reserved for that request's ``llm_end`` (its tool calls name it as
            their cause before it is logged), when the ledger takes ``event_id=``.
        open_calls: tool calls (``{"tool", "args", "call_id"}``) that request asked for.
        pending: the request's ``LLMMetrics`` while ``llm_end`` waits for the reply text.
        last_step: the latest ``llm_end`` / ``tool_result`` / ``tool_error`` id.
        last_outcome: the latest ``tool_result`` / ``tool_error`` id (causes the next request).
        inputs: the tool outcomes since the speech's last model request (what the next one
            reads).
        anchor_is_user: ``anchor`` is the user message the speech answers.
        boundary: epoch seconds after which the speech's next request started (estimate used
            for an ``llm_start`` opened by a tool call before LiveKit reported the request).
        interrupted_logged: an ``interrupted`` event was logged for this speech.
    """

    speech_id: str
    handle: Any = None
    created_at: float = 0.0
    anchor: str | None = None
    open_start: str | None = None
    open_end: str | None = None
    open_calls: list[dict[str, Any]] = field(default_factory=list)
    pending: Any = None
    last_step: str | None = None
    last_outcome: str | None = None
    inputs: list[str] = field(default_factory=list)
    anchor_is_user: bool = False
    boundary: float = 0.0
    interrupted_logged: bool = False


@dataclass(slots=True)
class Call:
    """A tool call between its ``tool_call`` and its ``tool_result`` / ``tool_error``.

    The outcome is written when both LiveKit's ``tool_call_ended`` (status, exception text,
    end time) and its batch's ``function_tools_executed`` (the output the model was given)
    are known, or when the speech ends, whichever comes first.

    Attributes:
        event_id: the ``tool_call`` event id.
        tool: function name.
        started_at: epoch seconds of ``tool_call_started``.
        speech_id: owning speech, when known.
        status: ``done`` / ``error`` / ``cancelled`` once ended, else ``None``.
        message: ``tool_call_ended.message`` (result text, or the exception's text).
        ended_at: epoch seconds of ``tool_call_ended``.
        batch_done: the batch was reported (or the speech ended): log the outcome at once.
    """

    event_id: str
    tool: str
    started_at: float
    speech_id: str | None
    status: str | None = None
    message: Any = None
    ended_at: float | None = None
    batch_done: bool = False


class Capped(OrderedDict[_K, _V], Generic[_K, _V]):
    """An insertion-ordered dict that drops its oldest entries beyond ``limit``.

    Args:
        limit: maximum number of entries (>= 1).
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        if limit < 1:
            raise InvalidOptionError("limit must be >= 1")
        self.limit = limit

    def __setitem__(self, key: _K, value: _V) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)
