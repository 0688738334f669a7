"""LangChain callback overhead: no handler vs ours vs zizkadb-sdk's handler, same server.

Workload: one run = ``--steps`` sequential ``prompt | fake chat model | parser`` calls (2,000 by
default: an agent making 2,000 model calls), 8 callbacks per step. Each handler logs to the same
``agentledger serve`` (started here on loopback with a temp SQLite unless ``--url``).

* ``none``: no callbacks.
* ``ours``: :class:`agentledger.integrations.langchain.LedgerCallbackHandler` with a
  :class:`agentledger.client.Ledger` (non-blocking ``log()``, background batching). The run's
  wall time excludes the final ``flush``, which is reported separately as "drain".
* ``zizkadb``: ``zizkadb.integrations.langchain.ZizkaDBCallbackHandler`` (zizkadb-sdk 0.5.0),
  an ``AsyncCallbackHandler`` that awaits one HTTP request per event. Measured over
  ``--reference-steps`` steps (default 300; it is slow) and compared per callback.
* ``langfuse`` (only when ``langfuse`` is installed): Langfuse's ``CallbackHandler`` exporting to
  a closed port, i.e. its in-process cost (its exporter works in a background thread).

Async runs (``ainvoke``) for all, the reference handler's native mode; the LCEL chain also
runs sync (``invoke``). The machine is shared, so the variants of ours and the baselines run
interleaved in chunks of 200 steps (order rotated per chunk), ``--repeat`` times, and the median
of the per-run totals is shown; "drain" is the untimed wait for the last events to be sent.
Targets: ours adds <= 15 % to the no-handler run and costs
>= 20x less per callback than the reference.

    python benchmarks/bench_langchain.py            # ~1 min
    python benchmarks/bench_langchain.py --quick    # smoke run, a few seconds
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from doc_tables import TARGET_COLUMNS, doc_table, verdict  # the script's directory is on sys.path
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END, START, StateGraph

from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler
from agentledger.testing import EmbeddedServer

# zizkadb-sdk otherwise pings its vendor at construction (wire-contract.md, "Testing").
os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")


class Loop(TypedDict):
    n: int
    limit: int
    last: str


def build_chain() -> Any:
    """Workload ``lcel``: one step = ``prompt | model | parser`` (8 callbacks)."""
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are step {i} of a long run."), ("human", "Continue from {i}.")]
    )
    model = FakeListChatModel(responses=["ok, next step", "done with this one"])
    return prompt | model | StrOutputParser()


def build_graph() -> Any:
    """Workload ``langgraph``: one step = one superstep of a looping node calling the model."""
    model = FakeListChatModel(responses=["ok, next step", "done with this one"])

    async def astep(state: Loop) -> dict[str, Any]:
        reply = await model.ainvoke(f"step {state['n']}")
        return {"n": state["n"] + 1, "last": reply.text}

    def step(state: Loop) -> dict[str, Any]:
        reply = model.invoke(f"step {state['n']}")
        return {"n": state["n"] + 1, "last": reply.text}

    graph = StateGraph(Loop)
    graph.add_node("step", RunnableLambda(step, afunc=astep, name="step"))
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda s: END if s["n"] >= s["limit"] else "step")
    return graph.compile(name="loop")


OURS = "ours: LedgerCallbackHandler + server"
#: Steps per interleaved chunk of a measured run.
CHUNK_STEPS = 200
REFERENCE = "zizkadb-sdk ZizkaDBCallbackHandler"
LANGFUSE = "langfuse CallbackHandler (closed port)"


class NoopHandler(BaseCallbackHandler):
    """Does nothing: what LangChain's own callback dispatch costs (the floor for any handler)."""

    run_inline = True


class CountingHandler(BaseCallbackHandler):
    """Counts callbacks (run once, outside the timings)."""

    run_inline = True

    def __init__(self) -> None:
        self.calls = 0

    def _count(self, *args: Any, **kwargs: Any) -> None:
        self.calls += 1

    on_chain_start = on_chain_end = on_chat_model_start = on_llm_end = _count
    on_chain_error = on_llm_error = on_llm_start = _count


