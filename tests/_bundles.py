"""Helpers of the evidence-bundle tests: write a small causal graph to a real server, fetch
its bundle, read and rewrite a bundle's files (tampering), and the server's public key."""

from __future__ import annotations

import base64
import io
import uuid
import zipfile
from typing import Any

import httpx
import orjson

from _servers import ServerProcess

__all__ = [
    "active_key",
    "bundle_of",
    "files_of",
    "forget",
    "rezip",
    "segment",
    "write_graph",
    "write_one",
]


def write_graph(
    server: ServerProcess, agent: str, *, secret: str | None = None, parent: str | None = None
) -> list[str]:
    """Five events of ``agent``: ``root -> a -> b -> c`` plus ``side`` caused by ``root``
    and named by ``b`` in ``caused_by``; ``a`` holds ``secret`` (to forget) when given,
    ``root`` has ``parent`` when given. Returns the ids ``[root, a, b, c, side]``."""
    ids = [str(uuid.uuid4()) for _ in range(5)]
    root, a, b, c, side = ids
    events = [
        {"event_id": root, "agent": agent, "event": "user_message", "data": {"text": "refund?"},
         "parent_id": parent},
        {"event_id": a, "agent": agent, "event": "llm_call", "parent_id": root,
         "data": {"email": secret or "x"}},
        {"event_id": side, "agent": agent, "event": "tool_call", "parent_id": root,
         "data": {"tool": "lookup"}},
        {"event_id": b, "agent": agent, "event": "decision", "parent_id": a,
         "caused_by": [side], "data": {"refund": 42.5}},
        {"event_id": c, "agent": agent, "event": "tool_call", "parent_id": b,
         "data": {"tool": "pay"}},
    ]  # fmt: skip
    answer = httpx.post(
        f"{server.url}/v1/events/batch",
        json={"events": events},
        headers=server.headers(),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return ids


def bundle_of(server: ServerProcess, event_id: str) -> bytes:
    answer = httpx.get(
        f"{server.url}/v1/events/{event_id}/evidence", headers=server.headers(), timeout=60
    )
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/zip"
    return answer.content


def active_key(server: ServerProcess) -> str:
    """The active public key as hex, as a reviewer copies it from ``GET /v1/signing-keys``."""
    keys = httpx.get(f"{server.url}/v1/signing-keys", timeout=10).json()["keys"]
    active = next(k for k in keys if k["active"])
    return base64.b64decode(active["public_key"]).hex()


def files_of(bundle: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def rezip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def segment(files: dict[str, bytes], index: int = 0) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(files[f"segments/{index}.json"])
    return doc


def write_one(server: ServerProcess, agent: str) -> str:
    """One ``note`` event of ``agent``; its id."""
    event_id = str(uuid.uuid4())
    answer = httpx.post(
        f"{server.url}/v1/events",
        json={"event_id": event_id, "agent": agent, "event": "note", "data": {}},
        headers=server.headers(),
        timeout=30,
    )
    assert answer.status_code in (200, 201), answer.text
    return event_id


def forget(server: ServerProcess, agent: str, key: str, value: str) -> list[str]:
    """Erase the agent's events holding ``key == value``; the erased ids."""
    answer = httpx.request(
        "DELETE",
        f"{server.url}/v1/memory/forget",
        json={"filter_key": key, "filter_value": value, "agent": agent},
        headers=server.headers(),
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    ids: list[str] = answer.json()["event_ids"]
    return ids
