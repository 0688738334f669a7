"""Token usage of CrewAI model calls, in the vocabulary's shape, and per-scope roll-ups.

CrewAI hands ``LLMCallCompletedEvent.usage`` over as the provider's raw dict (OpenAI, Anthropic,
Gemini and LiteLLM spellings). :func:`token_usage` folds those aliases the way CrewAI's own
normalizer does (``crewai.types.usage_metrics.UsageMetrics.from_provider_dict``, crewai 1.15:
same keys, same reconciliation of raw Anthropic usage whose cache counters are apart from
``input_tokens``; a test checks the two agree) without building a pydantic model per call,
and re-keys the result to ``data.token_usage`` (:mod:`agentledger.protocol.vocabulary`):
``input_tokens`` *includes* ``cache_read_tokens`` and ``cache_write_tokens``. A counter the
provider did not report is ``None``, never 0.

Roll-ups (field case H13): task and crew steps get the sum of the ``llm_end`` usage below them
in a separate ``data.rollup`` object, so summing ``data.token_usage`` over a session never
counts a call twice.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["Rollup", "token_usage"]

_PROMPT_KEYS = ("prompt_tokens", "prompt_token_count", "input_tokens")
_COMPLETION_KEYS = ("completion_tokens", "candidates_token_count", "output_tokens")
_CACHE_READ_KEYS = ("cached_tokens", "cached_prompt_tokens", "cache_read_input_tokens")
_CACHE_WRITE_KEYS = ("cache_creation_tokens", "cache_creation_input_tokens")
_SUMMED = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _first(raw: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first non-zero count under ``keys``; 0 if one is reported as 0; None if none is."""
    seen_zero = False
    for key in keys:
        value = _int(raw.get(key))
        if value:
            return value
        seen_zero = seen_zero or value == 0
    return 0 if seen_zero else None


def _detail(raw: Mapping[str, Any], parent: str, key: str) -> int | None:
    details = raw.get(parent)
    return _int(details.get(key)) if isinstance(details, Mapping) else None


def token_usage(raw: Any, model: str | None) -> dict[str, Any] | None:
    """Re-key one provider usage dict into ``data.token_usage``.

    Args:
        raw: ``LLMCallCompletedEvent.usage`` (a dict of token counters, or ``None``).
        model: the model name reported with the call, stored as ``token_usage.model``.

    Returns:
        ``{"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
        "reasoning_tokens", "model"}`` (ints in tokens, or ``None`` where the provider said
        nothing), or ``None`` when there is no usage at all.
    """
    if not isinstance(raw, Mapping) or not raw:
        return None
    cache_read = _first(raw, _CACHE_READ_KEYS)
    if not cache_read:
        cache_read = _detail(raw, "prompt_tokens_details", "cached_tokens") or cache_read
    cache_write = _first(raw, _CACHE_WRITE_KEYS)
    if "input_tokens" in raw and (
        "cache_read_input_tokens" in raw or "cache_creation_input_tokens" in raw
    ):
        # raw Anthropic shape: input_tokens is only the uncached part
        prompt: int | None = (
            (_int(raw.get("input_tokens")) or 0)
            + (_int(raw.get("cache_read_input_tokens")) or 0)
            + (_int(raw.get("cache_creation_input_tokens")) or 0)
        )
    else:
        prompt = _first(raw, _PROMPT_KEYS)
    reasoning = _int(raw.get("reasoning_tokens"))
    if reasoning is None:
        reasoning = _detail(raw, "completion_tokens_details", "reasoning_tokens")
    return {
        "input_tokens": prompt,
        "output_tokens": _first(raw, _COMPLETION_KEYS),
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": reasoning,
        "model": model,
    }


class Rollup:
    """Token totals of the model calls below one task or crew step (thread-safe).

    Non-additive by construction: it is written as ``data.rollup`` on the step's closing event,
    never as ``data.token_usage`` (field case H13).
    """

    __slots__ = ("_calls", "_closed", "_lock", "_sums", "_without_usage")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._without_usage = 0
        self._sums: dict[str, int | None] = dict.fromkeys(_SUMMED)
        self._closed = False

    def add(self, usage: Mapping[str, Any] | None) -> bool:
        """Count one finished model call and its ``token_usage`` (``None`` = not reported).

        Returns:
            False when the step was already closed (:meth:`close`): the call is not counted.
        """
        with self._lock:
            if self._closed:
                return False
            self._calls += 1
            if usage is None:
                self._without_usage += 1
                return True
            for key in _SUMMED:
                value = usage.get(key)
                if isinstance(value, int):
                    self._sums[key] = (self._sums[key] or 0) + value
        return True

    def close(self) -> dict[str, Any]:
        """Freeze the totals (later :meth:`add` calls are refused) and return them.

        Returns ``{"llm_calls", "llm_calls_without_usage", "token_usage"}``.
        """
        with self._lock:
            self._closed = True
        return self.to_data()

    def to_data(self) -> dict[str, Any]:
        """``{"llm_calls", "llm_calls_without_usage", "token_usage"}``.

        ``token_usage`` holds the summed counters (tokens; ``None`` where no call reported
        that counter), or is ``None`` when no call reported usage at all.
        """
        with self._lock:
            reported = self._calls - self._without_usage
            return {
                "llm_calls": self._calls,
                "llm_calls_without_usage": self._without_usage,
                "token_usage": dict(self._sums) if reported else None,
            }
