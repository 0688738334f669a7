"""``agentledger signing check --published DIR`` against a real server, SQLite and PostgreSQL
(docs/pages/evidence.md, "Signed chain heads", "Checking a ledger"; README, "Evidence bundles"):
a ledger rewritten behind the server's back with every later link recomputed passes the plain
verification but not the check; a truncation after a published head is caught; a head signed by
another key is refused; a corrupt head file is a clear error; the other CLI commands print what
they say."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from _servers import ServerFactory, ServerProcess
from agentledger.protocol.head_files import head_file_name, head_file_paths
from agentledger.protocol.signed_heads import head_payload, key_id

from ._helpers import cli, fingerprint, rewrite_chain, signing_server, truncate_chain, write


def _signed(server: ServerProcess, tmp_path: Path, agent: str, count: int) -> Path:
    write(server, agent, count)
    signed = cli(server, "signing", "sign", "--agent", agent)
    assert signed.exit_code == 0, signed.output
    assert f"signed {agent} #{count} " in signed.output
    return tmp_path / "published"


def test_a_rewritten_ledger_is_caught(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    server = signing_server(server_factory, store_db, tmp_path)
    published = _signed(server, tmp_path, "victim", 3)
    write(server, "victim", 2, start=3)
    assert cli(server, "signing", "sign", "--agent", "victim").exit_code == 0  # head #5
    good = cli(server, "signing", "check", "--published", published, "--fingerprint",
               fingerprint(server))  # fmt: skip
    assert good.exit_code == 0, good.output
    assert "victim: matches 2 published head(s) (newest #5, ledger head #5)" in good.output

    rewrite_chain(store_db, "victim", 4, {"i": "rewritten"})
    plain = cli(server, "verify", "--agent", "victim")
    assert plain.exit_code == 0 and "intact" in plain.output  # consistent on its own

    caught = cli(server, "signing", "check", "--published", published, "--fingerprint",
                 fingerprint(server), "--json")  # fmt: skip
    assert caught.exit_code == 1, caught.output
    report = json.loads(caught.output)
    assert not report["ok"]
    (problem,) = report["problems"]
    assert (problem["kind"], problem["agent"], problem["sequence_no"]) == (
        "anchor_mismatch",
        "victim",
        5,
    )
    assert "an event at or before #5 was changed" in problem["detail"]
    assert "the last published head that matches is #3" in problem["detail"]
    text = cli(server, "signing", "check", "--published", published, "--fingerprint",
               fingerprint(server))  # fmt: skip
    assert text.exit_code == 1 and "victim: DOES NOT match" in text.output
    assert "anchor_mismatch" in text.output and "published head #5" in text.output


def test_truncation_after_a_published_head_is_caught(
    server_factory: ServerFactory, store_db: str, tmp_path: Path
) -> None:
    server = signing_server(server_factory, store_db, tmp_path)
    published = _signed(server, tmp_path, "shortened", 5)
    truncate_chain(store_db, "shortened", keep=3)
    assert cli(server, "verify", "--agent", "shortened").exit_code == 0
    caught = cli(server, "signing", "check", "--published", published, "--fingerprint",
                 fingerprint(server))  # fmt: skip
    assert caught.exit_code == 1, caught.output
    assert "truncated_after_anchor" in caught.output
    assert "no event #5 any more (its chain now ends at #3)" in caught.output


def _forged(agent: str, sequence_no: int, chain_hash: str) -> tuple[dict[str, object], bytes]:
    private = Ed25519PrivateKey.generate()
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    head: dict[str, object] = {
        "agent": agent,
        "sequence_no": sequence_no,
        "chain_hash": chain_hash,
        "signed_at": "2026-01-01T00:00:00.000000Z",
        "key_id": key_id(public),
        "hmac_links": False,
    }
    head["signature"] = base64.b64encode(private.sign(head_payload(head))).decode()
    return head, public


def test_a_head_signed_by_another_key_is_refused(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    server = signing_server(server_factory, str(tmp_path / "l.db"), tmp_path)
    published = _signed(server, tmp_path, "honest", 2)
    forged, public = _forged("honest", 1, "0" * 64)
    (published / head_file_name(forged)).write_bytes(orjson.dumps(forged))
    caught = cli(server, "signing", "check", "--published", published, "--fingerprint",
                 fingerprint(server), "--json")  # fmt: skip
    assert caught.exit_code == 1
    (problem,) = json.loads(caught.output)["problems"]
    assert problem["kind"] == "untrusted_key" and problem["sequence_no"] == 1
    assert str(forged["key_id"]) in problem["detail"]

    # a head naming the server's key but signed by another: the signature does not verify
    (real,) = [p for p in head_file_paths(published, "honest") if "000000000002" in p.name]
    head = orjson.loads(real.read_bytes())
    head["signature"] = forged["signature"]
    real.write_bytes(orjson.dumps(head))
    bad = cli(server, "signing", "check", "--published", published, "--public-key",
              public.hex(), "--json")  # fmt: skip
    kinds = sorted(p["kind"] for p in json.loads(bad.output)["problems"])
    # trusting only the other key: its head verifies (and names no event of the ledger),
    # the server-named one is not trusted
    assert bad.exit_code == 1 and kinds == ["anchor_mismatch", "untrusted_key"]


def test_a_corrupt_head_file_is_a_clear_error(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    server = signing_server(server_factory, str(tmp_path / "l.db"), tmp_path)
    published = _signed(server, tmp_path, "filed", 2)
    (published / "filed" / "000000000009-broken.json").write_text('{"agent": "filed", ')
    (published / "filed" / "000000000010-partial.json").write_text('{"agent": "filed"}')
    caught = cli(server, "signing", "check", "--published", published, "--fingerprint",
                 fingerprint(server))  # fmt: skip
    assert caught.exit_code == 1
    assert "corrupt_head_file" in caught.output
    assert "000000000009-broken.json: not JSON" in caught.output
    assert "000000000010-partial.json: field 'chain_hash' is missing" in caught.output
    assert "filed: matches 1 published head(s)" in caught.output  # the good one still checked


def test_check_needs_a_trusted_key_and_a_directory(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    server = signing_server(server_factory, str(tmp_path / "l.db"), tmp_path)
    published = _signed(server, tmp_path, "needs", 1)
    untrusted = cli(server, "signing", "check", "--published", published)
    assert untrusted.exit_code == 2 and "name the key you trust" in untrusted.output
    nowhere = cli(server, "signing", "check", "--published", tmp_path / "nope", "--fingerprint",
                  "ab")  # fmt: skip
    assert nowhere.exit_code == 2 and "is not a directory" in nowhere.output
    wrong = cli(server, "signing", "check", "--published", published, "--fingerprint", "ab" * 32)
    assert wrong.exit_code == 2 and "no signing key with this fingerprint" in wrong.output
    junk = cli(server, "signing", "check", "--published", published, "--public-key", "zz")
    assert junk.exit_code == 2 and "neither a file nor a raw Ed25519 key" in junk.output


def test_rotation_keeps_old_heads_checkable_with_the_saved_key_list(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    """Saved `signing keys --json` output is a trusted key file; both keys' heads verify."""
    server = signing_server(server_factory, str(tmp_path / "l.db"), tmp_path)
    published = _signed(server, tmp_path, "rotating", 2)
    rotated = cli(server, "signing", "rotate")
    assert rotated.exit_code == 0 and "retired ed25519:" in rotated.output
    write(server, "rotating", 1, start=2)
    assert cli(server, "signing", "sign", "--agent", "rotating").exit_code == 0
    listed = cli(server, "signing", "keys", "--json")
    saved = tmp_path / "trusted-keys.json"
    saved.write_text(listed.output)
    assert len(json.loads(listed.output)["keys"]) == 2
    table = cli(server, "signing", "keys")
    assert "active" in table.output and "retired" in table.output
    heads = cli(server, "signing", "heads", "--agent", "rotating")
    assert heads.exit_code == 0 and "signed heads of rotating: 2" in heads.output
    ok = cli(server, "signing", "check", "--published", published, "--public-key", saved)
    assert ok.exit_code == 0, ok.output
    assert "rotating: matches 2 published head(s) (newest #3" in ok.output


