"""Per-handler run state: ``run_id -> Run``, bounded and thread-safe.

A :class:`Run` remembers the event id of its start event so that its end/error event, and the
start events of its child runs, can name it as ``parent_id``. Runs are removed when they end or
fail; a cap evicts the oldest entry when runs are left open (an abandoned stream, a crashed
thread), so memory stays flat over any number of runs (field case H11).

A :class:`Trace` holds what the runs under one root share: the session id, the conversation
the root run belongs to (links and unread inputs, :mod:`._lineage`), the root's step and the
latest model output of the run (what its answer was produced by). It lives as long as its runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentledger.integrations._shared import InvalidOptionError
from agentledger.integrations.langchain._lineage import Conversation

__all__ = ["ModelOutput", "Run", "RunTable", "Trace"]


@dataclass(frozen=True, slots=True)
class ModelOutput:
    """The latest ``llm_end`` of a root run, with what its message said."""

    event_id: str
    text: str
    #: the arguments of the tool calls the message requested
    tool_args: tuple[Any, ...] = ()


@dataclass(slots=True)
class Trace:
    """State shared by every run under one root run."""

    session_id: str
    conversation: Conversation
    #: event id of the ``user_message`` the root run was started with
    user_event: str | None = None
    #: event id of the root run's ``step_start`` (the scope of its answer)
    root_event: str | None = None
    #: the latest ``llm_end`` of this root run
    last_output: ModelOutput | None = None
    #: whether this root run logged its ``assistant_response`` already
    answered: bool = False
    #: whether a step of this root run was interrupted (``interrupt()``) already
    interrupted: bool = False


@dataclass(slots=True)
class Run:
    """One LangChain run the handler has seen start."""

    #: Event id of this run's start event; for pass-through runs (retrievers, hidden runs)
    #: the enclosing run's event id, so children attach to the enclosing step.
    event_id: str | None
    trace: Trace
    kind: str
    name: str
    started_s: float
    is_root: bool = False
    call_id: str | None = None
    query: str | None = None
    first_token_s: float | None = None
    token_count: int = 0
    tokens: list[Any] | None = None
    #: the conversation's clock when this run started (see ``Conversation.reads``)
    clock: int = 0


class RunTable:
    """A bounded, thread-safe ``run_id -> Run`` map.

    Args:
        max_scopes: entries kept at most; adding one more evicts the oldest (counted in
            :attr:`evicted`).
    """

    def __init__(self, max_scopes: int) -> None:
        if max_scopes < 1:
            raise InvalidOptionError("max_scopes must be >= 1")
        self._max_runs = max_scopes
        self._runs: dict[UUID, Run] = {}
        self._lock = threading.Lock()
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, run_id: UUID | None) -> Run | None:
        """The open run with this id, or ``None`` (also for ``None``)."""
        if run_id is None:
            return None
        return self._runs.get(run_id)

    def add(self, run_id: UUID, run: Run) -> None:
        """Track ``run`` under ``run_id``; evicts the oldest run when full."""
        with self._lock:
            if len(self._runs) >= self._max_runs and run_id not in self._runs:
                del self._runs[next(iter(self._runs))]
                self.evicted += 1
            self._runs[run_id] = run

    def pop(self, run_id: UUID) -> Run | None:
        """Stop tracking ``run_id``; returns its run or ``None`` if it was never seen."""
        with self._lock:
            return self._runs.pop(run_id, None)
