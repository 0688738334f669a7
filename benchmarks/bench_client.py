"""Client benchmark: caller cost of ``log()``, burst throughput against raw httpx, memory.

Run: ``python benchmarks/bench_client.py`` (about 10 minutes on 2 cores) or ``--quick`` (under
a minute). Starts its own ``agentledger serve`` (embedded SQLite, loopback), a stub server
that answers every request after 2 s (field case H18) and one that answers at once (a null
sink showing the client's own ceiling). Prints three tables:

1. ``log()`` cost in the caller's thread, median and p99: ours vs ``zizkadb-sdk`` 0.5.0
   ``await db.log()`` to the same server (target: ours >= 100x cheaper, p99 < 50 us), and
   the same with the 2 s server.
2. Burst throughput: one ``Ledger`` with default settings logs 200,000 events (``--quick``:
   10,000) as fast as it can, then ``flush()``; events/s from the first ``log()`` to
   ``flush()`` returning complete, against a bare httpx loop that builds and posts bodies of
   500 events to the same server (target: >= 0.9x raw), with the events that went to the
   spill on the way. Medians of 5 interleaved rounds (``--quick``: 3); the per-round ratios
   show the noise of a shared machine.
3. Peak RSS growth over a 1,000,000-event burst (``--quick``: 100,000) with the server up
   and down (closed port), spill on, each in a fresh process, and the rate of the ``log()``
   loop.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
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
import uuid_utils
from doc_tables import doc_table  # the script's directory is on sys.path

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


def burst_client(
    url: str, n: int, server: psutil.Process | None, **settings: Any
) -> dict[str, float]:
    """One ``Ledger`` with default settings (but its spill in a fresh directory, so no
    backlog of another run is adopted; ``settings`` override) logs ``n`` events as fast as it
    can, then ``flush()``: events/s from the first ``log()`` to ``flush()`` returning
    complete."""
    spill = tempfile.mkdtemp(prefix="bench-spill-")
    me = psutil.Process()
    agent = f"bench-burst-{uuid.uuid4().hex[:8]}"
    led = Ledger(url, KEY, agent, spill_dir=spill, **settings)
    cpu0 = me.cpu_times()
    srv0 = server.cpu_times() if server is not None else None
    started = time.perf_counter()
    for i in range(n):
        led.log("tool_call", {"i": i, **PAYLOAD}, session_id="s2")
    logged = time.perf_counter()
    result = led.flush(600)
    wall = time.perf_counter() - started
    cpu1 = me.cpu_times()
    stats = led.stats()
    led.close()
    shutil.rmtree(spill, ignore_errors=True)
    assert result.complete and stats.sent == n, (result, stats)
    out = {
        "rate": n / wall,
        "log_rate": n / (logged - started),
        "spilled": float(stats.spilled),
        "client_cpu": ((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)) / wall,
    }
    if server is not None and srv0 is not None:
        srv1 = server.cpu_times()
        out["server_cpu"] = ((srv1.user + srv1.system) - (srv0.user + srv0.system)) / wall
    return out


def burst_raw(url: str, n: int, server: psutil.Process | None) -> dict[str, float]:
    """What a user's own poster does: build each body of 500 event dicts (the same fields
    ``log()`` sends: UUIDv7 id, ISO timestamp) with orjson in the loop and POST it, one
    request at a time on one connection. Events/s from creating the httpx client to the
    last answer."""
    agent = f"bench-raw-{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {KEY}"}
    srv0 = server.cpu_times() if server is not None else None
    started = time.perf_counter()  # the client's own connection setup is timed too
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        for start in range(0, n, 500):
            events = [
                {
                    "event_id": str(uuid_utils.uuid7()),
                    "agent": agent,
                    "event": "tool_call",
                    "data": {"i": i, **PAYLOAD},
                    "timestamp": dt.datetime.now(dt.UTC).isoformat(),
                    "session_id": "s3",
                }
                for i in range(start, min(n, start + 500))
            ]
            client.post(
                "/v1/events/batch",
                content=orjson.dumps({"events": events}),
                headers={"Content-Type": "application/json"},
            ).raise_for_status()
    wall = time.perf_counter() - started
    out = {"rate": n / wall}
    if server is not None and srv0 is not None:
        srv1 = server.cpu_times()
        out["server_cpu"] = ((srv1.user + srv1.system) - (srv0.user + srv0.system)) / wall
    return out


#: Client variants of the burst: default settings, and a queue large enough for the whole
#: burst (nothing spills), to show what the overflow to disk costs.
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    "no_spill": {"max_queue_events": 10**7, "max_queue_bytes": 2 * 1024**3},
}


def burst_rounds(
    url: str, n: int, rounds: int, server: psutil.Process | None, variants: list[str]
) -> tuple[dict[str, list[dict[str, float]]], list[dict[str, float]]]:
    """``rounds`` rounds of a raw burst then each client variant (interleaved, so a noisy
    stretch of the shared machine hits all of them)."""
    ours: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    raw: list[dict[str, float]] = []
    for _ in range(rounds):
        raw.append(burst_raw(url, n, server))
        for variant in variants:
            ours[variant].append(burst_client(url, n, server, **VARIANTS[variant]))
    return ours, raw


def memory_burst(n: int, url: str | None, runs: int, flush_s: float) -> dict[str, float]:
    """Medians over ``runs`` fresh child processes of :func:`memory_child` (memory freed by
    earlier phases would hide growth in this one)."""
    results = []
    for _ in range(runs):
        argv = [sys.executable, __file__, "--memory-child", str(n), "--url", url or ""]
        argv += ["--flush-s", str(flush_s)]
        out = subprocess.run(argv, capture_output=True, check=True).stdout
        results.append(orjson.loads(out.splitlines()[-1]))
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def high_water_rss() -> int:
    """Peak RSS of this process image (bytes) from ``VmHWM``; 0 where there is none. Not
    ``ru_maxrss``: Linux carries that across ``exec`` from the parent, whose RSS is larger."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def memory_child(n: int, url: str | None, flush_s: float) -> dict[str, float]:
    """Body of :func:`memory_burst` (runs in the child): log ``n`` events as fast as possible
    with default settings (spill on, in a fresh directory) to ``url`` or, when ``None``, to a
    closed port; then flush for up to ``flush_s`` (server up) or close. Peak RSS growth is
    the larger of the RSS sampled during the run and the kernel's high-water mark, minus the
    RSS once the client and its worker are running."""
    me = psutil.Process()
    target = url or f"http://127.0.0.1:{free_port()}"
    spill_dir = tempfile.mkdtemp(prefix="bench-spill-")
    led = Ledger(target, KEY, f"bench-mem-{uuid.uuid4().hex[:8]}", spill_dir=spill_dir)
    led.log("tool_call", PAYLOAD)  # start the worker before the baseline
    led.flush(2.0)
    time.sleep(0.2)
    base = peak = me.memory_info().rss
    started = time.perf_counter()
    for i in range(n):
        led.log("tool_call", {"i": i, **PAYLOAD}, session_id="s4")
        if i % 10_000 == 0:
            peak = max(peak, me.memory_info().rss)
    elapsed = time.perf_counter() - started
    peak = max(peak, me.memory_info().rss)
    if url:
        result = led.flush(flush_s)
        drained = time.perf_counter() - started
        complete = result.complete
    else:
        drained, complete = 0.0, False
    peak = max(peak, me.memory_info().rss, high_water_rss())
    led.close(1.0)
    stats = led.stats()
    shutil.rmtree(spill_dir, ignore_errors=True)
    return {
        "growth": peak - base,
        "log_rate": n / elapsed,
        "spilled": stats.spilled,
        "dropped": stats.dropped,
        "sent": stats.sent,
        "drained_s": drained,
        "complete": float(complete),
    }


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 0.1 else f"{seconds:,.2f} s"


