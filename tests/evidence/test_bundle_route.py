"""``GET /v1/events/{id}/evidence`` on a real ``agentledger serve``, SQLite and PostgreSQL
(docs/pages/evidence.md, "Evidence bundles"): the zip verifies offline with only the public
key, holds the lineage, a summary and the graph; an unknown event is a 404, an unusable key
file a 503; the verifier imports neither the server nor the client."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import orjson
import pytest

from _bundles import active_key, bundle_of, files_of, segment, write_graph, write_one
from _servers import ServerFactory, ServerProcess
from agentledger.client import Ledger, UnprocessableEntityError
from agentledger.evidence import verify_bundle


def test_bundle_verifies_offline_with_only_the_public_key(
    store_server: ServerProcess, tmp_path: Path
) -> None:
    agent = f"bundle-{uuid.uuid4().hex[:8]}"
    root, a, b, c, side = write_graph(store_server, agent)
    bundle = bundle_of(store_server, b)
    path = tmp_path / "bundle.zip"
    path.write_bytes(bundle)
    report = verify_bundle(path, public_key=active_key(store_server), agent=agent)
    assert report.ok, [str(p) for p in report.problems]
    assert (report.event_id, report.agent, report.records) == (b, agent, 5)
    files = files_of(bundle)
    assert set(files) == {
        "manifest.json", "lineage.json", "keys.json", "summary.md", "graph.png", "segments/0.json",
        "decision.json",
    }  # fmt: skip
    lineage = orjson.loads(files["lineage.json"])
    assert lineage["why"]["events"][-1] == b and set(lineage["why"]["events"]) == {root, a, side, b}
    assert lineage["why"]["roots"] == [root] and lineage["impact"]["events"] == [c]
    assert {(e["effect"], e["cause"]) for e in lineage["edges"]} >= {(b, a), (b, side), (c, b)}
    summary = files["summary.md"].decode()
    for heading in ("## The event", "## Root causes", "## What it affected", "## What was verified",
                    "## What this bundle does not prove"):  # fmt: skip
        assert heading in summary
    assert root in summary and c in summary and "clock" in summary
    assert files["graph.png"].startswith(b"\x89PNG\r\n\x1a\n")
    manifest = orjson.loads(files["manifest.json"])
    assert manifest["graph"].startswith("graph.png")
    # the head signed for the bundle is stored: a second bundle reuses it
    again = verify_bundle(bundle_of(store_server, b), public_key=active_key(store_server))
    assert again.heads == report.heads


def test_unknown_event_is_404(store_server: ServerProcess) -> None:
    answer = httpx.get(
        f"{store_server.url}/v1/events/{uuid.uuid4()}/evidence", headers=store_server.headers()
    )
    assert answer.status_code == 404 and "no event" in answer.text
    bad = httpx.get(
        f"{store_server.url}/v1/events/not-an-id/evidence", headers=store_server.headers()
    )
    assert bad.status_code == 422 and "event_id" in bad.text


def test_unusable_signing_keys_are_a_503(server_factory: ServerFactory, tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    server = server_factory(env={"AGENTLEDGER_SIGNING_KEYS": str(keys)})
    event = write_graph(server, "no-keys")[2]
    keys.write_text("{}")
    os.chmod(keys, 0o600)
    answer = httpx.get(f"{server.url}/v1/events/{event}/evidence", headers=server.headers())
    assert answer.status_code == 503 and "signing keys unavailable" in answer.text


def test_verifier_imports_neither_server_nor_client(tmp_path: Path) -> None:
    """The verifier runs where only the protocol, orjson and cryptography are importable."""
    code = (
        "import sys, agentledger.evidence as e\n"
        "bad = [m for m in sys.modules if m.startswith(('agentledger.server', 'agentledger.client',"
        " 'sqlalchemy', 'fastapi', 'httpx'))]\n"
        "assert not bad, bad\n"
        "print(e.verify_bundle.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_lineage_across_agents_has_a_segment_per_agent(ledger_server: ServerProcess) -> None:
    """An event caused by another agent's event: each agent's chain has its own segment and
    signed head, the asked event's agent first."""
    planner, worker = f"planner-{uuid.uuid4().hex[:6]}", f"worker-{uuid.uuid4().hex[:6]}"
    plan = write_graph(ledger_server, planner)[2]
    step = str(uuid.uuid4())
    answer = httpx.post(
        f"{ledger_server.url}/v1/events",
        json={
            "event_id": step,
            "agent": worker,
            "event": "tool_call",
            "caused_by": [plan],
            "data": {},
        },
        headers=ledger_server.headers(),
    )
    assert answer.status_code == 201, answer.text
    bundle = bundle_of(ledger_server, step)
    files = files_of(bundle)
    agents = [orjson.loads(files[f"segments/{i}.json"])["agent"] for i in (0, 1)]
    assert agents == [worker, planner]
    report = verify_bundle(bundle, public_key=active_key(ledger_server), agent=worker)
    assert report.ok, [str(p) for p in report.problems]
    assert {h["agent"] for h in report.heads} == {worker, planner}


