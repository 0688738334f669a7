"""CrewAI event -> agentledger vocabulary: which events map, to what, with which ``data``.

Every rule is keyed by CrewAI's event ``type`` string (``crewai.events.types.*``; crewai 1.15).
A rule has a *role*:

* ``START``: a CrewAI scope-starting event (``crewai.events.event_context.
  SCOPE_STARTING_EVENTS``); its ledger parent is CrewAI's ``parent_event_id``.
* ``END``: a scope-ending event (``SCOPE_ENDING_EVENTS``); its ledger parent is the starting
  event (``started_event_id``, or ``call_id`` for model calls).
* ``POINT``: an event inside a scope that opens nothing (e.g. a tool-selection error).

Specific rules (``_builders.SPECIFIC``) cover crews, tasks, agents, flows, model calls, tool
use, memory and knowledge; every other scope CrewAI knows (guardrails, MCP, A2A, reasoning,
evaluation...) gets a generic ``step_start`` / ``step_end`` / ``step_error`` rule here, so any
CrewAI ``parent_event_id`` names an event the listener logs.
"""

from __future__ import annotations

from typing import Any, Final

from crewai.events.event_context import (
    SCOPE_ENDING_EVENTS,
    SCOPE_STARTING_EVENTS,
    VALID_EVENT_PAIRS,
)

from agentledger.integrations.crewai._builders import SPECIFIC
from agentledger.integrations.crewai._values import Builder, Out, Role, Rule, cut, error_type
from agentledger.protocol import vocabulary as v

__all__ = ["RULES"]


# --- generic scopes -----------------------------------------------------------------------

_KIND_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("crew_", "crew"),
    ("lite_agent_", "agent"),
    ("agent_evaluation", "evaluation"),
    ("agent_reasoning", "reasoning"),
    ("llm_guardrail", "guardrail"),
    ("mcp_", "mcp"),
    ("memory_", "memory"),
    ("knowledge_", "knowledge"),
    ("a2a_", "a2a"),
    ("method_execution", "flow_method"),
    ("flow_", "flow"),
)

_END_SUFFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("_completed", v.STEP_END),
    ("_finished", v.STEP_END),
    ("_failed", v.STEP_ERROR),
    ("_error", v.STEP_ERROR),
    ("_canceled", v.INTERRUPTED),
    ("_paused", v.INTERRUPTED),
)


def _generic_kind(event_type: str) -> str:
    for prefix, kind in _KIND_PREFIXES:
        if event_type.startswith(prefix):
            return kind
    return event_type.split("_", 1)[0]


def _base_name(event_type: str) -> str:
    for suffix in ("_started", *(s for s, _ in _END_SUFFIXES)):
        if event_type.endswith(suffix):
            return event_type.removesuffix(suffix)
    return event_type


def _generic_name(event: Any, event_type: str) -> str:
    for attr in ("method_name", "flow_name", "tool_name", "server_name", "crew_name"):
        value = getattr(event, attr, None)
        if isinstance(value, str) and value:
            return value
    return _base_name(event_type)


def _generic_start(event_type: str) -> Builder:
    kind = _generic_kind(event_type)

    def build(source: Any, event: Any, max_chars: int) -> list[Out]:
        return [Out(v.STEP_START, {"name": _generic_name(event, event_type), "kind": kind})]

    return build


def _generic_end(event_type: str) -> Builder:
    kind = _generic_kind(event_type)
    outcome = next((t for s, t in _END_SUFFIXES if event_type.endswith(s)), v.STEP_END)

    def build(source: Any, event: Any, max_chars: int) -> list[Out]:
        name = _generic_name(event, event_type)
        error = getattr(event, "error", None)
        if outcome == v.INTERRUPTED:
            return [Out(v.INTERRUPTED, {"reason": event_type, "name": name})]
        data: dict[str, Any] = {"name": name, "kind": kind}
        if outcome == v.STEP_ERROR:
            data["error"] = cut(error, max_chars) or event_type
            data["type"] = error_type(error, event_type)
        return [Out(outcome, data)]

    return build


def _build_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for event_type in SCOPE_STARTING_EVENTS:
        rules[event_type] = Rule(Role.START, _generic_kind(event_type), _generic_start(event_type))
    for event_type in SCOPE_ENDING_EVENTS:
        if event_type in VALID_EVENT_PAIRS:
            kind = _generic_kind(event_type)
            rules[event_type] = Rule(Role.END, kind, _generic_end(event_type))
    rules.update(SPECIFIC)
    return rules


#: CrewAI event ``type`` -> rule, for every event the listener maps.
RULES: Final[dict[str, Rule]] = _build_rules()
