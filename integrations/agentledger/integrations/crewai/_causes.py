"""What each CrewAI event was computed from: its cause, further causes, and its scope.

CrewAI names only the enclosing scope of an event (``parent_event_id``). The scope is where
an event ran, not why: a tool call is made because a model output asked for it, the next
model call because it reads the tool's result, a task because it is given an earlier task's
output. :func:`start_links` and :func:`end_links` derive those causes from the order in which
the listener sees the events of one scope (the Sequencer delivers a scope's start before
anything inside it) and keep the little state they need on the open scopes:

* a model call (``llm_start``): caused by the tool outcomes of its scope since the previous
  model call (kind ``read``; the last one is the parent), else by that previous call's
  ``llm_end`` (the conversation it continues), else by its enclosing step;
* a tool use (``tool_call``): by the ``llm_end`` of the latest model call of its scope, the
  output that asked for it (kind ``requested``). CrewAI emits the tool's start right after
  that model call's end, on the same thread;
* a task: by the outputs of the earlier tasks it is given as context (kind ``context``):
  its ``context`` tasks, or every earlier task of the run when it names none (what a
  sequential crew does by default); none when it was given no context;
* an agent run inside a tool use (CrewAI's delegation tools): by that tool use (kind
  ``delegated``);
* a closing event: by its start (``parent_id``, kind ``closes`` set by the server) and by what
  produced its output (kind ``produced``): an agent's by its last model call, a task's by its
  agent, a crew's by its last task, a delegation tool's by the agent it delegated to.

Causes are named by writer keys: a CrewAI start id for a start event, :func:`end_key` of the
start for its closing event. The writer resolves them to ledger ids once they are logged.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentledger.integrations.crewai._scopes import Scope
from agentledger.protocol import vocabulary as v

__all__ = [
    "Links",
    "asked_for_tools",
    "end_key",
    "end_links",
    "model_call_ready",
    "note_model_call",
    "read_links",
    "start_links",
]

#: Kinds of scope whose end carries what produced the enclosing scope's output.
PRODUCERS = frozenset({"agent", "task"})


def end_key(start_crewai_id: str) -> str:
    """The writer key of the event that closes the scope ``start_crewai_id`` started."""
    return f"end:{start_crewai_id}"


@dataclass(slots=True)
class Links:
    """Where a mapped event points.

    Attributes:
        parent_key: writer key of the primary cause (``parent_id``), or ``None`` for a root.
        causes: ``(writer key, edge kind)`` of every cause; an entry naming ``parent_key``
            labels the parent edge.
        scope_key: writer key of the enclosing step, when it is not the parent.
    """

    parent_key: str | None
    causes: list[tuple[str, str]] = field(default_factory=list)
    scope_key: str | None = None


def _up_to_agent(scope: Scope | None) -> list[Scope]:
    """``scope`` and its ancestors up to the nearest agent scope (inclusive)."""
    found: list[Scope] = []
    while scope is not None:
        found.append(scope)
        if scope.kind == "agent":
            break
        scope = scope.parent
    return found


def _context_tasks(task: Any, crew: Scope | None) -> list[str]:
    """Start ids of the earlier tasks of the run whose outputs ``task`` is given."""
    if crew is None or not crew.done:
        return []
    context = getattr(task, "context", None)
    if not context:
        return []
    if isinstance(context, list):
        wanted = {str(getattr(t, "id", "")) for t in context}
        return [start for task_id, start in crew.done if task_id in wanted]
    if getattr(task, "async_execution", False):
        return [crew.done[-1][1]]  # an async task is given the last sync output only
    return [start for _, start in crew.done]


def _sequence(event: Any) -> int:
    """CrewAI's emission order of ``event`` (events of one run are numbered as emitted)."""
    value = getattr(event, "emission_sequence", None)
    return value if isinstance(value, int) else sys.maxsize


def _model_call_before(parent: Scope, sequence: int) -> str | None:
    """The start id of the last model call of ``parent`` emitted before ``sequence``."""
    earlier = [call for call in parent.llms if call[0] < sequence]
    return max(earlier)[1] if earlier else None