def test_a_head_that_does_not_match_its_rows_is_a_409(server_factory: ServerFactory) -> None:
    """Signing refuses a head the agent's rows contradict (run ``agentledger verify``)."""
    import sqlite3

    server = server_factory()
    event = write_graph(server, "bad-head")[2]
    with sqlite3.connect(server.db) as conn:
        conn.execute("UPDATE agents SET last_hash = ? WHERE agent = 'bad-head'", ("0" * 64,))
    answer = httpx.get(f"{server.url}/v1/events/{event}/evidence", headers=server.headers())
    assert answer.status_code == 409, answer.text
    assert "cannot sign a head" in answer.text and "agentledger verify" in answer.text


def test_a_segment_ends_at_the_first_head_after_the_lineage_and_is_capped(
    server_factory: ServerFactory,
) -> None:
    """docs/pages/evidence.md, "Evidence bundles": the segment stops at the earliest stored
    head covering the lineage, not at the newest row; one longer than
    ``AGENTLEDGER_EVIDENCE_MAX_ROWS`` is a 422 naming the span."""
    server = server_factory(
        env={"AGENTLEDGER_EVIDENCE_MAX_ROWS": "8", "AGENTLEDGER_SIGN_INTERVAL_S": "0"}
    )
    agent = f"capped-{uuid.uuid4().hex[:6]}"
    root, _, b, _, _ = write_graph(server, agent)  # sequence numbers 1..5
    signed = httpx.post(
        f"{server.url}/v1/signed-heads", json={"agent": agent}, headers=server.headers()
    )
    assert signed.status_code in (200, 201), signed.text
    for _ in range(6):  # 6..11, after the head
        write_one(server, agent)
    bundle = bundle_of(server, b)
    doc = segment(files_of(bundle))
    assert doc["head"]["sequence_no"] == 5
    assert [row["sequence_no"] for row in doc["rows"]] == [1, 2, 3, 4, 5]
    report = verify_bundle(bundle, public_key=active_key(server), agent=agent)
    assert report.ok, [str(p) for p in report.problems]

    late = str(uuid.uuid4())  # caused by the first event: its lineage spans rows 1..12
    answer = httpx.post(
        f"{server.url}/v1/events",
        json={"event_id": late, "agent": agent, "event": "note", "caused_by": [root], "data": {}},
        headers=server.headers(),
    )
    assert answer.status_code == 201, answer.text
    refused = httpx.get(f"{server.url}/v1/events/{late}/evidence", headers=server.headers())
    assert refused.status_code == 422, refused.text
    detail = refused.json()["detail"]
    assert detail.startswith("event_id:") and "12 chain rows" in detail
    assert "AGENTLEDGER_EVIDENCE_MAX_ROWS" in detail
    ledger = Ledger(server.url, server.api_key, agent, spill_dir=None)
    with ledger, pytest.raises(UnprocessableEntityError, match="AGENTLEDGER_EVIDENCE_MAX_ROWS"):
        ledger.evidence_bundle(late)
