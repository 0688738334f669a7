"""``agentledger demo`` as a newcomer runs it: a subprocess, offline, printing the story.

README, "Quickstart": the session as a timeline, the final answer's ``why()`` as a tree of
causes (event ids and edge kinds), and the hash-chain verification.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.langchain


def _agentledger() -> str:
    return str(Path(sys.executable).parent / "agentledger")


def _run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1"}
    env.pop("OPENAI_BASE_URL", None)
    return subprocess.run(
        [_agentledger(), "demo", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )


def test_demo_runs_offline_with_its_embedded_server(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    done = _run("--db", str(db), tmp_path=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "I refunded the duplicate charge ch_3Pq2" in out
    for tool in ("lookup_order", "verify_duplicate_charge", "issue_refund"):
        assert f"tool_call {tool}(" in out
    assert "assistant_response" in out
    answer = re.search(r"why\(([0-9a-f-]{36})\)", out)
    assert answer is not None, out
    tree = out.split(answer.group(0), 1)[1].split("hash chain", 1)[0]
    assert re.search(rf"^{answer.group(1)} assistant_response ", tree, re.MULTILINE), tree
    assert "[produced] " in tree, tree  # the answer's cause, labelled with its edge kind
    for tool in ("issue_refund", "verify_duplicate_charge", "lookup_order"):
        # the why tree reaches every tool, through the model calls that read their results
        assert re.search(rf"\[read\] [0-9a-f-]{{36}} tool_result {tool} ", tree), tool
    assert "user_message" in tree  # ... and the customer's message
    assert "hash chain of 'support-demo' intact" in out
    assert str(db) in out
    assert db.exists() and db.stat().st_size > 0


def test_demo_against_a_running_server(ledger_server: Any, agent_name: str, tmp_path: Path) -> None:
    done = _run(
        "--url",
        ledger_server.url,
        "--api-key",
        ledger_server.api_key,
        "--agent",
        agent_name,
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    response = httpx.get(
        f"{ledger_server.url}/v1/events",
        params={"agent": agent_name, "event_type": "assistant_response"},
        headers=ledger_server.headers(),
    )
    (answer,) = response.json()
    assert "refunded the duplicate charge" in answer["data"]["text"]
    # The printed tree is the server's why() of the answer: every cause by its id, every edge
    # by its kind, and the tool results under a model call's "read" edges whenever the
    # integration logged them (the demo follows no edges of its own).
    why = httpx.get(
        f"{ledger_server.url}/v1/events/{answer['event_id']}/why",
        headers=ledger_server.headers(),
    ).json()
    tree = done.stdout.split(f"why({answer['event_id']})", 1)[1].split("hash chain", 1)[0]
    for event in why["chain"]:
        assert event["event_id"] in tree, (event, tree)
    for edge in why["edges"]:
        assert f"[{edge['kind']}] " in tree, (edge, tree)
    read = {e["cause"] for e in why["edges"] if e["kind"] == "read"}
    for event in why["chain"]:
        if event["event_id"] in read and event["event"] == "tool_result":
            assert f"[read] {event['event_id']} tool_result {event['data']['tool']}" in tree


def test_demo_asks_for_langchain_openai_when_a_real_model_is_wanted(tmp_path: Path) -> None:
    try:
        import langchain_openai  # noqa: F401
    except ImportError:
        done = _run("--model", "gpt-4o-mini", tmp_path=tmp_path)
        assert done.returncode == 2
        assert "pip install langchain-openai" in done.stdout
    else:  # pragma: no cover - only where langchain-openai is installed
        pytest.skip("langchain-openai is installed here")


def test_demo_keep_serving_until_interrupted(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_BASE_URL", None)
    proc = subprocess.Popen(
        [_agentledger(), "demo", "--db", str(tmp_path / "kept.db"), "--keep-serving"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
        # A test runner started in the background without job control inherits SIGINT
        # ignored (POSIX), and so would the demo: give it the default disposition, as a
        # terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 120
        url = None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            found = re.search(r"serving (http://127\.0\.0\.1:\d+) \(dev key (\S+)\)", line)
            if found:
                url, key = found.group(1), found.group(2)
                break
        assert url is not None, "".join(seen)
        assert "dashboard" not in "".join(seen) or f"{url}/ui/" in "".join(seen)
        events = httpx.get(
            f"{url}/v1/events",
            params={"agent": "support-demo", "event_type": "assistant_response"},
            headers={"Authorization": f"Bearer {key}"},
        ).json()
        assert len(events) == 1
        link = re.search(
            r"dashboard \(this link opens it without a login\): (\S+)", proc.stdout.readline()
        )
        assert link and link.group(1).startswith(f"{url}/ui/?token="), link
        with httpx.Client(timeout=30.0) as browser:  # the dev-session link, then a page
            assert browser.get(link.group(1)).status_code == 303
            assert browser.get(f"{url}/ui/").status_code == 200
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest = proc.communicate(timeout=10)[0]
            pytest.fail(f"demo still running 60 s after Ctrl-C; its output:\n{rest[-3000:]}")
        assert code == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_demo_names_the_missing_server_part(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "fastapi"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named fastapi", name="fastapi")\n'
    )
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "PYTHONPATH": str(shadow.parent)}
    done = subprocess.run(
        [_agentledger(), "demo"], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the embedded server cannot start: No module named fastapi" in done.stdout
    assert "pip install 'agentledger[server]'" in done.stdout
