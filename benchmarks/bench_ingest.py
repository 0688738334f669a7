"""The server's write path stage by stage, in-process: CPU per event of each stage for plain
and LangChain-shaped events (the shapes of ``bench_server.py``), and the canonical JSON of a
LangChain-shaped record on the fast path next to the RFC 8785 reference library.

Stages, per batch of 500 as the ``/v1/events/batch`` route runs them: ``parse`` (strict JSON),
``validate`` (pydantic), ``prepare`` (limits, redaction, fingerprint), ``append`` (duplicates,
chain, SQLite insert and commit), ``response`` (the answer's JSON as the client's sender asks
for it, ``Prefer: return=minimal``: counts and failures). The full answer, a receipt per event
(the reference client's form), is timed beside it and left out of the total. Medians of
interleaved rounds; the HTTP stack is not included (``bench_server.py`` measures the whole
path).

Usage: ``python benchmarks/bench_ingest.py [--quick]``
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

import orjson
import rfc8785
from bench_server import BATCH, SHAPES, batches, langchain_data

from agentledger.server._canonical import canonical_fast, inspect_value
from agentledger.server._http import parse_body
from agentledger.server._ingest import now_ts, prepare, validate_items
from agentledger.server._schemas import BatchIn
from agentledger.server._store import open_store

STAGES = ("parse", "validate", "prepare", "append", "response")
#: timed with the stages, not part of the total
RECEIPTS = "response, a receipt per event"


def one_round(store: Any, bodies: list[bytes], n: int) -> dict[str, float]:
    """µs per event of each stage over ``bodies`` (``n`` events in all)."""
    spent = dict.fromkeys((*STAGES, RECEIPTS), 0.0)
    for body in bodies:
        t0 = time.process_time()
        raw = parse_body(body)
        t1 = time.process_time()
        items = validate_items(BatchIn.model_validate(raw).events)
        t2 = time.process_time()
        received = now_ts()
        prepared = []
        for item in items:
            assert not isinstance(item, Exception), item
            prepared.append(
                prepare(
                    item,
                    max_depth=64,
                    patterns=(),
                    received_at=received,
                    parent_index=item.parent_index,
                )
            )
        t3 = time.process_time()
        outcomes = store.append(prepared)
        t4 = time.process_time()
        failures = [{"index": i, "ok": False} for i, o in enumerate(outcomes) if not o.ok]
        written = sum(1 for o in outcomes if o.ok and not o.duplicate)
        orjson.dumps({"written": written, "failed": len(failures), "results": failures})
        t5 = time.process_time()
        orjson.dumps(
            {
                "results": [
                    {
                        "index": i,
                        "ok": o.ok,
                        "event_id": o.event_id,
                        "sequence_no": o.sequence_no,
                        "timestamp": o.timestamp,
                        "checksum": o.checksum,
                        "chain_hash": o.chain_hash,
                    }
                    for i, o in enumerate(outcomes)
                ]
            }
        )
        t6 = time.process_time()
        for stage, (start, end) in zip(
            (*STAGES, RECEIPTS),
            ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5), (t5, t6)),
            strict=True,
        ):
            spent[stage] += end - start
    return {stage: seconds / n * 1e6 for stage, seconds in spent.items()}


def canonical_costs() -> tuple[float, float]:
    """µs per LangChain-shaped record: ``inspect_value`` + fast path, and the reference."""
    record = {
        "event_id": "0192f0c1-7d2a-7cc4-9d3e-2f1b7a9c0e11",
        "agent": "support-bot",
        "sequence_no": 12,
        "timestamp": "2026-12-03T07:09:27.123456+00:00",
        "event": "llm_end",
        "data": langchain_data(7),
        "parent_id": None,
        "session_id": "ticket-42",
        "metadata": None,
        "supersedes": None,
    }
    assert inspect_value(record["data"], max_depth=64)
    assert canonical_fast(record) == rfc8785.dumps(record)
    number = 20_000

    def fast() -> bytes:
        inspect_value(record["data"], max_depth=64)
        return canonical_fast(record)

    fast_s = min(timeit.repeat(fast, number=number, repeat=5)) / number
    reference_s = min(timeit.repeat(lambda: rfc8785.dumps(record), number=number, repeat=5))
    return fast_s * 1e6, reference_s / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = parser.parse_args()
    n, rounds = (2_000, 3) if args.quick else (10_000, 7)
    tmp = Path(tempfile.mkdtemp(prefix="agentledger-bench-ingest-"))
    try:
        store = open_store(str(tmp / "ledger.db"))
        results: dict[str, list[dict[str, float]]] = {shape: [] for shape in SHAPES}
        for round_no in range(rounds):
            for shape in SHAPES:  # interleaved: both shapes see the same machine
                bodies = list(batches(f"{shape}-{round_no}", n, shape))
                results[shape].append(one_round(store, bodies, n))
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"| stage (CPU µs per event, median of {rounds} rounds of {n:,}, batches of {BATCH}) |"
        f" {' | '.join(SHAPES)} |"
    )
    print("|---|" + "---|" * len(SHAPES))
    for stage in (*STAGES, "total", RECEIPTS):
        cells = []
        for shape in SHAPES:
            per_round = [
                sum(r[s] for s in STAGES) if stage == "total" else r[stage] for r in results[shape]
            ]
            cells.append(f"{statistics.median(per_round):.1f}")
        print(f"| {stage} | {' | '.join(cells)} |")
    fast_us, reference_us = canonical_costs()
    print()
    print("| canonical JSON of a LangChain-shaped record | µs | ratio |")
    print("|---|---|---|")
    print(f"| `inspect_value` + orjson fast path | {fast_us:.2f} | 1.00x |")
    print(f"| `rfc8785` reference | {reference_us:.2f} | {reference_us / fast_us:.1f}x |")


if __name__ == "__main__":
    main()