@dataclass
class Workload:
    name: str
    mode: str  # "sync" | "async"
    runnable: Any

    def run(self, steps: int, callbacks: list[Any]) -> float:
        """Wall seconds of one run of ``steps`` steps."""
        if self.mode == "async":
            return asyncio.run(self._arun(steps, callbacks))
        started = time.perf_counter()
        if self.name == "langgraph":
            config: Any = {"callbacks": callbacks, "recursion_limit": steps + 10}
            self.runnable.invoke({"n": 0, "limit": steps, "last": ""}, config=config)
        else:
            for i in range(steps):
                self.runnable.invoke({"i": i}, config={"callbacks": callbacks})
        return time.perf_counter() - started

    async def _arun(self, steps: int, callbacks: list[Any]) -> float:
        started = time.perf_counter()
        if self.name == "langgraph":
            config: Any = {"callbacks": callbacks, "recursion_limit": steps + 10}
            await self.runnable.ainvoke({"n": 0, "limit": steps, "last": ""}, config=config)
        else:
            for i in range(steps):
                await self.runnable.ainvoke({"i": i}, config={"callbacks": callbacks})
        return time.perf_counter() - started

    def callbacks_per_step(self) -> float:
        counter = CountingHandler()
        Workload(self.name, "sync", self.runnable).run(20, [counter])
        return counter.calls / 20


@dataclass
class Row:
    workload: str
    handler: str
    steps: int
    wall_s: float
    baseline_s: float  # no-handler wall time, same workload and steps
    callbacks: float
    cpu_s: float = 0.0  # process CPU time (all threads of this process; not the server's)
    baseline_cpu_s: float = 0.0
    drain_s: float | None = None

    @property
    def per_step_ms(self) -> float:
        return self.wall_s / self.steps * 1000.0

    @property
    def overhead_pct(self) -> float:
        return (self.wall_s / self.baseline_s - 1.0) * 100.0

    @property
    def per_callback_us(self) -> float:
        return (self.wall_s - self.baseline_s) / self.callbacks * 1e6

    @property
    def cpu_per_step_ms(self) -> float:
        return self.cpu_s / self.steps * 1000.0

    @property
    def cpu_overhead_pct(self) -> float:
        return (self.cpu_s / self.baseline_cpu_s - 1.0) * 100.0

    @property
    def cpu_per_callback_us(self) -> float:
        return (self.cpu_s - self.baseline_cpu_s) / self.callbacks * 1e6


def timed(run: Any, *args: Any) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of ``run(*args)``."""
    cpu = time.process_time()
    wall = run(*args)
    return wall, time.process_time() - cpu


class _NullLedger:
    """Accepts ``log()`` and does nothing: isolates the handler's own cost."""

    class _Ref:
        event_id = "00000000-0000-7000-8000-000000000000"

    def log(self, event: str, data: dict[str, Any], **kwargs: Any) -> Any:
        return self._Ref


