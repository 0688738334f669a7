"""What a span of the OpenAI Agents SDK says, as plain data: a model call's input, output,
usage and finish reason (from a ``response`` span or a ``generation`` span), and tool
arguments. Nothing here logs; see ``docs/design/integrations-openai-agents.md``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ModelCall", "RequestedCall", "parse_args", "plain", "read_model_call", "usage_of"]


@dataclass
class RequestedCall:
    """A function call the model asked for: its id, tool name and raw arguments."""

    call_id: str
    name: str
    arguments: str


@dataclass
class ModelCall:
    """One model call as its span reports it (fields the span did not carry are ``None``)."""

    model: str | None = None
    response_model: str | None = None
    instructions: str | None = None
    input: list[Any] = field(default_factory=list)
    text: str = ""
    calls: list[RequestedCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    tools: list[str] | None = None
    output: list[Any] = field(default_factory=list)


def plain(value: Any) -> Any:
    """A pydantic model (the SDK's items are the ``openai`` package's types) as a dict,
    a list or mapping of them likewise; anything else unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_none=True, mode="json")
        except Exception:
            return repr(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    return value


def parse_args(arguments: Any) -> dict[str, Any]:
    """A tool's arguments as a JSON object (a string that is not one is kept under ``input``)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {} if arguments is None else {"input": arguments}


def usage_of(usage: Any, model: str | None) -> dict[str, Any] | None:
    """The span's usage in the vocabulary's ``token_usage`` keys (unknown counts are
    ``None``); ``None`` when the span reported no usage."""
    usage = plain(usage)
    if not isinstance(usage, Mapping):
        return None
    inputs = usage.get("input_tokens_details")
    outputs = usage.get("output_tokens_details")
    inputs = inputs if isinstance(inputs, Mapping) else {}
    outputs = outputs if isinstance(outputs, Mapping) else {}
    cache_read = inputs.get("cached_tokens", usage.get("cached_input_tokens"))
    cache_write = inputs.get("cache_write_tokens", usage.get("cache_write_input_tokens"))
    return {
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": outputs.get("reasoning_tokens"),
        "model": model,
    }


def _output_of(items: Sequence[Any]) -> tuple[str, list[RequestedCall]]:
    """The text and the function calls of a Responses output list (dicts)."""
    texts: list[str] = []
    calls: list[RequestedCall] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "function_call":
            call_id = item.get("call_id")
            if isinstance(call_id, str):
                name = item.get("name")
                calls.append(
                    RequestedCall(
                        call_id,
                        name if isinstance(name, str) else "tool",
                        str(item.get("arguments") or ""),
                    )
                )
        elif item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
    return "".join(texts), calls


def _chat_output_of(messages: Sequence[Any]) -> tuple[str, list[RequestedCall]]:
    """The text and tool calls of a generation span's output (Chat Completions messages)."""
    texts: list[str] = []
    calls: list[RequestedCall] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if isinstance(message.get("content"), str):
            texts.append(message["content"])
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping) and isinstance(call.get("id"), str):
                calls.append(
                    RequestedCall(
                        call["id"],
                        str(function.get("name") or "tool"),
                        str(function.get("arguments") or ""),
                    )
                )
    return "".join(texts), calls


def _input_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    converted = plain(value)
    return list(converted) if isinstance(converted, list) else []


def read_model_call(kind: str, span_data: Any) -> ModelCall:
    """A ``response`` or ``generation`` span's model call."""
    call = ModelCall()
    if kind == "generation":
        call.model = getattr(span_data, "model", None)
        call.input = _input_list(getattr(span_data, "input", None))
        system = [m for m in call.input if isinstance(m, Mapping) and m.get("role") == "system"]
        call.instructions = "\n\n".join(str(m.get("content")) for m in system) or None
        call.output = _input_list(getattr(span_data, "output", None))
        call.text, call.calls = _chat_output_of(call.output)
        call.usage = usage_of(getattr(span_data, "usage", None), call.model)
        call.finish_reason = "tool_calls" if call.calls else ("stop" if call.output else None)
        return call
    call.input = _input_list(getattr(span_data, "input", None))
    response = plain(getattr(span_data, "response", None))
    if isinstance(response, Mapping):
        model = response.get("model")
        call.model = call.response_model = model if isinstance(model, str) else None
        instructions = response.get("instructions")
        call.instructions = instructions if isinstance(instructions, str) else None
        output = response.get("output")
        call.output = list(output) if isinstance(output, list) else []
        call.text, call.calls = _output_of(call.output)
        call.tools = [
            str(t.get("name")) for t in response.get("tools") or () if isinstance(t, Mapping)
        ] or None
        incomplete = response.get("incomplete_details")
        if isinstance(incomplete, Mapping) and incomplete.get("reason"):
            call.finish_reason = str(incomplete["reason"])
        elif call.calls:
            call.finish_reason = "tool_calls"
        else:
            status = response.get("status")
            call.finish_reason = "stop" if status in (None, "completed") else str(status)
    call.usage = usage_of(getattr(span_data, "usage", None), call.model)
    if call.usage is None and isinstance(response, Mapping):
        call.usage = usage_of(response.get("usage"), call.model)
    return call
