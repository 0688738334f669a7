"""What a model call produced, read from a Chat Completion or a Responses ``Response``.

:class:`Outcome` is the same for both APIs and for streamed calls (``_streams`` builds one from
the chunks). Token usage follows the vocabulary: ``input_tokens`` includes the cache parts
(OpenAI's ``prompt_tokens`` / ``input_tokens`` already do), unknown usage is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentledger.integrations.openai._values import field as get
from agentledger.integrations.openai._values import parse_args

__all__ = [
    "Outcome",
    "ToolCall",
    "chat_outcome",
    "chat_usage",
    "response_finish_reason",
    "response_outcome",
    "response_tool_calls",
    "responses_usage",
]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for."""

    call_id: str | None
    name: str
    args: Any

    def to_data(self) -> dict[str, Any]:
        return {"id": self.call_id, "name": self.name, "args": self.args}


@dataclass
class Outcome:
    """The fields of an ``llm_end``."""

    text: str
    finish_reason: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    response_model: str | None = None
    #: streamed calls only
    ttft_ms: float | None = None
    streamed_chunks: int | None = None
    #: the app closed the stream before its end
    closed_early: bool = False


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def chat_usage(usage: Any, model: str | None) -> dict[str, Any] | None:
    """``token_usage`` of a Chat Completions ``usage`` object (``None`` when absent)."""
    if usage is None:
        return None
    prompt = get(usage, "prompt_tokens_details")
    completion = get(usage, "completion_tokens_details")
    return {
        "input_tokens": _int(get(usage, "prompt_tokens")),
        "output_tokens": _int(get(usage, "completion_tokens")),
        "cache_read_tokens": _int(get(prompt, "cached_tokens")) if prompt else None,
        "cache_write_tokens": _int(get(prompt, "cache_write_tokens")) if prompt else None,
        "reasoning_tokens": _int(get(completion, "reasoning_tokens")) if completion else None,
        "model": model,
    }


def responses_usage(usage: Any, model: str | None) -> dict[str, Any] | None:
    """``token_usage`` of a Responses ``usage`` object (``None`` when absent)."""
    if usage is None:
        return None
    inputs = get(usage, "input_tokens_details")
    outputs = get(usage, "output_tokens_details")
    return {
        "input_tokens": _int(get(usage, "input_tokens")),
        "output_tokens": _int(get(usage, "output_tokens")),
        "cache_read_tokens": _int(get(inputs, "cached_tokens")) if inputs else None,
        "cache_write_tokens": _int(get(inputs, "cache_write_tokens")) if inputs else None,
        "reasoning_tokens": _int(get(outputs, "reasoning_tokens")) if outputs else None,
        "model": model,
    }


def _chat_tool_calls(calls: Any) -> list[ToolCall]:
    out: list[ToolCall] = []
    for call in calls or ():
        function = get(call, "function")
        if function is not None:
            arguments = get(function, "arguments")
        else:  # a custom tool: free-form input
            function = get(call, "custom")
            arguments = get(function, "input")
        name = _str(get(function, "name")) or "tool"
        out.append(ToolCall(_str(get(call, "id")), name, parse_args(arguments)))
    return out


def chat_outcome(completion: Any) -> Outcome:
    """The outcome of a ``ChatCompletion`` (its first choice)."""
    choices = get(completion, "choices") or ()
    choice = choices[0] if choices else None
    message = get(choice, "message")
    content = get(message, "content")
    model = _str(get(completion, "model"))
    return Outcome(
        text=content if isinstance(content, str) else "",
        finish_reason=_str(get(choice, "finish_reason")),
        tool_calls=_chat_tool_calls(get(message, "tool_calls")),
        usage=chat_usage(get(completion, "usage"), model),
        response_model=model,
    )


def response_tool_calls(output: Any) -> list[ToolCall]:
    """The function (and custom tool) calls among a response's output items."""
    out: list[ToolCall] = []
    for item in output or ():
        kind = get(item, "type")
        if kind == "function_call":
            arguments = get(item, "arguments")
        elif kind == "custom_tool_call":
            arguments = get(item, "input")
        else:
            continue
        name = _str(get(item, "name")) or "tool"
        out.append(ToolCall(_str(get(item, "call_id")), name, parse_args(arguments)))
    return out


def _response_text(output: Any) -> str:
    texts: list[str] = []
    for item in output or ():
        if get(item, "type") != "message":
            continue
        for part in get(item, "content") or ():
            if get(part, "type") == "output_text" and isinstance(get(part, "text"), str):
                texts.append(get(part, "text"))
    return "".join(texts)


def response_finish_reason(response: Any, has_calls: bool) -> str | None:
    """A chat-style ``finish_reason`` for a response: ``stop`` (or ``tool_calls``) when
    completed, ``length`` when cut at ``max_output_tokens``, else the incomplete reason or
    the status itself (``failed``, ``cancelled``)."""
    status = _str(get(response, "status"))
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        reason = _str(get(get(response, "incomplete_details"), "reason"))
        return "length" if reason == "max_output_tokens" else reason or status
    return status


def response_outcome(response: Any) -> Outcome:
    """The outcome of a Responses ``Response``."""
    output = get(response, "output")
    calls = response_tool_calls(output)
    model = _str(get(response, "model"))
    return Outcome(
        text=_response_text(output),
        finish_reason=response_finish_reason(response, bool(calls)),
        tool_calls=calls,
        usage=responses_usage(get(response, "usage"), model),
        response_model=model,
    )
