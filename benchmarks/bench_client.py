"""Client benchmark: caller cost of ``log()``, throughput, memory against a dead server.

Run: ``python benchmarks/bench_client.py`` (about 1-2 minutes) or ``--quick`` (seconds).
Starts its own ``agentledger serve`` (embedded SQLite, loopback) and a small "slow" server
that answers every request after 2 s (field case H18). Prints one side-by-side table:

1. ``log()`` cost in the caller's thread, median and p99: ours vs ``zizkadb-sdk`` 0.5.0
   ``await db.log()`` to the same server (target: ours >= 100x cheaper, p99 < 50 us), and
   the same with the 2 s server.
2. Sustained throughput of one process to the embedded server (target >= 20,000 events/s)
   vs the raw limit (pre-built batch bodies posted by a bare httpx loop), with the client's
   CPU share.
3. RSS growth while logging 1,000,000 events (``--quick``: 100,000) to a closed port
   (target < 100 MB), with spill on and off.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import psutil

from agentledger.client import Ledger
from agentledger.testing import EmbeddedServer, free_port

os.environ.setdefault("ZIZKADB_TELEMETRY", "false")
os.environ.setdefault("ZIZKADB_QUIET", "1")

KEY = "bench-key-0123456789"
PAYLOAD = {"tool": "search", "args": {"query": "refund policy", "limit": 5}, "call_id": "c1"}


@contextmanager
def embedded_server() -> Iterator[tuple[str, psutil.Process]]:
    """A real ``agentledger serve`` on loopback with a fresh SQLite file."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-client-"))
    try:
        with EmbeddedServer(tmp / "l.db", api_key=KEY) as served:
            yield served.url, psutil.Process(served.pid)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class _StubHandler(http.server.BaseHTTPRequestHandler):
    """Answers after ``delay_s`` with a plausible success body (no storage)."""

    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body in one send (no Nagle/delayed-ACK stall)
    delay_s = 0.0

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._answer(b'{"status":"ok"}')

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(self.delay_s)
        if self.path.endswith("/batch"):
            n = body.count(b'"event_id"')
            results = b",".join([b'{"ok":true,"duplicate":false}'] * n)
            out = b'{"written":%d,"failed":0,"results":[%s]}' % (n, results)
        else:
            out = orjson.dumps(
                {
                    "event_id": str(uuid.uuid4()),
                    "timestamp": "2026-01-01T00:00:00+00:00",
                    "sequence_no": 1,
                    "checksum": "",
                }
            )
        self._answer(out, 201)

    def _answer(self, out: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def serve_stub(port: int, delay_s: float) -> None:
    """Run the stub server in this process (used as a child process by :class:`StubServer`)."""
    _StubHandler.delay_s = delay_s
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _StubHandler)
    server.daemon_threads = True
    server.serve_forever()


