"""Query-feature benchmark: a real ``agentledger serve`` over HTTP, side by side with
the targets, one run on this machine.

* keyword search (FTS5 BM25, prefix, agent filter) over N events: p50/p95 over a mix of rare,
  common and two-word queries (N = 200,000 by default, 1,000,000 with ``--full``); target
  p50 < 50 ms;
* baseline (drift report) of an agent with 10,000 sessions (60,000 events); target < 2 s;
* forget of 1 % of N (``user_id`` held by one event in a hundred), one DELETE, with the
  chain verified afterwards; target < 30 s at 1,000,000;
* ingest through the real HTTP path (batches of 500) with the background full-text indexer
  on, and with it off (``AGENTLEDGER_SEARCH_INDEXER=off``), same run, alternated; target
  ratio >= 0.8. The time the index needs after the last write to be fully caught up is shown.

The N-event database is built in-process through the store's own write path (the same
``append`` the HTTP routes call, chain and canonical JSON included) to keep set-up short.

Usage: ``python benchmarks/bench_query.py [--quick | --full] [--events N]``
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson

from agentledger.testing import EmbeddedServer

KEY = "bench-key"
BATCH = 500


@contextmanager
def server(db: Path, env: dict[str, str] | None = None) -> Iterator[httpx.Client]:
    with EmbeddedServer(db, api_key=KEY, env=env, timeout_s=60) as served:
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=served.url, headers=headers, timeout=600) as client:
            yield client


# -- data ------------------------------------------------------------------------------------

VOCAB_SIZE = 20_000


def vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < VOCAB_SIZE:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 10))))
    return sorted(words)


def zipf_weights(size: int = VOCAB_SIZE) -> list[float]:
    """Cumulative Zipf weights (``random.choices(cum_weights=...)``)."""
    return list(itertools.accumulate(1.0 / (rank + 1) for rank in range(size)))


def event_data(
    i: int, rng: random.Random, words: list[str], weights: list[float]
) -> dict[str, Any]:
    text = " ".join(rng.choices(words, cum_weights=weights, k=12))
    return {
        "tool": rng.choice(["lookup_order", "verify_charge", "issue_refund", "search_kb"]),
        "args": {"order_id": f"ORD-{i}", "note": text},
        "user_id": f"user-{i % 100}",
    }


def build_store(db: Path, n: int, seed: int = 1) -> list[str]:
    """N events of agent ``bench`` written in-process through the store; returns the words."""
    from agentledger.server._ingest import prepare, validate_item
    from agentledger.server._store.sqlite import SQLiteStore

    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = zipf_weights()
    store = SQLiteStore(str(db))
    received = datetime.now(UTC).isoformat()
    try:
        for start in range(0, n, BATCH):
            items = []
            for i in range(start, min(n, start + BATCH)):
                item = validate_item(
                    {
                        "agent": "bench",
                        "event": "tool_call",
                        "session_id": f"s-{i // 20}",
                        "data": event_data(i, rng, words, weights),
                    }
                )
                items.append(prepare(item, max_depth=64, patterns=(), received_at=received))
            store.append(items)
    finally:
        store.close()
    return words


def session_batches(agent: str, sessions: int) -> Iterator[list[dict[str, Any]]]:
    """``sessions`` sessions of 6 events; the last 20 % skip verify_charge one time in four."""
    rng = random.Random(3)
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    pending: list[dict[str, Any]] = []
    for s in range(sessions):
        skip = s >= sessions * 0.8 and rng.random() < 0.25
        tools = (
            ["lookup_order", "issue_refund"]
            if skip
            else ["lookup_order", "verify_charge", "issue_refund"]
        )
        start = t0 + timedelta(minutes=s)
        chain = ["user_message", *(f"tool:{t}" for t in tools), "llm_end"]
        while len(chain) < 6:
            chain.insert(1, "llm_start")
        if len(pending) + len(chain) > BATCH:
            yield pending
            pending = []
        first = len(pending)
        for k, step in enumerate(chain):
            item: dict[str, Any] = {
                "agent": agent,
                "session_id": f"{agent}-{s}",
                "timestamp": (start + timedelta(seconds=k)).isoformat(),
            }
            if step.startswith("tool:"):
                item.update(event="tool_call", data={"tool": step[5:], "args": {}})
            elif step == "llm_end":
                item.update(
                    event="llm_end",
                    data={"text": "ok", "token_usage": {"input_tokens": 90, "output_tokens": 9}},
                )
            else:
                item.update(event=step, data={"text": "hi"})
            if k:
                item["parent_index"] = first + k - 1
            pending.append(item)
    if pending:
        yield pending


def post_batches(client: httpx.Client, bodies: list[bytes]) -> float:
    start = time.perf_counter()
    for body in bodies:
        response = client.post(
            "/v1/events/batch", content=body, headers={"Content-Type": "application/json"}
        )
        response.raise_for_status()
        if response.json()["failed"]:
            raise RuntimeError(response.text[:300])
    return time.perf_counter() - start


def ingest_bodies(agent: str, n: int) -> list[bytes]:
    rng = random.Random(5)
    words = vocabulary(rng)[:2000]
    weights = zipf_weights(len(words))
    bodies = []
    for start in range(0, n, BATCH):
        items = []
        for i in range(start, min(n, start + BATCH)):
            items.append(
                {
                    "agent": agent,
                    "event": "tool_call",
                    "session_id": f"s-{i // 50}",
                    "data": event_data(i, rng, words, weights),
                    **({"parent_index": (i % BATCH) - 1} if i % BATCH else {}),
                }
            )
        bodies.append(orjson.dumps({"events": items}))
    return bodies


# -- measurements ----------------------------------------------------------------------------


def measure_search(client: httpx.Client, words: list[str]) -> tuple[float, float, int]:
    rng = random.Random(11)
    queries = []
    for k in range(60):
        kind = k % 3
        if kind == 0:  # rare word, full
            queries.append(rng.choice(words[5000:]))
        elif kind == 1:  # common word as a prefix
            queries.append(rng.choice(words[20:200])[:5])
        else:  # two words
            queries.append(f"{rng.choice(words[200:2000])} {rng.choice(words[2000:])}")
    client.post("/v1/search", json={"query": "warmup", "agent": "bench", "mode": "keyword"})
    times = []
    hits = 0
    for query in queries:
        start = time.perf_counter()
        response = client.post(
            "/v1/search", json={"query": query, "agent": "bench", "mode": "keyword", "limit": 10}
        )
        times.append((time.perf_counter() - start) * 1000)
        response.raise_for_status()
        hits += len(response.json()["results"])
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1], hits


def wait_index(client: httpx.Client, timeout_s: float = 600) -> float:
    start = time.perf_counter()
    while client.get("/v1/search/status").json()["keyword_index"]["pending"]:
        if time.perf_counter() - start > timeout_s:
            raise RuntimeError("index did not catch up")
        time.sleep(0.05)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--full", action="store_true", help="1,000,000 events")
    parser.add_argument("--events", type=int, default=None, help="events for search/forget")
    parser.add_argument("--sessions", type=int, default=None, help="sessions for baseline")
    parser.add_argument("--ingest", type=int, default=None, help="events per ingest run")
    args = parser.parse_args()
    n = args.events or (20_000 if args.quick else 1_000_000 if args.full else 200_000)
    sessions = args.sessions or (1_000 if args.quick else 10_000)
    ingest_n = args.ingest or (10_000 if args.quick else 50_000)
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-query-") as tmp:
        root = Path(tmp)
        db = root / "search.db"
        t = time.perf_counter()
        words = build_store(db, n)
        print(f"built {n:,} events in-process in {time.perf_counter() - t:.1f} s", flush=True)
        with server(db) as client:
            caught_up = wait_index(client)
            print(f"indexed {n:,} events in {caught_up:.1f} s (background indexer)", flush=True)
            p50, p95, hits = measure_search(client, words)
            rows.append(
                (
                    f"keyword search p50 over {n:,} events",
                    f"{p50:.1f} ms (p95 {p95:.1f}, {hits} hits/60 q)",
                    "< 50 ms",
                    "ok" if p50 < 50 else "MISS",
                )
            )
            for body in session_batches("drift", sessions):
                client.post("/v1/events/batch", json={"events": body}).raise_for_status()
            wait_index(client)  # measure the baseline alone, not next to the indexer
            times = []
            verdict = ""
            for _ in range(3):
                start = time.perf_counter()
                response = client.get("/v1/agents/drift/baseline", params={"recent_window": 2000})
                times.append(time.perf_counter() - start)
                response.raise_for_status()
                verdict = response.json()["verdict"]
            base_s = statistics.median(times)
            rows.append(
                (
                    f"baseline over {sessions:,} sessions",
                    f"{base_s * 1000:.0f} ms ({verdict})",
                    "< 2 s",
                    "ok" if base_s < 2 else "MISS",
                )
            )
            start = time.perf_counter()
            response = client.request(
                "DELETE",
                "/v1/memory/forget",
                json={"filter_key": "user_id", "filter_value": "user-7", "agent": "bench"},
            )
            forget_s = time.perf_counter() - start
            response.raise_for_status()
            erased = response.json()["deleted_events"]
            chain = client.get("/v1/events/chain", params={"agent": "bench"}).json()
            rows.append(
                (
                    f"forget 1% of {n:,} ({erased:,} events)",
                    f"{forget_s:.2f} s (chain intact: {chain['intact']})",
                    "< 30 s at 1M",
                    "ok" if forget_s < 30 and chain["intact"] else "MISS",
                )
            )
        bodies = ingest_bodies("ingest", ingest_n)
        rates: dict[str, list[float]] = {"on": [], "off": []}
        lag: list[float] = []
        for run in range(2):
            for mode in ("off", "on") if run == 0 else ("on", "off"):
                path = root / f"ingest-{mode}-{run}.db"
                env = {"AGENTLEDGER_SEARCH_INDEXER": mode}
                with server(path, env) as client:
                    rates[mode].append(ingest_n / post_batches(client, bodies))
                    if mode == "on":
                        lag.append(wait_index(client))
        on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
        rows.append(
            (
                f"ingest HTTP, index on ({ingest_n:,} events)",
                f"{on:,.0f} ev/s (index caught up {max(lag):.2f} s after the last write)",
                f"off: {off:,.0f} ev/s",
                f"{on / off:.2f}x {'ok' if on / off >= 0.8 else 'MISS'} (>= 0.8x)",
            )
        )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nquery benchmark: {os.cpu_count()} CPUs, load average {load}")
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("measure", "ours", "target / reference", "ratio / verdict")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    print()
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
