"""CrewAI listener overhead: crew kickoff wall time without and with ``instrument``.

Workload: one sequential crew of ``--tasks`` tasks (50 by default); each task makes one tool
call and gives a final answer, so 2 model calls per task from an offline scripted
``crewai.BaseLLM`` (ReAct text). With the listener, every
CrewAI event goes to a :class:`agentledger.client.Ledger` pointed at an ``agentledger serve``
started here on loopback (temp SQLite) unless ``--url`` is given.

* ``none``: no listener.
* ``ours, local server``: ``instrument(crew, ledger)`` (the listener, plus a timer of
  its handler's CPU), the ledger sending to the local server. CrewAI's ``kickoff()`` ends with
  ``crewai_event_bus.flush()``, so the kickoff time includes every handler call. The final
  ledger flush (network) is reported apart as "drain".
* ``ours, remote server``: the same, but the ledger's HTTP transport is an injected one that
  answers at once, as a server on another host would: the server's CPU is not taken from
  the crew (on this 2-core box the local server competes with the crew for the cores).

Modes alternate, ``--repeat`` times each after one warm-up run of each; medians are shown.
Target: ours adds < 10 % to the kickoff time. The scripted model answers at once, so
this is the worst case: with a real model each call takes 100s of ms and the ratio shrinks.

    python benchmarks/bench_crewai.py            # ~1 min
    python benchmarks/bench_crewai.py --quick    # smoke run, a few seconds
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# CrewAI telemetry off before CrewAI is imported (offline it would wait on its vendor's host).
for _name, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("OTEL_SDK_DISABLED", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
    ("CREWAI_DISABLE_TRACKING", "true"),
):
    os.environ.setdefault(_name, _value)

import httpx  # noqa: E402
from crewai import Agent, BaseLLM, Crew, Process, Task  # noqa: E402
from crewai.events.types.llm_events import LLMCallType  # noqa: E402
from crewai.llms.base_llm import llm_call_context  # noqa: E402
from crewai.tools import tool  # noqa: E402

from agentledger.client import Ledger  # noqa: E402
from agentledger.integrations.crewai import LedgerCrewListener  # noqa: E402
from agentledger.testing import EmbeddedServer  # noqa: E402

USAGE = {"prompt_tokens": 150, "completion_tokens": 20, "cached_prompt_tokens": 100}


class ScriptedLLM(BaseLLM):
    """Offline model replying from ``script`` in order."""

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
        with llm_call_context():
            self._emit_call_started_event(
                messages=messages, tools=tools, from_task=from_task, from_agent=from_agent
            )
            reply = self.script.pop(0)
            self._track_token_usage_internal(dict(USAGE))
            self._emit_call_completed_event(
                response=reply,
                call_type=LLMCallType.LLM_CALL,
                from_task=from_task,
                from_agent=from_agent,
                messages=messages,
                usage=dict(USAGE),
            )
            return reply


@tool("get_weather")
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def build_crew(tasks: int) -> Crew:
    script: list[str] = []
    for i in range(tasks):
        script.append(
            f'Thought: I need the weather.\nAction: get_weather\nAction Input: {{"city": "C{i}"}}'
        )
        script.append(f"Thought: Done.\nFinal Answer: C{i} is sunny.")
    agent = Agent(
        role="Weather reporter",
        goal="Report the weather",
        backstory="A meteorologist.",
        llm=ScriptedLLM(model="scripted-1", script=script),
        tools=[get_weather],
    )
    return Crew(
        agents=[agent],
        tasks=[
            Task(description=f"Weather in C{i}?", expected_output="A line.", agent=agent)
            for i in range(tasks)
        ],
        process=Process.sequential,
    )


@contextlib.contextmanager
def local_server(db: Path) -> Iterator[tuple[str, str]]:
    """``agentledger serve`` on a free loopback port; yields ``(url, api_key)``."""
    with EmbeddedServer(db) as served:
        yield served.url, served.api_key


class TimedListener(LedgerCrewListener):
    """The listener, plus the CPU time its handler spends (summed over CrewAI's pool threads).

    That sum is the listener's own cost (mapping + ``ledger.log()``), free of the scheduling
    noise of a shared machine; the ledger's background sender is not in it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.handler_cpu_s = 0.0
        self._cpu_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def handle(self, source: Any, event: Any) -> None:
        start = time.thread_time()
        super().handle(source, event)
        spent = time.thread_time() - start
        with self._cpu_lock:
            self.handler_cpu_s += spent


@dataclass
class Run:
    kickoff_s: float  # wall time of kickoff()
    cpu_s: float  # CPU time of this process (all threads) during kickoff()
    drain_s: float = 0.0
    events: int = 0
    handler_cpu_s: float = 0.0


def remote_server_transport() -> httpx.MockTransport:
    """A server "on another host": answers each batch at once, using no CPU of this box."""

    def answer(request: httpx.Request) -> httpx.Response:
        count = len(json.loads(request.content)["events"])
        result = {"ok": True, "event_id": None, "sequence_no": 0, "duplicate": False}
        return httpx.Response(
            200, json={"written": count, "failed": 0, "results": [result] * count}
        )

    return httpx.MockTransport(answer)


def run_once(tasks: int, ledger: Ledger | None) -> Run:
    crew = build_crew(tasks)
    gc.collect()
    listener = TimedListener(ledger, crew=crew) if ledger is not None else None
    before = ledger.stats().enqueued if ledger is not None else 0
    cpu, start = time.process_time(), time.perf_counter()
    crew.kickoff()
    kickoff_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    if listener is None or ledger is None:
        return Run(kickoff_s, cpu_s)
    listener.close()
    drain_s = time.perf_counter() - start - kickoff_s
    assert listener.internal_errors == 0
    events = ledger.stats().enqueued - before
    return Run(kickoff_s, cpu_s, drain_s, events, listener.handler_cpu_s)


MODES = ("none", "ours, local server", "ours, remote server")


def bench(url: str, key: str, tasks: int, repeat: int) -> dict[str, list[Run]]:
    runs: dict[str, list[Run]] = {mode: [] for mode in MODES}
    with (
        Ledger(url=url, api_key=key, agent="bench-crewai", spill_dir=None) as local,
        Ledger(
            url="http://remote.invalid",
            api_key="k",
            agent="bench-crewai",
            spill_dir=None,
            transport=remote_server_transport(),
        ) as remote,
    ):
        ledgers = dict(zip(MODES, (None, local, remote), strict=True))
        for mode in MODES:  # warm-up: lazy imports, executor threads, HTTP connection
            run_once(tasks, ledgers[mode])
        for i in range(repeat):
            order = MODES[i % 3 :] + MODES[: i % 3]  # rotate so no mode always runs first
            for mode in order:
                runs[mode].append(run_once(tasks, ledgers[mode]))
    return runs


def print_table(runs: dict[str, list[Run]], tasks: int) -> None:
    def wall(mode: str) -> float:
        return statistics.median(r.kickoff_s for r in runs[mode])

    def cpu(mode: str) -> float:
        return statistics.median(r.cpu_s for r in runs[mode])

    events = runs[MODES[1]][0].events
    print(
        f"\nCrewAI kickoff, {tasks} tasks, {len(runs['none'])} runs each (medians); {events} events"
    )
    print(
        f"{'mode':<22}{'wall ms':>9}{'vs none':>9}{'min ms':>9}{'CPU ms':>9}{'vs none':>9}"
        f"{'drain ms':>10}"
    )
    for mode in MODES:
        drain = statistics.median(r.drain_s for r in runs[mode]) if mode != "none" else 0.0
        print(
            f"{mode:<22}{wall(mode) * 1e3:>9.1f}{wall(mode) / wall('none'):>8.2f}x"
            f"{min(r.kickoff_s for r in runs[mode]) * 1e3:>9.1f}{cpu(mode) * 1e3:>9.1f}"
            f"{cpu(mode) / cpu('none'):>8.2f}x{drain * 1e3:>10.1f}"
        )
    handler = statistics.median(r.handler_cpu_s for r in runs[MODES[2]])
    share = handler / cpu("none")
    print(
        f"listener handler CPU: {handler * 1e3:.1f} ms = {share:.1%} of a plain kickoff's CPU, "
        f"{handler / events * 1e6:.0f} us per event"
    )
    for mode in MODES[1:]:
        ratio = wall(mode) / wall("none")
        verdict = "PASS" if ratio < 1.10 else "FAIL"
        print(f"overhead, {mode}: {100 * (ratio - 1):+.1f} % wall (target < 10 %: {verdict})")
    print(
        "(local server: the server process shares this box's cores with the crew; remote: "
        "an injected transport answers at once, as a server on another host would. Wall "
        "times on a shared, busy machine swing by tens of percent between identical runs.)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--url", help="use a running server (with --api-key)")
    parser.add_argument("--api-key", default=os.environ.get("AGENTLEDGER_API_KEY"))
    parser.add_argument("--quick", action="store_true", help="10 tasks, 2 runs")
    args = parser.parse_args()
    if args.quick:
        args.tasks, args.repeat = 10, 2
    logging.getLogger("crewai").setLevel(logging.ERROR)  # token-estimate warnings per call
    if args.url:
        runs = bench(args.url, args.api_key, args.tasks, args.repeat)
    else:
        with (
            tempfile.TemporaryDirectory() as tmp,
            local_server(Path(tmp) / "bench.db") as (
                url,
                key,
            ),
        ):
            runs = bench(url, key, args.tasks, args.repeat)
    print_table(runs, args.tasks)


if __name__ == "__main__":
    main()
