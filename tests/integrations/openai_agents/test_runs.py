"""Agent runs of the real OpenAI Agents SDK with a scripted model, recorded by the tracing
processor into a real server: the causal shape of a tool round trip (sync, async, streamed),
a handoff, a tool that raises, a run inside the user's own trace, and the session id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool, trace

from _events import Stored
from agentledger.client import Ledger
from agentledger.integrations.openai_agents import LedgerTracingProcessor

from .fake_model import MODEL, ScriptedModel, ScriptedProvider, call, say

pytestmark = pytest.mark.openai_agents

Read = Callable[[], Stored]


@function_tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    if order_id == "missing":
        raise LookupError(f"no order {order_id}")
    return f"order {order_id} shipped"


def support_agent() -> tuple[Agent[Any], RunConfig, ScriptedModel]:
    model = ScriptedModel(
        [[call("lookup_order", {"order_id": "42"}, "call-1")], say("Order 42 has shipped.")]
    )
    agent = Agent(name="support", instructions="You help customers.", tools=[lookup_order])
    agent.model = MODEL
    return agent, RunConfig(model_provider=ScriptedProvider({MODEL: model})), model


def assert_round_trip(events: Stored, ledger: Ledger) -> None:
    """user message → model call → tool call → tool result → model call → answer."""
    user = events.one("user_message")
    assert user["data"]["text"] == "where is order 42?"
    first, second = events.of("llm_start")
    assert first["parent_id"] == user["event_id"]
    assert {"event_id": user["event_id"], "kind": "read"} in first["caused_by"]
    assert first["data"]["model"] == MODEL
    assert first["data"]["system_prompt"] == "You help customers."
    assert first["data"]["prompt_hash"].startswith("sha256:")
    end_1, end_2 = events.of("llm_end")
    assert events.parent(end_1) == first
    assert end_1["data"]["finish_reason"] == "tool_calls"
    assert end_1["data"]["token_usage"] == {
        "input_tokens": 20,
        "output_tokens": 7,
        "cache_read_tokens": 4,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
        "model": MODEL,
    }
    tool_call = events.one("tool_call")
    assert events.parent(tool_call) == end_1
    assert tool_call["data"] == {
        "tool": "lookup_order",
        "args": {"order_id": "42"},
        "call_id": "call-1",
    }
    assert {"event_id": end_1["event_id"], "kind": "requested"} in tool_call["caused_by"]
    result = events.one("tool_result")
    assert events.parent(result) == tool_call
    assert result["data"]["result"] == "order 42 shipped"
    assert result["data"]["call_id"] == "call-1"
    assert second["parent_id"] == result["event_id"]
    assert {"event_id": result["event_id"], "kind": "read"} in second["caused_by"]
    assert second["data"]["tool_result_ids"] == [result["event_id"]]
    assert events.parent(end_2) == second
    assert end_2["data"]["text"] == "Order 42 has shipped."
    assert end_2["data"]["finish_reason"] == "stop"
    answer = events.one("assistant_response")
    assert events.parent(answer) == end_2
    assert answer["data"]["text"] == "Order 42 has shipped."
    step = events.one("step_start", kind="agent")
    assert step["data"]["name"] == "support"
    for event in (first, end_1, tool_call, result, second, end_2, answer):
        assert event["scope_id"] == step["event_id"]
    why = ledger.why(answer["event_id"])
    assert [e.event for e in why.chain] == [
        "user_message",
        "llm_start",
        "llm_end",
        "tool_call",
        "tool_result",
        "llm_start",
        "llm_end",
        "assistant_response",
    ]
    assert result["event_id"] in {e.event_id for e in why.chain}
    assert events.one("step_end", kind="agent")["parent_id"] == step["event_id"]


def test_run_sync_records_the_round_trip_as_causes(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    agent, config, model = support_agent()
    result = Runner.run_sync(agent, "where is order 42?", run_config=config)
    assert result.final_output == "Order 42 has shipped."
    assert not model.script
    events = stored()
    assert_round_trip(events, ledger)
    # no trace of the user's: the session is the SDK's trace id
    sessions = {e["session_id"] for e in events.events}
    assert len(sessions) == 1 and next(iter(sessions)).startswith("trace_")


def test_run_async_and_streamed(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read, ledger_server: Any
) -> None:
    agent, config, _ = support_agent()

    async def main() -> str:
        streamed = Runner.run_streamed(agent, "where is order 42?", run_config=config)
        async for _ in streamed.stream_events():
            pass
        return str(streamed.final_output)

    assert asyncio.run(main()) == "Order 42 has shipped."
    assert_round_trip(stored(), ledger)


async def test_run_async(processor: LedgerTracingProcessor, ledger: Ledger, stored: Read) -> None:
    agent, config, _ = support_agent()
    result = await Runner.run(agent, "where is order 42?", run_config=config)
    assert result.final_output == "Order 42 has shipped."
    assert_round_trip(stored(), ledger)


def test_a_handoff_is_its_own_event_and_causes_the_next_agent(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    billing_model = ScriptedModel([say("Refund issued.")], name="billing-gpt")
    triage_model = ScriptedModel([[call("transfer_to_billing", {}, "hand-1")]])
    billing = Agent(name="billing", instructions="You refund.", model="billing-gpt")
    triage = Agent(name="triage", instructions="Route.", handoffs=[billing], model=MODEL)
    provider = ScriptedProvider({MODEL: triage_model, "billing-gpt": billing_model})
    result = Runner.run_sync(triage, "refund please", run_config=RunConfig(model_provider=provider))
    assert result.final_output == "Refund issued."
    events = stored()
    triage_end, billing_end = events.of("llm_end")
    asked = events.one("tool_call", tool="transfer_to_billing")
    assert events.parent(asked) == triage_end
    handoff = events.one("tool_result", call_id="hand-1")
    assert events.parent(handoff) == asked
    assert handoff["data"]["handoff"] == {"from_agent": "triage", "to_agent": "billing"}
    billing_step = events.one("step_start", name="billing")
    assert billing_step["parent_id"] == handoff["event_id"]
    assert {"event_id": handoff["event_id"], "kind": "handoff"} in billing_step["caused_by"]
    billing_start = events.parent(billing_end)
    assert billing_start["parent_id"] == handoff["event_id"]
    assert billing_start["scope_id"] == billing_step["event_id"]
    assert billing_end["data"]["token_usage"]["model"] == "billing-gpt"
    assert billing_start["data"]["system_prompt"] == "You refund."
    answer = events.one("assistant_response")
    chain = [e.event_id for e in ledger.why(answer["event_id"]).chain]
    assert handoff["event_id"] in chain and events.one("user_message")["event_id"] in chain


def test_a_tool_that_raises_is_a_handled_tool_error_the_next_call_reads(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    model = ScriptedModel(
        [[call("lookup_order", {"order_id": "missing"}, "call-9")], say("I could not find it.")]
    )
    agent = Agent(name="support", tools=[lookup_order], model=MODEL)
    config = RunConfig(model_provider=ScriptedProvider({MODEL: model}))
    assert Runner.run_sync(agent, "where is my order?", run_config=config).final_output
    events = stored()
    error = events.one("tool_error")
    assert events.parent(error) == events.one("tool_call")
    assert error["data"]["call_id"] == "call-9" and error["data"]["handled"] is True
    second = events.of("llm_start")[1]
    assert second["parent_id"] == error["event_id"]
    assert not events.of("tool_result")


def test_a_run_inside_the_users_trace_uses_its_group_id(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    async def main() -> None:
        with trace("support workflow", group_id="conversation-7"):
            agent, config, _ = support_agent()
            await Runner.run(agent, "where is order 42?", run_config=config)
            again, config, _ = support_agent()
            await Runner.run(again, "where is order 42?", run_config=config)

    asyncio.run(main())
    events = stored()
    assert {e["session_id"] for e in events.events} == {"conversation-7"}
    first_user, second_user = events.of("user_message")
    first_answer, second_answer = events.of("assistant_response")
    # the second run in the same trace is the user's next turn, after the first answer
    assert second_user["parent_id"] == first_answer["event_id"]
    assert events.of("llm_start")[2]["parent_id"] == second_user["event_id"]
    chain = [e.event_id for e in ledger.why(second_answer["event_id"]).chain]
    assert chain[0] == first_user["event_id"] and second_user["event_id"] in chain


def test_session_id_option_overrides(ledger: Ledger, stored: Read) -> None:
    import agents

    agents.set_trace_processors(
        [LedgerTracingProcessor(ledger, session_id=lambda t: f"ticket-{t.name}")]
    )
    try:
        agent, config, _ = support_agent()
        Runner.run_sync(agent, "where is order 42?", run_config=config)
    finally:
        agents.set_trace_processors([])
    assert {e["session_id"] for e in stored().events} == {"ticket-Agent workflow"}


def test_instrument_agents_adds_the_processor_beside_the_others(
    ledger: Ledger, stored: Read
) -> None:
    """README, "Integrations": the Agents SDK's instrument takes the ledger and the shared
    options (its trace processors are global, so there is no target)."""
    import inspect

    import agents

    from agentledger.integrations import openai_agents

    for name in ("session_id", "metadata", "max_scopes"):
        assert inspect.signature(openai_agents.instrument).parameters[name].default is None
    agents.set_trace_processors([])
    processor = openai_agents.instrument(ledger, session_id="fixed", metadata={"app": "t"})
    try:
        agent, config, _ = support_agent()
        Runner.run_sync(agent, "where is order 42?", run_config=config)
    finally:
        agents.set_trace_processors([])
    assert isinstance(processor, LedgerTracingProcessor)
    events = stored()
    assert {e["session_id"] for e in events.events} == {"fixed"}
    assert all(e["metadata"] == {"app": "t"} for e in events.events)
    with pytest.raises(ValueError):
        LedgerTracingProcessor(ledger, max_scopes=0)


def test_import_without_the_sdk_names_the_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['agents'] = None\n"
        "from agentledger.protocol import LedgerError\n"
        "try:\n"
        "    import agentledger.integrations.openai_agents\n"
        "except ImportError as error:\n"
        "    assert isinstance(error, LedgerError), type(error)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agentledger[openai-agents]'" in done.stdout


def test_an_input_guardrail_is_a_guardrail_step(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    from agents import GuardrailFunctionOutput, InputGuardrailTripwireTriggered, input_guardrail

    @input_guardrail
    def no_refunds(ctx: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered="refund" in str(text))

    agent, config, _ = support_agent()
    agent.input_guardrails = [no_refunds]
    with pytest.raises(InputGuardrailTripwireTriggered):
        Runner.run_sync(agent, "refund order 42", run_config=config)
    events = stored()
    start = events.one("step_start", kind="guardrail")
    assert start["data"]["name"] == "no_refunds"
    end = events.one("step_end", kind="guardrail")
    assert events.parent(end) == start and end["data"]["triggered"] is True
    # it ran before any model output told the user's message: inside (and under) the agent step
    assert start["parent_id"] == events.one("step_start", kind="agent")["event_id"]


def test_a_chat_completions_shaped_model_has_the_same_causes(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    from .fake_model import ChatShapedModel

    model = ChatShapedModel(
        [[call("lookup_order", {"order_id": "42"}, "call-1")], say("Order 42 has shipped.")]
    )
    agent = Agent(name="support", instructions="You help customers.", tools=[lookup_order])
    agent.model = MODEL
    config = RunConfig(model_provider=ScriptedProvider({MODEL: model}))
    assert Runner.run_sync(agent, "where is order 42?", run_config=config).final_output
    events = stored()
    first, second = events.of("llm_start")
    assert first["data"]["api"] == "generation"
    assert first["data"]["system_prompt"] == "You help customers."
    assert first["parent_id"] == events.one("user_message")["event_id"]
    assert events.parent(events.one("tool_call"))["event"] == "llm_end"
    assert second["parent_id"] == events.one("tool_result")["event_id"]
    end = events.of("llm_end")[0]
    assert end["data"]["token_usage"]["input_tokens"] == 20
    assert end["data"]["token_usage"]["model"] == MODEL
    answer = events.one("assistant_response")
    assert answer["data"]["text"] == "Order 42 has shipped."


def test_an_mcp_tool_listing_is_an_mcp_step(
    processor: LedgerTracingProcessor, ledger: Ledger, stored: Read
) -> None:
    from agents.tracing import agent_span, mcp_tools_span

    with trace("listing", group_id="mcp-1"), agent_span("support"):
        listing = mcp_tools_span(server="files", result=["read_file", "list_dir"])
        listing.start()
        listing.finish()
    events = stored()
    start = events.one("step_start", kind="mcp")
    assert start["data"] == {"name": "list_tools", "kind": "mcp", "server": "files"}
    end = events.one("step_end", kind="mcp")
    assert events.parent(end) == start and end["data"]["tools"] == ["read_file", "list_dir"]
    assert start["parent_id"] == events.one("step_start", kind="agent")["event_id"]
    assert {e["session_id"] for e in events.events} == {"mcp-1"}


def test_a_trace_opened_before_the_processor_was_added_is_adopted(
    ledger: Ledger, stored: Read
) -> None:
    import agents

    agents.set_trace_processors([])

    async def main() -> None:
        with trace("support workflow", group_id="late-1"):
            agents.set_trace_processors([LedgerTracingProcessor(ledger)])
            agent, config, _ = support_agent()
            await Runner.run(agent, "where is order 42?", run_config=config)

    try:
        asyncio.run(main())
    finally:
        agents.set_trace_processors([])
    events = stored()
    assert {e["session_id"] for e in events.events} == {"late-1"}
    assert_round_trip(events, ledger)
