"""State and plumbing shared by every hook of the LangChain handler.

:class:`HandlerCore` holds the options, the run table and the counters, and logs one event under
its trace's session; :func:`hook` guards a hook so nothing of ours raises into LangChain.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar, cast
from uuid import UUID

import uuid_utils
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables.config import var_child_runnable_config

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import (
    CausalLedgerLike,
    InvalidOptionError,
    LedgerLike,
    accepts_causes,
    max_scopes_option,
)
from agentledger.integrations.langchain._answer import Answer
from agentledger.integrations.langchain._lineage import Conversations
from agentledger.integrations.langchain._runs import Run, RunTable, Trace
from agentledger.integrations.langchain._user_turn import (
    NO_RESUME,
    resume_text,
    resume_value,
    resumer,
    user_turn,
)
from agentledger.integrations.langchain._values import is_langgraph_object, to_data, trim
from agentledger.protocol import vocabulary as v

__all__ = ["HandlerCore", "elapsed_ms", "hook"]

_F = TypeVar("_F", bound=Callable[..., None])

#: Characters of a user turn (``user_message``) and an answer (``assistant_response``) kept
#: whatever ``max_field_chars`` is: regression cases replay and compare them whole. Below the
#: client's ``max_string_chars`` (65,536 by default) with room for the cut marker, so a longer
#: text is cut once, here, with a marker naming its size.
TURN_CHARS: Final = 65_000


def hook(fn: _F) -> _F:
    """Guard a hook: our exceptions are logged and counted, never raised into LangChain."""
    where = f"langchain.{fn.__name__}"

    @functools.wraps(fn)
    def wrapper(self: HandlerCore, *args: Any, **kwargs: Any) -> None:
        try:
            fn(self, *args, **kwargs)
        except Exception:
            self._count_internal_error()
            with capture_internal_exceptions(where):
                raise

    return cast("_F", wrapper)


def _new_session_id() -> str:
    return str(uuid_utils.uuid7())


def elapsed_ms(since_s: float) -> float:
    return round((time.perf_counter() - since_s) * 1000.0, 3)


class HandlerCore(BaseCallbackHandler):
    """Options, open runs and counters of a handler, and how it logs (no hooks here)."""

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
        # the user's turn and the answer are what regression cases replay and compare: kept
        # whole up to TURN_CHARS however small max_field_chars is
        self._turn_chars = max(max_field_chars, TURN_CHARS)
        self._runs = RunTable(max_scopes)
        self._threads = Conversations()
        self._causal = accepts_causes(ledger)
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

    def _log(
        self,
        event: str,
        data: dict[str, Any],
        trace: Trace,
        parent_id: str | None,
        *,
        caused_by: Sequence[tuple[str, str]] = (),
        scope_id: str | None = None,
    ) -> str:
        """Log one event; ``caused_by`` (``(event id, edge kind)`` pairs) and ``scope_id`` go
        to a ledger whose ``log`` takes them (:func:`accepts_causes`)."""
        if self._causal and (caused_by or scope_id):
            causal = cast("CausalLedgerLike", self._ledger)
            ref = causal.log(
                event,
                data,
                session_id=trace.session_id,
                parent_id=parent_id,
                metadata=self._metadata,
                caused_by=list(caused_by),
                scope_id=scope_id,
            )
        else:
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

    def _whole(self, value: Any) -> Any:
        """``value`` as data with its strings kept up to :data:`TURN_CHARS` (what a
        regression case replays: tool results)."""
        return to_data(value, self._turn_chars)

    def _parent_run(self, parent_run_id: UUID | None) -> Run | None:
        """The open run a run starts under: ``parent_run_id``, else the run whose child config
        LangChain set in the context (``RunnableWithFallbacks`` hands its children the
        parent's config, so they arrive without a parent run id)."""
        if parent_run_id is None:
            config = var_child_runnable_config.get()
            callbacks = config.get("callbacks") if config else None
            parent_run_id = getattr(callbacks, "parent_run_id", None)
        return self._runs.get(parent_run_id)

    def _clock_of(self, parent_run_id: UUID | None, trace: Trace) -> int:
        """The conversation's clock when the enclosing run started (now for a root run)."""
        parent = self._parent_run(parent_run_id)
        return parent.clock if parent is not None else trace.conversation.now()

    def _enclosing(
        self, parent_run_id: UUID | None, metadata: Mapping[str, Any] | None
    ) -> tuple[Trace, str | None, bool]:
        """(trace, parent event id, is_root) for a run starting under ``parent_run_id``."""
        parent = self._parent_run(parent_run_id)
        if parent is not None:
            return parent.trace, parent.event_id, False
        thread: str | None = None
        if metadata:
            thread_id = metadata.get("thread_id")
            if isinstance(thread_id, str | int) and str(thread_id):
                thread = str(thread_id)
        session = self._session_id or thread or _new_session_id()
        return Trace(session, self._threads.get(thread)), None, True

    def _log_user_turn(
        self,
        inputs: Any,
        trace: Trace,
        *,
        late: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ) -> str | None:
        """Log the ``user_message`` a root run was started with, if its input holds one.

        Its cause is the previous answer of the same conversation (a LangGraph thread); a
        ``Command(resume=...)`` is the human's answer to the interrupt it names as its cause.
        Returns the event id, or ``None`` when the input holds no user turn. ``late``: the
        input of a streamed chain, known only at its end; logged for the record (``"late":
        true``), it is no input of the model calls that already ran. A resume names who resumed
        (``resumed_by``, and the metadata key it came from in ``resumed_by_source``) when the
        run's ``metadata`` holds one of :data:`~._user_turn.RESUMER_KEYS`.
        """
        conversation = trace.conversation
        resume = resume_value(inputs)
        data: dict[str, Any]
        if resume is not NO_RESUME:
            value = self._data(resume)
            text = trim(resume_text(resume, value), self._turn_chars)
            data = {"text": text, "role": "user", "resume": value}
            who = resumer(metadata)
            if who is not None:
                data["resumed_by"], data["resumed_by_source"] = who[0], f"metadata.{who[1]}"
            cause = conversation.take_interrupt()
        else:
            turn = user_turn(inputs)
            if turn is None:
                return None
            data = {"text": trim(turn.text, self._turn_chars), "role": "user"}
            if turn.message_id:
                data["message_id"] = turn.message_id
            cause = conversation.last_answer
        if late:
            data["late"] = True
        event_id = self._log(v.USER_MESSAGE, data, trace, cause)
        trace.user_event = event_id
        if not late:
            conversation.add_input(event_id)
        return event_id

    def _log_answer(self, answer: Answer, trace: Trace, producer: str) -> None:
        """``assistant_response`` caused by the ``llm_end`` that produced it: once per root run,
        remembered as the cause of the conversation's next user turn."""
        if trace.answered:
            return
        trace.answered = True
        data: dict[str, Any] = {"text": trim(answer.text, self._turn_chars)}
        if answer.structured is not None:
            data["structured"] = answer.structured
        event_id = self._log(
            v.ASSISTANT_RESPONSE,
            data,
            trace,
            producer,
            caused_by=[(producer, v.EDGE_PRODUCED)],
            scope_id=trace.root_event,
        )
        trace.conversation.last_answer = event_id

    def _close_with_error(self, run: Run, error: BaseException, error_event: str) -> str:
        """Log the end of a failed run (returns its event id); LangGraph bubble-ups are not
        failures, and an ``interrupt()`` is remembered as the cause of the resume to come."""
        if is_langgraph_object(error, "GraphInterrupt"):
            interrupts = error.args[0] if error.args else ()
            if not isinstance(interrupts, Sequence):
                interrupts = (interrupts,)
            event_id = self._log(
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
            if not run.trace.interrupted:  # the innermost step; its enclosing ones bubble up
                run.trace.interrupted = True
                run.trace.conversation.last_interrupt = event_id
            return event_id
        if is_langgraph_object(error, "GraphBubbleUp"):  # e.g. ParentCommand: control flow
            bubble = {"name": run.name, "kind": run.kind, "bubble_up": type(error).__name__}
            return self._log(v.STEP_END, bubble, run.trace, run.event_id)
        data: dict[str, Any] = {
            "error": trim(str(error), self._max_chars),
            "type": type(error).__name__,
            "duration_ms": elapsed_ms(run.started_s),
        }
        if error_event == v.TOOL_ERROR:
            data.update(tool=run.name, call_id=run.call_id)
        elif error_event == v.STEP_ERROR:
            data.update(name=run.name, kind=run.kind)
        return self._log(error_event, data, run.trace, run.event_id)
