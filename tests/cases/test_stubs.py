"""Stub tools: same names and schemas, answers replayed from the case, real tools never run."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool

from agentledger.cases import Case, StubRegistry, UnexpectedToolCall, stub_tools

pytestmark = pytest.mark.langchain

EXECUTED: list[str] = []


@tool
def get_rate(currency: str, day: int = 0) -> str:
    """Exchange rate of a currency on a day (the real one: must never run)."""
    EXECUTED.append(currency)
    raise AssertionError("the real tool ran")


@tool
def ping() -> str:
    """A tool the source session never called."""
    EXECUTED.append("ping")
    return "pong"


CASE = Case.model_validate(
    {
        "case_id": "rates",
        "inputs": ["rates?"],
        "tool_stubs": {
            "get_rate": [
                {"args": {"currency": "USD"}, "result": "1.10", "order": 0},
                {"args": {"currency": "GBP"}, "result": "0.85", "order": 1},
                {"args": {"currency": "USD"}, "result": "1.11", "order": 2},
                {"args": {"currency": "JPY"}, "error": "rate service down", "order": 3},
            ]
        },
    }
)


def stubs(registry: StubRegistry) -> dict[str, BaseTool]:
    return {t.name: t for t in stub_tools([get_rate, ping], registry)}


def test_same_names_descriptions_and_argument_schemas() -> None:
    made = stubs(StubRegistry(CASE))
    assert set(made) == {"get_rate", "ping"}
    assert made["get_rate"].description == get_rate.description
    assert made["get_rate"].tool_call_schema.model_json_schema() == (
        get_rate.tool_call_schema.model_json_schema()
    )


def test_repeated_calls_replay_in_order_and_same_args_get_same_results() -> None:
    registry = StubRegistry(CASE)
    rate = stubs(registry)["get_rate"]
    answers = [rate.invoke({"currency": c}) for c in ("USD", "GBP", "USD", "USD", "GBP")]
    assert answers == ["1.10", "0.85", "1.11", "1.11", "0.85"]
    assert rate.invoke({"currency": "JPY"}) == "rate service down"  # the source's error
    assert registry.failures == [] and EXECUTED == []
    assert [c[1]["currency"] for c in registry.calls][:3] == ["USD", "GBP", "USD"]


def test_unexpected_tool_or_arguments_are_failures_and_never_run_the_real_tool() -> None:
    registry = StubRegistry(CASE)
    made = stubs(registry)
    answer: Any = made["get_rate"].invoke({"currency": "EUR"})
    assert "unexpected tool call" in answer and "arguments not in the source session" in answer
    assert "pong" not in made["ping"].invoke({})
    assert len(registry.failures) == 2
    assert registry.failures[0].startswith('get_rate(currency="EUR", day=0)')
    assert registry.failures[1] == "ping(): tool not called in the source session"
    assert EXECUTED == []
    with pytest.raises(UnexpectedToolCall):
        registry.answer("get_rate", {"currency": "CHF"})


def test_tools_must_be_langchain_tools() -> None:
    with pytest.raises(TypeError, match="LangChain tools"):
        stub_tools([lambda: None], StubRegistry(CASE))  # type: ignore[list-item]
