"""Token usage normalization agrees with CrewAI's own (``UsageMetrics.from_provider_dict``)."""

from __future__ import annotations

from typing import Any

import pytest
from crewai.types.usage_metrics import UsageMetrics

from agentledger.integrations.crewai._usage import token_usage

pytestmark = pytest.mark.crewai

RAW: list[dict[str, Any]] = [
    {"prompt_tokens": 120, "completion_tokens": 30, "cached_prompt_tokens": 100},
    {
        "prompt_tokens": 50,
        "completion_tokens": 7,
        "prompt_tokens_details": {"cached_tokens": 32},
        "completion_tokens_details": {"reasoning_tokens": 4},
    },
    {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 200},  # raw Anthropic
    {"input_tokens": 10, "output_tokens": 3, "cache_creation_input_tokens": 40},
    {"prompt_token_count": 9, "candidates_token_count": 2},  # Gemini
    {"input_tokens": 77, "output_tokens": 5, "reasoning_tokens": 2, "cache_creation_tokens": 1},
]


@pytest.mark.parametrize("raw", RAW)
def test_counts_match_crewai_normalizer(raw: dict[str, Any]) -> None:
    ours = token_usage(raw, "m")
    theirs = UsageMetrics.from_provider_dict(raw)
    assert ours is not None and theirs is not None
    assert (ours["input_tokens"] or 0) == theirs.prompt_tokens
    assert (ours["output_tokens"] or 0) == theirs.completion_tokens
    assert (ours["cache_read_tokens"] or 0) == theirs.cached_prompt_tokens
    assert (ours["cache_write_tokens"] or 0) == theirs.cache_creation_tokens
    assert ours["model"] == "m"
    # the vocabulary invariant: cache parts are inside input_tokens
    cached = (ours["cache_read_tokens"] or 0) + (ours["cache_write_tokens"] or 0)
    assert ours["input_tokens"] >= cached


def test_unreported_counters_are_null_and_no_usage_is_none() -> None:
    usage = token_usage({"prompt_tokens": 5, "completion_tokens": 1}, None)
    assert usage == {
        "input_tokens": 5,
        "output_tokens": 1,
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "reasoning_tokens": None,
        "model": None,
    }
    assert token_usage(None, "m") is None
    assert token_usage({}, "m") is None
