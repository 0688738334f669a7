"""The LangChain callback handler: each hook logs one event naming its cause.

The hook -> event table, sessions and guarantees are in ``docs/design/integrations-langchain.md``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast
from uuid import UUID

import uuid_utils
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import LLMResult

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import (
    InvalidOptionError,
    LedgerLike,
    max_scopes_option,
    tool_names,
)
from agentledger.integrations.langchain._runs import Run, RunTable, Trace
from agentledger.integrations.langchain._usage import (
    finish_reason,
    model_name,
    response_model,
    usage_from_result,
)
from agentledger.integrations.langchain._values import (
    document_to_data,
    message_to_data,
    to_data,
    tool_calls_to_data,
    tool_content,
    trim,
)
from agentledger.protocol import vocabulary as v

__all__ = ["CUSTOM_EVENT", "LedgerCallbackHandler"]

#: Event type of ``dispatch_custom_event(name, data)``; ``data = {"name", "data"}`` (the
#: vocabulary's ``custom_event``).
CUSTOM_EVENT = v.CUSTOM_EVENT

_F = TypeVar("_F", bound=Callable[..., None])

_POSITION_TAG_PREFIXES = ("seq:step:", "graph:step:", "map:key:")
_HIDDEN_TAG = "langsmith:hidden"
_GRAPH_INTEGRATIONS = frozenset({"langgraph", "langchain_create_agent"})


def _hook(fn: _F) -> _F:
    """Guard a hook: our exceptions are logged and counted, never raised into LangChain."""
    where = f"langchain.{fn.__name__}"

    @functools.wraps(fn)
    def wrapper(self: LedgerCallbackHandler, *args: Any, **kwargs: Any) -> None:
        try:
            fn(self, *args, **kwargs)
        except Exception:
            self._count_internal_error()
            with capture_internal_exceptions(where):
                raise

    return cast("_F", wrapper)


def _new_session_id() -> str:
    return str(uuid_utils.uuid7())


def _elapsed_ms(since_s: float) -> float:
    return round((time.perf_counter() - since_s) * 1000.0, 3)


def _is_langgraph_error(error: BaseException, name: str) -> bool:
    """True when ``error`` is (a subclass of) LangGraph's exception class ``name``.

    Checked by name along the MRO so this module does not import LangGraph.
    """
    return any(
        cls.__name__ == name and cls.__module__.startswith("langgraph")
        for cls in type(error).__mro__
    )


class LedgerCallbackHandler(BaseCallbackHandler):
    """Log LangChain / LangGraph runs to an agentledger ledger, each event naming its cause.

    One instance serves sync runs, async runs (``ainvoke``, ``astream``), thread pools and
    LangGraph parallel branches at once: state is per instance, keyed by ``run_id`` and
    guarded by a lock (field cases H02, H17, H21). It runs inline (``run_inline = True``): in
    async runs LangChain calls it on the event-loop thread instead of hopping to an executor,
    which is safe because no hook blocks.

    Args:
        ledger: an :class:`agentledger.client.Ledger` (anything with a non-blocking
            ``log(event, data, *, session_id, parent_id, metadata)`` returning an object with
            ``event_id``).
        session_id: put every event into this session; default: LangGraph's ``thread_id``, else
            one new session per root run.
        metadata: a JSON object attached as ``metadata`` to every event (e.g. a config version).
        capture_tokens: also keep the streamed tokens of a model call in its ``llm_end``
            (``data.tokens = [[offset_ms, text], ...]``); off by default (size).
        max_field_chars: strings longer than this (characters) are cut with a marker naming the
            original size.
        max_scopes: open runs tracked at most (default 10 000); the oldest is evicted beyond it
            (a run left open forever, e.g. an abandoned stream, cannot grow memory).
        max_runs: deprecated name of ``max_scopes`` (emits a ``DeprecationWarning``).

    Raises:
        ValueError: ``max_field_chars`` or ``max_scopes`` below 1, or both ``max_scopes`` and
            ``max_runs`` given (an ``InvalidOptionError``, also a ``LedgerError``).
    """

    raise_error = False
    run_inline = True

    def __init__(
        self,
        ledger: LedgerLike,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        capture_tokens: bool = False,
        max_field_chars: int = 4_000,
        max_scopes: int | None = None,
        max_runs: int | None = None,
    ) -> None:
        super().__init__()
        if max_field_chars < 1:
            raise InvalidOptionError("max_field_chars must be >= 1")
        max_scopes = max_scopes_option(max_scopes, max_runs, stacklevel=3)
        self._ledger = ledger
        self._session_id = session_id
        self._metadata = dict(metadata) if metadata else None
        self._capture_tokens = capture_tokens
        self._max_chars = max_field_chars
        self._runs = RunTable(max_scopes)
        self._errors_lock = threading.Lock()
        self._internal_errors = 0

    # ----------------------------------------------------------------- introspection

    @property
    def open_runs(self) -> int:
        """Runs started and not yet ended (0 once every run finished; field case H11)."""
        return len(self._runs)

    @property
    def evicted_runs(self) -> int:
        """Open runs dropped because ``max_scopes`` was reached."""
        return self._runs.evicted

    @property
    def internal_errors(self) -> int:
        """Exceptions raised by this handler's own code and swallowed (logged on the
        ``agentledger`` logger)."""
        return self._internal_errors

    def _count_internal_error(self) -> None:
        with self._errors_lock:
            self._internal_errors += 1

    # ----------------------------------------------------------------- plumbing

    def _log(self, event: str, data: dict[str, Any], trace: Trace, parent_id: str | None) -> str:
        ref = self._ledger.log(
            event,
            data,
            session_id=trace.session_id,
            parent_id=parent_id,
            metadata=self._metadata,
        )
        return ref.event_id

    def _data(self, value: Any) -> Any:
        return to_data(value, self._max_chars)

    def _enclosing(
        self, parent_run_id: UUID | None, metadata: Mapping[str, Any] | None
    ) -> tuple[Trace, str | None, bool]:
        """(trace, parent event id, is_root) for a run starting under ``parent_run_id``."""
        parent = self._runs.get(parent_run_id)
        if parent is not None:
            return parent.trace, parent.event_id, False
        session = self._session_id
        if session is None and metadata:
            thread_id = metadata.get("thread_id")
            if isinstance(thread_id, str | int) and str(thread_id):
                session = str(thread_id)
        return Trace(session_id=session or _new_session_id()), None, True

    def _close_with_error(self, run: Run, error: BaseException, error_event: str) -> None:
        """Log the end of a failed run; LangGraph bubble-ups are not failures."""
        if _is_langgraph_error(error, "GraphInterrupt"):
            interrupts = error.args[0] if error.args else ()
            if not isinstance(interrupts, Sequence):
                interrupts = (interrupts,)
            self._log(
                v.INTERRUPTED,
                {
                    "reason": "interrupt",
                    "name": run.name,
                    "kind": run.kind,
                    "interrupts": [
                        {"id": getattr(i, "id", None), "value": self._data(getattr(i, "value", i))}
                        for i in interrupts
                    ],
                },
                run.trace,
                run.event_id,
            )
            return
        if _is_langgraph_error(error, "GraphBubbleUp"):  # e.g. ParentCommand: control flow
            bubble = {"name": run.name, "kind": run.kind, "bubble_up": type(error).__name__}
            self._log(v.STEP_END, bubble, run.trace, run.event_id)
            return
        data: dict[str, Any] = {
            "error": trim(str(error), self._max_chars),
            "type": type(error).__name__,
            "duration_ms": _elapsed_ms(run.started_s),
        }
        if error_event == v.TOOL_ERROR:
            data.update(tool=run.name, call_id=run.call_id)
        elif error_event == v.STEP_ERROR:
            data.update(name=run.name, kind=run.kind)
        self._log(error_event, data, run.trace, run.event_id)

    # ----------------------------------------------------------------- chains / graph nodes

    @_hook
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``step_start`` with ``name``, ``kind``, ``inputs`` and LangGraph position fields."""
        trace, parent_id, is_root = self._enclosing(parent_run_id, metadata)
        name = kwargs.get("name") or (serialized or {}).get("name") or "chain"
        meta = metadata or {}
        started = time.perf_counter()
        if tags and _HIDDEN_TAG in tags:  # internal plumbing: children attach to the parent
            self._runs.add(run_id, Run(parent_id, trace, "hidden", name, started, is_root))
            return
        node = meta.get("langgraph_node")
        if node is not None and name == node:
            kind = "graph_node"
        elif node is None and meta.get("ls_integration") in _GRAPH_INTEGRATIONS:
            kind = "graph"
        else:
            kind = "chain"
        data: dict[str, Any] = {"name": name, "kind": kind, "inputs": self._data(inputs)}
        if kind == "graph_node":
            data["langgraph_node"] = node
            data["langgraph_step"] = meta.get("langgraph_step")
            data["checkpoint_ns"] = meta.get("langgraph_checkpoint_ns")
        run_type = kwargs.get("run_type")
        if run_type:
            data["run_type"] = run_type
        user_tags = [t for t in tags or () if not t.startswith(_POSITION_TAG_PREFIXES)]
        if user_tags:
            data["tags"] = user_tags
        event_id = self._log(v.STEP_START, data, trace, parent_id)
        self._runs.add(run_id, Run(event_id, trace, kind, name, started, is_root))
        if is_root:
            self._log_user_message(inputs, trace, event_id)

    def _log_user_message(self, inputs: Any, trace: Trace, parent_id: str) -> None:
        messages = inputs.get("messages") if isinstance(inputs, Mapping) else None
        if not isinstance(messages, Sequence) or not messages:
            return
        last = messages[-1]
        text: Any
        if isinstance(last, HumanMessage):
            text = last.text
        elif isinstance(last, Mapping) and last.get("role") in ("user", "human"):
            text = last.get("content")
        else:
            return
        self._log(v.USER_MESSAGE, {"text": self._data(text), "role": "user"}, trace, parent_id)

    @_hook
    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``step_end`` with ``outputs``; a root run ending on an AI message also logs
        ``assistant_response``."""
        run = self._runs.pop(run_id)
        if run is None or run.kind == "hidden":
            return
        if run.is_root:
            self._log_assistant_response(outputs, run)
        data: dict[str, Any] = {
            "name": run.name,
            "kind": run.kind,
            "outputs": self._data(outputs),
            "duration_ms": _elapsed_ms(run.started_s),
        }
        if "inputs" in kwargs:  # streamed runs report their real inputs only at the end
            data["inputs"] = self._data(kwargs["inputs"])
        self._log(v.STEP_END, data, run.trace, run.event_id)

    def _log_assistant_response(self, outputs: Any, run: Run) -> None:
        messages = outputs.get("messages") if isinstance(outputs, Mapping) else None
        if not isinstance(messages, Sequence) or not messages:
            return
        last = messages[-1]
        if not isinstance(last, AIMessage) or last.tool_calls:
            return
        trace = run.trace
        parent = (last.id and trace.message_events.get(last.id)) or trace.last_llm_end
        self._log(
            v.ASSISTANT_RESPONSE,
            {"text": self._data(last.text)},
            trace,
            parent or run.event_id,
        )

    @_hook
    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``step_error``; a LangGraph ``interrupt()`` is logged as ``interrupted`` instead."""
        run = self._runs.pop(run_id)
        if run is None or run.kind == "hidden":
            return
        self._close_with_error(run, error, v.STEP_ERROR)

    # ----------------------------------------------------------------- models

    @_hook
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

    @_hook
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

    @_hook
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

    @_hook
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
        data["duration_ms"] = _elapsed_ms(run.started_s)
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

    @_hook
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

    @_hook
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

    @_hook
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
        duration = _elapsed_ms(run.started_s)
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

    @_hook
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

    # ----------------------------------------------------------------- retrievers

    @_hook
    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """No event yet: ``retrieval`` is logged once the documents are known."""
        trace, parent_id, is_root = self._enclosing(parent_run_id, metadata)
        name = kwargs.get("name") or (serialized or {}).get("name") or "retriever"
        run = Run(parent_id, trace, "retriever", name, time.perf_counter(), is_root, query=query)
        self._runs.add(run_id, run)

    @_hook
    def on_retriever_end(
        self,
        documents: Sequence[Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``retrieval`` with ``query``, ``retriever`` and ``documents`` (id, score, text)."""
        run = self._runs.pop(run_id)
        if run is None:
            return
        docs = [
            document_to_data(d, self._max_chars) if hasattr(d, "page_content") else self._data(d)
            for d in documents
        ]
        data = {
            "query": trim(run.query or "", self._max_chars),
            "retriever": run.name,
            "documents": docs,
            "duration_ms": _elapsed_ms(run.started_s),
        }
        self._log(v.RETRIEVAL, data, run.trace, run.event_id)

    @_hook
    def on_retriever_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``retrieval`` with no documents and the ``error`` / ``type``."""
        run = self._runs.pop(run_id)
        if run is None:
            return
        data = {
            "query": trim(run.query or "", self._max_chars),
            "retriever": run.name,
            "documents": [],
            "error": trim(str(error), self._max_chars),
            "type": type(error).__name__,
            "duration_ms": _elapsed_ms(run.started_s),
        }
        self._log(v.RETRIEVAL, data, run.trace, run.event_id)

    # ----------------------------------------------------------------- custom events

    @_hook
    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``custom_event`` with ``name`` and ``data``; its parent is the enclosing run
        (LangChain passes the enclosing run's id as ``run_id`` here)."""
        run = self._runs.get(run_id)
        if run is not None:
            trace, parent_id = run.trace, run.event_id
        else:
            trace, parent_id, _ = self._enclosing(None, metadata)
        self._log(CUSTOM_EVENT, {"name": name, "data": self._data(data)}, trace, parent_id)