def test_an_event_changed_before_the_oldest_head_without_new_links_is_reported(
    server_factory: ServerFactory, tmp_path: Path
) -> None:
    """The check also verifies each agent's whole chain once (section "Checking a ledger")."""
    from _stores import sql_connection

    db = str(tmp_path / "l.db")
    server = signing_server(server_factory, db, tmp_path)
    write(server, "edited", 2)
    write(server, "edited", 2, start=2)
    published = tmp_path / "published"
    assert cli(server, "signing", "sign", "--agent", "edited").exit_code == 0
    with sql_connection(db) as sql:
        (record,) = sql.execute(
            "SELECT record FROM events WHERE agent = 'edited' AND sequence_no = 1"
        ).fetchone()
        changed = orjson.loads(record) | {"data": {"i": "edited"}}
        sql.execute(
            "UPDATE events SET record = ? WHERE agent = 'edited' AND sequence_no = 1",
            (orjson.dumps(changed, option=orjson.OPT_SORT_KEYS),),
        )
    caught = cli(server, "signing", "check", "--published", published, "--fingerprint",
                 fingerprint(server), "--json")  # fmt: skip
    assert caught.exit_code == 1
    kinds = [p["kind"] for p in json.loads(caught.output)["problems"]]
    assert kinds == ["content_changed"]