def table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))


def log_cost_rows(url: str, n_ours: int, n_zizka: int, n_slow: int) -> list[tuple[str, ...]]:
    ours_med, ours_p99 = ours_log_cost(url, n_ours)
    z_med, z_p99 = zizka_log_cost(url, n_zizka)
    slow = StubServer(2.0)
    try:
        s_med, s_p99 = ours_log_cost(slow.url, n_ours)
        sz_med, sz_p99 = zizka_log_cost(slow.url, n_slow)
    finally:
        slow.stop()
    return [
        (
            "server up, median",
            us(ours_med),
            us(z_med),
            f"{z_med / ours_med:,.0f}x cheaper",
            ">= 100x",
        ),
        ("server up, p99", us(ours_p99), us(z_p99), f"{z_p99 / ours_p99:,.0f}x cheaper", "< 50 us"),
        ("2 s server, median", us(s_med), us(sz_med), f"{sz_med / s_med:,.0f}x cheaper", ""),
        ("2 s server, p99", us(s_p99), us(sz_p99), f"{sz_p99 / s_p99:,.0f}x cheaper", "< 50 us"),
    ]


def burst_row(
    label: str, ours: list[dict[str, float]], raw: list[dict[str, float]], target: str
) -> tuple[str, ...]:
    rate = statistics.median(o["rate"] for o in ours)
    raw_rate = statistics.median(r["rate"] for r in raw)
    pairs = [o["rate"] / r["rate"] for o, r in zip(ours, raw, strict=True)]
    spilled = [o["spilled"] for o in ours]
    cpu = ""
    if "server_cpu" in ours[0]:
        cpu = (
            f"client {statistics.median(o['client_cpu'] for o in ours):.2f}, server "
            f"{statistics.median(o['server_cpu'] for o in ours):.2f} "
            f"(raw: server {statistics.median(r['server_cpu'] for r in raw):.2f})"
        )
    return (
        label,
        f"{rate:,.0f} ev/s",
        f"{raw_rate:,.0f} ev/s",
        f"{rate / raw_rate:.2f}x ({min(pairs):.2f}-{max(pairs):.2f})",
        f"{statistics.median(o['log_rate'] for o in ours):,.0f} ev/s",
        f"{statistics.median(spilled):,.0f} (max {max(spilled):,.0f})",
        cpu,
        target,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--rounds", type=int, help="burst rounds (default 5, --quick 3)")
    parser.add_argument("--serve-stub", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--delay-s", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--flush-s", type=float, default=900.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_stub:
        serve_stub(args.serve_stub, args.delay_s)
        return
    if args.memory_child:
        print(
            orjson.dumps(memory_child(args.memory_child, args.url or None, args.flush_s)).decode()
        )
        return
    q = args.quick
    n_ours, n_zizka, n_slow = (2_000, 100, 2) if q else (20_000, 500, 3)
    n_burst = 10_000 if q else 200_000
    rounds = args.rounds or (3 if q else 5)
    n_memory = 100_000 if q else 1_000_000
    memory_runs = 1 if q else 3
    flush_s = 15.0 if q else 900.0  # --quick: delivery after the burst is not waited for
    load_before = os.getloadavg()[0]

    burst_rows: list[tuple[str, ...]] = []
    memory_rows: list[tuple[str, ...]] = []
    with embedded_server() as (url, server):
        cost_rows = log_cost_rows(url, n_ours, n_zizka, n_slow)
        ours, raw = burst_rounds(url, n_burst, rounds, server, ["default", "no_spill"])
        burst_rows.append(
            burst_row(
                f"{n_burst:,} -> embedded server, defaults", ours["default"], raw, ">= 0.9x raw"
            )
        )
        burst_rows.append(
            burst_row(
                f"{n_burst:,} -> embedded server, queue holds all",
                ours["no_spill"],
                raw,
                "no spill",
            )
        )
        null = StubServer(0.0)
        try:
            null_ours, null_raw = burst_rounds(null.url, n_burst, rounds, None, ["default"])
        finally:
            null.stop()
        burst_rows.append(
            burst_row(f"{n_burst:,} -> null sink, defaults", null_ours["default"], null_raw, "")
        )
        default_rate = statistics.median(o["rate"] for o in ours["default"])
        doc_rows = [
            (
                f"{n_burst:,}-event burst to the embedded SQLite server, `log()` loop to "
                "`flush()` complete",
                f"{default_rate:,.0f} ev/s, "
                f"{default_rate / statistics.median(r['rate'] for r in raw):.2f}× a bare httpx "
                "loop posting the same batches",
            )
        ]
        growth: list[str] = []
        for label, target in ((url, "server up"), (None, "server down (closed port)")):
            mem = memory_burst(n_memory, label, memory_runs, flush_s)
            growth.append(f"{mem['growth'] / 1e6:,.0f} MB")
            if not label:
                delivered = "kept in spill"
            elif mem["complete"]:
                delivered = f"all sent in {mem['drained_s']:,.1f} s"
            else:
                delivered = f"{mem['sent']:,.0f} sent in {mem['drained_s']:,.1f} s"
            memory_rows.append(
                (
                    f"{n_memory:,} events, {target}",
                    f"{mem['growth'] / 1e6:,.1f} MB",
                    f"{mem['log_rate']:,.0f} ev/s",
                    f"{mem['spilled']:,.0f}",
                    f"{mem['dropped']:,.0f}",
                    delivered,
                )
            )

    doc_rows.append(
        (
            f"peak RSS growth over a {n_memory:,}-event burst, server up / server down",
            " / ".join(growth),
        )
    )
    print(doc_table("client-delivery", ("default settings, spill on", "result"), doc_rows))
    table(
        "log() cost in the caller's thread (reference: zizkadb-sdk 0.5.0 `await db.log()`)",
        ("measure", "agentledger", "reference", "ratio", "target"),
        cost_rows,
    )
    table(
        f"Burst throughput, first log() to flush() complete; medians of {rounds} rounds "
        "(raw = bare httpx loop, bodies of 500 built with orjson, one connection)",
        (
            "burst",
            "client",
            "raw httpx",
            "client / raw (rounds)",
            "log() loop",
            "spilled",
            "CPU, cores busy",
            "target",
        ),
        burst_rows,
    )
    table(
        f"Memory: peak RSS growth over a burst, spill on, default settings "
        f"(median of {memory_runs} fresh process{'es' if memory_runs > 1 else ''})",
        ("burst", "peak RSS growth", "log() loop", "spilled", "dropped", "delivery"),
        memory_rows,
    )
    print(
        f"\n(python {sys.version.split()[0]}, {os.cpu_count()} cores, load average "
        f"{load_before:.1f} before / {os.getloadavg()[0]:.1f} after)"
    )


if __name__ == "__main__":
    main()
