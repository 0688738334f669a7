"""A two-task CrewAI crew logged to agentledger with one line, then printed as a causal tree.

Run a server first (``agentledger serve --dev-key dev``), then::

    export CREWAI_DISABLE_TELEMETRY=true OTEL_SDK_DISABLED=true CREWAI_TRACING_ENABLED=false
    AGENTLEDGER_API_KEY=dev python examples/crewai_crew.py

``AGENTLEDGER_URL`` and ``AGENTLEDGER_AGENT`` are read too. The model is an offline scripted
``crewai.BaseLLM`` speaking CrewAI's ReAct text format, so no API key is needed.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

# CrewAI telemetry off before CrewAI is imported (offline, an exit would wait ~10 s on it).
for _name, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("OTEL_SDK_DISABLED", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
):
    os.environ.setdefault(_name, _value)

from crewai import Agent, BaseLLM, Crew, Process, Task  # noqa: E402
from crewai.events.types.llm_events import LLMCallType  # noqa: E402
from crewai.llms.base_llm import llm_call_context  # noqa: E402
from crewai.tools import tool  # noqa: E402

from agentledger.client import Event, Ledger  # noqa: E402
from agentledger.integrations.crewai import instrument  # noqa: E402


class ScriptedLLM(BaseLLM):
    """An offline model: replies from ``script`` in order, reporting token usage."""

    script: list[str] = []

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> str:
        with llm_call_context():  # start and end events share a call_id
            self._emit_call_started_event(
                messages=messages, tools=tools, from_task=from_task, from_agent=from_agent
            )
            reply = self.script.pop(0)
            usage = {"prompt_tokens": 180, "completion_tokens": 24, "cached_prompt_tokens": 128}
            self._track_token_usage_internal(usage)
            self._emit_call_completed_event(
                response=reply,
                call_type=LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
                usage=usage,
            )
            return reply


@tool("get_forecast")
def get_forecast(city: str, days: int) -> str:
    """Weather forecast for a city over the next days."""
    return f"{city}: sunny for {days} days, 18-23C, light wind"


def build_crew() -> Crew:
    llm = ScriptedLLM(
        model="scripted-planner",
        script=[
            "Thought: I need the forecast.\nAction: get_forecast\n"
            'Action Input: {"city": "Lisbon", "days": 3}',
            "Thought: I have it.\nFinal Answer: Lisbon will be sunny, 18-23C, for 3 days.",
            "Thought: Pack for warm, dry weather.\nFinal Answer: Light layers, sunglasses, "
            "sunscreen; no umbrella.",
        ],
    )
    planner = Agent(
        role="Trip planner",
        goal="Plan what to pack",
        backstory="Plans weekend trips.",
        llm=llm,
        tools=[get_forecast],
    )
    forecast = Task(
        name="forecast",
        description="Get the 3-day forecast for {city}.",
        expected_output="One sentence.",
        agent=planner,
    )
    packing = Task(
        name="packing list",
        description="Write a short packing list for the forecast.",
        expected_output="One line.",
        agent=planner,
    )
    return Crew(agents=[planner], tasks=[forecast, packing], process=Process.sequential)


def label(event: Event) -> str:
    data = event.data
    if event.event in ("tool_call", "tool_result", "tool_error"):
        detail = data.get("args") if event.event == "tool_call" else data.get("result")
        return f"{data.get('tool')} {detail}"
    if event.event == "llm_end":
        usage = data.get("token_usage") or {}
        return f"in={usage.get('input_tokens')} out={usage.get('output_tokens')}"
    text = f"{data.get('kind', '')} {data.get('name') or data.get('model') or ''}".strip()
    rollup = data.get("rollup")
    if rollup and rollup.get("token_usage"):
        usage = rollup["token_usage"]
        text += (
            f"  [rollup: {rollup['llm_calls']} calls, in={usage['input_tokens']}"
            f" (cached {usage['cache_read_tokens']}) out={usage['output_tokens']}]"
        )
    return text


def print_tree(events: list[Event]) -> None:
    children: dict[str | None, list[Event]] = {}
    for event in events:
        children.setdefault(event.parent_id, []).append(event)

    def show(event: Event, depth: int) -> None:
        print(f"{'  ' * depth}{event.event:<11} {label(event)}")
        for child in children.get(event.event_id, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 0)


def main() -> None:
    crew = build_crew()
    session_id = f"crewai-example-{uuid.uuid4().hex[:8]}"
    with Ledger(agent=os.environ.get("AGENTLEDGER_AGENT", "crewai-example")) as ledger:
        with instrument(crew, ledger, session_id=session_id):  # the one line
            result = crew.kickoff(inputs={"city": "Lisbon"})
        print("answer:", result.raw)
        events = ledger.replay(session_id)
        print(f"session {session_id}: {len(events)} events")
        print_tree(events)


if __name__ == "__main__":
    main()
