"""Ledger server benchmark: ours (real ``agentledger serve`` over HTTP) next to raw limits.

Measures, in one run on this machine:

* ingest: events/s through the real HTTP path (batches of 500, one client connection) vs a raw
  ``sqlite3`` loop doing the same durable work in-process (canonical JSON with sorted keys,
  SHA-256 checksum + chain link, ``executemany`` per 500 in WAL, ``synchronous=NORMAL``, same
  table and indexes), in interleaved rounds, medians; targets: ratio >= 0.3x and >= 20,000/s;
* ``why()`` at depth 1,000 over HTTP (median of 20; target < 50 ms);
* ``impact()`` of a 10,000-event subtree over HTTP (median of 5; target < 500 ms);
* export of N events as streamed NDJSON with the server's peak RSS sampled during the stream
  (default N = 200,000; ``--full`` = 1,000,000);
* ``verify`` over HTTP (GET /v1/events/chain) of the same N events (target >= 100,000 events/s),
  next to a direct sqlite3 pass over the same rows doing the same hashing (record checksum,
  chain link, column seal; target >= 0.8x of it), interleaved rounds, medians.

Usage: ``python benchmarks/bench_server.py [--quick | --full] [--events N] [--export-events N]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil
import uuid_utils
from doc_tables import TARGET_COLUMNS, doc_table, verdict  # the script's directory is on sys.path

from agentledger.server._settings import Settings
from agentledger.testing import EmbeddedServer

KEY = "bench-key"
BATCH = 500
ROUNDS = 5


@contextmanager
def server(db: Path) -> Iterator[tuple[str, psutil.Process]]:
    with EmbeddedServer(db, api_key=KEY) as served:
        yield served.url, psutil.Process(served.pid)


def event_data(i: int) -> dict[str, Any]:
    return {
        "tool": "lookup_order",
        "args": {"order_id": f"ORD-{i}", "include": ["items", "payments"]},
        "text": "customer asked about a refund for a damaged item",
        "step": i,
    }


def langchain_data(i: int) -> dict[str, Any]:
    """An ``llm_end`` as the LangChain handler writes it: text, model, token usage, a float
    ``duration_ms``."""
    return {
        "text": f"Order ORD-{i} was charged twice; I have opened a refund for the second charge.",
        "model": "gpt-4o-mini",
        "finish_reason": "stop",
        "token_usage": {
            "input_tokens": 812,
            "output_tokens": 64,
            "total_tokens": 876,
            "cache_read_tokens": 512,
        },
        "tool_calls": [],
        "duration_ms": 812.345 + (i % 97) / 8,
    }


def client_ts() -> str:
    """The client's timestamp form (microseconds, ``Z``)."""
    seconds, rest = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1000:06d}Z"


#: Event shapes: ``plain`` (server-made ids and times, no floats) and ``langchain`` (what the
#: client sends for a LangChain ``llm_end``: its own UUIDv7 and timestamp, a scope, a float).
SHAPES = ("plain", "langchain")
SHAPE_NAMES = {"plain": "plain", "langchain": "LangChain-shaped"}


def batches(agent: str, n: int, shape: str = "plain") -> Iterator[bytes]:
    for start in range(0, n, BATCH):
        items = []
        previous = None
        for i in range(start, min(n, start + BATCH)):
            if shape == "plain":
                item: dict[str, Any] = {
                    "agent": agent,
                    "event": "tool_call",
                    "data": event_data(i),
                    "session_id": f"s-{i // 50}",
                }
                if i % BATCH:
                    item["parent_index"] = (i % BATCH) - 1
            else:
                event_id = str(uuid_utils.uuid7())
                item = {
                    "event_id": event_id,
                    "agent": agent,
                    "event": "llm_end",
                    "data": langchain_data(i),
                    "timestamp": client_ts(),
                    "session_id": f"s-{i // 50}",
                    "scope_id": SCOPE,
                }
                if previous is not None:
                    item["parent_id"] = previous
                previous = event_id
            items.append(item)
        yield orjson.dumps({"events": items})


SCOPE = str(uuid.uuid4())


