"""Runs of a real Pydantic AI agent with a scripted ``FunctionModel`` and one tool, recorded by
the capability into a real server: the causal shape (sync, async, streamed), structured output,
and a server that is down or never answers."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCalls, FunctionModel

from _events import Stored, read_events
from _servers import free_port
from agentledger.client import Ledger
from agentledger.integrations.pydantic_ai import LedgerCapability

pytestmark = pytest.mark.pydantic_ai

Read = Callable[[], Stored]


class Status(BaseModel):
    order_id: str
    shipped: bool


def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """First a tool call, then the answer (text, or the output tool for structured output)."""
    if len(messages) == 1:
        return ModelResponse(
            parts=[ToolCallPart("lookup_order", {"order_id": "42"}, tool_call_id="call-1")]
        )
    if info.output_tools:
        name = info.output_tools[0].name
        args = {"order_id": "42", "shipped": True}
        return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id="out-1")])
    return ModelResponse(parts=[TextPart("Order 42 has shipped.")])


async def stream_script(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    from pydantic_ai.models.function import DeltaToolCall

    if len(messages) == 1:
        yield {0: DeltaToolCall("lookup_order", '{"order_id": "42"}', tool_call_id="call-1")}
        return
    for chunk in ("Order 42 ", "has shipped."):
        yield chunk


def make_agent(ledger: Ledger, output_type: Any = str, stream: bool = False) -> Agent[None, Any]:
    model = FunctionModel(script, stream_function=stream_script if stream else None)
    agent: Agent[None, Any] = Agent(
        model,
        name="support",
        instructions="You help customers.",
        output_type=output_type,
        capabilities=[LedgerCapability(ledger, session_id="ticket-7")],
    )

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order's status."""
        return f"order {order_id} shipped"

    return agent


@pytest.fixture
def ledger(ledger_server: Any, agent_name: str) -> Iterator[Ledger]:
    client = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    yield client
    client.close(timeout_s=10.0)


@pytest.fixture
def stored(ledger: Ledger, ledger_server: Any, agent_name: str) -> Read:
    def read() -> Stored:
        assert ledger.flush(timeout_s=20.0) is not None
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))

    return read


def assert_round_trip(events: Stored, ledger: Ledger) -> dict[str, Any]:
    """user message → model call → tool call → tool result → model call → answer."""
    assert {e["session_id"] for e in events.events} == {"ticket-7"}
    user = events.one("user_message")
    assert user["data"]["text"] == "where is order 42?"
    first, second = events.of("llm_start")
    assert first["parent_id"] == user["event_id"]
    assert first["data"]["system_prompt"] == "You help customers."
    assert first["data"]["prompt_hash"].startswith("sha256:")
    assert first["data"]["tools"] == ["lookup_order"]
    end_1, end_2 = events.of("llm_end")
    assert events.parent(end_1) == first
    assert end_1["data"]["token_usage"]["input_tokens"] > 0
    assert end_1["data"]["token_usage"]["model"] == end_1["data"]["response_model"]
    assert end_1["data"]["response_model"].startswith("function:")
    tool_call = events.one("tool_call")
    assert events.parent(tool_call) == end_1
    assert tool_call["data"] == {
        "tool": "lookup_order",
        "args": {"order_id": "42"},
        "call_id": "call-1",
    }
    assert {"event_id": end_1["event_id"], "kind": "requested"} in tool_call["caused_by"]
    result = events.one("tool_result")
    assert events.parent(result) == tool_call and result["data"]["result"] == "order 42 shipped"
    assert second["parent_id"] == result["event_id"]
    assert {"event_id": result["event_id"], "kind": "read"} in second["caused_by"]
    answer = events.one("assistant_response")
    assert events.parent(answer) == end_2
    step = events.one("step_start", kind="agent")
    assert step["data"]["name"] == "support"
    assert answer["scope_id"] == step["event_id"] and tool_call["scope_id"] == step["event_id"]
    assert events.one("step_end", kind="agent")["parent_id"] == step["event_id"]
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
    return answer


def test_run_sync(ledger: Ledger, stored: Read) -> None:
    assert make_agent(ledger).run_sync("where is order 42?").output == "Order 42 has shipped."
    answer = assert_round_trip(stored(), ledger)
    assert answer["data"]["text"] == "Order 42 has shipped."


async def test_run_async(ledger: Ledger, stored: Read) -> None:
    result = await make_agent(ledger).run("where is order 42?")
    assert result.output == "Order 42 has shipped."
    assert_round_trip(stored(), ledger)


async def test_run_stream(ledger: Ledger, stored: Read) -> None:
    agent = make_agent(ledger, stream=True)
    async with agent.run_stream("where is order 42?") as run:
        text = await run.get_output()
    assert text == "Order 42 has shipped."
    events = stored()
    answer = assert_round_trip(events, ledger)
    assert answer["data"]["text"] == "Order 42 has shipped."
    assert events.of("llm_start")[0]["data"]["streaming"] is True


