"""Per-run overhead of the OpenAI Agents SDK processor and the Pydantic AI capability.

Workload: one agent run of ``--turns`` tool round trips (a tool call, its result, the next
model call) and a final answer, from offline scripted models that answer at once (the worst
case: a real model's 100s of ms per call shrink every ratio). Modes, alternating, medians of
``--repeat`` runs after a warm-up:

* ``bare``: no processor / capability (the Agents SDK with an empty processor list);
* ``no-op``: a processor whose hooks do nothing / a capability with no hooks;
* ``ours``: ``LedgerTracingProcessor`` / ``LedgerCapability`` writing to a
  :class:`agentledger.client.Ledger` whose HTTP transport answers at once (the hooks' cost and
  the client's ``log()``, not a server's CPU on this 2-core box).

    python benchmarks/bench_agents_adapters.py            # ~20 s
    python benchmarks/bench_agents_adapters.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import agents
import httpx
from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents.tracing import response_span
from agents.usage import model_usage_to_span_usage
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, TextPart, ToolCallPart
from pydantic_ai.messages import ModelResponse as PydanticResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agentledger.client import Ledger
from agentledger.integrations.openai_agents import LedgerTracingProcessor
from agentledger.integrations.pydantic_ai import LedgerCapability


def instant_ledger() -> Ledger:
    def answer(request: httpx.Request) -> httpx.Response:
        count = len(json.loads(request.content)["events"])
        result = {"ok": True, "event_id": None, "sequence_no": 0, "duplicate": False}
        return httpx.Response(
            200, json={"written": count, "failed": 0, "results": [result] * count}
        )

    transport = httpx.MockTransport(answer)
    return Ledger(
        url="http://ledger.invalid",
        api_key="k",
        agent="bench",
        spill_dir=None,
        transport=transport,
        sender_transport=transport,
    )


class NoOpProcessor(agents.TracingProcessor):
    def on_trace_start(self, trace: Any) -> None: ...
    def on_trace_end(self, trace: Any) -> None: ...
    def on_span_start(self, span: Any) -> None: ...
    def on_span_end(self, span: Any) -> None: ...
    def shutdown(self) -> None: ...
    def force_flush(self) -> None: ...


class TurnsModel(agents.Model):
    """``turns`` tool calls, then an answer, each in a filled ``response`` span."""

    def __init__(self, turns: int) -> None:
        self.turns, self.calls = turns, 0

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.calls += 1
        if self.calls <= self.turns:
            output: list[Any] = [
                ResponseFunctionToolCall(
                    call_id=f"c{self.calls}",
                    name="lookup",
                    arguments='{"key": "k"}',
                    type="function_call",
                )
            ]
        else:
            output = [
                ResponseOutputMessage(
                    id="m",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(text="done", type="output_text", annotations=[])],
                )
            ]
        usage = Usage(requests=1, input_tokens=10, output_tokens=2, total_tokens=12)
        with response_span() as span:
            span.span_data.usage = model_usage_to_span_usage(usage)
            span.span_data.input = input
            span.span_data.response = Response(
                id="r",
                created_at=0,
                model="m",
                object="response",
                output=output,
                instructions=system_instructions,
                parallel_tool_calls=True,
                tool_choice="auto",
                tools=[],
            )
        return ModelResponse(output=output, usage=usage, response_id="r")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


class Provider(agents.ModelProvider):
    def __init__(self, turns: int) -> None:
        self.model = TurnsModel(turns)

    def get_model(self, model_name: str | None) -> agents.Model:
        return self.model


@function_tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def agents_run(turns: int, mode: str, ledger: Ledger) -> float:
    processors: dict[str, list[Any]] = {
        "bare": [],
        "no-op": [NoOpProcessor()],
        "ours": [LedgerTracingProcessor(ledger)],
    }
    agents.set_trace_processors(processors[mode])
    agent = Agent(name="bench", instructions="Be quick.", tools=[lookup])
    started = time.perf_counter()
    config = RunConfig(model_provider=Provider(turns))
    Runner.run_sync(agent, "go", run_config=config, max_turns=turns + 2)
    return time.perf_counter() - started


def pydantic_run(turns: int, mode: str, ledger: Ledger) -> float:
    def script(messages: list[ModelMessage], info: AgentInfo) -> PydanticResponse:
        done = sum(1 for m in messages if isinstance(m, PydanticResponse))
        if done < turns:
            return PydanticResponse(parts=[ToolCallPart("lookup", {"key": "k"})])
        return PydanticResponse(parts=[TextPart("done")])

    capabilities: dict[str, list[Any]] = {
        "bare": [],
        "no-op": [AbstractCapability()],
        "ours": [LedgerCapability(ledger)],
    }
    agent = PydanticAgent(FunctionModel(script), capabilities=capabilities[mode])

    @agent.tool_plain
    def lookup(key: str) -> str:
        return f"value of {key}"

    started = time.perf_counter()
    agent.run_sync("go")
    return time.perf_counter() - started


def measure(
    run: Callable[[int, str, Ledger], float], turns: int, repeat: int, ledger: Ledger
) -> dict[str, float]:
    times: dict[str, list[float]] = {"bare": [], "no-op": [], "ours": []}
    for mode in times:
        run(turns, mode, ledger)  # warm-up
    for _ in range(repeat):
        for mode in times:
            times[mode].append(run(turns, mode, ledger))
    return {mode: statistics.median(values) for mode, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="a few runs, for the smoke test")
    args = parser.parse_args()
    turns, repeat = (3, 2) if args.quick else (args.turns, args.repeat)
    ledger = instant_ledger()
    print(
        f"\n{turns} tool round trips per run, medians of {repeat} runs "
        "(a noisy shared 2-core machine: compare ratios, not absolute times)"
    )
    print(
        f"{'framework':<22}{'bare ms':>10}{'no-op ms':>10}{'ours ms':>10}"
        f"{'ours/bare':>11}{'per model call':>16}"
    )
    for name, run in (("OpenAI Agents SDK", agents_run), ("Pydantic AI", pydantic_run)):
        result = measure(run, turns, repeat, ledger)
        per_call = (result["ours"] - result["no-op"]) / (turns + 1) * 1e6
        print(
            f"{name:<22}{result['bare'] * 1e3:>10.2f}{result['no-op'] * 1e3:>10.2f}"
            f"{result['ours'] * 1e3:>10.2f}{result['ours'] / result['bare']:>11.2f}"
            f"{per_call:>13.0f} µs"
        )
    agents.set_trace_processors([])
    ledger.close(timeout_s=5.0)
    asyncio.set_event_loop(None)


if __name__ == "__main__":
    main()