def ingest_http(
    url: str, agent: str, n: int, shape: str = "plain", *, minimal: bool = False
) -> float:
    """Events per second over HTTP; ``minimal``: as the client's sender asks (``Prefer:
    return=minimal``, counts and failures only), else a receipt per event (the reference
    client's form)."""
    bodies = list(batches(agent, n, shape))
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    if minimal:
        headers["Prefer"] = "return=minimal"
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        client.get("/health")
        start = time.perf_counter()
        for body in bodies:
            response = client.post("/v1/events/batch", content=body)
            response.raise_for_status()
            if response.json()["failed"]:
                raise RuntimeError(response.text[:500])
        elapsed = time.perf_counter() - start
    return n / elapsed


class RawLoop:
    """The raw limit: the same durable work as the server's write path, in-process.

    Canonical JSON (orjson, sorted keys), SHA-256 checksum and chain link, ``executemany`` of
    500 rows per ``BEGIN IMMEDIATE`` transaction in WAL with ``synchronous=NORMAL``, into the
    same table and indexes as the server's ``events`` table.
    """

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA cache_size=-16384")  # as the server's connections
        self.conn.execute(
            "CREATE TABLE events (id INTEGER PRIMARY KEY, event_id TEXT UNIQUE, agent TEXT,"
            " sequence_no INTEGER, timestamp TEXT, received_at TEXT, event TEXT, parent_id TEXT,"
            " session_id TEXT, idempotency_key TEXT, record BLOB, checksum TEXT, chain_hash TEXT,"
            " UNIQUE(agent, sequence_no), UNIQUE(agent, idempotency_key))"
        )
        self.conn.execute("CREATE INDEX ix_parent ON events(parent_id)")
        self.conn.execute("CREATE INDEX ix_agent_ts ON events(agent, timestamp, sequence_no)")
        self.conn.execute("CREATE INDEX ix_session_ts ON events(session_id, timestamp)")
        self.seq = 0
        self.previous = ""

    def write(self, n: int, shape: str = "plain") -> float:
        """Write ``n`` more events of ``shape``; returns events/s."""
        start = time.perf_counter()
        parent = None
        data_of = event_data if shape == "plain" else langchain_data
        for first in range(0, n, BATCH):
            rows = []
            for i in range(first, min(n, first + BATCH)):
                self.seq += 1
                event_id = str(uuid_utils.uuid7())  # time-ordered ids, as the server generates
                ts = time.strftime("%Y-%m-%dT%H:%M:%S.000000+00:00", time.gmtime())
                record = {
                    "event_id": event_id,
                    "agent": "raw",
                    "sequence_no": self.seq,
                    "timestamp": ts,
                    "event": "tool_call",
                    "data": data_of(i),
                    "parent_id": parent if i % BATCH else None,
                    "session_id": f"s-{i // 50}",
                    "metadata": None,
                    "supersedes": None,
                }
                canon = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
                checksum = hashlib.sha256(canon).hexdigest()
                self.previous = hashlib.sha256(self.previous.encode() + canon).hexdigest()
                rows.append(
                    (
                        event_id,
                        "raw",
                        self.seq,
                        ts,
                        ts,
                        "tool_call",
                        record["parent_id"],
                        record["session_id"],
                        canon,
                        checksum,
                        self.previous,
                    )
                )
                parent = event_id
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(
                "INSERT INTO events (event_id, agent, sequence_no, timestamp, received_at, event,"
                " parent_id, session_id, record, checksum, chain_hash)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                rows,
            )
            self.conn.execute("COMMIT")
        return n / (time.perf_counter() - start)


def post_chain(client: httpx.Client, agent: str, parents: list[int | None]) -> list[str]:
    """Write one event per entry whose parent is the entry at the given index (client ids)."""
    ids = [str(uuid.uuid4()) for _ in parents]
    for start in range(0, len(parents), BATCH):
        items = []
        for i in range(start, min(len(parents), start + BATCH)):
            p = parents[i]
            items.append(
                {
                    "agent": agent,
                    "event": "step",
                    "data": {"i": i},
                    "event_id": ids[i],
                    "parent_id": ids[p] if p is not None else None,
                }
            )
        response = client.post("/v1/events/batch", json={"events": items})
        response.raise_for_status()
    return ids


