"""End-to-end against real ``agentledger serve`` processes: concurrency, restarts, settings."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import httpx
import orjson

from agentledger.server._store.sqlite import MIGRATIONS_DIR


def test_concurrent_writers_keep_the_sequence_gapless(ledger_server: Any, agent_name: str) -> None:
    errors: list[str] = []

    def writer(worker: int) -> None:
        with httpx.Client(base_url=ledger_server.url, headers=ledger_server.headers()) as client:
            for i in range(15):
                if i % 3 == 0:
                    body = {
                        "events": [
                            {"agent": agent_name, "event": "b", "data": {"w": worker, "i": i}},
                            {"agent": agent_name, "event": "b", "data": {}, "parent_index": 0},
                        ]
                    }
                    response = client.post("/v1/events/batch", json=body)
                else:
                    response = client.post(
                        "/v1/events",
                        json={"agent": agent_name, "event": "e", "data": {"w": worker, "i": i}},
                    )
                if response.status_code >= 300:
                    errors.append(response.text)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = 6 * (10 + 5 * 2)
    exported = httpx.get(
        f"{ledger_server.url}/v1/events/export",
        params={"agent": agent_name},
        headers=ledger_server.headers(),
    ).text.splitlines()
    assert len(exported) == expected
    assert [int(line.split('"sequence_no":')[1].split(",")[0]) for line in exported] == list(
        range(1, expected + 1)
    )
    report = httpx.get(
        f"{ledger_server.url}/v1/events/chain",
        params={"agent": agent_name},
        headers=ledger_server.headers(),
    ).json()
    assert report["intact"] and report["verified"] == expected


def test_chain_continues_across_a_kill_and_restart(server_factory: Any, agent_name: str) -> None:
    server = server_factory()
    with httpx.Client(base_url=server.url, headers=server.headers()) as client:
        client.post("/v1/events", json={"agent": agent_name, "event": "a", "data": {}})
        head = client.get("/v1/events/chain", params={"agent": agent_name}).json()["chain_head"]
    server.kill()
    server.start()
    with httpx.Client(base_url=server.url, headers=server.headers()) as client:
        written = client.post(
            "/v1/events", json={"agent": agent_name, "event": "b", "data": {}}
        ).json()
        assert written["sequence_no"] == 2
        report = client.get(
            "/v1/events/chain",
            params={
                "agent": agent_name,
                "after_seq": head["sequence_no"],
                "anchor": head["chain_hash"],
            },
        ).json()
    assert report["intact"] and report["verified"] == 1


def test_redaction_patterns_and_chain_key_from_options(
    server_factory: Any, agent_name: str
) -> None:
    server = server_factory("--redact", "email,card", env={"AGENTLEDGER_CHAIN_KEY": "k-1"})
    with httpx.Client(base_url=server.url, headers=server.headers()) as client:
        written = client.post(
            "/v1/events",
            json={
                "agent": agent_name,
                "event": "user_message",
                "data": {"text": "mail bob@example.com, card 4111 1111 1111 1111", "token": "t"},
            },
        ).json()
        got = client.get(f"/v1/events/{written['event_id']}").json()
        assert got["data"] == {
            "text": "mail [REDACTED:email], card [REDACTED:card]",
            "token": "[REDACTED]",
        }
        # HMAC link: differs from the plain SHA-256 checksum even for the first event
        assert got["chain_hash"] != got["checksum"]
        assert client.get("/v1/events/chain", params={"agent": agent_name}).json()["intact"]
    server.stop()
    plain = server_factory(db=server.db)  # same file, no chain key: the links do not verify
    with httpx.Client(base_url=plain.url, headers=plain.headers()) as client:
        report = client.get("/v1/events/chain", params={"agent": agent_name}).json()
    assert not report["intact"] and report["problems"][0]["kind"] == "content_changed"


def test_body_limit_option_gives_413(server_factory: Any, agent_name: str) -> None:
    server = server_factory("--max-body-bytes", "2000")
    response = httpx.post(
        f"{server.url}/v1/events",
        json={"agent": agent_name, "event": "e", "data": {"blob": "x" * 5000}},
        headers=server.headers(),
    )
    assert response.status_code == 413 and response.headers["x-request-id"]


def test_import_remaps_parents_and_counts_dropped_ones(ledger_server: Any, agent_name: str) -> None:
    ghost = str(uuid.uuid4())
    with httpx.Client(base_url=ledger_server.url, headers=ledger_server.headers()) as client:
        root = client.post("/v1/events", json={"agent": agent_name, "event": "r", "data": {}})
        client.post(
            "/v1/events",
            json={
                "agent": agent_name,
                "event": "c",
                "data": {},
                "parent_id": root.json()["event_id"],
                "timestamp": "2020-01-01T00:00:00Z",
            },
        )
        client.post(
            "/v1/events", json={"agent": agent_name, "event": "o", "data": {}, "parent_id": ghost}
        )
        lines = [
            line
            for line in client.get(
                "/v1/events/export", params={"agent": agent_name}
            ).text.splitlines()
            if line
        ]
        events = [orjson.loads(line) for line in lines]
        target = f"{agent_name}-2"
        result = client.post("/v1/events/import", json={"events": events, "agent": target}).json()
        assert (result["imported"], result["parents_dropped"], result["failed"]) == (3, 1, 0)
        copied = client.get("/v1/events", params={"agent": target}).json()
        by_event = {e["event"]: e for e in copied}
        assert by_event["c"]["parent_id"] == by_event["r"]["event_id"]
        assert by_event["c"]["timestamp"] == "2020-01-01T00:00:00.000000+00:00"
        assert by_event["o"]["parent_id"] is None
        assert [e["sequence_no"] for e in sorted(copied, key=lambda e: e["sequence_no"])] == [
            1,
            2,
            3,
        ]


def test_migrations_ship_inside_the_package() -> None:
    assert MIGRATIONS_DIR.parent.name == "_store"
    assert (MIGRATIONS_DIR / "env.py").is_file()
    assert any(MIGRATIONS_DIR.joinpath("versions").glob("0001_*.py"))
