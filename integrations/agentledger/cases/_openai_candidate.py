"""A built-in candidate: the recorded conversation re-sent to any OpenAI-compatible endpoint.

``cases run --factory agentledger.cases:openai_candidate --base-url URL --model M
--system-prompt FILE`` needs no agent code. Each turn sends the conversation (the new system
prompt, else the recorded one, then the case's user messages) to ``POST {base_url}/chat/
completions``, or to ``POST {base_url}/responses`` when the case was recorded over the
Responses API (``captured_with.api``), with the model (``--model``, else the first model the
case recorded) and the sampling parameters the case recorded (``--temperature`` overrides).
When the model asks for a tool, the case's stub answers it (the real tool never runs) and the
loop goes on until the model answers. Calls are logged with
:func:`agentledger.integrations.openai.instrument_openai` into the run's session, so the run is
checked from the ledger like any other.

The API key is the OpenAI SDK's (``OPENAI_API_KEY``); a local server that wants none still
needs some value there.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any, Final

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from agentledger.cases._factory import SpecError
from agentledger.cases._model import Case

__all__ = ["MAX_MODEL_CALLS", "RESPONSES_API", "openai_candidate"]

#: Model calls per turn at most (a model that keeps asking for tools ends the turn there).
MAX_MODEL_CALLS: Final = 25

#: Recorded parameters re-sent with each call, per API.
_SENT_PARAMETERS = ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed")
_SENT_RESPONSES_PARAMETERS = ("temperature", "top_p", "max_output_tokens")
#: ``captured_with.api`` of a case recorded over the Responses API.
RESPONSES_API: Final = "responses"


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    content = getattr(value, "content", None)  # a ToolMessage from a tool with artifacts
    if isinstance(content, str):
        return content
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


@functools.cache
def _http_client() -> Any:
    from openai import DefaultHttpxClient

    return DefaultHttpxClient()


def openai_candidate(
    tools: Sequence[BaseTool],
    ledger: Any,
    session_id: str,
    case: Case,
    system_prompt: str | None = None,
    model: str | None = None,
    temperature: float | None = None,
    base_url: str | None = None,
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """The candidate for one run (a factory for ``cases run``; see the module docstring).

    Raises:
        SpecError: the ``openai`` extra is not installed, or no model is known.
    """
    del system_prompt  # the runner puts the prompt in front of the messages
    try:
        from openai import OpenAI

        from agentledger.integrations.openai import instrument_openai
    except ImportError as error:
        raise SpecError(
            f"--factory agentledger.cases:openai_candidate needs agentledger[openai]: {error}"
        ) from error
    recorded = case.captured_with
    models = [m for m in recorded.get("models") or [] if isinstance(m, str)]
    chosen = model or (models[0] if models else None)
    if not chosen:
        raise SpecError(f"case {case.case_id}: no model recorded; pass --model")
    responses = recorded.get("api") == RESPONSES_API
    sent_keys = _SENT_RESPONSES_PARAMETERS if responses else _SENT_PARAMETERS
    parameters = {
        k: v
        for k, v in (recorded.get("parameters") or {}).items()
        if k in sent_keys and v is not None
    }
    if temperature is not None:
        parameters["temperature"] = temperature
    # one HTTP client for every run of the process: building one loads the CA store (~30 ms,
    # more than a local model's answer); the SDK client around it is cheap and per run
    client = instrument_openai(
        OpenAI(base_url=base_url, http_client=_http_client()), ledger, session_id=session_id
    )
    schemas = [convert_to_openai_tool(t) for t in tools]
    run_tool = functools.partial(_run_tool, {t.name: t for t in tools})
    if responses:
        flat = [{"type": "function", **schema["function"]} for schema in schemas]
        return functools.partial(_respond_responses, client, chosen, parameters, flat, run_tool)
    return functools.partial(_respond_chat, client, chosen, parameters, schemas, run_tool)


def _as_input_items(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-format messages as Responses input items: an assistant message's ``tool_calls``
    become ``function_call`` items and a ``tool`` message a ``function_call_output`` (the
    recorded prefix of a replayed turn comes in chat format); other items pass unchanged."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant" and message.get("tool_calls"):
            if message.get("content"):
                items.append({"role": "assistant", "content": message["content"]})
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id"),
                        "name": function.get("name"),
                        "arguments": function.get("arguments") or "{}",
                    }
                )
        elif role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.get("tool_call_id"),
                    "output": message.get("content") or "",
                }
            )
        else:
            items.append(dict(message))
    return items


def _run_tool(by_name: dict[str, BaseTool], name: str, arguments: str | None) -> str:
    """The stub's answer to one requested call, or the error the model is shown instead."""
    tool = by_name.get(name)
    try:
        args = json.loads(arguments or "{}")
        result = tool.invoke(args) if tool is not None else f"error: no tool named {name}"
    except Exception as error:  # a bad argument string or a stub's refusal
        result = f"error: {type(error).__name__}: {error}"
    return _result_text(result)


def _respond_chat(
    client: Any,
    model: str,
    parameters: dict[str, Any],
    schemas: list[dict[str, Any]],
    run_tool: Callable[[str, str | None], str],
    messages: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """One turn over Chat Completions: call, answer the tool calls, call again."""
    conversation = list(messages)
    extra: dict[str, Any] = {"tools": schemas} if schemas else {}
    for _ in range(MAX_MODEL_CALLS):
        sent: Any = conversation  # plain dicts of the SDK's message shapes
        reply = client.chat.completions.create(model=model, messages=sent, **parameters, **extra)
        message = reply.choices[0].message
        conversation.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            function = getattr(call, "function", None)
            result = run_tool(getattr(function, "name", ""), getattr(function, "arguments", ""))
            conversation.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return conversation


def _respond_responses(
    client: Any,
    model: str,
    parameters: dict[str, Any],
    schemas: list[dict[str, Any]],
    run_tool: Callable[[str, str | None], str],
    messages: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """One turn over the Responses API: the conversation as input items (messages, the
    model's output items, ``function_call_output`` items answering its calls)."""
    conversation = _as_input_items(messages)
    extra: dict[str, Any] = {"tools": schemas} if schemas else {}
    for _ in range(MAX_MODEL_CALLS):
        sent: Any = conversation
        reply = client.responses.create(model=model, input=sent, **parameters, **extra)
        calls = []
        for item in reply.output:
            conversation.append(item.model_dump(exclude_none=True))
            if getattr(item, "type", None) == "function_call":
                calls.append(item)
        if not calls:
            break
        for call in calls:
            result = run_tool(call.name, call.arguments)
            conversation.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": result}
            )
    return conversation
