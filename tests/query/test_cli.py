"""``agentledger baseline`` (with ``--plot``) and ``agentledger at`` against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

FLOW = ["lookup_order", "verify_charge", "issue_refund"]


def cli(server: Any, *args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "agentledger"
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [str(exe), *args, "--url", server.url, "--api-key", server.api_key],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def write_sessions(server: Any, agent: str) -> int:
    """40 sessions (the last 15 skip verify_charge half the time) + 2 state events."""
    t0 = datetime(2025, 5, 1, tzinfo=UTC)
    items: list[dict[str, Any]] = []
    for index in range(40):
        tools = FLOW if index < 25 or index % 2 else ["lookup_order", "issue_refund"]
        sid = f"{agent}-{index}"
        start = t0 + timedelta(hours=index)
        first = len(items)
        items.append(
            {
                "agent": agent,
                "event": "user_message",
                "session_id": sid,
                "timestamp": start.isoformat(),
                "data": {"text": "hi"},
            }
        )
        for step, tool in enumerate(tools, start=1):
            items.append(
                {
                    "agent": agent,
                    "event": "tool_call",
                    "session_id": sid,
                    "timestamp": (start + timedelta(seconds=step)).isoformat(),
                    "data": {"tool": tool, "args": {}},
                    "parent_index": first + step - 1,
                }
            )
    items += [
        {
            "agent": agent,
            "event": "state_set",
            "timestamp": "2025-05-01T00:00:00Z",
            "data": {"key": "tier", "value": "gold"},
        },
        {
            "agent": agent,
            "event": "state_set",
            "timestamp": "2025-05-03T00:00:00Z",
            "data": {"key": "tier", "value": "platinum"},
        },
    ]
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        response = client.post("/v1/events/batch", json={"events": items})
        assert response.status_code == 200 and response.json()["failed"] == 0
    return len(items)


def test_baseline_table_and_json(ledger_server: Any, agent_name: str) -> None:
    write_sessions(ledger_server, agent_name)
    shown = cli(ledger_server, "baseline", "--agent", agent_name, "--recent-window", "15")
    assert shown.returncode == 0, shown.stderr
    assert "drift score" in shown.stdout and "per session" in shown.stdout
    assert "missing_step tool_call:verify_charge" in shown.stdout
    assert "baseline 25 sessions, recent 15" in shown.stdout
    as_json = cli(
        ledger_server, "baseline", "--agent", agent_name, "--recent-window", "15", "--json"
    )
    report = json.loads(as_json.stdout)
    assert report["verdict"] in ("noticeable_drift", "significant_drift")
    bad = cli(ledger_server, "baseline", "--agent", agent_name, "--window", "1y")
    assert bad.returncode == 2  # a usage mistake
    assert bad.stderr == "error: bad --window: window must be one of 24h, 7d, 30d\n"


def test_baseline_plot(ledger_server: Any, agent_name: str, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    write_sessions(ledger_server, agent_name)
    plot = tmp_path / "drift.png"
    shown = cli(
        ledger_server,
        "baseline",
        "--agent",
        agent_name,
        "--recent-window",
        "15",
        "--plot",
        str(plot),
    )
    assert shown.returncode == 0, shown.stderr
    assert f"plot written to {plot}" in shown.stdout.replace("\n", "")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000


def test_at_prints_the_state(ledger_server: Any, agent_name: str) -> None:
    total = write_sessions(ledger_server, agent_name)
    early = cli(ledger_server, "at", "--agent", agent_name, "--time", "2025-05-02T00:00:00Z")
    assert early.returncode == 0, early.stderr
    assert "gold" in early.stdout and "platinum" not in early.stdout
    late = cli(
        ledger_server, "at", "--agent", agent_name, "--time", "2025-06-01T00:00:00Z", "--json"
    )
    body = json.loads(late.stdout)
    assert body["state"] == {"tier": "platinum"} and body["event_count"] == total
