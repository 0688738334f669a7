"""Read one span's GenAI (OpenTelemetry semantic conventions 1.37) and OpenInference
attributes: what kind of step it is, its model, usage, messages and tool call.

Messages are normalised to ``{"role", "text", "tool_calls": [{"id", "name", "args"}],
"tool_call_id"}`` whichever form carried them: ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (JSON), OpenInference's flattened ``llm.input_messages.N.message.*``,
OpenLLMetry's ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``, or the span events of older
GenAI versions (``gen_ai.user.message``, ``gen_ai.choice``...).
"""

from __future__ import annotations

import ast
import re
from typing import Any

import orjson

__all__ = [
    "KNOWN_KEYS",
    "KNOWN_PREFIXES",
    "first",
    "indexed",
    "input_messages",
    "json_value",
    "model_name",
    "output_messages",
    "retrieval",
    "span_kind",
    "token_usage",
    "tool_call",
]

#: Attributes turned into event fields (everything else is kept in ``metadata.otel``).
KNOWN_KEYS = frozenset(
    {
        "gen_ai.operation.name",
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.response.finish_reasons",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.prompt_tokens",
        "gen_ai.usage.completion_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.reasoning_tokens",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.name",
        "gen_ai.tool.call.id",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.agent.name",
        "agent.name",
        "gen_ai.retrieval.query.text",
        "gen_ai.retrieval.documents",
        "embedding.model_name",
        "gen_ai.conversation.id",
        "openinference.span.kind",
        "llm.model_name",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.token_count.total",
        "llm.token_count.prompt_details.cache_read",
        "llm.token_count.prompt_details.cache_write",
        "llm.token_count.completion_details.reasoning",
        "tool.name",
        "tool_call.id",
        "tool_arguments",
        "tool_response",
        "input.value",
        "output.value",
        "session.id",
        "user.id",
        "enduser.id",
    }
)
KNOWN_PREFIXES = (
    "retrieval.documents.",
    "embedding.embeddings.",
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
)

_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def first(attrs: dict[str, Any], *keys: str) -> Any:
    """The value of the first of ``keys`` present (and not ``None``/empty)."""
    for key in keys:
        value = attrs.get(key)
        if value not in (None, "", []):
            return value
    return None


