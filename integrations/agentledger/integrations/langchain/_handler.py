"""The LangChain callback handler: each hook logs one event naming its cause.

Chain, graph-node, retriever and custom-event hooks live here; model and tool hooks in
``_model_hooks``, shared plumbing in ``_core``. The hook -> event table, sessions and
guarantees: ``docs/design/integrations-langchain.md``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from agentledger.integrations.langchain._answer import final_answer, structured_answer
from agentledger.integrations.langchain._core import elapsed_ms, hook
from agentledger.integrations.langchain._model_hooks import ModelHooks
from agentledger.integrations.langchain._runs import ModelOutput, Run
from agentledger.integrations.langchain._values import document_to_data, trim
from agentledger.protocol import vocabulary as v

__all__ = ["CUSTOM_EVENT", "LedgerCallbackHandler"]

#: Event type of ``dispatch_custom_event(name, data)``; ``data = {"name", "data"}`` (the
#: vocabulary's ``custom_event``).
CUSTOM_EVENT = v.CUSTOM_EVENT

_POSITION_TAG_PREFIXES = ("seq:step:", "graph:step:", "map:key:")
_HIDDEN_TAG = "langsmith:hidden"
_GRAPH_INTEGRATIONS = frozenset({"langgraph", "langchain_create_agent"})


def _is_model_structured(outputs: Any, latest: ModelOutput) -> bool:
    """Whether a dict output is the structured answer of the run's latest model call: the
    arguments of a tool call it requested (``with_structured_output``)."""
    return isinstance(outputs, Mapping) and any(outputs == args for args in latest.tool_args)


class LedgerCallbackHandler(ModelHooks):
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
            original size; the user's message, the answer and tool results are kept up to
            65,000 characters whatever it is.
        max_scopes: open runs tracked at most (default 10 000); the oldest is evicted beyond it
            (a run left open forever, e.g. an abandoned stream, cannot grow memory).
        max_runs: deprecated name of ``max_scopes`` (emits a ``DeprecationWarning``).

    Raises:
        ValueError: ``max_field_chars`` or ``max_scopes`` below 1, or both ``max_scopes`` and
            ``max_runs`` given (an ``InvalidOptionError``, also a ``LedgerError``).
    """

    # ----------------------------------------------------------------- chains / graph nodes

    @hook
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
        if is_root:  # the run's root step is caused by the user turn it was started with
            parent_id = self._log_user_turn(inputs, trace, metadata=metadata)
        name = kwargs.get("name") or (serialized or {}).get("name") or "chain"
        meta = metadata or {}
        started = time.perf_counter()
        clock = trace.conversation.now()
        if tags and _HIDDEN_TAG in tags:  # internal plumbing: children attach to the parent
            run = Run(parent_id, trace, "hidden", name, started, is_root, clock=clock)
            self._runs.add(run_id, run)
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
        if is_root:
            trace.root_event = event_id
        self._runs.add(run_id, Run(event_id, trace, kind, name, started, is_root, clock=clock))

    @hook
    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """``step_end`` with ``outputs``; a root run ending on its answer (an AI message, a
        structured response, a string from a model) also logs ``assistant_response``."""
        run = self._runs.pop(run_id)
        if run is None or run.kind == "hidden":
            return
        if run.is_root:
            if "inputs" in kwargs and run.trace.user_event is None:
                self._log_user_turn(kwargs["inputs"], run.trace, late=True)
            self._log_run_answer(outputs, run)
        data: dict[str, Any] = {
            "name": run.name,
            "kind": run.kind,
            "outputs": self._data(outputs),
            "duration_ms": elapsed_ms(run.started_s),
        }
        if "inputs" in kwargs:  # streamed runs report their real inputs only at the end
            data["inputs"] = self._data(kwargs["inputs"])
        self._log(v.STEP_END, data, run.trace, run.event_id)

    def _log_run_answer(self, outputs: Any, run: Run) -> None:
        """``assistant_response`` for the answer in a root run's outputs, caused by the model
        output that produced it: the ``llm_end`` of its AI message (by message id), else the
        run's latest ``llm_end``. A run no model answered in logs none, and neither does a run
        stopped by ``interrupt()``: its state's last AI message is a draft, not the answer
        (LangGraph ends such a root run normally, and its outputs need not carry
        ``__interrupt__``)."""
        trace = run.trace
        if trace.interrupted:
            return
        latest = trace.last_output
        answer = final_answer(outputs, self._max_chars)
        if answer is None and latest is not None and _is_model_structured(outputs, latest):
            answer = structured_answer(outputs, self._max_chars)
        if answer is None:
            return
        producer = None
        if answer.message is not None:
            producer = trace.conversation.produced_by(answer.message.id)
            if producer is None and latest is not None and latest.text == answer.text:
                producer = latest.event_id
        elif latest is not None:
            producer = latest.event_id
        if producer is not None:
            self._log_answer(answer, trace, producer)

    @hook
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

    # ----------------------------------------------------------------- retrievers

    @hook
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
        started, clock = time.perf_counter(), trace.conversation.now()
        run = Run(parent_id, trace, "retriever", name, started, is_root, query=query, clock=clock)
        self._runs.add(run_id, run)

    @hook
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
            "duration_ms": elapsed_ms(run.started_s),
        }
        event_id = self._log(v.RETRIEVAL, data, run.trace, run.event_id)
        run.trace.conversation.add_input(event_id)  # a later model call reads the documents

    @hook
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
            "duration_ms": elapsed_ms(run.started_s),
        }
        self._log(v.RETRIEVAL, data, run.trace, run.event_id)

    # ----------------------------------------------------------------- custom events

    @hook
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
