"""MCP proxy latency: one tool call's round trip straight to an MCP server vs through
``agentledger mcp-proxy`` with the ledger server up vs with it down.

Workload: a client process writes one JSON-RPC ``tools/call`` line to the server's stdin and
waits for the answer line on its stdout, ``--calls`` times in a row (2,000 by default), for
two payloads: a small call (~100 bytes each way) and a large one (a 64 KiB argument echoed
back twice, ~130 KiB answer). Variants, each a long-lived process started once:

* ``direct``: the MCP server alone (no proxy).
* ``proxy, server up``: ``agentledger mcp-proxy`` (the console script) wrapping the same
  server, logging to an ``agentledger serve`` started here (loopback, temp SQLite).
* ``proxy, server down``: the same, logging to a port nothing listens on (the client's spill
  directory is a temp directory, as in production where the spill is on).

The default server is a minimal hand-written JSON-RPC echo server (its own cost is tiny, so
the proxy's shows); ``--child sdk`` uses an ``mcp`` SDK ``MCPServer`` instead. The machine is
shared, so the variants run interleaved in rounds of 50 calls (order rotated per round); the
table shows the median and p90 of all per-call latencies and the ratios to ``direct``.
Target: the server being down leaves the proxied latency unchanged within noise.

    python benchmarks/bench_mcp_proxy.py            # ~1 min
    python benchmarks/bench_mcp_proxy.py --quick    # smoke run, a few seconds
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import orjson

from agentledger.client import Ledger
from agentledger.testing import EmbeddedServer, free_port

ECHO_SERVER = r"""
import json, sys
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "echo", "version": "1"}}
    else:
        args = msg["params"]["arguments"]
        result = {"content": [{"type": "text", "text": json.dumps(args)}],
                  "structuredContent": args}
    out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n")
    out.flush()
"""

SDK_SERVER = r"""
from mcp.server.mcpserver import MCPServer
server = MCPServer("echo", version="1")

@server.tool()
def echo(text: str) -> dict[str, str]:
    return {"text": text}

server.run()
"""

ROUND = 50


class Peer:
    """A stdio MCP server process (direct or behind the proxy) driven with raw JSON lines."""

    def __init__(self, name: str, command: list[str], stderr: IO[bytes]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out = self.proc.stdout
        self._next_id = 0
        self.latencies: dict[str, list[float]] = {}
        init = {
            "jsonrpc": "2.0",
            "id": self._id(),
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        self._in.write(orjson.dumps(init) + b"\n")
        self._in.flush()
        self._out.readline()
        self._in.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self._in.flush()

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def calls(self, payload: str, text: str, n: int) -> None:
        """``n`` sequential ``tools/call echo`` round trips; latencies in seconds."""
        into = self.latencies.setdefault(payload, [])
        for _ in range(n):
            ident = self._id()
            line = orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": text}},
                }
            )
            started = time.perf_counter()
            self._in.write(line + b"\n")
            self._in.flush()
            answer = self._out.readline()
            into.append(time.perf_counter() - started)
            if orjson.loads(answer).get("id") != ident:
                raise RuntimeError(f"{self.name}: answer to the wrong call: {answer[:200]!r}")

    def close(self) -> float:
        """Close stdin and return the seconds until the process exited."""
        started = time.perf_counter()
        self._in.close()
        self._out.read()
        self.proc.wait(30)
        return time.perf_counter() - started


def proxy_command(url: str, key: str, agent: str, spill: Path, child: list[str]) -> list[str]:
    return [
        str(Path(sys.executable).parent / "agentledger"),
        "mcp-proxy",
        "--url",
        url,
        "--api-key",
        key,
        "--agent",
        agent,
        "--spill-dir",
        str(spill),
        "--",
        *child,
    ]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--calls", type=int, default=2000, help="calls per variant and payload")
    parser.add_argument("--child", choices=("echo", "sdk"), default="echo")
    args = parser.parse_args()
    calls = 200 if args.quick else args.calls
    big_calls = max(ROUND, calls // 4)
    tmp = Path(tempfile.mkdtemp(prefix="bench-mcp-proxy-"))
    script = tmp / "server.py"
    script.write_text(ECHO_SERVER if args.child == "echo" else SDK_SERVER)
    child = [sys.executable, str(script)]
    payloads = {"small call": ("x" * 40, calls), "64 KiB call": ("y" * 65536, big_calls)}
    try:
        with EmbeddedServer(tmp / "l.db") as served, open(tmp / "stderr.log", "wb") as err:
            up_agent = "bench-mcp-proxy"
            peers = [
                Peer("direct", child, err),
                Peer(
                    "proxy, server up",
                    proxy_command(served.url, served.api_key, up_agent, tmp / "s1", child),
                    err,
                ),
                Peer(
                    "proxy, server down",
                    proxy_command(
                        f"http://127.0.0.1:{free_port()}", "k", "bench-down", tmp / "s2", child
                    ),
                    err,
                ),
            ]
            for peer in peers:  # warm-up, untimed
                peer.calls("warm-up", "w", 20)
            for payload, (text, n) in payloads.items():
                for index in range(0, n, ROUND):
                    turn = index // ROUND % len(peers)
                    for peer in peers[turn:] + peers[:turn]:
                        peer.calls(payload, text, min(ROUND, n - index))
            exits = {peer.name: peer.close() for peer in peers}
            with Ledger(url=served.url, api_key=served.api_key, spill_dir=None) as reader:
                stored = {a.agent: a.event_count for a in reader.agents()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    logged = stored.get(up_agent, 0)
    header = ("payload", "variant", "median", "p90", "median / direct", "p90 / direct")
    rows: list[tuple[str, ...]] = []
    for payload in payloads:
        base = peers[0].latencies[payload]
        for peer in peers:
            lat = peer.latencies[payload]
            rows.append(
                (
                    payload,
                    peer.name,
                    ms(statistics.median(lat)),
                    ms(pct(lat, 0.9)),
                    f"{statistics.median(lat) / statistics.median(base):.2f}x",
                    f"{pct(lat, 0.9) / pct(base, 0.9):.2f}x",
                )
            )
        up = statistics.median(peers[1].latencies[payload])
        down = statistics.median(peers[2].latencies[payload])
        rows.append((payload, "server down / server up", "", "", f"{down / up:.2f}x", ""))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("-|-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    exit_text = ", ".join(f"{name} {s:.2f} s" for name, s in exits.items())
    print(f"\nexit after stdin EOF: {exit_text}")
    expected = 2 + 2 * (20 + calls + big_calls)
    print(f"events stored for the server-up proxy: {logged} (expected {expected})")
    print(
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cores; child: {args.child}; "
        f"{calls} small + {big_calls} large calls per variant, interleaved; one run)"
    )


if __name__ == "__main__":
    main()
