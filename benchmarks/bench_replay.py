"""Replay benchmark: our own overhead when recorded sessions are replayed against a model.

``cases run --factory agentledger.cases:openai_candidate`` over N recorded sessions (200 by
default, 20 with ``--quick``) against a small local OpenAI-compatible server on loopback. Each
session is one user turn; the model asks for one tool (answered by the case's stub), then
answers. Every run is logged to a real embedded ``agentledger serve``, read back and checked
(tool calls, truncation, token ceilings, similarity to the source answer with the offline
model), and the corpus gates are evaluated.

Measured per session (means over the sessions of one suite):

* the whole run as ``cases run`` does it (build, model calls, logging, read back, checks);
* the model calls as the candidate saw them (``llm_end.duration_ms``, which the OpenAI
  integration measures around each SDK call: HTTP and the model server);
* our own overhead: the rest, and its share of the whole.

Twice: with a model that answers at once (the worst case for our share) and with 150 ms of
model latency per call (closer to a real provider). Usage:
``python benchmarks/bench_replay.py [--quick] [--sessions N]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from langchain_core.tools import tool

from agentledger.cases import Case, GateOptions, ledger_target, resolve_embedder, run_suite
from agentledger.cases import save_case as write_case

ANSWER = "Your order A1234 ships today from the Berlin warehouse."


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id}


@contextmanager
def model_server(latency_s: float) -> Iterator[str]:
    """An OpenAI-compatible chat endpoint: a tool call first, then the answer."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency_s)
            answered = any(m.get("role") == "tool" for m in body["messages"])
            message: dict[str, Any] = {"role": "assistant", "content": ANSWER if answered else ""}
            if not answered:
                arguments = json.dumps({"order_id": "A1234"})
                message["tool_calls"] = [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": arguments},
                    }
                ]
            reply = {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "stop" if answered else "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135},
            }
            payload = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def corpus(directory: Path, sessions: int) -> list[tuple[Path, Case]]:
    """``sessions`` recorded cases, as ``cases export`` writes them."""
    out = []
    for i in range(sessions):
        case = Case.model_validate(
            {
                "case_id": f"bench-{i:04d}",
                "inputs": [f"Where is my order A1234? (ticket {i})"],
                "tool_stubs": {
                    "lookup_order": [
                        {
                            "order": 0,
                            "args": {"order_id": "A1234"},
                            "result": {"order_id": "A1234", "status": "shipped"},
                        }
                    ]
                },
                "source_answer": ANSWER,
                "captured_with": {
                    "models": ["gpt-bench"],
                    "system_prompt": "You are a shipping agent.",
                    "parameters": {"temperature": 0.0},
                },
                "expect": {
                    "must_call": ["lookup_order"],
                    "max_tool_calls": 4,
                    "max_added_input_tokens": 1000,
                    "outcome": [{"similar_to": ANSWER, "threshold": 0.7}],
                },
            }
        )
        path = directory / f"{case.case_id}.json"
        write_case(case, path)
        out.append((path, case))
    return out


def measure(sessions: int, latency_s: float) -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as tmp, model_server(latency_s) as base_url:
        cases = corpus(Path(tmp), sessions)
        embed = resolve_embedder().embed
        assert embed is not None, "install agentledger[similarity] for the offline model"
        with ledger_target() as target:
            started = time.perf_counter()
            report = run_suite(
                cases,
                factory=_candidate(),
                tools=[lookup_order],
                target=target,
                embed=embed,
                embedder_name="offline",
                gates=GateOptions(min_mean_similarity=0.9, max_truncations=0),
                overrides={"base_url": base_url},
            )
            wall_s = time.perf_counter() - started
            assert report.gate_passed, [c.failure_message() for c in report.cases][:2]
            model = []
            for case in report.cases:
                (run,) = case.runs
                events = target.ledger.replay(run.extra["session_id"], limit=1000)
                durations = [e.data.get("duration_ms") or 0 for e in events if e.event == "llm_end"]
                model.append(sum(float(d) for d in durations))
    per_total = wall_s * 1000.0 / sessions  # the whole suite (runs, read back, checks, gates)
    per_model = statistics.fmean(model)
    overhead = per_total - per_model
    return (
        f"{sessions} sessions, model latency {latency_s * 1000:.0f} ms/call",
        f"{per_total:.1f} ms",
        f"{per_model:.1f} ms",
        f"{overhead:.1f} ms",
        f"{overhead / per_total:.0%}",
    )


def _candidate() -> Any:
    from agentledger.cases import openai_candidate

    return openai_candidate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 sessions (smoke test)")
    parser.add_argument("--sessions", type=int, default=None)
    args = parser.parse_args()
    sessions = args.sessions or (20 if args.quick else 200)
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")  # the local server takes any
    rows = [measure(sessions, 0.0), measure(sessions, 0.150)]
    print("| replay | per session (mean) | model calls | our overhead | share |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
