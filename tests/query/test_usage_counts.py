"""Usage objects in every spelling the usage page lists, and price-table name matching
(docs/pages/usage.md, "Where the counts come from" and "The price table")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentledger.server._query.prices import load_price_table
from agentledger.server._query.usage import Usage, normalize_usage


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # the event vocabulary: input includes both cache parts
        (
            {
                "input_tokens": 100,
                "output_tokens": 9,
                "cache_read_tokens": 60,
                "cache_write_tokens": 30,
                "reasoning_tokens": 4,
                "model": "m",
            },
            Usage(100, 9, 60, 30, 4, "m"),
        ),
        # the reference client: cached_tokens is part of input_tokens
        (
            {"input_tokens": 100, "output_tokens": 9, "cached_tokens": 40},
            Usage(100, 9, 40, 0, 0, None),
        ),
        # OpenAI chat completions
        (
            {
                "prompt_tokens": 120,
                "completion_tokens": 30,
                "total_tokens": 150,
                "prompt_tokens_details": {"cached_tokens": 64},
                "completion_tokens_details": {"reasoning_tokens": 12},
            },
            Usage(120, 30, 64, 0, 12, None),
        ),
        # Anthropic raw: the cache counters are apart from input_tokens
        (
            {
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 2000,
                "cache_creation_input_tokens": 300,
            },
            Usage(2310, 5, 2000, 300, 0, None),
        ),
        # LangChain usage_metadata
        (
            {
                "input_tokens": 500,
                "output_tokens": 20,
                "total_tokens": 520,
                "input_token_details": {"cache_read": 400, "cache_creation": 50},
            },
            Usage(500, 20, 400, 50, 0, None),
        ),
        # Gemini
        ({"prompt_token_count": 80, "candidates_token_count": 7}, Usage(80, 7, 0, 0, 0, None)),
        # cache parts larger than the input claimed: the input is at least their sum
        (
            {"input_tokens": 10, "output_tokens": 1, "cached_tokens": 50},
            Usage(50, 1, 50, 0, 0, None),
        ),
        # counts as strings, negatives and booleans
        (
            {"input_tokens": "12", "output_tokens": -3, "cached_tokens": True},
            Usage(12, 0, 0, 0, 0, None),
        ),
    ],
)
def test_every_listed_spelling_is_read(raw: dict[str, Any], expected: Usage) -> None:
    assert normalize_usage(raw) == expected


@pytest.mark.parametrize(
    "raw", [None, "100 tokens", [], {}, {"model": "gpt-4o"}, {"total_tokens": 9}]
)
def test_no_counts_is_unknown_usage_not_zero(raw: Any) -> None:
    assert normalize_usage(raw) is None


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("gpt-4o", "gpt-4o"),
        ("GPT-4o", "gpt-4o"),
        ("openai/gpt-4o", "gpt-4o"),
        ("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
        ("gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
        ("gpt-4oo", None),
        ("my-local-model", None),
        ("", None),
    ],
)
def test_model_names_match_the_longest_table_name(name: str, found: str | None) -> None:
    price = load_price_table().lookup(name)
    assert (price.model if price else None) == found


def test_every_cheaper_alternative_is_in_the_table_and_cheaper() -> None:
    table = load_price_table()
    for price in table.prices.values():
        assert price.cache_read <= price.input <= price.cache_write, price.model
        if price.cheaper_alternative is not None:
            other = table.prices[price.cheaper_alternative]
            assert other.input < price.input and other.output < price.output, price.model


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ('{"models": {"m": {"output": 1}}}', "models.m.input"),
        ('{"models": {"m": {"input": -1, "output": 1}}}', "models.m.input"),
        ('{"models": {"m": {"input": 1, "output": 1, "price": 2}}}', "unknown field"),
        ('{"models": {"m": {"input": 1, "output": 1, "provider": 3}}}', "models.m.provider"),
        ('{"model": {}}', "'models' object"),
        ("not json", "is not valid"),
    ],
)
def test_a_bad_price_file_names_what_is_wrong(tmp_path: Path, content: str, named: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=named):
        load_price_table(str(path))
    with pytest.raises(ValueError, match="cannot read"):
        load_price_table(str(tmp_path / "missing.json"))