def json_value(value: Any) -> Any:
    """A JSON string parsed; anything else as is."""
    if isinstance(value, str | bytes) and value[:1] in ("{", "[", b"{", b"["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def span_kind(attrs: dict[str, Any]) -> str:
    """``chat``, ``embeddings``, ``tool``, ``agent``, ``retriever``, ``chain`` or ``span``."""
    op = str(attrs.get("gen_ai.operation.name") or "").lower()
    oi = str(attrs.get("openinference.span.kind") or "").upper()
    legacy = str(attrs.get("llm.request.type") or "").lower()
    loop = str(attrs.get("traceloop.span.kind") or "").lower()
    if op in ("chat", "text_completion", "generate_content") or oi == "LLM":
        return "chat"
    if legacy in ("chat", "completion"):
        return "chat"
    if op == "embeddings" or oi == "EMBEDDING" or legacy == "embedding":
        return "embeddings"
    if op == "execute_tool" or oi == "TOOL" or loop == "tool":
        return "tool"
    if op in ("invoke_agent", "create_agent") or oi == "AGENT" or loop == "agent":
        return "agent"
    if oi == "RETRIEVER" or op == "retrieval":
        return "retriever"
    if oi in ("CHAIN", "RERANKER", "GUARDRAIL", "EVALUATOR") or loop in ("workflow", "task"):
        return "chain"
    return "span"


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def token_usage(attrs: dict[str, Any], model: str | None) -> dict[str, Any]:
    """``data.token_usage`` of an ``llm_end`` (unknown counts are ``None``)."""
    return {
        "input_tokens": _int(
            first(
                attrs,
                "gen_ai.usage.input_tokens",
                "llm.token_count.prompt",
                "gen_ai.usage.prompt_tokens",
            )
        ),
        "output_tokens": _int(
            first(
                attrs,
                "gen_ai.usage.output_tokens",
                "llm.token_count.completion",
                "gen_ai.usage.completion_tokens",
            )
        ),
        "cache_read_tokens": _int(
            first(
                attrs,
                "gen_ai.usage.cache_read.input_tokens",
                "gen_ai.usage.cache_read_input_tokens",
                "llm.token_count.prompt_details.cache_read",
            )
        ),
        "cache_write_tokens": _int(
            first(
                attrs,
                "gen_ai.usage.cache_creation.input_tokens",
                "gen_ai.usage.cache_creation_input_tokens",
                "llm.token_count.prompt_details.cache_write",
            )
        ),
        "reasoning_tokens": _int(
            first(
                attrs,
                "gen_ai.usage.reasoning_tokens",
                "llm.token_count.completion_details.reasoning",
            )
        ),
        "model": model,
    }


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix + "N.rest"`` keys grouped by ``N`` (ordered), each as ``{rest: value}``."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            match = _INDEXED.match(key[len(prefix) :])
            if match:
                groups.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [groups[i] for i in sorted(groups)]


def _args(value: Any) -> dict[str, Any]:
    parsed = json_value(value)
    if isinstance(parsed, dict):
        return parsed
    return {} if parsed in (None, "") else {"input": parsed}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "".join(
            _text(p.get("text") or p.get("content")) if isinstance(p, dict) else _text(p)
            for p in value
        )
    return orjson.dumps(value).decode()


def _semconv_message(raw: dict[str, Any]) -> dict[str, Any]:
    """A ``gen_ai.input.messages`` / ``output.messages`` entry (role + parts)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    call_id = raw.get("tool_call_id")
    parts = raw.get("parts")
    if not isinstance(parts, list):
        parts = [{"type": "text", "content": raw.get("content")}] if raw.get("content") else []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool_call":
            calls.append(
                {
                    "id": part.get("id"),
                    "name": part.get("name"),
                    "args": _args(part.get("arguments")),
                }
            )
        elif kind == "tool_call_response":
            call_id = part.get("id")
            texts.append(_text(part.get("response") if "response" in part else part.get("result")))
        elif kind != "reasoning" and (kind in ("text", None) or "content" in part):
            texts.append(_text(part.get("content")))
    for call in raw.get("tool_calls") or []:  # the older message shape
        if isinstance(call, dict):
            fn = call.get("function") or {}
            calls.append(
                {
                    "id": call.get("id"),
                    "name": fn.get("name", call.get("name")),
                    "args": _args(fn.get("arguments", call.get("arguments"))),
                }
            )
    return {
        "role": str(raw.get("role") or ""),
        "text": "".join(texts),
        "tool_calls": calls,
        "tool_call_id": call_id,
        "finish_reason": raw.get("finish_reason"),
    }


def _flat_message(group: dict[str, Any], base: str) -> dict[str, Any]:
    """An OpenInference (``message.``) or OpenLLMetry (no base) flattened message."""
    calls = []
    for call in indexed(group, f"{base}tool_calls."):
        calls.append(
            {
                "id": first(call, "tool_call.id", "id"),
                "name": first(call, "tool_call.function.name", "name"),
                "args": _args(first(call, "tool_call.function.arguments", "arguments")),
            }
        )
    text = group.get(f"{base}content")
    if text is None:
        text = "".join(
            str(c.get("message_content.text") or "") for c in indexed(group, f"{base}contents.")
        )
    return {
        "role": str(group.get(f"{base}role") or ""),
        "text": _text(text),
        "tool_calls": calls,
        "tool_call_id": group.get(f"{base}tool_call_id"),
        "finish_reason": group.get("finish_reason"),
    }


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _event_message(event: dict[str, Any], role: str) -> dict[str, Any]:
    attrs = event.get("attributes") or {}
    body = json_value(first(attrs, "message", "gen_ai.event.content", "event_body"))
    raw: dict[str, Any] = dict(body) if isinstance(body, dict) else {}
    for key in ("content", "tool_calls", "role", "finish_reason"):
        if key in attrs and key not in raw:
            raw[key] = json_value(attrs[key]) if key == "tool_calls" else attrs[key]
    raw.setdefault("role", role)
    if "id" in attrs and role == "tool":
        raw["tool_call_id"] = attrs["id"]
    if "finish_reason" in attrs:
        raw["finish_reason"] = attrs["finish_reason"]
    return _semconv_message(raw)


def _semconv_list(value: Any) -> list[dict[str, Any]] | None:
    parsed = json_value(value)
    if isinstance(parsed, list):
        return [_semconv_message(m) for m in parsed if isinstance(m, dict)]
    return None


def input_messages(span: dict[str, Any]) -> list[dict[str, Any]]:
    """The prompt's messages (system instructions first), whichever convention carried them."""
    attrs = span["attributes"]
    out: list[dict[str, Any]] = []
    system = json_value(attrs.get("gen_ai.system_instructions"))
    if system:
        out.append(
            {"role": "system", "text": _text(system), "tool_calls": [], "tool_call_id": None}
        )
    semconv = _semconv_list(attrs.get("gen_ai.input.messages"))
    if semconv is not None:
        return out + semconv
    oi = indexed(attrs, "llm.input_messages.")
    if oi:
        return out + [_flat_message(g, "message.") for g in oi]
    legacy = indexed(attrs, "gen_ai.prompt.")
    if legacy:
        return out + [_flat_message(g, "") for g in legacy]
    events = [
        _event_message(e, _EVENT_ROLES[e["name"]])
        for e in span["events"]
        if e["name"] in _EVENT_ROLES
    ]
    if events:
        return out + events
    value = attrs.get("input.value")
    if isinstance(value, str) and value:
        return [*out, {"role": "user", "text": value, "tool_calls": [], "tool_call_id": None}]
    return out


def output_messages(span: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's output messages (text, tool calls, finish reason)."""
    attrs = span["attributes"]
    semconv = _semconv_list(attrs.get("gen_ai.output.messages"))
    if semconv is not None:
        return semconv
    oi = indexed(attrs, "llm.output_messages.")
    if oi:
        return [_flat_message(g, "message.") for g in oi]
    legacy = indexed(attrs, "gen_ai.completion.")
    if legacy:
        return [_flat_message(g, "") for g in legacy]
    events = [
        _event_message(e, "assistant") for e in span["events"] if e["name"] == "gen_ai.choice"
    ]
    if events:
        return events
    value = attrs.get("output.value")
    if isinstance(value, str) and value:
        return [{"role": "assistant", "text": value, "tool_calls": [], "tool_call_id": None}]
    return []


def _callback_args(value: Any) -> Any:
    """OpenLLMetry's LangChain tool input ``{"input_str": "{'city': 'Lyon'}", "tags": ...,
    "metadata": ...}`` (the callback's arguments) as the tool's own arguments."""
    parsed = json_value(value)
    if not (isinstance(parsed, dict) and "input_str" in parsed and "metadata" in parsed):
        return value
    if isinstance(parsed.get("inputs"), dict):
        return parsed["inputs"]
    raw = parsed["input_str"]
    try:  # LangChain passes str() of the arguments: a Python literal, never code to run
        literal = ast.literal_eval(raw) if isinstance(raw, str) else raw
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw
    return literal if isinstance(literal, dict) else raw


def _callback_result(value: Any) -> tuple[Any, Any]:
    """``(result, tool call id)`` of OpenLLMetry's LangChain tool output ``{"output": <a
    serialised ToolMessage>, "kwargs": ...}``; anything else as is, with no id."""
    parsed = json_value(value)
    if not (isinstance(parsed, dict) and "output" in parsed and "kwargs" in parsed):
        return parsed, None
    output = parsed["output"]
    message = output.get("kwargs") if isinstance(output, dict) and output.get("lc") else None
    if isinstance(message, dict) and "content" in message:
        return json_value(message["content"]), message.get("tool_call_id")
    return output, None


def tool_call(span: dict[str, Any]) -> dict[str, Any]:
    """``tool``, ``call_id``, ``args`` and ``result`` of a tool span."""
    attrs = span["attributes"]
    result, call_id = _callback_result(
        first(attrs, "gen_ai.tool.call.result", "tool_response", "output.value")
    )
    args = first(attrs, "gen_ai.tool.call.arguments", "tool_arguments", "input.value")
    return {
        "tool": str(first(attrs, "gen_ai.tool.name", "tool.name") or span["name"]),
        "call_id": first(attrs, "gen_ai.tool.call.id", "tool_call.id") or call_id,
        "args": _args(_callback_args(args)),
        "result": result,
    }


def model_name(attrs: dict[str, Any]) -> Any:
    """The requested model; OpenLLMetry's ``unknown`` (a LangChain model without a model
    parameter) falls back to LangChain's own ``ls_model_name``."""
    model = first(
        attrs,
        "gen_ai.request.model",
        "llm.model_name",
        "embedding.model_name",
        "gen_ai.response.model",
    )
    if model in (None, "unknown"):
        model = first(attrs, "traceloop.association.properties.ls_model_name") or model
    return model


def retrieval(attrs: dict[str, Any]) -> dict[str, Any]:
    """``query`` and ``documents`` of a retriever span: OpenInference's flattened
    ``retrieval.documents.N.document.*`` or GenAI's ``gen_ai.retrieval.documents`` (JSON)."""
    docs: list[dict[str, Any]] = [
        {k.removeprefix("document."): json_value(val) for k, val in d.items()}
        for d in indexed(attrs, "retrieval.documents.")
    ]
    if not docs:
        listed = json_value(attrs.get("gen_ai.retrieval.documents"))
        if isinstance(listed, list):
            docs = [d if isinstance(d, dict) else {"content": d} for d in listed]
    query = first(attrs, "gen_ai.retrieval.query.text", "input.value")
    return {"query": json_value(query), "documents": docs}
