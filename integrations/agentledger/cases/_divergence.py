"""The first step where a run left the source path: found, and shown in the text report, the
JSON report and JUnit.

Each form names the step, what the source did there and what the run did, the source's steps
and answer that were computed from the step the run changed (at risk), and the run's own events
computed from its divergent event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentledger.cases._calls import call_text, match
from agentledger.cases._model import Case
from agentledger.client import vocabulary as v

__all__ = [
    "Divergence",
    "Effect",
    "divergence_json",
    "divergence_lines",
    "divergence_summary",
    "first_divergence",
]


@dataclass(frozen=True)
class Effect:
    """An event computed, directly or not, from a divergent step.

    ``event`` is its type, ``text`` a short description (``"verify_charge(order_id=A1234)"``,
    ``"final answer"``), ``step`` its index among the tool calls of its path (``None`` for
    events that are not tool calls), ``event_id`` the stored event (runs only).
    """

    event: str
    text: str
    step: int | None = None
    event_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON form (the report's)."""
        out: dict[str, Any] = {"event": self.event, "text": self.text, "step": self.step}
        if self.event_id is not None:
            out["event_id"] = self.event_id
        return out


@dataclass(frozen=True)
class Divergence:
    """The first step where a run left the source session's path, and what hangs on it.

    ``step`` is the 0-based index among tool calls (``len(path)`` means: the final answer).
    ``event_id`` is the run's event at that step (its tool call, or its answer when it answered
    instead). ``at_risk``: the source's later steps and answer computed from the source step
    the run changed (``None`` when the case records no lineage); ``at_risk_complete`` is false
    when the source's causal edges do not link its answer to its input. ``run_effects``: the
    run's events computed from its divergent event (``impact()``; ``None`` when not looked up).
    """

    step: int
    expected: str
    actual: str
    event_id: str | None = None
    at_risk: tuple[Effect, ...] | None = None
    at_risk_complete: bool = True
    run_effects: tuple[Effect, ...] | None = None


def _at_risk(case: Case, step: int) -> tuple[tuple[Effect, ...] | None, bool]:
    """The source's steps and answer computed from source step ``step``, and whether the
    source's lineage reaches its answer from its input."""
    if case.lineage is None:
        return None, True
    complete = case.lineage.answer_from_input
    effects = case.lineage.effects_of(step)
    if effects is None:
        return (), complete
    source = case.source_path()
    found = [
        Effect(v.TOOL_CALL, call_text(*source[s]), step=s)
        for s in sorted(effects.steps)
        if 0 <= s < len(source)
    ]
    if effects.answer:
        found.append(Effect(v.ASSISTANT_RESPONSE, "final answer"))
    return tuple(found), complete


def first_divergence(
    case: Case,
    calls: Sequence[tuple[str, dict[str, Any]]],
    call_ids: Sequence[str],
    answer: tuple[str, str] | None,
) -> Divergence | None:
    """The first step where ``calls`` leave the case's source path; ``answer`` is the run's
    final ``(text, event_id)``."""
    source = case.source_path()
    for step in range(max(len(source), len(calls))):
        want = source[step] if step < len(source) else None
        got = calls[step] if step < len(calls) else None
        if (
            want is not None
            and got is not None
            and want[0] == got[0]
            and all(match(a, got[1].get(k)) for k, a in want[1].items())
        ):
            continue
        at_risk, complete = _at_risk(case, step) if want else ((), True)
        return Divergence(
            step,
            call_text(*want) if want else "final answer (no more tool calls)",
            call_text(*got) if got else "final answer (no more tool calls)",
            event_id=call_ids[step] if got else (answer[1] if answer else None),
            at_risk=at_risk,
            at_risk_complete=complete,
        )
    if case.source_answer is not None and answer is None:
        return Divergence(len(calls), "a final answer", "no assistant_response", at_risk=())
    return None


#: Kinds of run events named one by one in the text; the others are counted.
_NAMED = (v.TOOL_CALL, v.ASSISTANT_RESPONSE)


def _name(effect: Effect) -> str:
    return effect.text if effect.step is None else f"step {effect.step} {effect.text}"


def _at_risk_text(div: Divergence) -> str:
    if div.at_risk is None:
        return "not known (the case records no lineage; export it again to record it)"
    text = ", ".join(_name(e) for e in div.at_risk) or "nothing in the source session"
    if not div.at_risk_complete:
        text += (
            " as far as its causal edges tell; they do not link the source's answer to its"
            " input, so some effects may be missing"
        )
    return text


def _run_text(effects: Sequence[Effect]) -> str:
    named = [_name(e) for e in effects if e.event in _NAMED]
    others = [e.event for e in effects if e.event not in _NAMED]
    if others:
        kinds = ", ".join(dict.fromkeys(others))
        noun = "event" if len(others) == 1 else "events"
        named.append(f"{len(others)} other {noun} ({kinds})")
    return ", ".join(named) or "nothing"


def divergence_lines(run: int, div: Divergence) -> list[str]:
    """The text report's lines for the first divergence of run ``run`` (1-based)."""
    lines = [
        f"  first divergent step {div.step} (run {run}): expected {div.expected}; "
        f"actual {div.actual}",
        f"    at risk in the source session (computed from step {div.step}): " + _at_risk_text(div),
    ]
    if div.run_effects is not None:
        lines.append(f"    computed from it in run {run}: " + _run_text(div.run_effects))
    return lines


def divergence_summary(div: Divergence) -> str:
    """One line for a table cell or a JUnit failure message."""
    text = f"step {div.step}: expected {div.expected}, got {div.actual}"
    if div.at_risk:
        text += "; at risk: " + ", ".join(_name(e) for e in div.at_risk)
    return text


def divergence_json(run: int, div: Divergence) -> dict[str, Any]:
    """The JSON report's ``first_divergence`` of run ``run`` (1-based)."""
    return {
        "run": run,
        "step": div.step,
        "expected": div.expected,
        "actual": div.actual,
        "event_id": div.event_id,
        "at_risk": None if div.at_risk is None else [e.to_json() for e in div.at_risk],
        "at_risk_complete": div.at_risk_complete,
        "run_effects": (
            None if div.run_effects is None else [e.to_json() for e in div.run_effects]
        ),
    }
