"""What each step of a path affected, from the ledger's causal edges.

An event's causes are its ``parent_id`` and its ``caused_by`` entries; the step it ran inside
(``scope_id``) is not a cause and is never followed. :func:`source_lineage` reads a source
session's events (export); :func:`run_effects` asks the run ledger (``impact()``) what a run's
divergent event affected.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from agentledger.cases._calls import as_args, call_text
from agentledger.cases._divergence import Effect
from agentledger.cases._model import Lineage, StepEffects
from agentledger.client import Event, Ledger
from agentledger.client import vocabulary as v
from agentledger.protocol import LedgerError

__all__ = ["descendants", "run_effects", "source_lineage"]

#: One tool-call step: its ``tool_call`` event and the ``tool_result``/``tool_error`` answering
#: it (``None`` when none was recorded).
Step = tuple[Event, Event | None]


def descendants(events: Sequence[Event], starts: Iterable[str]) -> set[str]:
    """Ids of the events of ``events`` computed, directly or not, from any of ``starts``
    (following ``parent_id`` and ``caused_by`` forward; ``starts`` themselves excluded unless
    one descends from another)."""
    effects: dict[str, list[str]] = {}
    for event in events:
        for cause in event.causes:
            effects.setdefault(cause, []).append(event.event_id)
    first = list(dict.fromkeys(starts))
    found: set[str] = set()
    queue = deque(first)
    while queue:
        for effect in effects.get(queue.popleft(), ()):
            if effect not in found:
                found.add(effect)
                queue.append(effect)
    return found


def source_lineage(events: Sequence[Event], steps: Sequence[Step]) -> Lineage:
    """Which later steps, and whether the final answer (the last ``assistant_response``),
    descend from each step's call or result.

    Args:
        events: the source session's events.
        steps: its tool-call steps in path order (step ``i`` is ``steps[i]``).
    """
    answers = [e for e in events if e.event == v.ASSISTANT_RESPONSE]
    answer = answers[-1].event_id if answers else None
    step_of = {call.event_id: index for index, (call, _) in enumerate(steps)}
    out: list[StepEffects] = []
    for index, (call, result) in enumerate(steps):
        starts = [call.event_id] + ([result.event_id] if result is not None else [])
        found = descendants(events, starts)
        later = sorted(step_of[i] for i in found if i in step_of and step_of[i] != index)
        out.append(StepEffects(step=index, steps=later, answer=answer in found))
    inputs = [e.event_id for e in events if e.event == v.USER_MESSAGE]
    reached = answer is not None and answer in descendants(events, inputs)
    return Lineage(steps=out, answer_from_input=reached)


def _describe(event: Event, step: int | None) -> Effect:
    if event.event == v.TOOL_CALL:
        tool = str(event.data.get("tool") or "tool")
        text = call_text(tool, as_args(event.data.get("args")))
    elif event.event == v.ASSISTANT_RESPONSE:
        text = "final answer"
    elif event.event in (v.TOOL_RESULT, v.TOOL_ERROR):
        text = f"{event.event} of {event.data.get('tool') or 'tool'}"
    else:
        text = event.event
    return Effect(event.event, text, step=step, event_id=event.event_id)


def run_effects(
    ledger: Ledger, events: Sequence[Event], event_id: str
) -> tuple[Effect, ...] | None:
    """The run's events computed from ``event_id`` (``impact()`` on the run ledger), causes
    before effects; tool calls carry their step on the run's path. ``None`` when the ledger
    could not answer."""
    try:
        impact = ledger.impact(event_id)
    except LedgerError:
        return None
    calls = sorted((e for e in events if e.event == v.TOOL_CALL), key=lambda e: e.sequence_no or 0)
    step_of = {e.event_id: index for index, e in enumerate(calls)}
    return tuple(_describe(e, step_of.get(e.event_id)) for e in impact.events)
