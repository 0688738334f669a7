"""Regression-cases benchmark: the offline parts of ``cases export`` and ``cases run``.

Run: ``python benchmarks/bench_cases.py`` (well under a minute) or ``--quick`` (seconds).
No server: it measures the CPU work that scales with session size. One table:

1. ``Pseudonymizer`` (learn + apply, consistent stand-ins) over a session's worth of tool
   results vs the shared ``redact(value, patterns=all)`` (fixed markers, same scans): the
   price of keeping structure and consistency;
2. ``check(case, events)`` over sessions of N events vs the raw limit, one pass that only
   counts ``tool_call`` events.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from agentledger.cases import Case, Pseudonymizer, check
from agentledger.protocol.redaction import PATTERN_NAMES, redact


def median_s(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def session_values(calls: int) -> dict[str, Any]:
    results = [
        json.dumps(
            {
                "order_id": f"A{1000 + i}",
                "customer": "Dana Reyes",
                "email": f"dana{i % 7}@example.org",
                "phone": "+49 170 1234567",
                "card_number": "4242 4242 4242 4242",
                "note": "customer asked twice about the duplicate charge " * 3,
            }
        )
        for i in range(calls)
    ]
    return {"inputs": ["Hi, this is Dana Reyes, charged twice for A1000"], "results": results}


def events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"event": "user_message", "data": {"text": "q"}}]
    for i in range(n // 4):
        usage = {"input_tokens": 1000, "cache_read_tokens": 800, "output_tokens": 20}
        out += [
            {"event": "llm_start", "data": {"model": "m", "messages": []}},
            {"event": "llm_end", "data": {"text": "", "token_usage": usage}},
            {"event": "tool_call", "data": {"tool": f"t{i % 3}", "args": {"i": i}}},
            {"event": "tool_result", "data": {"tool": f"t{i % 3}", "result": "ok"}},
        ]
    out.append({"event": "assistant_response", "data": {"text": "done, refunded"}})
    for seq, e in enumerate(out):
        e["sequence_no"] = seq
        e["event_id"] = str(seq)
        e["timestamp"] = "2026-11-29T10:00:00+00:00"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    rows: list[tuple[str, str, str, str]] = []

    for calls in (10, 100) if args.quick else (10, 100, 1000):
        value = session_values(calls)

        def ours(v: dict[str, Any] = value) -> None:
            pseudo = Pseudonymizer()
            pseudo.learn(v)
            pseudo.apply(v)

        def reference(v: dict[str, Any] = value) -> None:
            redact(v, patterns=PATTERN_NAMES)

        a, b = median_s(ours, repeat), median_s(reference, repeat)
        rows.append(
            (
                f"pseudonymise {calls} tool results",
                f"{a * 1e3:.2f} ms",
                f"{b * 1e3:.2f} ms (redact, all patterns)",
                f"{a / b:.2f}x",
            )
        )

    case = Case.model_validate(
        {
            "case_id": "bench",
            "inputs": ["q"],
            "tool_stubs": {"t0": [{"args": {"i": 0}, "result": "ok", "order": 0}]},
            "expect": {
                "outcome": [{"contains": "refunded"}],
                "must_call": ["t0", "t1"],
                "must_call_in_order": ["t0", "t1", "t2"],
                "must_not_call": ["x"],
                "max_added_input_tokens": 10**9,
                "max_tool_calls": 10**9,
            },
        }
    )
    for n in (1_000, 10_000) if args.quick else (1_000, 10_000, 50_000):
        evs = events(n)

        def run_check(e: list[dict[str, Any]] = evs) -> None:
            check(case, e)

        def raw(e: list[dict[str, Any]] = evs) -> None:
            sum(1 for x in e if x["event"] == "tool_call")

        a, b = median_s(run_check, repeat), median_s(raw, repeat)
        rows.append(
            (
                f"check() on {n:,} events",
                f"{a * 1e3:.2f} ms",
                f"{b * 1e3:.2f} ms (count tool_calls)",
                f"{a / b:.1f}x",
            )
        )

    widths = [
        max(len(r[i]) for r in [("measure", "ours", "reference", "ratio"), *rows]) for i in range(4)
    ]
    header = ("measure", "ours (median)", "reference (median)", "ours/ref")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    for row in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
