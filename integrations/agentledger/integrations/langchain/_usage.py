"""Token usage and model identity from LangChain's model callbacks.

Usage is read from ``generation.message.usage_metadata`` first (LangChain's normalized
``UsageMetadata``, where ``input_tokens`` already includes cache reads and writes), and from the
legacy, provider-specific ``LLMResult.llm_output`` only when no message carries it (field case
H16). Unknown usage is ``None``, never 0 (field case H05; the token-usage rule of
:mod:`agentledger.protocol.vocabulary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.outputs import ChatGeneration, LLMResult

__all__ = ["finish_reason", "model_name", "response_model", "usage_from_result"]

_MODEL_KEYS = ("model", "model_name", "model_id", "deployment_name", "azure_deployment")


def model_name(
    serialized: Mapping[str, Any] | None,
    invocation_params: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
) -> str | None:
    """The model id of a model run (``"gpt-4o-mini"``), not the wrapper class name.

    Order: invocation params (``model``, ``model_name``, ...), then ``ls_model_name`` from the
    run metadata, then the params' ``_type``, then the class name from ``serialized``.
    """
    params = invocation_params or {}
    for key in _MODEL_KEYS:
        value = params.get(key)
        if isinstance(value, str) and value:
            return value
    meta = metadata or {}
    value = meta.get("ls_model_name")
    if isinstance(value, str) and value:
        return value
    value = params.get("_type")
    if isinstance(value, str) and value:
        return value
    if serialized:
        ident = serialized.get("id")
        if isinstance(ident, list) and ident:
            return str(ident[-1])
        name = serialized.get("name")
        if isinstance(name, str):
            return name
    return None


def _first_generation(response: LLMResult) -> Any:
    for batch in response.generations:
        for generation in batch:
            return generation
    return None


def response_model(response: LLMResult) -> str | None:
    """The model id the provider reports in the response (``response_metadata``), if any."""
    generation = _first_generation(response)
    message = getattr(generation, "message", None)
    meta = getattr(message, "response_metadata", None) or {}
    for key in ("model_name", "model"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    llm_output = response.llm_output or {}
    value = llm_output.get("model_name") or llm_output.get("model")
    return value if isinstance(value, str) and value else None


def finish_reason(response: LLMResult) -> str | None:
    """``finish_reason`` / ``stop_reason`` from generation info or response metadata."""
    generation = _first_generation(response)
    if generation is None:
        return None
    sources: list[Mapping[str, Any]] = [generation.generation_info or {}]
    message = getattr(generation, "message", None)
    if message is not None:
        sources.append(message.response_metadata or {})
    for source in sources:
        for key in ("finish_reason", "stop_reason", "done_reason"):
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _from_usage_metadata(usage: Mapping[str, Any]) -> dict[str, Any]:
    inputs = usage.get("input_token_details") or {}
    outputs = usage.get("output_token_details") or {}
    return {
        "input_tokens": _int(usage.get("input_tokens")),
        "output_tokens": _int(usage.get("output_tokens")),
        "cache_read_tokens": _int(inputs.get("cache_read")),
        "cache_write_tokens": _int(inputs.get("cache_creation")),
        "reasoning_tokens": _int(outputs.get("reasoning")),
    }


def _from_llm_output(llm_output: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = llm_output.get("token_usage") or llm_output.get("usage")
    if not isinstance(raw, Mapping) or not raw:
        return None
    if "prompt_tokens" in raw or "completion_tokens" in raw:  # OpenAI-style
        prompt_details = raw.get("prompt_tokens_details") or {}
        completion_details = raw.get("completion_tokens_details") or {}
        return {
            "input_tokens": _int(raw.get("prompt_tokens")),
            "output_tokens": _int(raw.get("completion_tokens")),
            "cache_read_tokens": _int(prompt_details.get("cached_tokens")),
            "cache_write_tokens": None,
            "reasoning_tokens": _int(completion_details.get("reasoning_tokens")),
        }
    # Anthropic-style: input_tokens excludes the cache parts, so add them (vocabulary rule:
    # cache reads and writes are parts of input_tokens, never on top).
    base = _int(raw.get("input_tokens"))
    read = _int(raw.get("cache_read_input_tokens"))
    write = _int(raw.get("cache_creation_input_tokens"))
    total = None if base is None else base + (read or 0) + (write or 0)
    return {
        "input_tokens": total,
        "output_tokens": _int(raw.get("output_tokens")),
        "cache_read_tokens": read,
        "cache_write_tokens": write,
        "reasoning_tokens": None,
    }


def usage_from_result(response: LLMResult, model: str | None) -> dict[str, Any] | None:
    """``data.token_usage`` for an ``llm_end`` event, or ``None`` when no usage is known.

    Takes the first generation whose message carries ``usage_metadata`` (providers repeat the
    call's usage on every ``n`` choice, so summing would double count); falls back to
    ``llm_output`` (H16). Keys are those of ``vocabulary.TOKEN_USAGE_KEYS``; a part the
    provider did not report is ``None``.
    """
    usage: dict[str, Any] | None = None
    for batch in response.generations:
        for generation in batch:
            if not isinstance(generation, ChatGeneration):
                continue
            meta = getattr(generation.message, "usage_metadata", None)
            if not meta:
                continue
            usage = _from_usage_metadata(meta)
            break
        if usage is not None:
            break
    if usage is None and response.llm_output:
        usage = _from_llm_output(response.llm_output)
    if usage is None:
        return None
    usage["model"] = model
    return usage
