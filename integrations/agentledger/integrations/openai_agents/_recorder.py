"""Turns the OpenAI Agents SDK's spans into ledger events with their causes.

One :class:`TraceState` per open trace (bounded, evicted when the trace ends) remembers what a
later span's event must name as its cause: the user message, the tool calls by call id, the
tool results by call id, the agent steps by span id. The reasoning is in
``docs/design/integrations-openai-agents.md``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from agentledger.integrations._prompt import content_text, prompt_hash
from agentledger.integrations._shared import CausalLedgerLike, LedgerLike, accepts_keywords
from agentledger.integrations.openai_agents._values import (
    ModelCall,
    RequestedCall,
    parse_args,
    plain,
    read_model_call,
)
from agentledger.protocol import vocabulary as v

__all__ = ["Recorder", "SessionOption", "TraceState"]

#: ``session_id=``: a fixed id, or a function of the trace returning one (``None``: default).
SessionOption = str | Callable[[Any], str | None] | None

Cause = tuple[str, str]


@dataclass
class PendingCall:
    """A function call a model output requested, logged as ``tool_call``, not yet answered."""

    call: RequestedCall
    event_id: str


@dataclass
class TraceState:
    """What one trace has logged so far."""

    session_id: str
    user_event: str | None = None
    last_answer: str | None = None
    user_key: tuple[int, str] | None = None
    answered: bool = False
    pending: list[PendingCall] = field(default_factory=list)
    calls: dict[str, PendingCall] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)
    read: set[str] = field(default_factory=set)
    handoff_cause: str | None = None
    span_parents: dict[str, str | None] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)


def _time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None


def _duration_ms(span: Any) -> float | None:
    start, end = _time(getattr(span, "started_at", None)), _time(getattr(span, "ended_at", None))
    if start is None or end is None:
        return None
    return round((end - start).total_seconds() * 1000.0, 3)


def _style(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())


class Recorder:
    """Logs the spans of every trace the processor sees (see the module docstring)."""

    def __init__(
        self,
        ledger: LedgerLike,
        *,
        session_id: SessionOption,
        metadata: Mapping[str, Any] | None,
        max_scopes: int,
        current_trace: Callable[[], Any] = lambda: None,
    ) -> None:
        self._ledger = ledger
        self._current_trace = current_trace
        self._causal = accepts_keywords(ledger.log, "caused_by", "scope_id")
        self._timed = accepts_keywords(ledger.log, "timestamp")
        self._session_option = session_id
        self._metadata = dict(metadata) if metadata else None
        self._max = max_scopes
        self._traces: OrderedDict[str, TraceState] = OrderedDict()
        self._lock = threading.Lock()
        self.evicted = 0

    # ----------------------------------------------------------------- plumbing

    def _log(
        self,
        state: TraceState,
        event: str,
        data: dict[str, Any],
        parent_id: str | None,
        caused_by: Sequence[Cause] = (),
        scope_id: str | None = None,
        timestamp: dt.datetime | None = None,
    ) -> str:
        extra: dict[str, Any] = {}
        if self._causal:
            if caused_by:
                extra["caused_by"] = list(caused_by)
            if scope_id is not None and scope_id != parent_id:
                extra["scope_id"] = scope_id
        if self._timed and timestamp is not None:
            extra["timestamp"] = timestamp
        log = cast("CausalLedgerLike", self._ledger).log if extra else self._ledger.log
        ref = log(
            event,
            data,
            session_id=state.session_id,
            parent_id=parent_id,
            metadata=self._metadata,
            **extra,
        )
        return ref.event_id

    def _session_of(self, trace: Any) -> str:
        option = self._session_option
        if callable(option):
            chosen = option(trace)
            if isinstance(chosen, str) and chosen:
                return chosen
        elif isinstance(option, str) and option:
            return option
        group = getattr(trace, "group_id", None)
        return group if isinstance(group, str) and group else str(trace.trace_id)

    def _state(self, trace_id: str) -> TraceState | None:
        return self._traces.get(trace_id)

    def _scope(self, state: TraceState, span: Any) -> str | None:
        """The step event of the nearest enclosing agent span."""
        parent = getattr(span, "parent_id", None)
        seen = 0
        while parent is not None and seen < 64:
            if parent in state.steps:
                return state.steps[parent]
            parent = state.span_parents.get(parent)
            seen += 1
        return None

    # ----------------------------------------------------------------- traces

    def trace_start(self, trace: Any) -> None:
        with self._lock:
            self._open(trace)

    def _open(self, trace: Any) -> TraceState:
        state = self._traces[str(trace.trace_id)] = TraceState(self._session_of(trace))
        while len(self._traces) > self._max:
            self._traces.popitem(last=False)
            self.evicted += 1
        return state

    def trace_end(self, trace: Any) -> None:
        with self._lock:
            self._traces.pop(str(trace.trace_id), None)

    # ----------------------------------------------------------------- spans

    def span_start(self, span: Any) -> None:
        with self._lock:
            state = self._state(str(span.trace_id))
            if state is None:
                # a trace opened before the processor was added: adopt it while it is current
                trace = self._current_trace()
                if trace is None or str(trace.trace_id) != str(span.trace_id):
                    return
                state = self._open(trace)
            state.span_parents[span.span_id] = span.parent_id
            data = span.span_data
            if data.type != "agent":
                return
            step: dict[str, Any] = {"name": data.name, "kind": "agent"}
            for key in ("tools", "handoffs", "output_type"):
                if getattr(data, key, None) is not None:
                    step[key] = getattr(data, key)
            scope = self._scope(state, span)
            causes: list[Cause] = []
            if state.handoff_cause is not None:
                parent: str | None = state.handoff_cause
                causes.append((state.handoff_cause, v.EDGE_HANDOFF))
                state.handoff_cause = None
            else:
                parent = scope
            state.steps[span.span_id] = self._log(
                state,
                v.STEP_START,
                step,
                parent,
                causes,
                scope,
                _time(span.started_at),
            )

    def span_end(self, span: Any) -> None:
        with self._lock:
            state = self._state(str(span.trace_id))
            if state is None:
                return
            kind = span.span_data.type
            if kind == "agent":
                self._agent_end(state, span)
            elif kind in ("response", "generation"):
                self._model_end(state, span, kind)
            elif kind == "function":
                self._function_end(state, span)
            elif kind == "handoff":
                self._handoff_end(state, span)
            elif kind in ("guardrail", "mcp_tools"):
                self._step_span(state, span, kind)

    def _agent_end(self, state: TraceState, span: Any) -> None:
        start = state.steps.pop(span.span_id, None)
        if start is None:
            return
        data: dict[str, Any] = {"name": span.span_data.name, "kind": "agent"}
        error = getattr(span, "error", None)
        if error:
            data["error"] = plain(error)
            self._log(state, v.STEP_ERROR, data, start, timestamp=_time(span.ended_at))
        else:
            self._log(state, v.STEP_END, data, start, timestamp=_time(span.ended_at))

    def _user_message(self, state: TraceState, call: ModelCall, scope: str | None) -> bool:
        """Log the input's user turn when it is new: the input ends with it and it is not the
        turn logged last, or that turn was answered already (a second run in the trace)."""
        if not call.input:
            return False
        item = call.input[-1]
        if not isinstance(item, Mapping) or item.get("role") != "user":
            return False
        text = content_text(item.get("content"))
        key = (len(call.input), text)
        if state.user_event is not None and key == state.user_key and not state.answered:
            return False
        state.user_event = self._log(
            state,
            v.USER_MESSAGE,
            {"text": text, "role": "user"},
            state.last_answer,
            scope_id=scope,
        )
        state.user_key, state.answered = key, False
        return True

    def _model_end(self, state: TraceState, span: Any, kind: str) -> None:
        call = read_model_call(kind, span.span_data)
        scope = self._scope(state, span)
        new_turn = self._user_message(state, call, scope)
        reads: list[str] = []
        for item in call.input:
            # a Responses function_call_output, or a Chat Completions tool message
            if not isinstance(item, Mapping):
                continue
            if item.get("type") == "function_call_output":
                call_id = item.get("call_id")
            elif item.get("role") == "tool":
                call_id = item.get("tool_call_id")
            else:
                continue
            result = state.results.get(str(call_id))
            if result is not None and result not in state.read:
                reads.append(result)
        state.read.update(reads)
        if not reads and new_turn and state.user_event is not None:
            reads.append(state.user_event)
        start: dict[str, Any] = {
            "model": call.model,
            "provider": "openai_agents",
            "api": kind,
            "messages": call.input,
        }
        if call.instructions:
            start["system_prompt"] = call.instructions
            start["prompt_hash"] = prompt_hash(call.instructions)
        if call.tools:
            start["tools"] = call.tools
        results = [r for r in reads if r != state.user_event]
        if results:
            start["tool_result_ids"] = results
        start_id = self._log(
            state,
            v.LLM_START,
            start,
            reads[-1] if reads else scope,
            [(r, v.EDGE_READ) for r in reads],
            scope,
            _time(span.started_at),
        )
        error = getattr(span, "error", None)
        if error:
            failure = plain(error)
            detail = failure.get("data") if isinstance(failure, Mapping) else None
            detail = detail if isinstance(detail, Mapping) else {}
            self._log(
                state,
                v.LLM_ERROR,
                {
                    "error": str(detail.get("message") or failure.get("message") or failure),
                    "type": str(detail.get("name") or "Error"),
                    "duration_ms": _duration_ms(span),
                },
                start_id,
                scope_id=scope,
                timestamp=_time(span.ended_at),
            )
            return
        end: dict[str, Any] = {
            "text": call.text,
            "token_usage": call.usage,
            "finish_reason": call.finish_reason,
            "response_model": call.response_model,
            "duration_ms": _duration_ms(span),
        }
        if call.calls:
            end["tool_calls"] = [
                {"id": c.call_id, "name": c.name, "args": parse_args(c.arguments)}
                for c in call.calls
            ]
        end_id = self._log(
            state, v.LLM_END, end, start_id, scope_id=scope, timestamp=_time(span.ended_at)
        )
        for requested in call.calls:
            event_id = self._log(
                state,
                v.TOOL_CALL,
                {
                    "tool": requested.name,
                    "args": parse_args(requested.arguments),
                    "call_id": requested.call_id,
                },
                end_id,
                [(end_id, v.EDGE_REQUESTED)],
                scope,
            )
            pending = PendingCall(requested, event_id)
            state.pending.append(pending)
            state.calls[requested.call_id] = pending
        if not call.calls:
            state.last_answer = self._log(
                state,
                v.ASSISTANT_RESPONSE,
                {"text": call.text},
                end_id,
                [(end_id, v.EDGE_PRODUCED)],
                scope,
            )
            state.answered = True

    def _take_pending(
        self, state: TraceState, match: Callable[[PendingCall], bool]
    ) -> PendingCall | None:
        for index, pending in enumerate(state.pending):
            if match(pending):
                return state.pending.pop(index)
        return None

    def _function_end(self, state: TraceState, span: Any) -> None:
        data = span.span_data
        name, arguments = data.name, data.input
        pending = self._take_pending(
            state,
            lambda p: (
                p.call.name == name
                and (arguments is None or parse_args(p.call.arguments) == parse_args(arguments))
            ),
        ) or self._take_pending(state, lambda p: p.call.name == name)
        scope = self._scope(state, span)
        parent = pending.event_id if pending else None
        call_id = pending.call.call_id if pending else None
        error = getattr(span, "error", None)
        if error:
            failure = plain(error)
            detail = failure.get("data") if isinstance(failure, Mapping) else None
            message = detail.get("error") if isinstance(detail, Mapping) else None
            event = self._log(
                state,
                v.TOOL_ERROR,
                {
                    "tool": name,
                    "call_id": call_id,
                    "error": str(message or failure.get("message") or failure),
                    "type": str(failure.get("message") or "Error"),
                    "result": plain(data.output),
                    "handled": data.output is not None,
                    "duration_ms": _duration_ms(span),
                },
                parent,
                scope_id=scope,
                timestamp=_time(span.ended_at),
            )
        else:
            event = self._log(
                state,
                v.TOOL_RESULT,
                {
                    "tool": name,
                    "call_id": call_id,
                    "result": plain(data.output),
                    "duration_ms": _duration_ms(span),
                },
                parent,
                scope_id=scope,
                timestamp=_time(span.ended_at),
            )
        if call_id is not None:
            state.results[call_id] = event

    def _handoff_end(self, state: TraceState, span: Any) -> None:
        data = span.span_data
        target = _style(str(data.to_agent or ""))
        pending = self._take_pending(
            state, lambda p: bool(target) and p.call.name.endswith(target)
        ) or self._take_pending(state, lambda p: p.call.name.startswith("transfer_to"))
        scope = self._scope(state, span)
        result: dict[str, Any] = {
            "tool": pending.call.name if pending else "handoff",
            "call_id": pending.call.call_id if pending else None,
            "result": {"assistant": data.to_agent},
            "handoff": {"from_agent": data.from_agent, "to_agent": data.to_agent},
            "duration_ms": _duration_ms(span),
        }
        event = self._log(
            state,
            v.TOOL_RESULT,
            result,
            pending.event_id if pending else None,
            scope_id=scope,
            timestamp=_time(span.ended_at),
        )
        if pending is not None:
            state.results[pending.call.call_id] = event
        state.handoff_cause = event

    def _step_span(self, state: TraceState, span: Any, kind: str) -> None:
        """A guardrail or an MCP server's tool listing: a ``step_start`` and its close."""
        data = span.span_data
        scope = self._scope(state, span)
        if kind == "guardrail":
            step: dict[str, Any] = {"name": data.name, "kind": "guardrail"}
            outputs: dict[str, Any] = {"triggered": bool(data.triggered)}
        else:
            step = {"name": "list_tools", "kind": "mcp", "server": data.server}
            outputs = {"tools": plain(data.result)}
        cause = state.user_event if kind == "guardrail" and state.user_event else scope
        start = self._log(
            state, v.STEP_START, step, cause, scope_id=scope, timestamp=_time(span.started_at)
        )
        closing = v.STEP_ERROR if getattr(span, "error", None) else v.STEP_END
        end = dict(step, **outputs)
        if closing == v.STEP_ERROR:
            end["error"] = plain(span.error)
        self._log(state, closing, end, start, timestamp=_time(span.ended_at))
