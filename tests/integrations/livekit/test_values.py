"""Converters from LiveKit payloads to vocabulary data (pure functions, real LiveKit types)."""

from __future__ import annotations

import pytest
from livekit.agents import llm
from livekit.agents.metrics import LLMMetrics
from livekit.agents.metrics.base import Metadata

from agentledger.integrations.livekit._state import Capped
from agentledger.integrations.livekit._values import (
    MESSAGE_TAIL,
    args_object,
    message_latency,
    ms,
    request_messages,
    request_usage,
)

pytestmark = pytest.mark.livekit


def _metrics(**usage: int) -> LLMMetrics:
    fields = {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "prompt_cached_tokens": 0,
        "cache_creation_tokens": 0,
        "reasoning_tokens": 0,
        "total_tokens": 0,
        **usage,
    }
    return LLMMetrics(
        label="fake",
        request_id="r",
        timestamp=0.0,
        duration=1.0,
        ttft=0.1,
        cancelled=False,
        tokens_per_second=0.0,
        metadata=Metadata(model_name="m", model_provider="p"),
        **fields,
    )


def test_usage_keeps_cache_parts_inside_input_tokens() -> None:
    usage = request_usage(
        _metrics(
            prompt_tokens=100,
            completion_tokens=20,
            prompt_cached_tokens=60,
            cache_creation_tokens=30,
            reasoning_tokens=5,
            total_tokens=120,
        )
    )
    assert usage == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_tokens": 60,
        "cache_write_tokens": 30,
        "reasoning_tokens": 5,
        "model": "m",
    }


def test_unreported_usage_is_null_not_zero() -> None:
    assert request_usage(_metrics()) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ("", {}),
        ("[1, 2]", {"$raw": "[1, 2]"}),
        ("not json", {"$raw": "not json"}),
    ],
)
def test_arguments_become_an_object(raw: str, expected: dict[str, object]) -> None:
    assert args_object(raw) == expected


def test_unmeasured_latency_is_unknown() -> None:
    assert ms(-1.0) is None and ms(None) is None and ms(True) is None
    assert ms(0.2504) == 250.4
    assert message_latency({"llm_node_ttft": 0.5, "tts_node_ttfb": -1}) == {"llm_ttft_ms": 500.0}


def test_request_messages_are_the_tail_before_the_request() -> None:
    ctx = llm.ChatContext()
    for i in range(MESSAGE_TAIL + 5):
        ctx.add_message(role="user", content=f"m{i}", created_at=float(i))
    tail = request_messages(ctx.items, started_at=MESSAGE_TAIL + 2.5)
    assert len(tail) == MESSAGE_TAIL
    assert tail[-1] == {"role": "user", "text": f"m{MESSAGE_TAIL + 2}"}


def test_capped_drops_the_oldest() -> None:
    capped: Capped[str, int] = Capped(2)
    capped["a"], capped["b"], capped["c"] = 1, 2, 3
    assert list(capped) == ["b", "c"]
    with pytest.raises(ValueError):
        Capped(0)
