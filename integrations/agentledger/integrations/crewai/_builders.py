"""Builders of the CrewAI events mapped one by one: crews, tasks, agents, flows, model calls,
tool use, memory and knowledge.

Builders only read the event (never the live objects' mutable state beyond names and ids) and
return plain JSON-able ``data``; :data:`SPECIFIC` is their rule table.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, Final

from agentledger.integrations._shared import tool_names
from agentledger.integrations.crewai._usage import token_usage
from agentledger.integrations.crewai._values import (
    Builder,
    Out,
    Role,
    Rule,
    as_json,
    chat_messages,
    cut,
    error_type,
    parse_tool_args,
    raw_output,
)
from agentledger.protocol import vocabulary as v

__all__ = ["SPECIFIC"]


# --- crew ---------------------------------------------------------------------------------


def _crew_name(source: Any, event: Any) -> str:
    name = getattr(event, "crew_name", None) or getattr(source, "name", None)
    return str(name) if name else "crew"


def _crew_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data: dict[str, Any] = {
        "name": _crew_name(source, event),
        "kind": "crew",
        "inputs": as_json(getattr(event, "inputs", None), max_chars),
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
        "outputs": raw_output(getattr(event, "output", None), max_chars),
        # CrewAI's own figure (lifetime counters of the crew's LLM objects), for comparison.
        "crewai_total_tokens": getattr(event, "total_tokens", None),
    }
    return [Out(v.STEP_END, data)]


def _crew_failed(source: Any, event: Any, max_chars: int) -> list[Out]:
    error = getattr(event, "error", None)
    data = {
        "name": _crew_name(source, event),
        "kind": "crew",
        "error": cut(error, max_chars),
        "type": error_type(error, "CrewKickoffFailed"),
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
    return cut(name, min(max_chars, 200)) or "task"


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
        "description": cut(getattr(task, "description", None), max_chars),
        "expected_output": cut(getattr(task, "expected_output", None), max_chars),
        "agent_role": getattr(agent, "role", None),
        "inputs": {"context": cut(getattr(event, "context", None), max_chars)},
    }
    return [Out(v.STEP_START, data)]


def _task_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    task = _task_of(source, event)
    data = {
        "name": _task_name(task, event, max_chars),
        "kind": "task",
        **_task_ids(task),
        "outputs": raw_output(getattr(event, "output", None), max_chars),
    }
    return [Out(v.STEP_END, data)]


def _task_failed(source: Any, event: Any, max_chars: int) -> list[Out]:
    task = _task_of(source, event)
    error_type = getattr(event, "error_type", None)
    data = {
        "name": _task_name(task, event, max_chars),
        "kind": "task",
        **_task_ids(task),
        "error": cut(getattr(event, "error", None), max_chars),
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
            "goal": cut(getattr(agent, "goal", None), max_chars),
            "tools": tool_names(getattr(event, "tools", None)),
            **_task_ids(task),
            "inputs": {
                "task_prompt": cut(getattr(event, "task_prompt", None), max_chars),
                "messages": chat_messages(getattr(event, "messages", None), max_chars)
                if getattr(event, "messages", None) is not None
                else None,
            },
        }
    )
    return [Out(v.STEP_START, data)]


def _agent_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _agent_fields(source, event)
    data["outputs"] = {"raw": cut(getattr(event, "output", None), max_chars)}
    return [Out(v.STEP_END, data)]


def _agent_error(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _agent_fields(source, event)
    error = getattr(event, "error", None)
    data["error"] = cut(error, max_chars)
    data["type"] = error_type(error, "AgentExecutionError")
    return [Out(v.STEP_ERROR, data)]


# --- flows --------------------------------------------------------------------------------


def _flow_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": str(getattr(event, "flow_name", None) or "flow"),
        "kind": "flow",
        "inputs": as_json(getattr(event, "inputs", None), max_chars),
    }
    return [Out(v.STEP_START, data)]


def _flow_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": str(getattr(event, "flow_name", None) or "flow"),
        "kind": "flow",
        "outputs": as_json(getattr(event, "result", None), max_chars),
    }
    return [Out(v.STEP_END, data)]


def _method_name(event: Any) -> str:
    return str(getattr(event, "method_name", None) or "method")


def _method_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": _method_name(event),
        "kind": "flow_method",
        "flow": getattr(event, "flow_name", None),
        "inputs": as_json(getattr(event, "params", None), max_chars),
    }
    return [Out(v.STEP_START, data)]


def _method_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": _method_name(event),
        "kind": "flow_method",
        "flow": getattr(event, "flow_name", None),
        "outputs": as_json(getattr(event, "result", None), max_chars),
    }
    return [Out(v.STEP_END, data)]


def _paused(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "reason": cut(getattr(event, "message", None), max_chars) or "paused",
        "name": getattr(event, "method_name", None) or getattr(event, "flow_name", None),
        "flow_id": getattr(event, "flow_id", None),
    }
    return [Out(v.INTERRUPTED, data)]


# --- model calls --------------------------------------------------------------------------


def _llm_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data: dict[str, Any] = {
        "model": getattr(event, "model", None),
        "messages": chat_messages(getattr(event, "messages", None), max_chars),
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
        data["text"] = cut(response, max_chars)
    elif isinstance(response, list):
        data["text"] = None
        data["tool_calls"] = as_json(response, max_chars)
    else:
        data["text"] = None if response is None else as_json(response, max_chars)
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
        "error": cut(error, max_chars),
        "type": error_type(error, "LLMCallFailed"),
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
        data["error"] = cut(getattr(failure, "message", None) or failure, max_chars)
        data["type"] = "ToolFailure"
        data["result"] = as_json(getattr(event, "output", None), max_chars)
        return [Out(v.TOOL_ERROR, data)]
    data["result"] = as_json(getattr(event, "output", None), max_chars)
    data["status"] = "ok"
    return [Out(v.TOOL_RESULT, data)]


def _tool_error(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = _tool_fields(event)
    error = getattr(event, "error", None)
    data["error"] = cut(error, max_chars)
    data["type"] = error_type(error, "ToolUsageError")
    return [Out(v.TOOL_ERROR, data)]


def _tool_point_error(default_type: str) -> Builder:
    def build(source: Any, event: Any, max_chars: int) -> list[Out]:
        data = _tool_fields(event)
        data["args"] = parse_tool_args(getattr(event, "tool_args", None), max_chars)
        error = getattr(event, "error", None)
        data["error"] = cut(error, max_chars)
        data["type"] = error_type(error, default_type)
        return [Out(v.TOOL_ERROR, data)]

    return build


# --- memory and knowledge -----------------------------------------------------------------


def _memory_query_start(source: Any, event: Any, max_chars: int) -> list[Out]:
    data = {
        "name": "memory_query",
        "kind": "memory",
        "inputs": {
            "query": cut(getattr(event, "query", None), max_chars),
            "limit": getattr(event, "limit", None),
            "score_threshold": getattr(event, "score_threshold", None),
        },
    }
    return [Out(v.STEP_START, data)]


def _memory_query_end(source: Any, event: Any, max_chars: int) -> list[Out]:
    results = as_json(getattr(event, "results", None), max_chars)
    end = {
        "name": "memory_query",
        "kind": "memory",
        "outputs": {"results": results, "query_time_ms": getattr(event, "query_time_ms", None)},
    }
    documents = results if isinstance(results, list) else [results]
    retrieval = {
        "query": cut(getattr(event, "query", None), max_chars),
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
        "outputs": {"retrieved": cut(text, max_chars)} if text is not None else None,
    }
    if text is None:
        return [Out(v.STEP_END, end)]
    retrieval = {
        "query": cut(getattr(event, "query", None), max_chars),
        "documents": [{"text": cut(text, max_chars)}],
        "source": "crewai_knowledge",
    }
    return [Out(v.RETRIEVAL, retrieval, "retrieval"), Out(v.STEP_END, end)]


#: The specific rules, by CrewAI event ``type``.
SPECIFIC: Final[dict[str, Rule]] = {
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
