"""Retention benchmark: how fast the sweep erases, and what it costs ingest while it runs.

On a real ``agentledger serve`` (SQLite file; ``--postgres URL`` for PostgreSQL), with the
scheduled sweep off so each sweep is started by hand (``POST /v1/retention/run``):

* erasure rate: events/s of a sweep over N expired events of one agent (default batch of 500
  per write transaction), medians over rounds;
* ingest side by side: events/s and the slowest batch of 500 for M events written by one
  client, alone and while a sweep of 4 N expired events of another agent runs, in
  interleaved rounds, medians; the ratio says what the sweep costs ingest, the slowest batch
  how long ingest ever waited.

Usage: ``python benchmarks/bench_retention.py [--quick] [--postgres URL]``. The machine is
shared and noisy: compare the columns of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from agentledger.testing import EmbeddedServer

BATCH = 500


def items(agent: str, n: int, *, old: bool) -> list[list[dict[str, Any]]]:
    at = datetime.now(UTC) - (timedelta(days=3) if old else timedelta(0))
    stamp = at.isoformat().replace("+00:00", "Z")
    events = [
        {
            "agent": agent,
            "event": "tool_call",
            "timestamp": stamp,
            "session_id": f"s-{i // 50}",
            "data": {"tool": "lookup_order", "args": {"order_id": f"ORD-{i}"}, "step": i},
        }
        for i in range(n)
    ]
    return [events[i : i + BATCH] for i in range(0, n, BATCH)]


def ingest(client: httpx.Client, batches: list[list[dict[str, Any]]]) -> tuple[float, float]:
    """Write the batches; returns (events/s, slowest batch in ms)."""
    slowest = 0.0
    start = time.perf_counter()
    for batch in batches:
        t0 = time.perf_counter()
        response = client.post("/v1/events/batch", json={"events": batch})
        slowest = max(slowest, time.perf_counter() - t0)
        assert response.status_code == 200 and response.json()["failed"] == 0, response.text
    elapsed = time.perf_counter() - start
    return sum(len(b) for b in batches) / elapsed, slowest * 1000


def expire(client: httpx.Client, agent: str, n: int) -> None:
    """Store ``n`` events of ``agent`` three days old and give the agent a 1-day window."""
    ingest(client, items(agent, n, old=True))
    response = client.put(f"/v1/retention/policies/{agent}", json={"keep": "1d"})
    assert response.status_code == 200, response.text


def sweep(client: httpx.Client, agent: str) -> tuple[int, float]:
    """Run the sweep of ``agent``; returns (events erased, seconds)."""
    start = time.perf_counter()
    response = client.post("/v1/retention/run", json={"agent": agent}, timeout=600)
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.text
    return int(response.json()["erased"]), elapsed


def background_sweep(
    url: str, headers: dict[str, str], agent: str, out: list[tuple[int, float]]
) -> None:
    """:func:`sweep` on a connection of its own (the ingest client keeps its own)."""
    with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
        out.append(sweep(client, agent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--postgres", help="a postgresql:// URL of an empty database")
    args = parser.parse_args()
    n, m, rounds = (2_000, 2_000, 2) if args.quick else (20_000, 10_000, 3)
    with tempfile.TemporaryDirectory() as tmp:
        db = args.postgres or str(Path(tmp) / "retention.db")
        env = {"AGENTLEDGER_RETENTION_INTERVAL_S": "0"}
        with EmbeddedServer(db, env=env) as server:
            headers = {"Authorization": f"Bearer {server.api_key}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as client:
                rates: list[float] = []
                alone: list[tuple[float, float]] = []
                during: list[tuple[float, float]] = []
                for r in range(rounds):
                    agent = f"expired-{r}-{uuid.uuid4().hex[:4]}"
                    expire(client, agent, n)
                    erased, seconds = sweep(client, agent)
                    assert erased == n, (erased, n)
                    rates.append(erased / seconds)

                    alone.append(ingest(client, items(f"live-a-{r}", m, old=False)))

                    backlog = f"backlog-{r}-{uuid.uuid4().hex[:4]}"
                    expire(client, backlog, 4 * n)
                    done: list[tuple[int, float]] = []
                    worker = threading.Thread(
                        target=background_sweep, args=(server.url, headers, backlog, done)
                    )
                    worker.start()
                    time.sleep(0.05)
                    during.append(ingest(client, items(f"live-b-{r}", m, old=False)))
                    worker.join()
                    assert done and done[0][0] == 4 * n
                    chain = client.get("/v1/events/chain", params={"agent": backlog}).json()
                    assert chain["intact"] and chain["erased"] == 4 * n, chain

    store = "PostgreSQL" if args.postgres else "SQLite"
    rate = statistics.median(rates)
    a_rate = statistics.median(x[0] for x in alone)
    d_rate = statistics.median(x[0] for x in during)
    a_max = statistics.median(x[1] for x in alone)
    d_max = statistics.median(x[1] for x in during)
    print(f"retention benchmark ({store}; {rounds} rounds, medians; shared noisy machine)")
    print("| measure | value |\n|---|---|")
    print(f"| {store}: sweep erasure rate, {n:,} expired events | {rate:,.0f} events/s |")
    print(f"\n| ingest of {m:,} events (batches of {BATCH}) | alone | sweep running | ratio |")
    print("|---|---|---|---|")
    print(f"| {store}: events/s | {a_rate:,.0f} | {d_rate:,.0f} | {d_rate / a_rate:.2f}x |")
    print(f"| {store}: slowest batch, ms | {a_max:.0f} | {d_max:.0f} | {d_max / a_max:.2f}x |")


if __name__ == "__main__":
    main()