def asked_for_tools(data: Mapping[str, Any]) -> bool:
    """Whether a model output (``llm_end`` data) asked for tools: native tool calls, or a
    ReAct ``Action:`` line."""
    if data.get("tool_calls"):
        return True
    text = data.get("text")
    return isinstance(text, str) and (text.startswith("Action:") or "\nAction:" in text)


def note_model_call(event: Any, parent: Scope) -> str | None:
    """Record a model call started inside ``parent``; returns the previous one's start id.

    Its links (:func:`read_links`) are taken once :func:`model_call_ready` holds: the
    previous call's output and the results of the tools it asked for are what it reads.
    """
    sequence = _sequence(event)
    previous = _model_call_before(parent, sequence)
    parent.llms.append((sequence, event.event_id))
    parent.last_llm = event.event_id
    for scope in _up_to_agent(parent):
        scope.produced_by = end_key(event.event_id)
    return previous


def model_call_ready(parent: Scope, previous: str | None) -> bool:
    """Whether a model call after ``previous`` in ``parent`` can name what it read: no tool
    use runs there, the previous call ended, and a tool it asked for has a result."""
    if parent.open_tools:
        return False
    if previous is None:
        return True
    asked = parent.llm_ended.get(previous)
    return asked is not None and (not asked or bool(parent.inputs))


def read_links(parent_key: str | None, parent: Scope, previous: str | None) -> Links:
    """Links of a model call: what it reads, new since ``previous`` (takes those inputs)."""
    links = Links(parent_key, scope_key=parent_key)
    inputs, parent.inputs = parent.inputs, []
    if inputs:
        links.parent_key = inputs[-1]
        links.causes = [(key, v.EDGE_READ) for key in inputs]
    elif previous is not None:
        links.parent_key = end_key(previous)
        links.causes = [(links.parent_key, v.EDGE_READ)]
    else:
        links.scope_key = None  # the enclosing step is the parent
    return links


def start_links(kind: str, event: Any, parent_key: str | None, parent: Scope | None) -> Links:
    """Links of a start event (not a model call's) of scope kind ``kind`` inside ``parent``
    (updates its state)."""
    links = Links(parent_key)
    if parent is None:
        return links
    if kind in PRODUCERS:
        parent.open_children += 1
    if kind == "tool":
        parent.open_tools += 1
        requester = _model_call_before(parent, _sequence(event))
        if requester is not None:
            links.parent_key = end_key(requester)
            links.causes = [(links.parent_key, v.EDGE_REQUESTED)]
            links.scope_key = parent_key
    elif kind == "agent" and parent.kind == "tool" and parent_key is not None:
        links.causes = [(parent_key, v.EDGE_DELEGATED)]
    elif kind == "task":
        task = getattr(event, "task", None)
        links.causes = [(end_key(s), v.EDGE_CONTEXT) for s in _context_tasks(task, parent)]
    return links


def end_links(scope: Scope | None, start_key: str | None, *, asked: bool = False) -> Links:
    """Links of the event closing ``scope`` (updates the enclosing scope's state); ``asked``:
    a model call's output asked for tools."""
    links = Links(start_key)
    if scope is None:
        return links
    if scope.produced_by is not None:
        links.causes = [(scope.produced_by, v.EDGE_PRODUCED)]
    parent = scope.parent
    if parent is None:
        return links
    done = end_key(scope.crewai_id)
    if scope.kind in PRODUCERS:
        parent.open_children = max(0, parent.open_children - 1)
    if scope.kind == "llm":
        parent.llm_ended[scope.crewai_id] = asked
    elif scope.kind == "tool":
        parent.inputs.append(done)
        parent.open_tools = max(0, parent.open_tools - 1)
    elif scope.kind == "agent" and parent.kind in ("task", "tool"):
        parent.produced_by = done
    elif scope.kind == "task" and scope.task_id is not None:
        parent.done.append((scope.task_id, scope.crewai_id))
        parent.produced_by = done
    return links
