"""A Pydantic AI capability whose run, model-request and tool hooks log ledger events with
their causes. Each hook is guarded and returns what it was given unchanged (an error hook
re-raises the framework's error). The reasoning is in ``docs/design/integrations-pydantic-ai.md``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import uuid_utils
from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._prompt import content_text, prompt_hash
from agentledger.integrations._shared import CausalLedgerLike, LedgerLike, accepts_keywords
from agentledger.protocol import vocabulary as v

__all__ = ["LedgerCapability", "SessionOption"]

#: ``session_id=``: a fixed id, or a function of the ``RunContext`` returning one.
SessionOption = str | Callable[[RunContext[Any]], str | None] | None


@dataclass
class _Run:
    session_id: str
    step: str | None = None
    user_event: str | None = None
    last_answer: str | None = None
    calls: dict[str, str] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)
    read: set[str] = field(default_factory=set)
    llm_start: str | None = None
    started_s: float = 0.0
    seen_user_parts: int = 0


def _plain(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return repr(value)


def _usage(response: ModelResponse) -> dict[str, Any]:
    usage = response.usage
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "reasoning_tokens": usage.details.get("reasoning_tokens"),
        "model": response.model_name,
    }


class LedgerCapability(AbstractCapability[Any]):
    """Logs every run of the agent it is given to (``Agent(..., capabilities=[...])``).

    Args:
        ledger: an :class:`agentledger.client.Ledger` (anything with its non-blocking ``log``).
        session_id: the session of every event; or a function of the run's ``RunContext``.
            Default: the run's ``conversation_id``, else its ``run_id``.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: runs open at once remembered at most (default 10 000).
    """

    def __init__(
        self,
        ledger: LedgerLike,
        *,
        session_id: SessionOption = None,
        metadata: Mapping[str, Any] | None = None,
        max_scopes: int = 10_000,
    ) -> None:
        self._ledger = ledger
        self._causal = accepts_keywords(ledger.log, "caused_by", "scope_id")
        self._session_option = session_id
        self._metadata = dict(metadata) if metadata else None
        self._max = max_scopes
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- plumbing

    def _log(
        self,
        run: _Run,
        event: str,
        data: dict[str, Any],
        parent_id: str | None,
        caused_by: Sequence[tuple[str, str]] = (),
    ) -> str:
        if self._causal:
            causal = cast("CausalLedgerLike", self._ledger)
            scope = run.step if run.step != parent_id else None
            return causal.log(
                event,
                data,
                session_id=run.session_id,
                parent_id=parent_id,
                metadata=self._metadata,
                caused_by=list(caused_by),
                scope_id=scope,
            ).event_id
        return self._ledger.log(
            event, data, session_id=run.session_id, parent_id=parent_id, metadata=self._metadata
        ).event_id

    def _key(self, ctx: RunContext[Any]) -> str:
        return ctx.run_id or str(id(ctx.usage))

    def _run(self, ctx: RunContext[Any]) -> _Run:
        key = self._key(ctx)
        with self._lock:
            run = self._runs.get(key)
            if run is None:
                session = None
                if callable(self._session_option):
                    session = self._session_option(ctx)
                elif self._session_option:
                    session = self._session_option
                session = session or ctx.conversation_id or ctx.run_id or str(uuid_utils.uuid7())
                run = self._runs[key] = _Run(session)
                while len(self._runs) > self._max:
                    self._runs.popitem(last=False)
            return run

    # ----------------------------------------------------------------- run

    async def before_run(self, ctx: RunContext[Any]) -> None:
        with capture_internal_exceptions("pydantic_ai.before_run"):
            run = self._run(ctx)
            name = getattr(ctx.agent, "name", None) if ctx.agent is not None else None
            run.step = self._log(
                run, v.STEP_START, {"name": name or "agent", "kind": "agent"}, None
            )

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        with capture_internal_exceptions("pydantic_ai.after_run"):
            self._close(ctx, v.STEP_END, {})
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> Any:
        with capture_internal_exceptions("pydantic_ai.on_run_error"):
            self._close(ctx, v.STEP_ERROR, {"error": str(error), "type": type(error).__name__})
        raise error

    def _close(self, ctx: RunContext[Any], event: str, extra: dict[str, Any]) -> None:
        with self._lock:
            run = self._runs.pop(self._key(ctx), None)
        if run is None or run.step is None:
            return
        name = getattr(ctx.agent, "name", None) if ctx.agent is not None else None
        step, run.step = run.step, None
        self._log(run, event, {"name": name or "agent", "kind": "agent", **extra}, step)

    # ----------------------------------------------------------------- model requests

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        with capture_internal_exceptions("pydantic_ai.before_model_request"):
            self._model_start(self._run(ctx), request_context)
        return request_context

    def _model_start(self, run: _Run, request: ModelRequestContext) -> None:
        reads: list[str] = []
        user_parts = [
            p
            for m in request.messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
        ]
        if len(user_parts) > run.seen_user_parts:
            run.seen_user_parts = len(user_parts)
            text = content_text(user_parts[-1].content)
            if isinstance(user_parts[-1].content, Sequence) and not text:
                text = str(user_parts[-1].content)
            run.user_event = self._log(
                run, v.USER_MESSAGE, {"text": text, "role": "user"}, run.last_answer
            )
            reads.append(run.user_event)
        last = request.messages[-1] if request.messages else None
        if isinstance(last, ModelRequest):
            for part in last.parts:
                if isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_call_id:
                    if part.tool_call_id not in run.results:
                        self._outcome(run, part)
                    result = run.results.get(part.tool_call_id)
                    if result is not None and result not in run.read:
                        reads.append(result)
        run.read.update(reads)
        system = [
            p.content
            for m in request.messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, SystemPromptPart)
        ]
        instructions = last.instructions if isinstance(last, ModelRequest) else None
        if instructions:
            system.append(instructions)
        params = request.model_request_parameters
        data: dict[str, Any] = {
            "model": request.model_id or request.model.model_name,
            "provider": request.model.system,
            "messages": [
                {"kind": m.kind, "parts": [_plain(_part(p)) for p in m.parts]}
                for m in request.messages
            ],
            "tools": [t.name for t in params.function_tools],
            "streaming": request.streaming,
        }
        if system:
            data["system_prompt"] = "\n\n".join(system)
            data["prompt_hash"] = prompt_hash(data["system_prompt"])
        results = [r for r in reads if r != run.user_event]
        if results:
            data["tool_result_ids"] = results
        run.llm_start = self._log(
            run,
            v.LLM_START,
            data,
            reads[-1] if reads else run.step,
            [(r, v.EDGE_READ) for r in reads],
        )
        run.started_s = time.perf_counter()

    def _outcome(self, run: _Run, part: ToolReturnPart | RetryPromptPart) -> None:
        """A tool outcome the execute hooks never saw (``ModelRetry``, arguments that failed
        validation, a denied call): the part the request returns is its outcome."""
        call = run.calls.get(part.tool_call_id)
        if call is None:
            return
        content = part.content if isinstance(part.content, str) else _plain(part.content)
        outcome = getattr(part, "outcome", "retried")
        data: dict[str, Any] = {"tool": part.tool_name, "call_id": part.tool_call_id}
        if isinstance(part, ToolReturnPart) and outcome == "success":
            run.results[part.tool_call_id] = self._log(
                run, v.TOOL_RESULT, {**data, "result": _plain(content)}, call
            )
            return
        data.update(error=content, type="ModelRetry" if outcome == "retried" else str(outcome))
        data["handled"] = True
        run.results[part.tool_call_id] = self._log(run, v.TOOL_ERROR, data, call)

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        with capture_internal_exceptions("pydantic_ai.after_model_request"):
            self._model_end(self._run(ctx), request_context, response)
        return response

    def _model_end(self, run: _Run, request: ModelRequestContext, response: ModelResponse) -> None:
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        output_tools = {t.name for t in request.model_request_parameters.output_tools}
        data: dict[str, Any] = {
            "text": text,
            "token_usage": _usage(response),
            "finish_reason": response.finish_reason,
            "response_model": response.model_name,
            "duration_ms": round((time.perf_counter() - run.started_s) * 1000.0, 3),
        }
        if calls:
            data["tool_calls"] = [
                {"id": c.tool_call_id, "name": c.tool_name, "args": c.args_as_dict()} for c in calls
            ]
        end = self._log(run, v.LLM_END, data, run.llm_start)
        answered = False
        for part in calls:
            if part.tool_name in output_tools:
                args = part.args_as_dict()
                run.last_answer = self._log(
                    run,
                    v.ASSISTANT_RESPONSE,
                    {"text": json.dumps(args, default=str), "structured": args},
                    end,
                    [(end, v.EDGE_PRODUCED)],
                )
                answered = True
                continue
            run.calls[part.tool_call_id] = self._log(
                run,
                v.TOOL_CALL,
                {"tool": part.tool_name, "args": part.args_as_dict(), "call_id": part.tool_call_id},
                end,
                [(end, v.EDGE_REQUESTED)],
            )
        if not calls and not answered:
            run.last_answer = self._log(
                run, v.ASSISTANT_RESPONSE, {"text": text}, end, [(end, v.EDGE_PRODUCED)]
            )

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        with capture_internal_exceptions("pydantic_ai.on_model_request_error"):
            run = self._run(ctx)
            self._log(
                run,
                v.LLM_ERROR,
                {"error": str(error), "type": type(error).__name__},
                run.llm_start,
            )
        raise error

    # ----------------------------------------------------------------- tools

    async def after_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        result: Any,
    ) -> Any:
        with capture_internal_exceptions("pydantic_ai.after_tool_execute"):
            run = self._run(ctx)
            event = self._log(
                run,
                v.TOOL_RESULT,
                {"tool": call.tool_name, "call_id": call.tool_call_id, "result": _plain(result)},
                run.calls.get(call.tool_call_id),
            )
            run.results[call.tool_call_id] = event
        return result

    async def on_tool_execute_error(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        error: Exception,
    ) -> Any:
        with capture_internal_exceptions("pydantic_ai.on_tool_execute_error"):
            run = self._run(ctx)
            event = self._log(
                run,
                v.TOOL_ERROR,
                {
                    "tool": call.tool_name,
                    "call_id": call.tool_call_id,
                    "error": str(error),
                    "type": type(error).__name__,
                },
                run.calls.get(call.tool_call_id),
            )
            run.results[call.tool_call_id] = event
        raise error


def _part(part: Any) -> dict[str, Any]:
    kind = getattr(part, "part_kind", type(part).__name__)
    out: dict[str, Any] = {"part_kind": kind}
    for name in ("content", "tool_name", "tool_call_id", "args"):
        if hasattr(part, name):
            out[name] = getattr(part, name)
    return out
