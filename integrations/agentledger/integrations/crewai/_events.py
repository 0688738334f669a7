"""CrewAI event -> agentledger vocabulary: which events map, to what, with which ``data``.

Every rule is keyed by CrewAI's event ``type`` string (``crewai.events.types.*``; crewai 1.15).
A rule has a *role*:

* ``START``: a CrewAI scope-starting event (``crewai.events.event_context.
  SCOPE_STARTING_EVENTS``); its ledger parent is CrewAI's ``parent_event_id``.
* ``END``: a scope-ending event (``SCOPE_ENDING_EVENTS``); its ledger parent is the starting
  event (``started_event_id``, or ``call_id`` for model calls).
* ``POINT``: an event inside a scope that opens nothing (e.g. a tool-selection error).

Specific rules cover crews, tasks, agents, flows, model calls, tool use, memory and knowledge;
every other scope CrewAI knows (guardrails, MCP, A2A, reasoning, evaluation...) gets a generic
``step_start`` / ``step_end`` / ``step_error`` rule, so any CrewAI ``parent_event_id`` names an
event the listener logs.

Builders only read the event (never the live objects' mutable state beyond names and ids) and
return plain JSON-able ``data``; strings are cut to ``max_chars`` with the client's marker.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from crewai.events.event_context import (
    SCOPE_ENDING_EVENTS,
    SCOPE_STARTING_EVENTS,
    VALID_EVENT_PAIRS,
)

from agentledger.client._sanitize import cut_string, jsonable
from agentledger.integrations._shared import tool_names
from agentledger.integrations.crewai._usage import token_usage
from agentledger.protocol import vocabulary as v

__all__ = ["RULES", "Out", "Role", "Rule", "parse_tool_args"]


class Role(enum.Enum):
    """Where a CrewAI event sits in its scope."""

    START = "start"
    END = "end"
    POINT = "point"


@dataclass(frozen=True, slots=True)
class Out:
    """One ledger event built from a CrewAI event.

    Attributes:
        event: vocabulary event type.
        data: the event's ``data`` object.
        suffix: ``""`` for the main event; a distinct label for an extra event built from the
            same CrewAI event (its id is derived from the CrewAI id plus this label).
    """

    event: str
    data: dict[str, Any]
    suffix: str = ""


Builder = Callable[[Any, Any, int], list[Out]]


@dataclass(frozen=True, slots=True)
class Rule:
    """How one CrewAI event type maps.

    Attributes:
        role: start, end or point.
        kind: the scope kind (``crew``, ``task``, ``agent``, ``flow``, ``llm``, ``tool``...).
        build: ``(source, event, max_chars) -> [Out, ...]``.
        rollup: task and crew scopes sum the token usage of the model calls below them.
    """

    role: Role
    kind: str
    build: Builder
    rollup: bool = False


def _cut(value: Any, max_chars: int) -> str | None:
    if value is None:
        return None
    return cut_string(value if isinstance(value, str) else str(value), max_chars)


def _json(value: Any, max_chars: int) -> Any:
    return jsonable(value, max_string_chars=max_chars)


def _error_type(error: Any, default: str) -> str:
    if isinstance(error, BaseException):
        return type(error).__name__
    return default


def _raw_output(output: Any, max_chars: int) -> dict[str, Any]:
    """``TaskOutput`` / ``CrewOutput`` -> ``{"raw", "json"?}``; anything else as JSON."""
    raw = getattr(output, "raw", None)
    if raw is None:
        return {"raw": _json(output, max_chars)}
    out: dict[str, Any] = {"raw": _cut(raw, max_chars)}
    json_dict = getattr(output, "json_dict", None)
    if json_dict:
        out["json"] = _json(json_dict, max_chars)
    return out


def parse_tool_args(args: Any, max_chars: int) -> dict[str, Any]:
    """CrewAI's tool input (a dict, or the model's JSON text) -> a JSON object (field case H04).

    A string that is not a JSON object is kept whole as ``{"input": text}``.
    """
    if isinstance(args, str):
        text = args.strip()
        try:
            parsed = json.loads(text) if text else {}
        except ValueError:
            return {"input": _cut(args, max_chars)}
        args = parsed
    if isinstance(args, Mapping):
        converted = _json(dict(args), max_chars)
        return converted if isinstance(converted, dict) else {"input": converted}
    return {"input": _json(args, max_chars)}


def _messages(messages: Any, max_chars: int) -> Any:
    if isinstance(messages, str):
        return [{"role": "user", "content": _cut(messages, max_chars)}]
    if not isinstance(messages, Sequence):
        return _json(messages, max_chars)
    out: list[Any] = []
    for message in messages:
        if isinstance(message, Mapping):
            item = {
                "role": message.get("role"),
                "content": _json(message.get("content"), max_chars),
            }
            for key in ("tool_calls", "tool_call_id", "name"):
                if message.get(key) is not None:
                    item[key] = _json(message[key], max_chars)
            out.append(item)
        else:
            out.append(_json(message, max_chars))
    return out


# --- crew ---------------------------------------------------------------------------------


def _crew_name(source: Any, event: Any) -> str:
    name = getattr(event, "crew_name", None) or getattr(source, "name", None)
    return str(name) if name else "crew"


def _crew_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data: dict[str, Any] = {
        "name": _crew_name(source, event),
        "kind": "crew",
        "inputs": _json(getattr(event, "inputs", None), max_chars),
    }
    crew_id = getattr(source, "id", None)
    if crew_id is not None:
        data["crew_id"] = str(crew_id)
    process = getattr(source, "process", None)
    if process is not None:
        data["process"] = str(getattr(process, "value", process))
    return [Out(v.STEP_START, data)]


def _crew_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": _crew_name(source, event),
        "kind": "crew",
        "outputs": _raw_output(getattr(event, "output", None), max_chars),
        # CrewAI's own figure (lifetime counters of the crew's LLM objects), for comparison.
        "crewai_total_tokens": getattr(event, "total_tokens", None),
    }
    return [Out(v.STEP_END, data)]


def _crew_failed(source: Any, event: Any, max_chars: int) -> list[Out]:
    error = getattr(event, "error", None)
    data = {
        "name": _crew_name(source, event),
        "kind": "crew",
        "error": _cut(error, max_chars),
        "type": _error_type(error, "CrewKickoffFailed"),
    }
    return [Out(v.STEP_ERROR, data)]


# --- task ---------------------------------------------------------------------------------


def _task_of(source: Any, event: Any) -> Any:
    task = getattr(event, "task", None)
    return task if task is not None else source


def _task_name(task: Any, event: Any, max_chars: int) -> str:
    name = getattr(task, "name", None) or getattr(event, "task_name", None)
    if not name:
        name = getattr(task, "description", None) or "task"
    return _cut(name, min(max_chars, 200)) or "task"


def _task_ids(task: Any) -> dict[str, Any]:
    task_id = getattr(task, "id", None)
    return {"task_id": str(task_id)} if task_id is not None else {}


def _task_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    task = _task_of(source, event)
    agent = getattr(task, "agent", None)
    data: dict[str, Any] = {
        "name": _task_name(task, event, max_chars),
        "kind": "task",
        **_task_ids(task),
        "description": _cut(getattr(task, "description", None), max_chars),
        "expected_output": _cut(getattr(task, "expected_output", None), max_chars),
        "agent_role": getattr(agent, "role", None),
        "inputs": {"context": _cut(getattr(event, "context", None), max_chars)},
    }
    return [Out(v.STEP_START, data)]


def _task_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    task = _task_of(source, event)
    data = {
        "name": _task_name(task, event, max_chars),
        "kind": "task",
        **_task_ids(task),
        "outputs": _raw_output(getattr(event, "output", None), max_chars),
    }
    return [Out(v.STEP_END, data)]


def _task_failed(source: Any, event: Any, max_chars: int) -> list[Out]:
    task = _task_of(source, event)
    error_type = getattr(event, "error_type", None)
    data = {
        "name": _task_name(task, event, max_chars),
        "kind": "task",
        **_task_ids(task),
        "error": _cut(getattr(event, "error", None), max_chars),
        "type": getattr(error_type, "__name__", None) or "TaskFailed",
    }
    return [Out(v.STEP_ERROR, data)]


# --- agent --------------------------------------------------------------------------------


def _agent_of(source: Any, event: Any) -> Any:
    agent = getattr(event, "agent", None)
    return agent if agent is not None else source


def _agent_fields(source: Any, event: Any) -> dict[str, Any]:
    agent = _agent_of(source, event)
    info = getattr(event, "agent_info", None)
    role = getattr(agent, "role", None)
    if role is None and isinstance(info, Mapping):
        role = info.get("role")
    role = role or getattr(event, "agent_role", None) or "agent"
    data: dict[str, Any] = {"name": str(role), "kind": "agent"}
    agent_id = getattr(agent, "id", None) or getattr(event, "agent_id", None)
    if agent_id is not None:
        data["agent_id"] = str(agent_id)
    return data


def _agent_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _agent_fields(source, event)
    agent = _agent_of(source, event)
    task = getattr(event, "task", None)
    data.update(
        {
            "goal": _cut(getattr(agent, "goal", None), max_chars),
            "tools": tool_names(getattr(event, "tools", None)),
            **_task_ids(task),
            "inputs": {
                "task_prompt": _cut(getattr(event, "task_prompt", None), max_chars),
                "messages": _messages(getattr(event, "messages", None), max_chars)
                if getattr(event, "messages", None) is not None
                else None,
            },
        }
    )
    return [Out(v.STEP_START, data)]


def _agent_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _agent_fields(source, event)
    data["outputs"] = {"raw": _cut(getattr(event, "output", None), max_chars)}
    return [Out(v.STEP_END, data)]


def _agent_error(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _agent_fields(source, event)
    error = getattr(event, "error", None)
    data["error"] = _cut(error, max_chars)
    data["type"] = _error_type(error, "AgentExecutionError")
    return [Out(v.STEP_ERROR, data)]


# --- flows --------------------------------------------------------------------------------


def _flow_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": str(getattr(event, "flow_name", None) or "flow"),
        "kind": "flow",
        "inputs": _json(getattr(event, "inputs", None), max_chars),
    }
    return [Out(v.STEP_START, data)]


def _flow_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": str(getattr(event, "flow_name", None) or "flow"),
        "kind": "flow",
        "outputs": _json(getattr(event, "result", None), max_chars),
    }
    return [Out(v.STEP_END, data)]


def _method_name(event: Any) -> str:
    return str(getattr(event, "method_name", None) or "method")


def _method_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": _method_name(event),
        "kind": "flow_method",
        "flow": getattr(event, "flow_name", None),
        "inputs": _json(getattr(event, "params", None), max_chars),
    }
    return [Out(v.STEP_START, data)]


def _method_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": _method_name(event),
        "kind": "flow_method",
        "flow": getattr(event, "flow_name", None),
        "outputs": _json(getattr(event, "result", None), max_chars),
    }
    return [Out(v.STEP_END, data)]


def _paused(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "reason": _cut(getattr(event, "message", None), max_chars) or "paused",
        "name": getattr(event, "method_name", None) or getattr(event, "flow_name", None),
        "flow_id": getattr(event, "flow_id", None),
    }
    return [Out(v.INTERRUPTED, data)]


# --- model calls --------------------------------------------------------------------------


def _llm_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data: dict[str, Any] = {
        "model": getattr(event, "model", None),
        "messages": _messages(getattr(event, "messages", None), max_chars),
        "provider": getattr(source, "provider", None),
        "tools": tool_names(getattr(event, "tools", None)),
        "invocation_params": {
            key: getattr(event, key, None)
            for key in ("temperature", "top_p", "max_tokens", "stream", "seed", "stop_sequences")
            if getattr(event, key, None) is not None
        },
        "call_id": getattr(event, "call_id", None),
    }
    return [Out(v.LLM_START, data)]


def _llm_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    response = getattr(event, "response", None)
    data: dict[str, Any] = {"model": getattr(event, "model", None)}
    if isinstance(response, str):
        data["text"] = _cut(response, max_chars)
    elif isinstance(response, list):
        data["text"] = None
        data["tool_calls"] = _json(response, max_chars)
    else:
        data["text"] = None if response is None else _json(response, max_chars)
    data["token_usage"] = token_usage(getattr(event, "usage", None), data["model"])
    call_type = getattr(event, "call_type", None)
    data["call_type"] = getattr(call_type, "value", call_type)
    for key in ("finish_reason", "response_id", "call_id"):
        value = getattr(event, key, None)
        if value is not None:
            data[key] = value
    return [Out(v.LLM_END, data)]


def _llm_failed(source: Any, event: Any, max_chars: int) -> list[Out]:
    error = getattr(event, "error", None)
    data = {
        "error": _cut(error, max_chars),
        "type": _error_type(error, "LLMCallFailed"),
        "model": getattr(event, "model", None),
        "call_id": getattr(event, "call_id", None),
    }
    return [Out(v.LLM_ERROR, data)]


# --- tools --------------------------------------------------------------------------------


def _tool_fields(event: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"tool": str(getattr(event, "tool_name", None) or "tool")}
    attempts = getattr(event, "run_attempts", None)
    if attempts is not None:
        data["attempt"] = attempts
    role = getattr(event, "agent_role", None)
    if role is not None:
        data["agent_role"] = role
    return data


def _tool_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _tool_fields(event)
    data["args"] = parse_tool_args(getattr(event, "tool_args", None), max_chars)
    tool_class = getattr(event, "tool_class", None)
    if isinstance(tool_class, str):
        data["tool_class"] = tool_class
    return [Out(v.TOOL_CALL, data)]


def _tool_finished(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _tool_fields(event)
    started, finished = getattr(event, "started_at", None), getattr(event, "finished_at", None)
    if started is not None and finished is not None:
        with contextlib.suppress(TypeError):  # naive vs aware datetimes: no duration
            data["duration_ms"] = round((finished - started).total_seconds() * 1000.0, 3)
    data["from_cache"] = bool(getattr(event, "from_cache", False))
    failure = getattr(event, "failure", None)
    if failure is not None:
        # The tool returned but says it failed: an error like a raised one (field case H22).
        data["error"] = _cut(getattr(failure, "message", None) or failure, max_chars)
        data["type"] = "ToolFailure"
        data["result"] = _json(getattr(event, "output", None), max_chars)
        return [Out(v.TOOL_ERROR, data)]
    data["result"] = _json(getattr(event, "output", None), max_chars)
    data["status"] = "ok"
    return [Out(v.TOOL_RESULT, data)]


def _tool_error(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _tool_fields(event)
    error = getattr(event, "error", None)
    data["error"] = _cut(error, max_chars)
    data["type"] = _error_type(error, "ToolUsageError")
    return [Out(v.TOOL_ERROR, data)]


def _tool_point_error(default_type: str) -> Builder:
    def build(source: Any, event: Any, max_chars: int) -> list[Out]:
        data = _tool_fields(event)
        data["args"] = parse_tool_args(getattr(event, "tool_args", None), max_chars)
        error = getattr(event, "error", None)
        data["error"] = _cut(error, max_chars)
        data["type"] = _error_type(error, default_type)
        return [Out(v.TOOL_ERROR, data)]

    return build


# --- memory and knowledge -----------------------------------------------------------------


def _memory_query_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": "memory_query",
        "kind": "memory",
        "inputs": {
            "query": _cut(getattr(event, "query", None), max_chars),
            "limit": getattr(event, "limit", None),
            "score_threshold": getattr(event, "score_threshold", None),
        },
    }
    return [Out(v.STEP_START, data)]


def _memory_query_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    results = _json(getattr(event, "results", None), max_chars)
    end = {
        "name": "memory_query",
        "kind": "memory",
        "outputs": {"results": results, "query_time_ms": getattr(event, "query_time_ms", None)},
    }
    documents = results if isinstance(results, list) else [results]
    retrieval = {
        "query": _cut(getattr(event, "query", None), max_chars),
        "documents": documents,
        "source": "crewai_memory",
    }
    return [Out(v.RETRIEVAL, retrieval, "retrieval"), Out(v.STEP_END, end)]


def _knowledge_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    name = str(event.type).removesuffix("_completed")
    text = getattr(event, "retrieved_knowledge", None)
    end = {
        "name": name,
        "kind": "knowledge",
        "outputs": {"retrieved": _cut(text, max_chars)} if text is not None else None,
    }
    if text is None:
        return [Out(v.STEP_END, end)]
    retrieval = {
        "query": _cut(getattr(event, "query", None), max_chars),
        "documents": [{"text": _cut(text, max_chars)}],
        "source": "crewai_knowledge",
    }
    return [Out(v.RETRIEVAL, retrieval, "retrieval"), Out(v.STEP_END, end)]


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
            data["error"] = _cut(error, max_chars) or event_type
            data["type"] = _error_type(error, event_type)
        return [Out(outcome, data)]

    return build


# --- the table ----------------------------------------------------------------------------

_SPECIFIC: Final[dict[str, Rule]] = {
    "crew_kickoff_started": Rule(Role.START, "crew", _crew_start, rollup=True),
    "crew_kickoff_completed": Rule(Role.END, "crew", _crew_end),
    "crew_kickoff_failed": Rule(Role.END, "crew", _crew_failed),
    "task_started": Rule(Role.START, "task", _task_start, rollup=True),
    "task_completed": Rule(Role.END, "task", _task_end),
    "task_failed": Rule(Role.END, "task", _task_failed),
    "agent_execution_started": Rule(Role.START, "agent", _agent_start),
    "agent_execution_completed": Rule(Role.END, "agent", _agent_end),
    "agent_execution_error": Rule(Role.END, "agent", _agent_error),
    "lite_agent_execution_started": Rule(Role.START, "agent", _agent_start),
    "lite_agent_execution_completed": Rule(Role.END, "agent", _agent_end),
    "lite_agent_execution_error": Rule(Role.END, "agent", _agent_error),
    "flow_started": Rule(Role.START, "flow", _flow_start),
    "flow_finished": Rule(Role.END, "flow", _flow_end),
    "flow_paused": Rule(Role.END, "flow", _paused),
    "method_execution_started": Rule(Role.START, "flow_method", _method_start),
    "method_execution_finished": Rule(Role.END, "flow_method", _method_end),
    "method_execution_paused": Rule(Role.END, "flow_method", _paused),
    "llm_call_started": Rule(Role.START, "llm", _llm_start),
    "llm_call_completed": Rule(Role.END, "llm", _llm_end),
    "llm_call_failed": Rule(Role.END, "llm", _llm_failed),
    "tool_usage_started": Rule(Role.START, "tool", _tool_start),
    "tool_usage_finished": Rule(Role.END, "tool", _tool_finished),
    "tool_usage_error": Rule(Role.END, "tool", _tool_error),
    "tool_validate_input_error": Rule(
        Role.POINT, "tool", _tool_point_error("ToolValidateInputError")
    ),
    "tool_selection_error": Rule(Role.POINT, "tool", _tool_point_error("ToolSelectionError")),
    "tool_execution_error": Rule(Role.POINT, "tool", _tool_point_error("ToolExecutionError")),
    "memory_query_started": Rule(Role.START, "memory", _memory_query_start),
    "memory_query_completed": Rule(Role.END, "memory", _memory_query_end),
    "knowledge_query_completed": Rule(Role.END, "knowledge", _knowledge_end),
    "knowledge_search_query_completed": Rule(Role.END, "knowledge", _knowledge_end),
}


def _build_rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for event_type in SCOPE_STARTING_EVENTS:
        rules[event_type] = Rule(Role.START, _generic_kind(event_type), _generic_start(event_type))
    for event_type in SCOPE_ENDING_EVENTS:
        if event_type in VALID_EVENT_PAIRS:
            kind = _generic_kind(event_type)
            rules[event_type] = Rule(Role.END, kind, _generic_end(event_type))
    rules.update(_SPECIFIC)
    return rules


#: CrewAI event ``type`` -> rule, for every event the listener maps.
RULES: Final[dict[str, Rule]] = _build_rules()
