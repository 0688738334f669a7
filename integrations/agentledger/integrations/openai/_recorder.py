"""The events of one model call: ``user_message``, ``tool_result``, ``llm_start`` before the
call; ``llm_end``, ``tool_call`` and ``assistant_response`` (or ``llm_error``) after it.

Every public method of :class:`Recorder` is guarded: an exception of ours is logged to the
``agentledger`` logger (and counted) and the method returns its default, so the SDK's result
or exception reaches the caller unchanged.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import uuid_utils

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._prompt import prompt_fields
from agentledger.integrations._shared import (
    CausalLedgerLike,
    LedgerLike,
    accepts_causes,
    accepts_keywords,
    tool_names,
)
from agentledger.integrations.openai._conversation import Conversation, Conversations, LoggedCall
from agentledger.integrations.openai._outcome import Outcome
from agentledger.integrations.openai._values import (
    Turn,
    input_messages,
    invocation_params,
    is_given,
    tool_schemas,
    turns_of,
)
from agentledger.protocol import vocabulary as v

__all__ = ["Call", "Recorder", "SessionOption"]

#: ``session_id=`` of :func:`instrument_openai`: a fixed id, or a function asked at each call.
SessionOption = str | Callable[[], str | None] | None

#: Names of the two wrapped methods, stored as ``llm_start.data.api``.
API_NAMES = {"chat": "chat.completions", "responses": "responses"}


@dataclass
class Call:
    """A model call in flight."""

    api: str
    session_id: str
    conversation: Conversation
    start_event: str
    started_s: float


def elapsed_ms(since_s: float, until_s: float | None = None) -> float:
    end = time.perf_counter() if until_s is None else until_s
    return round((end - since_s) * 1000.0, 3)


def _tail_results(turns: Sequence[Turn]) -> list[Turn]:
    """The tool results the input ends with (and the Responses function calls among them)."""
    tail: list[Turn] = []
    for turn in reversed(turns):
        if turn.kind not in ("tool", "call"):
            break
        if turn.kind == "tool":
            tail.append(turn)
    return tail[::-1]


class Recorder:
    """Logs the calls of one instrumented client (see the module docstring)."""

    def __init__(
        self,
        ledger: LedgerLike,
        *,
        agent: str | None,
        session_id: SessionOption,
        metadata: Mapping[str, Any] | None,
        max_scopes: int,
    ) -> None:
        self._ledger = ledger
        self._causal = accepts_causes(ledger)
        self._agent = agent if agent is not None and accepts_keywords(ledger.log, "agent") else None
        self._session_option = session_id
        self._default_session = str(uuid_utils.uuid7())
        self._metadata = dict(metadata) if metadata else None
        self._conversations = Conversations(max_scopes)
        # reentrant: a dropped stream can log its end from __del__ while this thread holds it
        self._lock = threading.RLock()
        self._internal_errors = 0

    # ----------------------------------------------------------------- introspection

    @property
    def internal_errors(self) -> int:
        """Exceptions raised by the capture's own code and swallowed (logged)."""
        return self._internal_errors

    @property
    def evicted_sessions(self) -> int:
        """Conversations forgotten because ``max_scopes`` was reached."""
        return self._conversations.evicted

    # ----------------------------------------------------------------- plumbing

    def _log(
        self,
        event: str,
        data: dict[str, Any],
        session_id: str,
        parent_id: str | None,
        caused_by: Sequence[tuple[str, str]] = (),
    ) -> str:
        extra: dict[str, Any] = {}
        if self._agent is not None:
            extra["agent"] = self._agent
        if self._causal and caused_by:
            causal = cast("CausalLedgerLike", self._ledger)
            ref = causal.log(
                event,
                data,
                session_id=session_id,
                parent_id=parent_id,
                metadata=self._metadata,
                caused_by=list(caused_by),
                **extra,
            )
        else:
            ref = self._ledger.log(
                event,
                data,
                session_id=session_id,
                parent_id=parent_id,
                metadata=self._metadata,
                **extra,
            )
        return ref.event_id

    def _session(self) -> str:
        option = self._session_option
        if callable(option):
            chosen = option()
            return chosen if isinstance(chosen, str) and chosen else self._default_session
        return option or self._default_session

    def _count(self) -> None:
        with self._lock:
            self._internal_errors += 1

    # ----------------------------------------------------------------- before the call

    def start(self, api: str, kwargs: Mapping[str, Any]) -> Call | None:
        """Log what is new in the call's input and its ``llm_start``; ``None`` on our error."""
        try:
            with self._lock:
                return self._start(api, kwargs)
        except Exception:
            self._count()
            with capture_internal_exceptions(f"openai.{api}.start"):
                raise
        return None

    def _start(self, api: str, kwargs: Mapping[str, Any]) -> Call:
        started = time.perf_counter()
        session_id = self._session()
        conversation = self._conversations.get(session_id)
        turns = turns_of(api, kwargs)
        user_event, new_turn = self._user_turn(turns, conversation, session_id)
        new_results = self._tool_results(turns, conversation, session_id)
        tail = [r for t in _tail_results(turns) if (r := conversation.results.get(t.call_id or ""))]
        # what is new since the previous call; the newest input is the parent
        reads = [r for r in new_results if r not in tail] + tail
        if not tail and user_event is not None and (new_turn or not new_results):
            reads.append(user_event)
        data = self._start_data(api, kwargs)
        if tail:
            data["tool_result_ids"] = tail
        event_id = self._log(
            v.LLM_START,
            data,
            session_id,
            reads[-1] if reads else None,
            [(r, v.EDGE_READ) for r in reads],
        )
        return Call(api, session_id, conversation, event_id, started)

    def _start_data(self, api: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        messages = input_messages(api, kwargs)
        model = kwargs.get("model")
        data: dict[str, Any] = {
            "model": model if isinstance(model, str) else None,
            "provider": "openai",
            "api": API_NAMES[api],
            "messages": messages,
        }
        data.update(prompt_fields(m for m in messages if isinstance(m, Mapping)))
        params = invocation_params(kwargs)
        if params:
            data["invocation_params"] = params
        tools = kwargs.get("tools")
        schemas = tool_schemas(tools) if is_given(tools) else None
        if schemas:
            data["tools"] = tool_names(schemas)
            data["tool_schemas"] = schemas
        return data

    def _user_turn(
        self, turns: Sequence[Turn], conversation: Conversation, session_id: str
    ) -> tuple[str | None, bool]:
        """The ``user_message`` of the input's last user turn and whether it was logged now.

        A turn is logged when it is new: the input ends with it (nothing the model said or a
        tool returned follows it) and it is not the turn logged last, or that turn was
        answered already (the user asked again); or the conversation has no turn yet. The
        same turn re-sent (a retry after an error, the history with tool results appended)
        is not logged again."""
        index = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].kind == "user"), None)
        if index is None:
            return conversation.user_event, False
        key = (index, turns[index].text)
        followed = any(t.kind in ("assistant", "call", "tool") for t in turns[index + 1 :])
        if conversation.user_event is not None:
            if followed:
                return conversation.user_event, False
            if key == conversation.user_key and not conversation.turn_answered:
                return conversation.user_event, False
        data = {"text": turns[index].text, "role": "user"}
        event_id = self._log(v.USER_MESSAGE, data, session_id, conversation.last_answer)
        conversation.user_key = key
        conversation.user_event = event_id
        conversation.turn_answered = False
        return event_id, True

    def _tool_results(
        self, turns: Sequence[Turn], conversation: Conversation, session_id: str
    ) -> list[str]:
        """Log a ``tool_result`` for every result in the input not logged yet, as the child of
        the ``tool_call`` with its call id (a result whose call the capture never saw is a
        root). Returns the new events' ids."""
        names = {call_id: name for t in turns for call_id, name in t.calls}
        logged: list[str] = []
        for turn in turns:
            if turn.kind != "tool" or not isinstance(turn.call_id, str):
                continue
            if conversation.results.get(turn.call_id) is not None:
                continue
            call: LoggedCall | None = conversation.calls.get(turn.call_id)
            tool = call.tool if call else turn.name or names.get(turn.call_id) or "tool"
            data = {"tool": tool, "call_id": turn.call_id, "result": turn.result}
            event_id = self._log(v.TOOL_RESULT, data, session_id, call.event_id if call else None)
            conversation.results.set(turn.call_id, event_id)
            logged.append(event_id)
        return logged

    # ----------------------------------------------------------------- after the call

    def end(self, call: Call, outcome: Outcome) -> None:
        """``llm_end``, then a ``tool_call`` per requested call or the ``assistant_response``."""
        try:
            with self._lock:
                self._end(call, outcome)
        except Exception:
            self._count()
            with capture_internal_exceptions(f"openai.{call.api}.end"):
                raise

    def _end(self, call: Call, outcome: Outcome) -> None:
        data: dict[str, Any] = {
            "text": outcome.text,
            "finish_reason": outcome.finish_reason,
            "token_usage": outcome.usage,
            "response_model": outcome.response_model,
            "duration_ms": elapsed_ms(call.started_s),
        }
        if outcome.tool_calls:
            data["tool_calls"] = [c.to_data() for c in outcome.tool_calls]
        if outcome.streamed_chunks is not None:
            data["ttft_ms"] = outcome.ttft_ms
            data["streamed_chunks"] = outcome.streamed_chunks
        if outcome.closed_early:
            data["closed_early"] = True
        end_id = self._log(v.LLM_END, data, call.session_id, call.start_event)
        conversation = call.conversation
        if outcome.tool_calls and not outcome.closed_early:
            for tool_call in outcome.tool_calls:
                event_id = self._log(
                    v.TOOL_CALL,
                    {"tool": tool_call.name, "args": tool_call.args, "call_id": tool_call.call_id},
                    call.session_id,
                    end_id,
                    [(end_id, v.EDGE_REQUESTED)],
                )
                if tool_call.call_id:
                    conversation.calls.set(tool_call.call_id, LoggedCall(event_id, tool_call.name))
            return
        answer: dict[str, Any] = {"text": outcome.text}
        if outcome.closed_early:
            answer["interrupted"] = True
        conversation.last_answer = self._log(
            v.ASSISTANT_RESPONSE, answer, call.session_id, end_id, [(end_id, v.EDGE_PRODUCED)]
        )
        conversation.turn_answered = True

    def fail(self, call: Call | None, error: BaseException) -> None:
        """``llm_error`` with the error's text and type (and HTTP status when it has one)."""
        if call is None:
            return
        try:
            data: dict[str, Any] = {"error": str(error), "type": type(error).__name__}
            status = getattr(error, "status_code", None)
            if isinstance(status, int):
                data["status_code"] = status
            data["duration_ms"] = elapsed_ms(call.started_s)
            self._log(v.LLM_ERROR, data, call.session_id, call.start_event)
        except Exception:
            self._count()
            with capture_internal_exceptions(f"openai.{call.api}.error"):
                raise