class StubServer:
    """A stub ledger in its own process (so it does not share our GIL): ``delay_s`` = 2.0 is
    the slow server of field case H18; 0.0 is a null sink showing the client's own ceiling."""

    def __init__(self, delay_s: float) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "--serve-stub", str(port), "--delay-s", str(delay_s)]
        )
        for _ in range(200):
            try:
                httpx.get(f"{self.url}/health", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise RuntimeError("stub server did not start")

    def stop(self) -> None:
        self._proc.terminate()
        self._proc.wait(10)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def ours_log_cost(url: str, n: int) -> tuple[float, float]:
    """Median and p99 (seconds) of ``Ledger.log()`` in the caller's thread, default
    settings (10,000-event queue, spill on: a 2 s server makes the queue overflow to disk)."""
    costs = []
    spill = tempfile.mkdtemp(prefix="bench-spill-")
    with Ledger(url, KEY, "bench-ours", spill_dir=spill, flush_timeout_s=1.0) as led:
        for i in range(n):
            started = time.perf_counter()
            led.log("tool_call", PAYLOAD, session_id="s1")
            costs.append(time.perf_counter() - started)
            if i % 500 == 499:
                time.sleep(0.002)  # an agent does other work between steps
    shutil.rmtree(spill, ignore_errors=True)
    return statistics.median(costs), percentile(costs, 0.99)


def zizka_log_cost(url: str, n: int) -> tuple[float, float]:
    """Median and p99 (seconds) of ``await ZizkaDB.log()`` (one HTTP round trip each)."""
    from zizkadb import ZizkaDB

    async def run() -> list[float]:
        costs = []
        async with ZizkaDB(api_key=KEY, host=url, timeout=30) as db:
            for _ in range(n):
                started = time.perf_counter()
                await db.log("bench-zizka", "tool_call", PAYLOAD, session_id="s1")
                costs.append(time.perf_counter() - started)
        return costs

    costs = asyncio.run(run())
    return statistics.median(costs), percentile(costs, 0.99)


def throughput_ours(url: str, server: psutil.Process, n: int) -> dict[str, float]:
    """Events/s from ``log()`` of the first event to the server acknowledging the last."""
    me = psutil.Process()
    cpu0, srv0 = me.cpu_times(), server.cpu_times()
    started = time.perf_counter()
    with Ledger(url, KEY, "bench-throughput", spill_dir=None, max_queue_events=n) as led:
        for i in range(n):
            led.log("tool_call", {"i": i, **PAYLOAD}, session_id="s2")
        result = led.flush(300)
        assert result.complete, result
        assert led.stats().sent == n, led.stats()
    wall = time.perf_counter() - started
    cpu1, srv1 = me.cpu_times(), server.cpu_times()
    client_cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    server_cpu = (srv1.user + srv1.system) - (srv0.user + srv0.system)
    return {"rate": n / wall, "client_cpu": client_cpu / wall, "server_cpu": server_cpu / wall}


def throughput_raw(url: str, n: int) -> float:
    """The raw limit: pre-serialized batches of 500 posted back to back by bare httpx."""
    bodies = []
    for start in range(0, n, 500):
        events = [
            {
                "event_id": str(uuid.uuid4()),
                "agent": "bench-raw",
                "event": "tool_call",
                "data": {"i": i, **PAYLOAD},
                "session_id": "s3",
            }
            for i in range(start, min(n, start + 500))
        ]
        bodies.append(orjson.dumps({"events": events}))
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {KEY}"}) as client:
        started = time.perf_counter()
        for body in bodies:
            client.post(
                "/v1/events/batch", content=body, headers={"Content-Type": "application/json"}
            ).raise_for_status()
        return n / (time.perf_counter() - started)


def memory_dead_server(n: int, spill: bool) -> dict[str, float]:
    """RSS growth (bytes) while logging ``n`` events to a closed port, measured in a fresh
    child process (memory freed by earlier phases would hide growth here)."""
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", str(n), "--spill", "1" if spill else "0"],
        capture_output=True,
        check=True,
    ).stdout
    result: dict[str, float] = orjson.loads(out.splitlines()[-1])
    return result