def timed(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def direct_verify_pass(db: Path, agent: str) -> int:
    """The reference for verify: one agent's rows read with sqlite3 directly, and the same
    cryptographic work as the server's verification (each record's checksum from its stored
    canonical bytes, the chain link after its predecessor, the column seal). Plain SHA-256, as
    the benchmark server has no chain key. Returns the number of rows checked.

    Raises:
        AssertionError: a row does not verify (the benchmark's data is never tampered).
    """
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT record, checksum, chain_hash, received_at, importance, seal FROM events"
            " WHERE agent = ? ORDER BY sequence_no",
            (agent,),
        )
        sha256 = hashlib.sha256
        dumps = orjson.dumps
        prev = b""
        n = 0
        for record, checksum, chain, received_at, importance, seal in rows:
            assert sha256(record).hexdigest() == checksum
            assert sha256(prev + record).hexdigest() == chain
            prev = chain.encode("ascii")
            assert sha256(prev + b"columns:" + dumps([received_at, importance])).hexdigest() == seal
            n += 1
        return n
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--full", action="store_true", help="export/verify 1,000,000 events")
    parser.add_argument("--events", type=int, default=None, help="ingest events (100,000)")
    parser.add_argument("--export-events", type=int, default=None, help="export events")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="agentledger-bench-server-"))
    try:
        run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path) -> None:
    """Run every measurement with files under ``tmp`` and print the table."""
    n_ingest = args.events or (10_000 if args.quick else 100_000)
    n_export = args.export_events or (20_000 if args.quick else 1_000_000 if args.full else 200_000)
    rows: list[tuple[str, str, str, str, str]] = []
    targets: list[tuple[str, str, str, str, str]] = []  # the docs' table of targets

    raw = RawLoop(tmp / "raw.db")
    with server(tmp / "ledger.db") as (url, proc):
        # interleaved rounds (raw, ours, raw, ours...) so both see the same machine load
        for shape in SHAPES:
            raw_rates: list[float] = []
            rates: dict[bool, list[float]] = {False: [], True: []}
            for round_no in range(ROUNDS):
                raw_rates.append(raw.write(n_ingest // ROUNDS, shape))
                for minimal in (False, True):
                    agent = f"bench-ingest-{shape}-{round_no}-{'minimal' if minimal else 'full'}"
                    rates[minimal].append(
                        ingest_http(url, agent, n_ingest // ROUNDS, shape, minimal=minimal)
                    )
            raw_rate = statistics.median(raw_rates)
            for minimal, answer in ((False, "a receipt per event"), (True, "return=minimal")):
                ours_rate = statistics.median(rates[minimal])
                ratio = ours_rate / raw_rate
                rows.append(
                    (
                        f"ingest {n_ingest:,} {shape} events, batches of 500, {answer} "
                        f"(median of {ROUNDS} rounds)",
                        f"{ours_rate:,.0f} ev/s",
                        f"raw sqlite3 {raw_rate:,.0f} ev/s",
                        f"{ratio:.2f}x",
                        f"ratio {'ok' if ratio >= 0.6 else 'MISS'} (>=0.6x)",
                    )
                )
                if not minimal:
                    targets.append(
                        (
                            f"ingest, {SHAPE_NAMES[shape]} events over HTTP in batches of 500 "
                            "(reference: the raw sqlite3 loop)",
                            f"{ours_rate:,.0f} ev/s",
                            f"{raw_rate:,.0f} ev/s",
                            f"{ratio:.2f}×",
                            verdict(ratio, at_least=0.6),
                        )
                    )
        headers = {"Authorization": f"Bearer {KEY}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            chain = post_chain(client, "bench-why", [None, *range(0, 1_000)])
            why_ms = timed(
                lambda: (
                    client.get(f"/v1/events/{chain[-1]}/why", params={"depth": 1000})
                    .raise_for_status()
                    .json()
                ),
                20,
            )
            got = client.get(f"/v1/events/{chain[-1]}/why", params={"depth": 1000}).json()
            assert got["chain_length"] == 1001, got["chain_length"]
            rows.append(
                (
                    "why() depth 1,000 over HTTP (median of 20)",
                    f"{why_ms:.1f} ms",
                    "target 50 ms",
                    f"{why_ms / 50:.2f}x of budget",
                    "ok" if why_ms < 50 else "MISS",
                )
            )
            # a 10,000-event subtree: each node's parent is an earlier node (fan-out ~3)
            fan_out = [None, *[(i - 1) // 3 for i in range(1, 10_001)]]
            tree = post_chain(client, "bench-impact", fan_out)
            impact_ms = timed(
                lambda: client.get(f"/v1/events/{tree[0]}/impact").raise_for_status().json(),
                5,
            )
            count = client.get(f"/v1/events/{tree[0]}/impact").json()["count"]
            assert count == 10_000, count
            rows.append(
                (
                    "impact() of a 10,000-event subtree (median of 5)",
                    f"{impact_ms:.0f} ms",
                    "target 500 ms",
                    f"{impact_ms / 500:.2f}x of budget",
                    "ok" if impact_ms < 500 else "MISS",
                )
            )
            # export: load n_export events, then stream them while sampling the server's RSS
            load_rate = ingest_http(url, "bench-export", n_export)
            rss_before = proc.memory_info().rss
            peak = rss_before
            stop = threading.Event()

            def sample() -> None:
                nonlocal peak
                while not stop.is_set():
                    peak = max(peak, proc.memory_info().rss)
                    time.sleep(0.02)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            start = time.perf_counter()
            lines = 0
            with client.stream("GET", "/v1/events/export", params={"agent": "bench-export"}) as r:
                for chunk in r.iter_bytes():
                    lines += chunk.count(b"\n")
            export_s = time.perf_counter() - start
            stop.set()
            sampler.join()
            assert lines == n_export, lines
            rows.append(
                (
                    f"export {n_export:,} events (NDJSON stream)",
                    f"{n_export / export_s:,.0f} ev/s",
                    f"server RSS {rss_before / 2**20:.0f} MiB before",
                    f"peak {peak / 2**20:.0f} MiB (+{(peak - rss_before) / 2**20:.0f})",
                    "ok" if peak - rss_before < 100 * 2**20 else "MISS (flat memory)",
                )
            )
            # interleaved rounds: ours over HTTP, then the direct SQL pass on the same rows
            ours_verify, direct_verify = [], []
            for _ in range(ROUNDS):
                start = time.perf_counter()
                report = client.get("/v1/events/chain", params={"agent": "bench-export"}).json()
                ours_verify.append(time.perf_counter() - start)
                assert report["intact"] and report["verified"] == n_export, report["summary"]
                start = time.perf_counter()
                assert direct_verify_pass(tmp / "ledger.db", "bench-export") == n_export
                direct_verify.append(time.perf_counter() - start)
            verify_rate = n_export / statistics.median(ours_verify)
            direct_rate = n_export / statistics.median(direct_verify)
            # the server splits a long chain over worker processes; the reference is one
            processes = Settings.from_env().verify_workers + 1
            split = f"{processes} process{'es' if processes > 1 else ''}"
            rows.append(
                (
                    f"verify {n_export:,} events over HTTP, {split} (median of {ROUNDS} rounds)",
                    f"{verify_rate:,.0f} ev/s",
                    f"direct sqlite3 pass {direct_rate:,.0f} ev/s",
                    f"{verify_rate / direct_rate:.2f}x",
                    f"ratio {'ok' if verify_rate >= 0.8 * direct_rate else 'MISS'} (>=0.8x); "
                    f"rate {'ok' if verify_rate >= 100_000 else 'MISS'} (>=100k/s)",
                )
            )
            targets.append(
                (
                    f"verify {n_export:,} events over HTTP in {split}"
                    " (reference: a direct SQL pass in one)",
                    f"{verify_rate:,.0f} ev/s",
                    f"{direct_rate:,.0f} ev/s",
                    f"{verify_rate / direct_rate:.2f}×",
                    verdict(verify_rate / direct_rate, at_least=0.8),
                )
            )
            rows.append(
                (
                    f"(loading {n_export:,} export events, same HTTP path)",
                    f"{load_rate:,.0f} ev/s",
                    "",
                    "",
                    "",
                )
            )

    header = ("measurement", "ours", "reference / limit", "ratio", "verdict")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(5)]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"agentledger server benchmark ({os.cpu_count()} CPUs, load average {load}, "
        f"SQLite {sqlite3.sqlite_version})"
    )
    print(line)
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    print(doc_table("targets", TARGET_COLUMNS, targets))


if __name__ == "__main__":
    main()
