"""The decision view of an answer against ``why()`` of the same answer, in one run.

A conversation of ``turns`` turns is logged to an embedded server (SQLite), each turn as the
LangChain integration writes it: a user message caused by the previous answer, a model call
reading it, a tool call and its result, a second model call reading the result, the answer,
and a ``state_set``. Then ``GET /v1/events/{answer}/why`` and ``GET /v1/events/{answer}/decision``
of the last answer are each asked ``rounds`` times; the table gives the median latency and the
decision / why ratio (the decision view walks the same causes, then reads the model call's
output and the state at the answer's time). The machine is shared and noisy: compare the ratio,
not the absolute numbers.

Usage: ``python benchmarks/bench_decision.py [--quick]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from agentledger.testing import EmbeddedServer

KEY = "bench-key"
AGENT = "bench-decision"


def _event(kind: str, data: dict[str, Any], parent: str | None, **more: Any) -> dict[str, Any]:
    body = {"event_id": str(uuid.uuid4()), "agent": AGENT, "event": kind, "data": data}
    return body | {"session_id": "conversation", "parent_id": parent} | more


def conversation(turns: int) -> tuple[list[dict[str, Any]], str]:
    """The events of ``turns`` turns, oldest first, and the last answer's id."""
    items: list[dict[str, Any]] = []
    answer: str | None = None
    for turn in range(turns):
        user = _event("user_message", {"text": f"question {turn}"}, answer)
        messages = [{"role": "user", "content": f"question {turn}"}]
        start = _event("llm_start", {"model": "m", "messages": messages}, user["event_id"])
        calls = [{"name": "lookup", "args": {"n": turn}, "id": f"c{turn}"}]
        end = _event("llm_end", {"text": "", "tool_calls": calls}, start["event_id"])
        call = _event("tool_call", {"tool": "lookup", "args": {"n": turn}}, end["event_id"])
        result = _event("tool_result", {"tool": "lookup", "result": turn}, call["event_id"])
        messages = [*messages, {"role": "tool", "content": str(turn)}]
        second = _event(
            "llm_start",
            {"model": "m", "messages": messages, "tool_result_ids": [result["event_id"]]},
            result["event_id"],
            caused_by=[{"event_id": result["event_id"], "kind": "read"}],
        )
        second_end = _event("llm_end", {"text": f"answer {turn}"}, second["event_id"])
        reply = _event("assistant_response", {"text": f"answer {turn}"}, second_end["event_id"])
        state = _event("state_set", {"key": "turn", "value": turn}, reply["event_id"])
        items += [user, start, end, call, result, second, second_end, reply, state]
        answer = reply["event_id"]
    assert answer is not None
    return items, answer


def median_ms(client: httpx.Client, path: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        response = client.get(path)
        times.append((time.perf_counter() - start) * 1000.0)
        response.raise_for_status()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    turns, rounds = (20, 3) if args.quick else (1000, 21)
    items, answer = conversation(turns)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServer(Path(tmp) / "d.db", api_key=KEY) as s:
        client = httpx.Client(
            base_url=s.url, headers={"Authorization": f"Bearer {KEY}"}, timeout=120
        )
        for i in range(0, len(items), 500):
            written = client.post("/v1/events/batch", json={"events": items[i : i + 500]})
            written.raise_for_status()
            assert written.json()["failed"] == 0, written.text[:500]
        view = client.get(f"/v1/events/{answer}/decision").json()
        assert view["model_call"] is not None and len(view["tool_results"]) == 1, view["notes"]
        why = median_ms(client, f"/v1/events/{answer}/why", rounds)
        decision = median_ms(client, f"/v1/events/{answer}/decision", rounds)
    print(f"{turns} turns ({len(items)} events), last answer, {rounds} requests each, medians")
    print("| SQLite, embedded server | ms | ratio |")
    print("|---|---|---|")
    print(f"| why(answer) over HTTP | {why:,.1f} | 1.00x |")
    print(f"| decision(answer) over HTTP | {decision:,.1f} | {decision / why:.2f}x |")


if __name__ == "__main__":
    main()