def memory_child(n: int, spill: bool) -> dict[str, float]:
    """Body of :func:`memory_dead_server` (runs in the child)."""
    me = psutil.Process()
    url = f"http://127.0.0.1:{free_port()}"
    spill_dir = tempfile.mkdtemp(prefix="bench-spill-") if spill else None
    led = Ledger(url, KEY, "bench-dead", spill_dir=spill_dir, max_spill_bytes=4 * 1024**3)
    led.log("tool_call", PAYLOAD)  # start the worker before the baseline
    time.sleep(0.2)
    base = peak = me.memory_info().rss
    started = time.perf_counter()
    for i in range(n):
        led.log("tool_call", {"i": i, **PAYLOAD}, session_id="s4")
        if i % 20_000 == 0:
            peak = max(peak, me.memory_info().rss)
    elapsed = time.perf_counter() - started
    peak = max(peak, me.memory_info().rss)
    led.close(1.0)
    stats = led.stats()
    if spill_dir:
        shutil.rmtree(spill_dir, ignore_errors=True)
    return {
        "growth": peak - base,
        "spilled": stats.spilled,
        "dropped": stats.dropped,
        "per_log": elapsed / n,
    }


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 0.1 else f"{seconds:,.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--serve-stub", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--delay-s", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--spill", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stub:
        serve_stub(args.serve_stub, args.delay_s)
        return
    if args.memory_child:
        print(orjson.dumps(memory_child(args.memory_child, bool(args.spill))).decode())
        return
    q = args.quick
    n_ours, n_zizka = (2_000, 100) if q else (20_000, 500)
    n_slow_zizka = 2 if q else 3
    n_throughput = 20_000 if q else 100_000
    n_memory = 100_000 if q else 1_000_000

    rows: list[tuple[str, str, str, str, str]] = []
    with embedded_server() as (url, server):
        ours_med, ours_p99 = ours_log_cost(url, n_ours)
        z_med, z_p99 = zizka_log_cost(url, n_zizka)
        rows.append(
            (
                "log() caller cost, server up (median)",
                us(ours_med),
                us(z_med),
                f"{z_med / ours_med:,.0f}x cheaper",
                ">= 100x",
            )
        )
        rows.append(
            (
                "log() caller cost, server up (p99)",
                us(ours_p99),
                us(z_p99),
                f"{z_p99 / ours_p99:,.0f}x cheaper",
                "ours < 50 us",
            )
        )
        slow = StubServer(2.0)
        try:
            s_med, s_p99 = ours_log_cost(slow.url, n_ours)
            sz_med, sz_p99 = zizka_log_cost(slow.url, n_slow_zizka)
        finally:
            slow.stop()
        rows.append(
            (
                "log() caller cost, 2 s server (median)",
                us(s_med),
                us(sz_med),
                f"{sz_med / s_med:,.0f}x cheaper",
                "unchanged",
            )
        )
        rows.append(
            (
                "log() caller cost, 2 s server (p99)",
                us(s_p99),
                us(sz_p99),
                f"{sz_p99 / s_p99:,.0f}x cheaper",
                "ours < 50 us",
            )
        )
        raw = throughput_raw(url, n_throughput)
        tp = throughput_ours(url, server, n_throughput)
        null = StubServer(0.0)
        try:
            null_raw = throughput_raw(null.url, n_throughput)
            null_tp = throughput_ours(null.url, psutil.Process(null._proc.pid), n_throughput)
        finally:
            null.stop()
        rows.append(
            (
                f"throughput, {n_throughput:,} events -> embedded server",
                f"{tp['rate']:,.0f} ev/s",
                f"{raw:,.0f} ev/s (raw httpx)",
                f"{tp['rate'] / raw:.2f} of raw",
                ">= 20,000 ev/s",
            )
        )
        rows.append(
            (
                f"throughput, {n_throughput:,} events -> null sink (client ceiling)",
                f"{null_tp['rate']:,.0f} ev/s",
                f"{null_raw:,.0f} ev/s (raw httpx)",
                f"{null_tp['rate'] / null_raw:.2f} of raw",
                "",
            )
        )
        rows.append(
            (
                "  CPU while sending to the embedded server (cores busy)",
                f"client {tp['client_cpu']:.2f}",
                f"server {tp['server_cpu']:.2f}",
                f"client share {tp['client_cpu'] / (tp['client_cpu'] + tp['server_cpu']):.0%}",
                "",
            )
        )
    for spill in (True, False):
        mem = memory_dead_server(n_memory, spill)
        rows.append(
            (
                f"RSS growth, {n_memory:,} events, dead server, spill {'on' if spill else 'off'}",
                f"{mem['growth'] / 1e6:,.1f} MB",
                f"spilled {mem['spilled']:,.0f} / dropped {mem['dropped']:,.0f}",
                f"{us(mem['per_log'])} per log()",
                "< 100 MB",
            )
        )

    header = ("measure", "agentledger", "reference / raw", "ratio", "target")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    line = " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line)
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    print(
        f"\n(python {sys.version.split()[0]}, {os.cpu_count()} cores; reference = zizkadb-sdk "
        "0.5.0 `await db.log()`; one run)"
    )


if __name__ == "__main__":
    main()
