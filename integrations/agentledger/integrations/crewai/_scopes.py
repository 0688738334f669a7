"""Open CrewAI scopes (crew, task, agent, flow, model call, tool use...), bounded.

A scope is opened by a CrewAI scope-starting event (``crewai.events.event_context.
SCOPE_STARTING_EVENTS``) and closed by its ending event (``started_event_id``). Only what the
listener needs beyond CrewAI's own ids lives here: the start time, the roll-up
accumulator, whether the scope belongs to an instrumented crew, and the names used again on
the closing event. Parent *links* never depend on this table: they are derived from CrewAI's
ids, so they stay right whatever order the handlers run in.

The table is capped: a scope that never closes (a run that died, a paused
flow) is evicted oldest-first beyond ``max_scopes`` and counted.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentledger.integrations._shared import InvalidOptionError
from agentledger.integrations.crewai._usage import Rollup

__all__ = ["Scope", "ScopeTable"]


@dataclass(slots=True, eq=False)
class Scope:
    """One open CrewAI scope.

    Attributes:
        crewai_id: the CrewAI ``event_id`` of the starting event.
        kind: ``step_start.data.kind`` (``crew``, ``task``...), or ``llm`` / ``tool``.
        name: the step, model or tool name, repeated on the closing event.
        parent: the enclosing scope, if the listener saw it.
        started_at: CrewAI's timestamp of the starting event (timezone-aware).
        rollup: token totals of the model calls below (task and crew scopes only).
        included: False when the scope belongs to a crew the listener does not watch.
        call_id: CrewAI's ``call_id`` of a model call (pairs start and end).
        last_llm: CrewAI id of the latest model call started directly inside this scope.
        inputs: writer keys of the tool outcomes inside this scope since that model call
            (what the next model call reads).
        produced_by: writer key of the event whose output is this scope's output (an
            agent's last model call, a task's agent, a crew's last task).
        task_id: CrewAI's task id (task scopes).
        done: ``(task id, start id)`` of the tasks finished so far (crew scopes).
        open_tools: tool uses started directly inside this scope and not ended yet.
        llms: ``(CrewAI emission sequence, start id)`` of the model calls started directly
            inside this scope.
        llm_ended: start id -> whether that model call's output asked for tools, once it
            ended.
        open_children: agent and task scopes started directly inside and not ended yet.
    """

    crewai_id: str
    kind: str
    name: str
    parent: Scope | None
    started_at: dt.datetime | None
    rollup: Rollup | None = None
    included: bool = True
    call_id: str | None = field(default=None)
    last_llm: str | None = None
    inputs: list[str] = field(default_factory=list)
    produced_by: str | None = None
    task_id: str | None = None
    done: list[tuple[str, str]] = field(default_factory=list)
    open_tools: int = 0
    llms: list[tuple[int, str]] = field(default_factory=list)
    llm_ended: dict[str, bool] = field(default_factory=dict)
    open_children: int = 0

    def ancestors(self) -> Iterator[Scope]:
        """This scope, then each enclosing one up to the root."""
        scope: Scope | None = self
        while scope is not None:
            yield scope
            scope = scope.parent


class ScopeTable:
    """Thread-safe map ``CrewAI start event id -> Scope``, capped at ``max_scopes`` entries.

    Args:
        max_scopes: open scopes kept at most; the oldest is evicted beyond it.

    Raises:
        ValueError: ``max_scopes`` below 1.
    """

    def __init__(self, max_scopes: int) -> None:
        if max_scopes < 1:
            raise InvalidOptionError("max_scopes must be at least 1")
        self._max = max_scopes
        self._lock = threading.Lock()
        self._scopes: OrderedDict[str, Scope] = OrderedDict()
        self._by_call_id: dict[str, str] = {}
        self.evicted = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._scopes)

    def get(self, crewai_id: str | None) -> Scope | None:
        """The open scope started by ``crewai_id``, or ``None``."""
        if crewai_id is None:
            return None
        with self._lock:
            return self._scopes.get(crewai_id)

    def open(self, scope: Scope) -> None:
        """Record a newly started scope (evicting the oldest beyond the cap)."""
        with self._lock:
            self._scopes[scope.crewai_id] = scope
            if scope.call_id is not None:
                self._by_call_id[scope.call_id] = scope.crewai_id
            while len(self._scopes) > self._max:
                _, old = self._scopes.popitem(last=False)
                if old.call_id is not None:
                    self._by_call_id.pop(old.call_id, None)
                self.evicted += 1

    def close(self, crewai_id: str | None, call_id: str | None = None) -> Scope | None:
        """Remove and return the scope started by ``crewai_id`` (else the one with ``call_id``)."""
        with self._lock:
            if crewai_id is None and call_id is not None:
                crewai_id = self._by_call_id.get(call_id)
            if crewai_id is None:
                return None
            scope = self._scopes.pop(crewai_id, None)
            if scope is not None and scope.call_id is not None:
                self._by_call_id.pop(scope.call_id, None)
            return scope

    def start_id_for_call(self, call_id: str | None) -> str | None:
        """The CrewAI start event id of the open model call ``call_id``, if any."""
        if call_id is None:
            return None
        with self._lock:
            return self._by_call_id.get(call_id)
