"""Helpers of the signed-head tests on a real ``agentledger serve``: start one with signing
settings, write events, verify a head, rewrite a stored chain behind the server's back."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from typer.testing import CliRunner

from _servers import ServerFactory, ServerProcess
from _stores import sql_connection
from agentledger.cli import app
from agentledger.protocol.signed_heads import head_payload


def signing_server(
    factory: ServerFactory, db: str, tmp: Path, *, interval_s: float = 0, **env: str
) -> ServerProcess:
    """A real server on ``db`` with its key file and publish directory under ``tmp``."""
    settings = {
        "AGENTLEDGER_SIGNING_KEYS": str(tmp / "signing-keys.json"),
        "AGENTLEDGER_PUBLISH_HEADS_DIR": str(tmp / "published"),
        "AGENTLEDGER_SIGN_INTERVAL_S": str(interval_s),
    }
    return factory(db=db, env=settings | env)


def write(server: ServerProcess, agent: str, count: int, start: int = 0) -> None:
    events = [{"agent": agent, "event": "note", "data": {"i": start + i}} for i in range(count)]
    answer = httpx.post(
        f"{server.url}/v1/events/batch", json={"events": events}, headers=server.headers()
    )
    assert answer.status_code == 200 and answer.json()["written"] == count, answer.text


def wait_for(check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"not true within {timeout_s} s")


def public_keys(server: ServerProcess) -> dict[str, Ed25519PublicKey]:
    keys = httpx.get(f"{server.url}/v1/signing-keys").json()["keys"]
    return {
        k["key_id"]: Ed25519PublicKey.from_public_bytes(base64.b64decode(k["public_key"]))
        for k in keys
    }


def verify(server: ServerProcess, head: dict[str, Any]) -> None:
    """Raise ``InvalidSignature`` unless a key the server lists signed ``head``."""
    key = public_keys(server)[head["key_id"]]
    key.verify(base64.b64decode(head["signature"]), head_payload(head))


def cli(server: ServerProcess, *args: Any) -> Any:
    """The real ``agentledger`` app in-process, pointed at ``server``."""
    env = {"AGENTLEDGER_URL": server.url, "AGENTLEDGER_API_KEY": server.api_key}
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def fingerprint(server: ServerProcess) -> str:
    keys = httpx.get(f"{server.url}/v1/signing-keys").json()["keys"]
    return str(keys[-1]["fingerprint"])


def rewrite_chain(db: str, agent: str, seq: int, data: dict[str, Any]) -> None:
    """Change event ``seq``'s data in the database and recompute every later link, checksum,
    seal and the agent's head, as someone with write access to the database could: the chain
    then verifies on its own."""
    from agentledger.server._chain import ChainHasher

    hasher = ChainHasher(None)
    with sql_connection(db) as sql:
        rows = sql.execute(
            "SELECT sequence_no, record, received_at, importance FROM events "
            "WHERE agent = ? ORDER BY sequence_no",
            (agent,),
        ).fetchall()
        previous = None
        for number, record, received_at, importance in rows:
            rec = orjson.loads(bytes(record))
            if number == seq:
                rec["data"] = data
            body = orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)
            link = hasher.link(previous, body)
            seal = hasher.column_seal(link, received_at, importance)
            sql.execute(
                "UPDATE events SET record = ?, checksum = ?, chain_hash = ?, seal = ? "
                "WHERE agent = ? AND sequence_no = ?",
                (body, hasher.checksum(body), link, seal, agent, number),
            )
            previous = link
        sql.execute("UPDATE agents SET last_hash = ? WHERE agent = ?", (previous, agent))


def truncate_chain(db: str, agent: str, keep: int) -> None:
    """Delete the agent's events after ``keep`` and move its head back to event ``keep``,
    so the shorter chain verifies on its own."""
    with sql_connection(db) as sql:
        (link,) = sql.execute(
            "SELECT chain_hash FROM events WHERE agent = ? AND sequence_no = ?", (agent, keep)
        ).fetchone()
        ids = [
            row[0]
            for row in sql.execute(
                "SELECT event_id FROM events WHERE agent = ? AND sequence_no > ?", (agent, keep)
            ).fetchall()
        ]
        for event_id in ids:
            sql.execute("DELETE FROM event_causes WHERE effect_id = ?", (event_id,))
        sql.execute("DELETE FROM events WHERE agent = ? AND sequence_no > ?", (agent, keep))
        sql.execute(
            "UPDATE agents SET last_seq = ?, last_hash = ?, event_count = ? WHERE agent = ?",
            (keep, link, keep, agent),
        )
