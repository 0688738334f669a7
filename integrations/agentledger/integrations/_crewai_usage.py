"""Token usage of CrewAI model calls, in the vocabulary's shape, and per-scope roll-ups.

CrewAI hands ``LLMCallCompletedEvent.usage`` over as the provider's raw dict (OpenAI, Anthropic,
Gemini and LiteLLM spellings). CrewAI's own normalizer,
:meth:`crewai.types.usage_metrics.UsageMetrics.from_provider_dict`, already folds the aliases
and reconciles raw Anthropic usage (cache counters apart from ``input_tokens``) into a billed
prompt count, so it is reused here; the result is re-keyed to ``data.token_usage``
(``shared/docs/event-vocabulary.md``): ``input_tokens`` *includes* ``cache_read_tokens`` and
``cache_write_tokens``. A counter the provider did not report is ``None``, never 0.

Roll-ups (field case H13): task and crew steps get the sum of the ``llm_end`` usage below them
in a separate ``data.rollup`` object, so summing ``data.token_usage`` over a session never
counts a call twice.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from crewai.types.usage_metrics import UsageMetrics

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


def _has_any(raw: Mapping[str, Any], keys: tuple[str, ...]) -> bool:
    return any(raw.get(key) is not None for key in keys)


def _has_cache_read(raw: Mapping[str, Any]) -> bool:
    if _has_any(raw, _CACHE_READ_KEYS):
        return True
    details = raw.get("prompt_tokens_details")
    return isinstance(details, Mapping) and details.get("cached_tokens") is not None


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
    metrics = UsageMetrics.from_provider_dict(dict(raw))
    if metrics is None:
        return None
    return {
        "input_tokens": metrics.prompt_tokens if _has_any(raw, _PROMPT_KEYS) else None,
        "output_tokens": metrics.completion_tokens if _has_any(raw, _COMPLETION_KEYS) else None,
        "cache_read_tokens": metrics.cached_prompt_tokens if _has_cache_read(raw) else None,
        "cache_write_tokens": (
            metrics.cache_creation_tokens if _has_any(raw, _CACHE_WRITE_KEYS) else None
        ),
        "reasoning_tokens": (
            metrics.reasoning_tokens if raw.get("reasoning_tokens") is not None else None
        ),
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