def bench_workload(
    work: Workload, url: str, api_key: str, steps: int, reference_steps: int, repeat: int
) -> list[Row]:
    per_step = work.callbacks_per_step()
    work.run(min(steps, 100), [])  # warm-up
    names = ("none", "noop", "handler", "client", "ours")
    times: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    drains: list[float] = []
    chunk = min(CHUNK_STEPS, steps)
    for _ in range(repeat):
        # Handler + client with nothing to send to: the in-process cost, no server CPU.
        offline = Ledger(
            url="http://127.0.0.1:9",
            api_key=api_key,
            agent="bench-offline",
            spill_dir=None,
            max_queue_events=steps * 16,
        )
        ledger = Ledger(url=url, api_key=api_key, agent=f"bench-{work.name}", spill_dir=None)
        callbacks: dict[str, list[Any]] = {
            "none": [],
            "noop": [NoopHandler()],
            "handler": [LedgerCallbackHandler(_NullLedger())],
            "client": [LedgerCallbackHandler(offline)],
            "ours": [LedgerCallbackHandler(ledger)],
        }
        total_s = dict.fromkeys(names, 0.0)
        cpu_s = dict.fromkeys(names, 0.0)
        drain_s = 0.0
        # Interleave the variants in chunks (rotating their order) so that all of them see
        # the same machine load; the ledger is drained after each of its chunks, untimed.
        for index in range(0, steps, chunk):
            order = names[index // chunk % len(names) :] + names[: index // chunk % len(names)]
            for name in order:
                wall, cpu = timed(work.run, min(chunk, steps - index), callbacks[name])
                total_s[name] += wall
                cpu_s[name] += cpu
                if name == "ours":
                    drained = ledger.flush(timeout_s=120.0)
                    if not drained.complete or drained.dropped:
                        raise RuntimeError(f"the ledger did not deliver every event: {drained}")
                    drain_s += drained.elapsed_s
        offline.close(timeout_s=0.1)
        ledger.close(timeout_s=10.0)
        for name in names:
            times[name].append(total_s[name])
            cpus[name].append(cpu_s[name])
        drains.append(drain_s)
    label = f"{work.name} {work.mode}"
    med = {name: statistics.median(values) for name, values in times.items()}
    cpu_med = {name: statistics.median(values) for name, values in cpus.items()}
    base, base_cpu = med["none"], cpu_med["none"]
    total = steps * per_step
    titles = {
        "none": "no handler",
        "noop": "no-op handler (LangChain floor)",
        "handler": "ours: handler only (null ledger)",
        "client": "ours: handler + client, no server",
        "ours": OURS,
    }
    rows = [
        Row(
            label,
            titles[name],
            steps,
            med[name],
            base,
            total,
            cpu_s=cpu_med[name],
            baseline_cpu_s=base_cpu,
            drain_s=statistics.median(drains) if name == "ours" else None,
        )
        for name in names
    ]
    if work.mode == "async" and reference_steps > 0:
        rows.append(reference_row(work, url, api_key, reference_steps, per_step))
    langfuse = langfuse_handler()
    if langfuse is not None:
        none_wall, none_cpu = timed(work.run, steps, [])
        wall, cpu = timed(work.run, steps, [langfuse])
        rows.append(
            Row(label, LANGFUSE, steps, wall, none_wall, total, cpu_s=cpu, baseline_cpu_s=none_cpu)
        )
    return rows


def langfuse_handler() -> Any:
    """Langfuse's LangChain handler exporting to a closed port, or ``None`` if not installed.

    Its spans are exported by a background OpenTelemetry batch processor, so this measures the
    in-process cost of a well-known non-blocking handler (optional reference).
    """
    try:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler
    except ImportError:
        return None
    os.environ.setdefault("LANGFUSE_PUBLIC_KEY", "pk-lf-bench")
    os.environ.setdefault("LANGFUSE_SECRET_KEY", "sk-lf-bench")
    os.environ["LANGFUSE_HOST"] = os.environ["LANGFUSE_BASE_URL"] = "http://127.0.0.1:9"
    os.environ.setdefault("LANGFUSE_TIMEOUT", "1")
    for name in ("langfuse", "opentelemetry"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    Langfuse()
    return CallbackHandler()


def reference_row(work: Workload, url: str, api_key: str, steps: int, per_step: float) -> Row:
    from zizkadb import ZizkaDB
    from zizkadb.integrations.langchain import ZizkaDBCallbackHandler

    async def measure() -> tuple[float, float, float, float]:
        async with ZizkaDB(api_key=api_key, host=url) as db:
            handler = ZizkaDBCallbackHandler(db, agent=f"bench-zizkadb-{work.name}")
            cpu = time.process_time()
            base = await work._arun(steps, [])
            base_cpu = time.process_time() - cpu
            cpu = time.process_time()
            wall = await work._arun(steps, [handler])
            wall_cpu = time.process_time() - cpu
        return wall, base, wall_cpu, base_cpu

    # The reference handler fails on some LangChain 1.x callbacks (serialized=None, non-dict
    # outputs); LangChain logs each failure as a warning. Silence them for a readable table.
    logging.getLogger("langchain_core.callbacks.manager").setLevel(logging.ERROR)
    wall, base, cpu, base_cpu = asyncio.run(measure())
    label = f"{work.name} {work.mode}"
    return Row(
        label, REFERENCE, steps, wall, base, steps * per_step, cpu_s=cpu, baseline_cpu_s=base_cpu
    )


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'workload':15} {'handler':38} {'steps':>5} {'ms/step':>8} {'wall +':>8} "
        f"{'µs/cb':>7} {'cpu ms/step':>11} {'cpu +':>8} {'cpu µs/cb':>9} {'drain s':>7}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        none = row.handler == "no handler"
        print(
            f"{row.workload:15} {row.handler:38} {row.steps:>5} {row.per_step_ms:>8.3f} "
            f"{'—' if none else f'{row.overhead_pct:+.1f}%':>8} "
            f"{'—' if none else f'{row.per_callback_us:,.1f}':>7} "
            f"{row.cpu_per_step_ms:>11.3f} "
            f"{'—' if none else f'{row.cpu_overhead_pct:+.1f}%':>8} "
            f"{'—' if none else f'{row.cpu_per_callback_us:,.1f}':>9} "
            f"{f'{row.drain_s:.2f}' if row.drain_s is not None else '—':>7}"
        )
    print()
    print("wall: elapsed time of the run; cpu: CPU time of this process (all its threads, not")
    print("the server's); +: versus no handler; µs/cb: extra time per callback.")
    for workload in dict.fromkeys(r.workload for r in rows):
        mine = {r.handler: r for r in rows if r.workload == workload}
        ours = mine[OURS]
        wall_ok = "PASS" if ours.overhead_pct <= 15.0 else "MISS"
        cpu_ok = "PASS" if ours.cpu_overhead_pct <= 15.0 else "MISS"
        line = (
            f"{workload}: ours adds {ours.overhead_pct:+.1f}% wall ({wall_ok}), "
            f"{ours.cpu_overhead_pct:+.1f}% cpu ({cpu_ok}) (target <= 15%)"
        )
        reference = mine.get(REFERENCE)
        if reference is not None:
            line += (
                f"; reference / ours per callback: {_ratio(reference, ours)} wall, "
                f"{_ratio(reference, ours, cpu=True)} cpu (target >= 20x)"
            )
        print(line)
    print(doc_table("targets", TARGET_COLUMNS, target_rows(rows)))


def target_rows(rows: list[Row]) -> list[tuple[str, ...]]:
    """The docs' rows of targets: per-callback wall time, ours next to zizkadb-sdk's."""
    out = []
    for workload in dict.fromkeys(r.workload for r in rows):
        mine = {r.handler: r for r in rows if r.workload == workload}
        ours, reference = mine[OURS], mine.get(REFERENCE)
        if reference is None or ours.per_callback_us <= 0:
            continue
        ratio = reference.per_callback_us / ours.per_callback_us
        name = workload.replace("lcel", "LCEL").replace("langgraph", "LangGraph")
        out.append(
            (
                f"LangChain handler, {name}, server on the same machine, per callback "
                "(reference: zizkadb-sdk's handler)",
                f"{ours.per_callback_us:,.1f} µs",
                f"{reference.per_callback_us:,.1f} µs",
                f"{ratio:,.1f}× cheaper",
                verdict(ratio, at_least=20),
            )
        )
    return out


def _ratio(reference: Row, ours: Row, cpu: bool = False) -> str:
    theirs = reference.cpu_per_callback_us if cpu else reference.per_callback_us
    mine = ours.cpu_per_callback_us if cpu else ours.per_callback_us
    if mine <= 0:
        return "n/a (ours below the noise)"
    verdict = "PASS" if theirs / mine >= 20.0 else "MISS"
    return f"{theirs / mine:,.0f}x ({verdict})"


def bench(url: str, api_key: str, steps: int, reference_steps: int, repeat: int) -> list[Row]:
    rows: list[Row] = []
    for work in (
        Workload("lcel", "async", build_chain()),
        Workload("lcel", "sync", build_chain()),
        Workload("langgraph", "async", build_graph()),
    ):
        rows += bench_workload(work, url, api_key, steps, reference_steps, repeat)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--reference-steps", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 steps, 1 repeat, 50 reference")
    parser.add_argument("--url", help="use a running server (default: start one)")
    parser.add_argument("--api-key", default=os.environ.get("AGENTLEDGER_API_KEY"))
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeat, args.reference_steps = 200, 1, 50
    if args.url:
        rows = bench(args.url, args.api_key, args.steps, args.reference_steps, args.repeat)
    else:
        db = Path(tempfile.mkdtemp(prefix="agentledger-bench-")) / "bench.db"
        with EmbeddedServer(db) as server:
            rows = bench(server.url, server.api_key, args.steps, args.reference_steps, args.repeat)
    print_table(rows)


if __name__ == "__main__":
    main()
