"""An agent moved SQLite -> PostgreSQL -> SQLite by export/import keeps its chain byte for byte.

The canonical JSON (RFC 8785) is computed in Python from the values as stored, so importing an
agent into an empty ledger of the other backend reproduces every ``checksum`` and
``chain_hash`` exactly, and each side verifies.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson

AWKWARD_DATA: list[dict[str, Any]] = [
    {"text": "plain ascii", "n": 1},
    {"unicode": "naïve café – 東京 🎉", "emoji_key_😀": True, "é": "key order by UTF-16"},
    {"floats": [0.1, 1e-7, 1e21, -0.0, 3.141592653589793], "big": 9007199254740991},
    {"nested": {"list": [1, [2, [3, {"deep": None}]]], "empty": {}, "also": []}},
    {"escapes": 'quote " backslash \\ tab \t newline \n nul \x00 bell \x07'},
    {"escaped_nul_text": "\\u0000 is six characters here"},
]


def _client(server: Any) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=server.headers(), timeout=60)


def _write(client: httpx.Client, agent: str) -> None:
    items: list[dict[str, Any]] = []
    for i, data in enumerate(AWKWARD_DATA):
        item: dict[str, Any] = {
            "agent": agent,
            "event": "step" if i % 2 else "tool_call",
            "data": data,
            "session_id": "s-move",
            "metadata": {"i": i, "tag": "ü"},
            "importance": 0.5,
        }
        if i:
            item["parent_index"] = i - 1
        items.append(item)
    response = client.post("/v1/events/batch", json={"events": items})
    assert response.json()["written"] == len(items), response.text


def _export(client: httpx.Client, agent: str) -> list[dict[str, Any]]:
    response = client.get("/v1/events/export", params={"agent": agent})
    assert response.status_code == 200
    return [orjson.loads(line) for line in response.content.splitlines()]


def _move(source: Any, target: Any, agent: str) -> tuple[list[dict[str, Any]], list[Any]]:
    with _client(source) as src, _client(target) as dst:
        lines = _export(src, agent)
        result = dst.post("/v1/events/import", json={"events": lines}).json()
        assert result["imported"] == len(lines) and result["failed"] == 0, result
        moved = _export(dst, agent)
        report = dst.get("/v1/events/chain", params={"agent": agent}).json()
        assert report["intact"] and report["verified"] == len(lines), report["summary"]
        why = dst.get(f"/v1/events/{lines[-1]['event_id']}/why", params={"depth": 100}).json()
    assert [e["event_id"] for e in why["chain"]] == [e["event_id"] for e in lines]
    return lines, moved


def _chain_fields(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (e["event_id"], e["sequence_no"], e["checksum"], e["chain_hash"], e["data"]) for e in lines
    ]


def test_agents_move_between_sqlite_and_postgres_keeping_every_link(
    server_factory: Any, pg_db: str, agent_name: str
) -> None:
    sqlite_a = server_factory()
    postgres = server_factory(db=pg_db)
    sqlite_b = server_factory()
    born_on_sqlite, born_on_postgres = f"{agent_name}-s", f"{agent_name}-p"
    with _client(sqlite_a) as client:
        _write(client, born_on_sqlite)
    with _client(postgres) as client:
        _write(client, born_on_postgres)

    # SQLite -> PostgreSQL -> SQLite
    original, on_postgres = _move(sqlite_a, postgres, born_on_sqlite)
    assert _chain_fields(on_postgres) == _chain_fields(original)
    _, back_on_sqlite = _move(postgres, sqlite_b, born_on_sqlite)
    assert _chain_fields(back_on_sqlite) == _chain_fields(original)
    assert [e["timestamp"] for e in back_on_sqlite] == [e["timestamp"] for e in original]
    # a chain written on PostgreSQL verifies on SQLite, link for link
    original, on_sqlite = _move(postgres, sqlite_b, born_on_postgres)
    assert _chain_fields(on_sqlite) == _chain_fields(original)
