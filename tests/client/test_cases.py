"""Field cases H07, H08, H09, H10, H18, H19 (docs/pages/field-cases.md), both twins."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import FaultTransport, SlowProxy, Twin, stored_events


def _ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["event_id"] for e in events]


async def test_case_h07_flush_is_bounded_against_unreachable_port(
    twin: Twin, closed_url: str, agent_name: str, tmp_path: Path
) -> None:
    """Two clients with the same key at a dead port; close one, log through the other:
    ``flush(timeout_s=2)`` returns in time and says what is pending; never hangs."""
    first = twin.make(closed_url, "same-key", agent_name, spill_dir=tmp_path / "a")
    second = twin.make(closed_url, "same-key", agent_name, spill_dir=tmp_path / "b")
    first.log("session_start", {"n": 0})
    started = time.monotonic()
    await twin.close(first, 1.0)
    took = time.monotonic() - started
    assert took < 2.0, f"close(1.0) took {took:.2f} s (bound: timeout + local spill write)"

    for i in range(5):
        second.log("step_start", {"i": i})
    started = time.monotonic()
    result = await twin.flush(second, 2.0)
    elapsed = time.monotonic() - started
    assert elapsed < 2.5, f"flush(2.0) took {elapsed:.2f} s"
    # Every event is accounted for: still in memory, or already spilled to disk once the
    # sender marked the server down (which of the two depends on scheduling); neither is
    # delivered, so the flush is not complete.
    assert result.pending == result.in_memory + result.in_spill == 5
    assert not result.complete
    assert result.sent == 0

    started = time.monotonic()
    closed = await twin.close(second, 1.0)
    took = time.monotonic() - started
    assert took < 2.0, f"close(1.0) took {took:.2f} s (bound: timeout + local spill write)"
    stats = second.stats()
    assert stats.sent == 0 and stats.spilled == 5 and stats.queue_depth == 0
    assert closed.in_spill == closed.pending == 5 and closed.in_memory == 0
    assert not closed.complete


@pytest.mark.parametrize("fault", ["raise_before", "raise_after"])
async def test_case_h08_transport_fault_mid_stream_is_retried_once_stored(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path, fault: str
) -> None:
    """The transport raises once on the 2nd batch (before sending, or after the server
    stored it and the answer was lost): the worker survives, the batch is resent with the
    same event ids, and every event is stored exactly once."""
    transport = FaultTransport(lambda n: fault if n == 2 else None)
    client = twin.make(
        ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir, fault=transport
    )
    try:
        refs = [client.log("step_start", {"i": i}) for i in range(1200)]
        result = await twin.flush(client, 20)
        assert result.complete and result.pending == 0
        more = [client.log("step_end", {"i": i}) for i in range(10)]  # the worker still runs
        assert (await twin.flush(client, 10)).complete
    finally:
        await twin.close(client, 5)
    stats = client.stats()
    assert stats.retried >= 1 and stats.sent == 1210 and stats.failed == 0
    if fault == "raise_after":
        assert stats.duplicates >= 1  # the resend was recognised, not stored again
    # the retry resent the identical body (same event ids)
    assert transport.bodies[1] == transport.bodies[2]
    stored = _ids(stored_events(ledger_server.url, ledger_server.api_key, agent_name))
    assert len(stored) == len(set(stored)) == 1210
    assert set(stored) == {r.event_id for r in refs + more}


async def test_case_h09_close_right_after_logging_stores_all(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """Log 50 events and close at once: all 50 stored, close bounded by its timeout."""
    client = twin.make(
        ledger_server.url,
        ledger_server.api_key,
        agent_name,
        spill_dir=spill_dir,
        flush_interval_s=5.0,  # nothing would be sent on its own before close()
    )
    refs = [client.log("step_start", {"i": i}) for i in range(50)]
    started = time.monotonic()
    result = await twin.close(client, 3.0)
    assert time.monotonic() - started < 3.0
    assert result.complete and result.sent == 50
    assert _ids(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == [
        r.event_id for r in refs
    ]


async def test_case_h10_same_write_twice_is_stored_once(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """A retry after a lost response sends the same write twice: one stored event per id,
    and the second answer says ``duplicate: true``."""
    transport = FaultTransport(lambda n: "twice")
    client = twin.make(
        ledger_server.url, ledger_server.api_key, agent_name, spill_dir=spill_dir, fault=transport
    )
    try:
        refs = [client.log("tool_call", {"tool": "t", "args": {"i": i}}) for i in range(20)]
        assert (await twin.flush(client, 10)).complete
    finally:
        await twin.close(client, 5)
    stats = client.stats()
    assert stats.sent == 20 and stats.duplicates == 20  # every second answer was a duplicate
    stored = _ids(stored_events(ledger_server.url, ledger_server.api_key, agent_name))
    assert stored == [r.event_id for r in refs]

    # the same on the wire, by hand: one body posted twice
    body = transport.bodies[0]
    answer = httpx.post(
        f"{ledger_server.url}/v1/events/batch",
        content=body,
        headers={**ledger_server.headers(), "Content-Type": "application/json"},
    ).json()
    assert all(r["ok"] and r["duplicate"] for r in answer["results"])


async def test_case_h18_slow_server_never_blocks_log(
    twin: Twin, ledger_server: Any, agent_name: str, spill_dir: Path
) -> None:
    """Every request answered after a 2 s sleep: ``log()`` p99 stays under 1 ms in the
    caller's thread, and everything arrives eventually."""
    with SlowProxy(ledger_server.url, delay_s=2.0) as proxy:
        client = twin.make(proxy.url, ledger_server.api_key, agent_name, spill_dir=spill_dir)
        try:
            costs = []
            for i in range(600):
                began = time.perf_counter()
                client.log("llm_start", {"model": "m", "messages": [{"role": "user", "i": i}]})
                costs.append(time.perf_counter() - began)
                if i % 100 == 0:
                    time.sleep(0.05)  # the agent does other work between steps
            costs.sort()
            p99 = costs[int(len(costs) * 0.99)]
            assert p99 < 0.001, f"log() p99 {p99 * 1e6:.0f} us"
            result = await twin.flush(client, 15)
            assert result.complete
        finally:
            await twin.close(client, 5)
    assert proxy.requests >= 2
    assert len(stored_events(ledger_server.url, ledger_server.api_key, agent_name)) == 600


CHILD_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from agentledger.client import AsyncLedger, Ledger

    kind, url, key, agent = sys.argv[1:5]
    cls = Ledger if kind == "sync" else AsyncLedger
    ledger = cls(url, key, agent, spill_dir=None)
    ledger.log("session_start", {"who": "parent"})
    pid = os.fork()
    if pid == 0:
        for i in range(10):
            ledger.log("step_start", {"who": "child", "i": i})
        sys.exit(0)  # right away: only the exit hook can send them
    _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="needs os.fork")
def test_case_h19_forked_child_logs_and_exits(
    twin: Twin, ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """A forked child logs 10 events and exits at once: all 10 stored (own worker and
    queue in the child, flushed by the exit hook), the parent's event once."""
    script = tmp_path / "fork_child.py"
    script.write_text(CHILD_SCRIPT)
    done = subprocess.run(
        [
            sys.executable,
            str(script),
            twin.kind,
            ledger_server.url,
            ledger_server.api_key,
            agent_name,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    events = stored_events(ledger_server.url, ledger_server.api_key, agent_name)
    who = sorted((e["data"]["who"], e["data"].get("i", -1)) for e in events)
    assert who == [("child", i) for i in range(10)] + [("parent", -1)]
