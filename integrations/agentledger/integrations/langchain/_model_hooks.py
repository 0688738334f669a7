"""The model and tool hooks of the LangChain handler.

A model call logs ``llm_start`` / ``llm_end`` (or ``llm_error``); a tool call it requested logs
``tool_call`` under that ``llm_end`` (matched by ``tool_call_id``) and its ``tool_result`` or
``tool_error``; the next model call names the results it reads (``tool_result_ids``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import LLMResult

from agentledger.integrations._shared import tool_names
from agentledger.integrations.langchain._core import HandlerCore, elapsed_ms, hook
from agentledger.integrations.langchain._runs import Run, Trace
from agentledger.integrations.langchain._usage import (
    finish_reason,
    model_name,
    response_model,
    usage_from_result,
)
from agentledger.integrations.langchain._values import (
    message_to_data,
    tool_calls_to_data,
    tool_content,
    trim,
)
from agentledger.protocol import vocabulary as v

__all__ = ["ModelHooks"]


class ModelHooks(HandlerCore):
    """Hooks of chat models, completion models and tools."""

    # ----------------------------------------------------------------- models

    @hook
    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm_start`` with ``model``, ``provider``, ``messages`` and ``tool_result_ids``
        (event ids of the tool results this call reads, matched by ``tool_call_id``)."""
        trace, parent_id, is_root = self._enclosing(parent_run_id, metadata)
        batch = [[message_to_data(m, self._max_chars) for m in prompt] for prompt in messages]
        data = self._model_start_data(serialized, metadata, kwargs)
        data["messages"] = batch[0] if len(batch) == 1 else batch
        read = self._tool_results_read(messages[-1] if messages else [], trace)
        if read:
            data["tool_result_ids"] = read
        event_id = self._log(v.LLM_START, data, trace, parent_id)
        name = data["model"] or "model"
        self._runs.add(run_id, Run(event_id, trace, "llm", name, time.perf_counter(), is_root))

    @staticmethod
    def _tool_results_read(prompt: Sequence[BaseMessage], trace: Trace) -> list[str]:
        """Event ids of the tool results at the end of ``prompt`` (after the last AI turn)."""
        read: list[str] = []
        for message in reversed(prompt):
            if not isinstance(message, ToolMessage):
                break
            event_id = trace.call_results.get(message.tool_call_id)
            if event_id:
                read.append(event_id)
        read.reverse()
        return read

    def _model_start_data(
        self,
        serialized: dict[str, Any] | None,
        metadata: dict[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> dict[str, Any]:
        params = kwargs.get("invocation_params") or {}
        meta = metadata or {}
        data: dict[str, Any] = {
            "model": model_name(serialized, params, meta),
            "provider": meta.get("ls_provider"),
        }
        tools = tool_names(params.get("tools"))
        if tools:
            data["tools"] = tools
        if params:
            data["invocation_params"] = self._data(
                {k: val for k, val in params.items() if k not in ("tools", "_type")}
            )
        if kwargs.get("name"):
            data["name"] = kwargs["name"]
        return data

    @hook
    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm_start`` for completion (string-prompt) models; ``messages`` are the prompts."""
        trace, parent_id, is_root = self._enclosing(parent_run_id, metadata)
        data = self._model_start_data(serialized, metadata, kwargs)
        texts = [trim(p, self._max_chars) for p in prompts]
        data["messages"] = [{"role": "prompt", "content": t} for t in texts]
        event_id = self._log(v.LLM_START, data, trace, parent_id)
        name = data["model"] or "model"
        self._runs.add(run_id, Run(event_id, trace, "llm", name, time.perf_counter(), is_root))

    @hook
    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: Any = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """No event: records time to first token (and the token with ``capture_tokens``)."""
        run = self._runs.get(run_id)
        if run is None:
            return
        now = time.perf_counter()
        if run.first_token_s is None:
            run.first_token_s = now
        run.token_count += 1
        if self._capture_tokens and token:
            if run.tokens is None:
                run.tokens = []
            run.tokens.append([round((now - run.started_s) * 1000.0, 3), self._data(token)])

    @hook
    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm_end`` with ``text``, ``token_usage`` (``None`` when unknown), ``tool_calls``,
        ``finish_reason``, ``duration_ms`` and, when streamed, ``ttft_ms``."""
        run = self._runs.pop(run_id)
        if run is None:  # end without a start we saw: log it as its own root
            trace, _, _ = self._enclosing(parent_run_id, None)
            run = Run(None, trace, "llm", "model", time.perf_counter(), True)
        generation = next((g for batch in response.generations for g in batch), None)
        message = getattr(generation, "message", None)
        model = response_model(response) or (run.name if run.name != "model" else None)
        data: dict[str, Any] = {
            "text": trim(generation.text, self._max_chars) if generation is not None else "",
            "token_usage": usage_from_result(response, model),
        }
        tool_calls = message.tool_calls if isinstance(message, AIMessage) else None
        if tool_calls:
            data["tool_calls"] = tool_calls_to_data(tool_calls, self._max_chars)
        reason = finish_reason(response)
        if reason:
            data["finish_reason"] = reason
        data["duration_ms"] = elapsed_ms(run.started_s)
        if run.first_token_s is not None:
            data["ttft_ms"] = round((run.first_token_s - run.started_s) * 1000.0, 3)
            data["streamed_chunks"] = run.token_count
        if run.tokens:
            data["tokens"] = self._data(run.tokens)
        generations = sum(len(batch) for batch in response.generations)
        if generations > 1:
            data["generations"] = [
                trim(g.text, self._max_chars) for batch in response.generations for g in batch
            ]
        event_id = self._log(v.LLM_END, data, run.trace, run.event_id)
        trace = run.trace
        trace.last_llm_end = event_id
        if message is not None and message.id:
            self._runs.link(trace.message_events, message.id, event_id)
        for call in tool_calls or ():
            call_id = call.get("id")
            if call_id:
                self._runs.link(trace.call_parents, call_id, event_id)

    @hook
    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``llm_error`` with ``error`` and ``type`` (exactly one per failed call, H15)."""
        run = self._runs.pop(run_id)
        if run is None:
            return
        self._close_with_error(run, error, v.LLM_ERROR)

    # ----------------------------------------------------------------- tools

    @hook
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``tool_call`` with ``tool`` (``serialized["name"]``), ``args`` as an object (H04)
        and ``call_id``; its parent is the ``llm_end`` that requested the call, if seen."""
        trace, parent_id, is_root = self._enclosing(parent_run_id, metadata)
        tool = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        call_id = kwargs.get("tool_call_id")
        args = self._data(inputs) if isinstance(inputs, Mapping) else {"input": input_str}
        data = {"tool": tool, "args": args, "call_id": call_id}
        requested_by = trace.call_parents.get(call_id) if call_id else None
        event_id = self._log(v.TOOL_CALL, data, trace, requested_by or parent_id)
        run = Run(event_id, trace, "tool", tool, time.perf_counter(), is_root, call_id=call_id)
        self._runs.add(run_id, run)

    @hook
    def on_tool_end(
        self,
        output: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``tool_result``; a ``ToolMessage`` with status ``error`` (an error the tool or the
        agent handled) is a ``tool_error`` with ``handled: true`` (H22)."""
        run = self._runs.pop(run_id)
        if run is None:
            return
        duration = elapsed_ms(run.started_s)
        if isinstance(output, ToolMessage):
            status = output.status
            result = self._data(tool_content(output.content))
        else:
            status = "success"
            result = self._data(output)
        if status == "error":
            event = v.TOOL_ERROR
            data = {
                "tool": run.name,
                "error": result,
                "type": "HandledToolError",
                "handled": True,
                "call_id": run.call_id,
                "duration_ms": duration,
            }
        else:
            event = v.TOOL_RESULT
            data = {
                "tool": run.name,
                "result": result,
                "call_id": run.call_id,
                "duration_ms": duration,
                "status": status,
            }
        event_id = self._log(event, data, run.trace, run.event_id)
        if run.call_id:
            self._runs.link(run.trace.call_results, run.call_id, event_id)

    @hook
    def on_tool_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``tool_error`` naming the tool kept from ``on_tool_start`` (this hook lacks it)."""
        run = self._runs.pop(run_id)
        if run is None:
            return
        self._close_with_error(run, error, v.TOOL_ERROR)
