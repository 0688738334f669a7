"""The model and tool hooks of the LangChain handler.

A model call logs ``llm_start`` / ``llm_end`` (or ``llm_error``); a tool call it requested logs
``tool_call`` caused by that ``llm_end`` (matched by ``tool_call_id``) and its ``tool_result`` or
``tool_error``; the next model call is caused by the inputs it reads (tool results, the user's
message, retrievals) and lists the tool results at the end of its prompt in
``tool_result_ids``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import LLMResult

from agentledger.integrations._prompt import prompt_fields
from agentledger.integrations._shared import tool_names
from agentledger.integrations.langchain._answer import Answer
from agentledger.integrations.langchain._core import HandlerCore, elapsed_ms, hook
from agentledger.integrations.langchain._runs import ModelOutput, Run, Trace
from agentledger.integrations.langchain._usage import (
    finish_reason,
    model_name,
    response_model,
    usage_from_result,
)
from agentledger.integrations.langchain._values import (
    command_to_data,
    is_langgraph_object,
    message_to_data,
    tool_calls_to_data,
    tool_content,
    trim,
)
from agentledger.protocol import vocabulary as v

__all__ = ["ModelHooks"]


def _command_tool_message(command: Any, call_id: str | None) -> ToolMessage | None:
    """The tool message a ``Command`` returned by a tool carries in its update (the one for
    ``call_id`` when there are several)."""
    update = getattr(command, "update", None)
    messages = update.get("messages") if isinstance(update, Mapping) else None
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        return None
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    for message in tool_messages:
        if message.tool_call_id == call_id:
            return message
    return tool_messages[-1] if tool_messages else None


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
        (event ids of the tool results at the end of its prompt, matched by ``tool_call_id``).

        Its cause is the newest input it reads (see :meth:`_start_model`); a model called with
        no enclosing run (``model.invoke(...)``) first logs the user turn of its messages."""
        trace, scope_id, is_root = self._enclosing(parent_run_id, metadata)
        if is_root:
            self._log_user_turn(messages[0] if len(messages) == 1 else None, trace)
        batch = [[message_to_data(m, self._max_chars) for m in prompt] for prompt in messages]
        data = self._model_start_data(serialized, metadata, kwargs)
        data["messages"] = batch[0] if len(batch) == 1 else batch
        prompt = messages[-1] if messages else []
        # the system prompt whole (messages are trimmed), with its hash as a prompt version
        data.update(prompt_fields({"role": m.type, "content": m.content} for m in prompt))
        tail = trace.conversation.tool_results_in(prompt)
        if tail:
            data["tool_result_ids"] = tail
        since = self._clock_of(parent_run_id, trace)
        self._start_model(run_id, data, trace, scope_id, is_root, prompt, since)

    def _start_model(
        self,
        run_id: UUID,
        data: dict[str, Any],
        trace: Trace,
        scope_id: str | None,
        is_root: bool,
        prompt: Sequence[BaseMessage],
        since: int,
    ) -> None:
        """Log ``llm_start`` caused by the inputs it reads (the user's message, tool results,
        retrievals new to it: ``Conversation.reads``), the newest one as ``parent_id``; with
        none, the enclosing step. ``since``: the conversation's clock when the enclosing step
        started."""
        reads, mark = trace.conversation.reads(prompt, since)
        parent_id = reads[-1] if reads else scope_id
        causes = [(event_id, v.EDGE_READ) for event_id in reads]
        event_id = self._log(
            v.LLM_START, data, trace, parent_id, caused_by=causes, scope_id=scope_id
        )
        name = data["model"] or "model"
        run = Run(event_id, trace, "llm", name, time.perf_counter(), is_root, clock=mark)
        self._runs.add(run_id, run)

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
            schemas = [t for t in params["tools"] if isinstance(t, Mapping)]
            if schemas:  # the definitions the model was offered (a case can offer them again)
                data["tool_schemas"] = self._whole(schemas)
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
        trace, scope_id, is_root = self._enclosing(parent_run_id, metadata)
        if is_root and len(prompts) == 1:
            self._log_user_turn(prompts[0], trace)
        data = self._model_start_data(serialized, metadata, kwargs)
        texts = [trim(p, self._max_chars) for p in prompts]
        data["messages"] = [{"role": "prompt", "content": t} for t in texts]
        since = self._clock_of(parent_run_id, trace)
        self._start_model(run_id, data, trace, scope_id, is_root, (), since)

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
            run = Run(None, trace, "llm", "model", time.perf_counter())
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
        self._model_answered(run, event_id, message, generation.text if generation else "")

    def _model_answered(self, run: Run, event_id: str, message: Any, text: str) -> None:
        """Record a completed model call: what it read is read, its message and tool calls
        are linked to its ``llm_end``; a model called on its own logs its answer."""
        trace = run.trace
        conversation = trace.conversation
        conversation.model_done(run.clock, getattr(message, "id", None))
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        call_ids = [call_id for c in calls if (call_id := c.get("id"))]
        conversation.model_output(event_id, getattr(message, "id", None), call_ids)
        args = tuple(c.get("args") for c in calls)
        trace.last_output = ModelOutput(event_id, text, args)
        if run.is_root and not calls:
            answer = Answer(text, message if isinstance(message, AIMessage) else None)
            self._log_answer(answer, trace, event_id)

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
        trace, scope_id, is_root = self._enclosing(parent_run_id, metadata)
        tool = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        call_id = kwargs.get("tool_call_id")
        args = self._data(inputs) if isinstance(inputs, Mapping) else {"input": input_str}
        data = {"tool": tool, "args": args, "call_id": call_id}
        requested_by = trace.conversation.requested_by(call_id)
        event_id = self._log(
            v.TOOL_CALL,
            data,
            trace,
            requested_by or scope_id,
            caused_by=[(requested_by, v.EDGE_REQUESTED)] if requested_by else (),
            scope_id=scope_id,
        )
        started = time.perf_counter()
        clock = trace.conversation.now()
        run = Run(event_id, trace, "tool", tool, started, is_root, call_id=call_id, clock=clock)
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
        agent handled) is a ``tool_error`` with ``handled: true`` (H22). A tool's artifact
        (``response_format="content_and_artifact"``) is kept as ``artifact``; a LangGraph
        ``Command`` the tool returned is kept as ``command`` (its result is the tool message
        in the command's update)."""
        run = self._runs.pop(run_id)
        if run is None:
            return
        duration = elapsed_ms(run.started_s)
        extra: dict[str, Any] = {}
        if is_langgraph_object(output, "Command"):
            extra["command"] = command_to_data(output, self._max_chars)
            output = _command_tool_message(output, run.call_id) or ""
        # the result whole up to TURN_CHARS: the model read it, and a case replays it
        if isinstance(output, ToolMessage):
            status = output.status
            result = self._whole(tool_content(output.content))
            if output.artifact is not None:
                extra["artifact"] = self._data(output.artifact)
        else:
            status = "success"
            result = self._whole(output)
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
        data.update(extra)
        event_id = self._log(event, data, run.trace, run.event_id)
        run.trace.conversation.add_input(event_id, run.call_id)

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
        event_id = self._close_with_error(run, error, v.TOOL_ERROR)
        run.trace.conversation.add_input(event_id, run.call_id)  # the agent may read it
