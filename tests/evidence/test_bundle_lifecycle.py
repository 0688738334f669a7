"""Evidence bundles across a ledger's life (docs/pages/evidence.md, "Evidence bundles"): an
erased event in the lineage is a tombstone that verifies (its erasure mark is checked), and
records before it are anchored only by an earlier signed head; a key rotation keeps an old
bundle verifiable with the old key; an HMAC-keyed chain verifies checksums, order and
signatures but not links, and says so."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from _bundles import active_key, bundle_of, files_of, forget, rezip, segment, write_graph, write_one
from _servers import ServerFactory, ServerProcess
from agentledger.evidence import WrongKey, verify_bundle
from agentledger.server._signing._keyring import Keyring


def _agent() -> str:
    return f"life-{uuid.uuid4().hex[:8]}"


def test_erased_event_in_the_lineage_is_a_tombstone_that_verifies(
    store_server: ServerProcess,
) -> None:
    agent = _agent()
    root, a, b, _, _ = write_graph(store_server, agent, secret="ann@example.com")
    assert forget(store_server, agent, "email", "ann@example.com") == [a]
    bundle = bundle_of(store_server, b)
    report = verify_bundle(bundle, public_key=active_key(store_server))
    assert report.ok, [str(p) for p in report.problems]
    assert report.erased == 1
    # the root (seq 1) lies before the erased event (seq 2): no signed head reaches it
    assert report.unanchored == [(agent, 1)]
    files = files_of(bundle)
    erased = {e["event_id"]: e["erased"] for e in orjson.loads(files["lineage.json"])["events"]}
    assert erased[a] is True and erased[root] is False
    rows = {r["event_id"]: r for r in segment(files)["rows"]}
    assert rows[a]["record"] is None and rows[a]["mark"]
    assert "ann@example.com" not in bundle.decode("latin-1")
    assert "erased" in files["summary.md"].decode()

    # a kept column of the tombstone edited: its erasure mark no longer matches
    doc = segment(files)
    tomb = next(r for r in doc["rows"] if r["event_id"] == a)
    tomb["event"] = "user_message"
    files["segments/0.json"] = orjson.dumps(doc)
    tampered = verify_bundle(rezip(files), public_key=active_key(store_server))
    assert [(p.kind, p.sequence_no) for p in tampered.problems if p.kind != "file_hash"] == [
        ("erasure_mark", tomb["sequence_no"])
    ]


def test_an_earlier_signed_head_anchors_records_before_an_erased_event(
    ledger_server: ServerProcess,
) -> None:
    agent = _agent()
    first = write_one(ledger_server, agent)
    bundle_of(ledger_server, first)  # signs (and stores) a head at sequence number 1
    b = write_graph(ledger_server, agent, secret="bo@example.com", parent=first)[2]
    forget(ledger_server, agent, "email", "bo@example.com")
    bundle = bundle_of(ledger_server, b)
    doc = segment(files_of(bundle))
    assert [h["sequence_no"] for h in doc["anchors"]] == [1]
    report = verify_bundle(bundle, public_key=active_key(ledger_server))
    assert report.ok, [str(p) for p in report.problems]
    # 1 is anchored by its own head, 3 (erased) and later by the new one; only 2 is not
    assert report.unanchored == [(agent, 2)]


def test_key_rotation_keeps_an_old_bundle_verifiable(ledger_server: ServerProcess) -> None:
    agent = _agent()
    event = write_graph(ledger_server, agent)[2]
    old_key = active_key(ledger_server)
    old = bundle_of(ledger_server, event)
    Keyring(ledger_server.db + ".signing-keys.json").rotate()
    new_key = active_key(ledger_server)
    assert new_key != old_key
    new = bundle_of(ledger_server, event)
    assert verify_bundle(old, public_key=old_key).ok
    assert verify_bundle(new, public_key=new_key).ok
    with pytest.raises(WrongKey, match="wrong key"):
        verify_bundle(new, public_key=old_key)
    assert verify_bundle(new, public_key=[old_key, new_key]).ok


@pytest.fixture
def hmac_server(server_factory: ServerFactory) -> ServerProcess:
    return server_factory(env={"AGENTLEDGER_CHAIN_KEY": "a-chain-key-the-reviewer-lacks"})


def test_hmac_chain_bundle_says_links_were_not_recomputed(
    hmac_server: ServerProcess, tmp_path: Path
) -> None:
    agent = _agent()
    event = write_graph(hmac_server, agent)[2]
    bundle = bundle_of(hmac_server, event)
    key = active_key(hmac_server)
    report = verify_bundle(bundle, public_key=key)
    assert report.ok and not report.links_checked
    assert any("HMAC" in note for note in report.notes)
    assert "HMAC" in report.summary()
    files = files_of(bundle)
    assert segment(files)["head"]["hmac_links"] is True
    assert "HMAC-keyed links" in files["summary.md"].decode()

    def edited(redo_checksum: bool) -> list[tuple[str, Any]]:
        copy = dict(files)
        doc = segment(copy)
        row = doc["rows"][1]
        row["record"] = row["record"].replace('"x"', '"y"')
        if redo_checksum:
            row["checksum"] = hashlib.sha256(row["record"].encode()).hexdigest()
        copy["segments/0.json"] = orjson.dumps(doc)
        return [
            (p.kind, p.sequence_no) for p in verify_bundle(rezip(copy), public_key=key).problems
        ]

    # an edited record is caught by its checksum ...
    assert ("record_checksum", 2) in edited(redo_checksum=False)
    # ... and with the checksum redone, only the manifest's signed file hash catches it
    assert edited(redo_checksum=True) == [("file_hash", None)]
