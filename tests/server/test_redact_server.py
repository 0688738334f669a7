"""A long string of near misses does not stall a real server with every redaction pattern on.

Routes are plain ``def`` functions, so FastAPI runs a write in its thread pool and ``/health`` in
another thread; what could still stall ``/health`` is one regex call that holds the interpreter
lock for long. Every pattern is linear and long strings are scanned in windows, so ``/health``
keeps answering while a 1 MB write of near misses is redacted, and the write completes.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from agentledger.protocol.redaction import PATTERN_NAMES

#: Near misses of the email, phone, card, ipv4 and secret patterns, 1 MB in all.
UNITS = ("a@", "a@a.", "a.", "1 ", "1-", "1.", "+1 ", "eyJ", "sk-", "a=", '"a": "', "-----")
SIZE = 1_000_000
HEALTH_BOUND_S = 1.0


def _adversarial() -> str:
    part = SIZE // len(UNITS)
    text = "".join((unit * (part // len(unit) + 1))[:part] for unit in UNITS)
    return text + " mail ann@example.org key sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2 end"


def test_health_answers_while_a_long_write_is_redacted(
    server_factory: Any, agent_name: str
) -> None:
    server = server_factory(env={"AGENTLEDGER_REDACT_PATTERNS": ",".join(sorted(PATTERN_NAMES))})
    body = {"agent": agent_name, "event": "tool_result", "data": {"text": _adversarial()}}
    written: dict[str, Any] = {}

    def write() -> None:
        with httpx.Client(base_url=server.url, headers=server.headers(), timeout=120) as client:
            started = time.perf_counter()
            response = client.post("/v1/events", json=body)
            written.update(status=response.status_code, body=response.json())
            written["seconds"] = time.perf_counter() - started

    writer = threading.Thread(target=write)
    latencies: list[float] = []
    with httpx.Client(base_url=server.url, timeout=30) as client:
        assert client.get("/health").status_code == 200  # warm: connection and first query
        writer.start()
        while writer.is_alive():
            started = time.perf_counter()
            assert client.get("/health").status_code == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.01)
    writer.join()

    assert written["status"] == 201, written
    assert len(latencies) >= 3, (written, latencies)  # /health was asked during the write
    assert max(latencies) < HEALTH_BOUND_S, (max(latencies), written["seconds"])
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        stored = client.get(f"/v1/events/{written['body']['event_id']}").json()
    tail = stored["data"]["text"][-60:]
    assert tail.endswith(" mail [REDACTED:email] key [REDACTED:api_key] end"), tail
