"""PostgreSQL store benchmark: 1, 2 and 4 server processes on PostgreSQL next to one SQLite
process, measured in one run on this machine.

* ingest: events/s through the real HTTP path, 4 client processes each writing its own agent
  in batches of 500 (bodies built before the clock starts), spread round-robin over the
  server processes; target: 4 PostgreSQL processes >= 2x one SQLite process;
* ``why()`` at depth 1,000 over HTTP (median of 20), each store;
* keyword search over N events (``POST /v1/search``, median of 20 queries), each store, when
  the server has the route (query features); otherwise the row says so.

Needs a PostgreSQL role that may ``CREATE DATABASE`` (``--dsn``, else
``AGENTLEDGER_TEST_POSTGRES_DSN``, else ``postgresql://postgres@127.0.0.1:5432/test``); each
configuration gets a database of its own, dropped at the end.

Usage: ``python benchmarks/bench_postgres.py [--quick] [--events N] [--search-events N]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
from sqlalchemy.engine.url import make_url

from agentledger.testing import EmbeddedServer

KEY = "bench-key"
BATCH = 500
CLIENTS = 4
WORDS = [
    "refund",
    "order",
    "damaged",
    "shipping",
    "invoice",
    "payment",
    "customer",
    "address",
    "delivery",
    "courier",
    "warranty",
    "replacement",
    "discount",
    "coupon",
    "subscription",
    "cancel",
    "upgrade",
    "password",
    "login",
    "account",
    "balance",
    "transfer",
    "receipt",
    "tracking",
    "parcel",
    "return",
    "label",
    "exchange",
]


@contextmanager
def server(db: str, log: Path) -> Iterator[str]:
    """A real ``agentledger serve`` on ``db``; yields its URL."""
    with EmbeddedServer(db, api_key=KEY, log=log, timeout_s=60) as served:
        yield served.url


@contextmanager
def pg_database(admin_dsn: str) -> Iterator[str]:
    name = f"agentledger_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_url(admin_dsn).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def event_data(i: int) -> dict[str, Any]:
    text = " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(8))
    return {
        "tool": "lookup_order",
        "args": {"order_id": f"ORD-{i}", "include": ["items", "payments"]},
        "text": f"customer note {i}: {text}",
        "step": i,
    }


def bodies(agent: str, n: int) -> list[bytes]:
    out = []
    for start in range(0, n, BATCH):
        items = []
        for i in range(start, min(n, start + BATCH)):
            item: dict[str, Any] = {
                "agent": agent,
                "event": "tool_call",
                "data": event_data(i),
                "session_id": f"s-{i // 50}",
            }
            if i % BATCH:
                item["parent_index"] = (i % BATCH) - 1
            items.append(item)
        out.append(orjson.dumps({"events": items}))
    return out


def client_worker(url: str, agent: str, n: int, start_at: float) -> float:
    """One client process: POST ``n`` events of ``agent``; returns its finish time (epoch)."""
    payloads = bodies(agent, n)
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        client.get("/health")
        delay = start_at - time.time()
        if delay > 0:
            time.sleep(delay)
        for payload in payloads:
            response = client.post("/v1/events/batch", content=payload)
            response.raise_for_status()
            if response.json()["failed"]:
                raise RuntimeError(response.text[:300])
    return time.time()


def ingest(urls: list[str], n_total: int, pool: Any) -> float:
    """Events/s of ``CLIENTS`` client processes writing ``n_total`` events over ``urls``."""
    per_client = n_total // CLIENTS
    run = uuid.uuid4().hex[:6]
    start_at = time.time() + 2.0 + per_client / 50_000  # clients build their bodies first
    futures = [
        pool.apply_async(
            client_worker, (urls[c % len(urls)], f"ingest-{run}-{c}", per_client, start_at)
        )
        for c in range(CLIENTS)
    ]
    finished = max(f.get(timeout=900) for f in futures)
    return per_client * CLIENTS / (finished - start_at)


def post_chain(client: httpx.Client, agent: str, length: int) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in range(length)]
    for start in range(0, length, BATCH):
        items = [
            {
                "agent": agent,
                "event": "step",
                "data": {"i": i},
                "event_id": ids[i],
                "parent_id": ids[i - 1] if i else None,
            }
            for i in range(start, min(length, start + BATCH))
        ]
        client.post("/v1/events/batch", json={"events": items}).raise_for_status()
    return ids


def timed(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def why_ms(url: str) -> float:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as client:
        ids = post_chain(client, "bench-why", 1_001)
        got = client.get(f"/v1/events/{ids[-1]}/why", params={"depth": 1000}).json()
        assert got["chain_length"] == 1001, got.get("chain_length")
        return timed(
            lambda: (
                client.get(f"/v1/events/{ids[-1]}/why", params={"depth": 1000})
                .raise_for_status()
                .json()
            ),
            20,
        )


def search_ms(url: str, n: int, pool: Any) -> tuple[float | None, str]:
    """Median ms of keyword searches over ``n`` loaded events, or ``None`` and why not."""
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
        probe = client.post("/v1/search", json={"query": "refund", "mode": "keyword", "limit": 5})
        if probe.status_code in (404, 405):
            return None, "no /v1/search route on this server (query features not merged)"
        if probe.status_code >= 400:
            return None, f"/v1/search answered {probe.status_code}: {probe.text[:120]}"
        ingest([url], n, pool)
        queries = ["refund", "damaged parcel", "courier", "warr", "password reset login"]
        counter = iter(range(10_000))

        def one() -> None:
            query = queries[next(counter) % len(queries)]
            response = client.post(
                "/v1/search", json={"query": query, "mode": "keyword", "limit": 20}
            )
            response.raise_for_status()

        one()
        return timed(one, 20), ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--events", type=int, default=None, help="ingest events (80,000)")
    parser.add_argument("--search-events", type=int, default=None, help="events searched (100,000)")
    parser.add_argument("--dsn", default=None, help="admin DSN that may CREATE DATABASE")
    args = parser.parse_args()
    n_ingest = args.events or (8_000 if args.quick else 80_000)
    n_search = args.search_events or (8_000 if args.quick else 100_000)
    dsn = (
        args.dsn
        or os.environ.get("AGENTLEDGER_TEST_POSTGRES_DSN")
        or "postgresql://postgres@127.0.0.1:5432/test"
    )
    tmp = Path(tempfile.mkdtemp(prefix="agentledger-bench-pg-"))
    rows: list[tuple[str, ...]] = []
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(CLIENTS) as pool:
        # -- ingest -------------------------------------------------------------------------
        with server(str(tmp / "ingest.db"), tmp / "sqlite.log") as url:
            sqlite_rate = ingest([url], n_ingest, pool)
        rows.append(
            (f"ingest {n_ingest:,} ev, 1 SQLite process", f"{sqlite_rate:,.0f} ev/s", "1.00x", "")
        )
        for processes in (1, 2, 4):
            with pg_database(dsn) as db, ExitStack() as stack:
                urls = [
                    stack.enter_context(server(db, tmp / f"pg{processes}-{i}.log"))
                    for i in range(processes)
                ]
                rate = ingest(urls, n_ingest, pool)
            ratio = rate / sqlite_rate
            verdict = ""
            if processes == 4:
                verdict = "ok" if ratio >= 2 else "MISS (target >= 2x SQLite)"
            rows.append(
                (
                    f"ingest {n_ingest:,} ev, {processes} PostgreSQL process(es)",
                    f"{rate:,.0f} ev/s",
                    f"{ratio:.2f}x",
                    verdict,
                )
            )
        # -- why() and search ---------------------------------------------------------------
        # search first: why() then walks a table that holds the N searched events too
        with server(str(tmp / "query.db"), tmp / "sqlite-q.log") as url:
            sqlite_search, sqlite_note = search_ms(url, n_search, pool)
            sqlite_why = why_ms(url)
        with pg_database(dsn) as db, server(db, tmp / "pg-q.log") as url:
            pg_search, pg_note = search_ms(url, n_search, pool)
            pg_why = why_ms(url)
    rows.append(("why() depth 1,000, SQLite (median of 20)", f"{sqlite_why:.1f} ms", "1.00x", ""))
    rows.append(
        (
            "why() depth 1,000, PostgreSQL (median of 20)",
            f"{pg_why:.1f} ms",
            f"{pg_why / sqlite_why:.2f}x",
            "ok" if pg_why < 50 else "MISS (50 ms)",
        )
    )
    for store, value, note in (
        ("SQLite", sqlite_search, sqlite_note),
        ("PostgreSQL", pg_search, pg_note),
    ):
        label = f"keyword search over {n_search:,} ev, {store} (median of 20)"
        if value is None:
            rows.append((label, "skipped", "", note))
        else:
            base = sqlite_search or value
            rows.append((label, f"{value:.1f} ms", f"{value / base:.2f}x", ""))

    header = ("measurement", "result", "vs SQLite", "verdict")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(4)]
    with psycopg.connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()
    print(
        f"agentledger PostgreSQL benchmark ({os.cpu_count()} CPUs, PostgreSQL "
        f"{version[0] if version else '?'}, {CLIENTS} client processes, batches of {BATCH})"
    )
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