def test_structured_output_is_the_answer(ledger: Ledger, stored: Read) -> None:
    output = make_agent(ledger, output_type=Status).run_sync("where is order 42?").output
    assert output == Status(order_id="42", shipped=True)
    answer = assert_round_trip(stored(), ledger)
    assert answer["data"]["structured"] == {"order_id": "42", "shipped": True}


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback server that takes connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def _timed(agent: Agent[None, Any]) -> float:
    started = time.perf_counter()
    assert agent.run_sync("where is order 42?").output == "Order 42 has shipped."
    return time.perf_counter() - started


@pytest.mark.parametrize("server", ["down", "silent"])
def test_a_broken_server_neither_breaks_nor_slows_the_run(
    server: str, silent_url: str, agent_name: str, ledger: Ledger
) -> None:
    plain = Agent(FunctionModel(script), instructions="You help customers.")

    @plain.tool_plain
    def lookup_order(order_id: str) -> str:
        return f"order {order_id} shipped"

    _timed(plain)
    baseline = min(_timed(plain) for _ in range(3))
    url = f"http://127.0.0.1:{free_port()}" if server == "down" else silent_url
    broken = Ledger(url=url, api_key="k", agent=agent_name, spill_dir=None, timeout=30.0)
    try:
        agent = make_agent(broken)
        with_ledger = min(_timed(agent) for _ in range(3))
    finally:
        broken.close(timeout_s=0.1)
    assert with_ledger < baseline + 0.5, (baseline, with_ledger)


async def test_instrument_wraps_an_agent_for_every_kind_of_run(
    ledger: Ledger, stored: Read
) -> None:
    """README, "Integrations": (target, ledger) plus session_id=, metadata=, max_scopes=."""
    from agentledger.integrations.pydantic_ai import instrument

    from ..shape import assert_one_shape

    assert_one_shape("agentledger.integrations.pydantic_ai")
    plain = Agent(FunctionModel(script, stream_function=stream_script), name="support")

    @plain.tool_plain
    def lookup_order(order_id: str) -> str:
        return f"order {order_id} shipped"

    recorded = instrument(plain, ledger, session_id="ticket-8")
    assert (await recorded.run("where is order 42?")).output == "Order 42 has shipped."
    async with recorded.run_stream("where is order 42?") as run:
        assert await run.get_output() == "Order 42 has shipped."
    await plain.run("where is order 42?")  # the agent itself is not changed
    events = stored()
    assert len(events.of("assistant_response")) == 2
    assert {e["session_id"] for e in events.events} == {"ticket-8"}
    with pytest.raises(TypeError):
        instrument(object(), ledger)  # type: ignore[arg-type]


def test_import_without_the_framework_names_the_extra() -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pydantic_ai'] = None\n"
        "from agentledger.protocol import LedgerError\n"
        "try:\n"
        "    import agentledger.integrations.pydantic_ai\n"
        "except ImportError as error:\n"
        "    assert isinstance(error, LedgerError), type(error)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agentledger[pydantic-ai]'" in done.stdout


def _retrying_script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    calls = sum(1 for m in messages if isinstance(m, ModelResponse))
    if calls < 2:
        return ModelResponse(
            parts=[ToolCallPart("lookup_order", {"order_id": "42"}, tool_call_id=f"call-{calls}")]
        )
    return ModelResponse(parts=[TextPart("Order 42 has shipped.")])


def test_a_tool_asking_for_a_retry_is_a_tool_error_the_next_call_reads(
    ledger: Ledger, stored: Read
) -> None:
    from pydantic_ai import ModelRetry

    agent: Agent[None, str] = Agent(
        FunctionModel(_retrying_script), capabilities=[LedgerCapability(ledger)]
    )
    tries: list[str] = []

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        tries.append(order_id)
        if len(tries) == 1:
            raise ModelRetry("the order service is busy, try again")
        return f"order {order_id} shipped"

    assert agent.run_sync("where is order 42?").output == "Order 42 has shipped."
    events = stored()
    error = events.one("tool_error")
    assert events.parent(error)["data"]["call_id"] == "call-0"
    assert error["data"]["type"] == "ModelRetry"
    second = events.of("llm_start")[1]
    assert second["parent_id"] == error["event_id"]
    result = events.one("tool_result")
    assert events.parent(result)["data"]["call_id"] == "call-1"
    assert events.of("llm_start")[2]["parent_id"] == result["event_id"]


def test_a_tool_that_raises_fails_the_run_and_is_recorded(ledger: Ledger, stored: Read) -> None:
    agent: Agent[None, str] = Agent(FunctionModel(script), capabilities=[LedgerCapability(ledger)])

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        raise LookupError(f"no order {order_id}")

    with pytest.raises(LookupError):
        agent.run_sync("where is order 42?")
    events = stored()
    error = events.one("tool_error")
    assert error["data"]["type"] == "LookupError"
    assert events.parent(error) == events.one("tool_call")
    assert events.one("step_error")["data"]["type"] == "LookupError"
