"""Offline CrewAI parts: a scripted ReAct-text model and small tools.

The model is a ``crewai.BaseLLM`` subclass that emits CrewAI's own model-call events inside
``llm_call_context()`` (so start and end share a ``call_id``), replies from a script, and
reports token usage.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from crewai import Agent, BaseLLM, Crew, Process, Task
from crewai.events.types.llm_events import LLMCallType
from crewai.llms.base_llm import llm_call_context
from crewai.tools import tool
from pydantic import PrivateAttr

#: Usage every scripted call reports (provider spelling, OpenAI style: prompt includes cache).
USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "cached_prompt_tokens": 100}


def action(tool_name: str, args_json: str) -> str:
    """A ReAct reply asking for one tool call."""
    return f"Thought: I need {tool_name}\nAction: {tool_name}\nAction Input: {args_json}"


def final(answer: str) -> str:
    """A ReAct reply giving the final answer."""
    return f"Thought: I know the answer\nFinal Answer: {answer}"


class ScriptedLLM(BaseLLM):
    """Replies from ``script`` in order; raises once the script is used up.

    ``usage=None`` reports no usage at all (the ledger must store ``null``, never 0);
    ``latency_s`` is how long each call takes (a real model takes 100 ms or more).
    """

    script: list[str] = []
    usage: dict[str, int] | None = USAGE
    latency_s: float = 0.0
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: int = PrivateAttr(default=0)

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
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages,
                tools=tools,
                callbacks=callbacks,
                available_functions=available_functions,
                from_task=from_task,
                from_agent=from_agent,
            )
            with self._lock:
                reply = self.script[self._calls]
                self._calls += 1
            if self.latency_s:
                time.sleep(self.latency_s)
            if self.usage is not None:
                self._track_token_usage_internal(dict(self.usage))
            self._emit_call_completed_event(
                response=reply,
                call_type=LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
                usage=dict(self.usage) if self.usage is not None else None,
            )
            return reply


@tool("get_weather")
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny and 21C in {city}"


@tool("flaky_lookup")
def flaky_lookup(query: str) -> str:
    """A lookup service that is down: raises on every attempt."""
    raise ConnectionError(f"lookup service unreachable for {query!r}")


def weather_crew(
    *, usage: dict[str, int] | None = USAGE, city: str = "Paris", latency_s: float = 0.0
) -> Crew:
    """Sequential crew: task 1 calls ``get_weather`` then answers; task 2 answers at once.

    The scripted model asks for the weather of ``city`` (kick off with ``{"city": city}``);
    each of its calls takes ``latency_s``.
    """
    llm = ScriptedLLM(
        model="scripted-1",
        script=[
            action("get_weather", f'{{"city": "{city}"}}'),
            final(f"It is sunny and 21C in {city}."),
            final(f"{city}: sunny, 21C. Pack sunglasses."),
        ],
        usage=usage,
        latency_s=latency_s,
    )
    reporter = Agent(
        role="Weather reporter",
        goal="Report the weather",
        backstory="A meteorologist.",
        llm=llm,
        tools=[get_weather],
    )
    lookup = Task(
        description="What is the weather in {city}?",
        expected_output="One sentence.",
        agent=reporter,
        name="lookup",
    )
    summary = Task(
        description="Summarize the weather report for a traveller.",
        expected_output="One sentence.",
        agent=reporter,
        name="summary",
    )
    return Crew(agents=[reporter], tasks=[lookup, summary], process=Process.sequential)


def flaky_crew() -> Crew:
    """One task whose tool raises on each of CrewAI's 3 attempts, then a final answer (H20).

    One ``Action`` reply makes CrewAI run the tool up to 3 times (``run_attempts`` 1-3).
    """
    llm = ScriptedLLM(
        model="scripted-1",
        script=[
            action("flaky_lookup", '{"query": "order 42"}'),
            final("The lookup service is down; try later."),
        ],
    )
    clerk = Agent(
        role="Clerk", goal="Look orders up", backstory="Careful.", llm=llm, tools=[flaky_lookup]
    )
    task = Task(description="Find order 42.", expected_output="A status.", agent=clerk)
    return Crew(agents=[clerk], tasks=[task], process=Process.sequential)


def hierarchical_crew() -> Crew:
    """A manager model delegates to the weather reporter, who uses ``get_weather``."""
    manager_llm = ScriptedLLM(
        model="scripted-manager",
        script=[
            action(
                "Delegate work to coworker",
                '{"task": "Find the weather in Paris", "context": "A traveller asks.", '
                '"coworker": "Weather reporter"}',
            ),
            final("Paris is sunny, 21C."),
        ],
    )
    worker_llm = ScriptedLLM(
        model="scripted-worker",
        script=[action("get_weather", '{"city": "Paris"}'), final("Sunny and 21C in Paris.")],
    )
    reporter = Agent(
        role="Weather reporter",
        goal="Report the weather",
        backstory="A meteorologist.",
        llm=worker_llm,
        tools=[get_weather],
    )
    task = Task(description="Tell a traveller the weather in Paris.", expected_output="A line.")
    return Crew(
        agents=[reporter], tasks=[task], process=Process.hierarchical, manager_llm=manager_llm
    )


def many_task_crew(tasks: int) -> Crew:
    """``tasks`` sequential tasks, each one tool call and one final answer (benchmarks)."""
    script: list[str] = []
    for i in range(tasks):
        script += [action("get_weather", f'{{"city": "City{i}"}}'), final(f"City{i} is sunny.")]
    llm = ScriptedLLM(model="scripted-1", script=script)
    reporter = Agent(
        role="Weather reporter",
        goal="Report the weather",
        backstory="A meteorologist.",
        llm=llm,
        tools=[get_weather],
    )
    return Crew(
        agents=[reporter],
        tasks=[
            Task(description=f"Weather in City{i}?", expected_output="A line.", agent=reporter)
            for i in range(tasks)
        ],
        process=Process.sequential,
    )


def trip_flow(crew: Crew) -> Any:
    """A two-method CrewAI ``Flow`` whose second method kicks ``crew`` off."""
    from crewai.flow.flow import Flow, listen, start

    class TripFlow(Flow):  # type: ignore[type-arg]
        @start()
        def pick_city(self) -> str:
            return "Paris"

        @listen(pick_city)
        def forecast(self, city: str) -> str:
            return str(crew.kickoff(inputs={"city": city}).raw)

    return TripFlow()
