"""``search``, ``forget`` and ``keys create|list|revoke`` against a real server: the human
output, ``--json``, and the common mistakes with their message and exit status
(README: Command line)."""

from __future__ import annotations

import json
from typing import Any

import httpx

from agentledger.client import Ledger

from .conftest import Cli, Seeded


def test_search_prints_ids_and_sessions(cli: Cli, seeded: Seeded) -> None:
    result = cli("search", seeded.agent, env=seeded.env)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"search '{seeded.agent}': 1 hit(s)")
    hit = next(x for x in result.stdout.splitlines() if seeded.ids[0] in x)
    assert seeded.session in hit and "user_message" in hit
    found = json.loads(cli("search", seeded.agent, "--json", env=seeded.env).stdout)
    assert [h["event"]["event_id"] for h in found["results"]] == [seeded.ids[0]]
    none = cli("search", "zzzz-nothing-like-this", env=seeded.env)
    assert none.exit_code == 0 and "no events match" in none.stdout
    bad = cli("search", "refund", "--mode", "psychic", env=seeded.env)
    assert bad.exit_code == 2
    assert bad.stderr == "error: bad --mode 'psychic': use one of auto, keyword, semantic, hybrid\n"
    unknown = cli("search", "refund", "--agent", "nobody-here", *seeded.args)
    assert unknown.exit_code == 1 and "no agent 'nobody-here'" in unknown.stderr


def test_forget_dry_run_then_erase(cli: Cli, seeded: Seeded) -> None:
    """README: Command line (forget asks for --yes off a terminal; --dry-run shows what would go;
    every field of the server's answer is printed)."""
    email = f"{seeded.agent}@example.com"
    dry = cli("forget", "email", email, "--dry-run", env=seeded.env)
    assert dry.exit_code == 0, dry.output
    lines = dry.stdout.splitlines()
    assert lines[0] == "would erase 1 event(s); tombstones keep the chain verifiable"
    assert "dry_run: true" in lines
    assert f'event_ids: ["{seeded.ids[0]}"]' in lines
    refused = cli("forget", "email", email, env=seeded.env)
    assert refused.exit_code == 2
    assert refused.stderr == (
        "error: forget erases events for good: pass --yes to go ahead, or --dry-run to see "
        "what would be erased\n"
    )
    done = cli("forget", "email", email, "--yes", "--json", env=seeded.env)
    assert done.exit_code == 0, done.output
    answer = json.loads(done.stdout)
    assert answer["deleted_events"] == 1 and answer["dry_run"] is False
    assert answer["event_ids"] == [seeded.ids[0]]
    assert cli("verify", env=seeded.env).exit_code == 0  # the tombstone keeps the chain intact
    assert cli("forget", "email", email, "--yes", *seeded.args).exit_code == 2  # no agent


def test_forget_prints_fields_the_server_adds(cli: Cli, seeded: Seeded) -> None:
    """Every field of the answer is printed, so a field the client does not name shows."""
    dry = cli("forget", "email", "nobody@example.com", "--dry-run", env=seeded.env)
    names = {line.split(":", 1)[0] for line in dry.stdout.splitlines()[1:]}
    answer = httpx.request(
        "DELETE",
        f"{seeded.url}/v1/memory/forget",
        json={"filter_key": "email", "filter_value": "x", "agent": seeded.agent, "dry_run": True},
        headers={"Authorization": f"Bearer {seeded.api_key}"},
    ).json()
    assert names == set(answer) - {"message"}


def test_keys_create_list_revoke(cli: Cli, seeded: Seeded, agent_name: str) -> None:
    created = cli("keys", "create", "--name", agent_name, "--scope", "read_only", *seeded.args)
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip()
    key_id = created.stderr.split("key_id: ", 1)[1].split(" ", 1)[0]
    with Ledger(seeded.url, secret, seeded.agent, spill_dir=None) as reader:
        assert reader.sessions()  # the new key reads
    listed = cli("keys", "list", *seeded.args)
    assert listed.exit_code == 0
    row = next(x for x in listed.stdout.splitlines() if key_id in x)
    assert agent_name in row and "read_only" in row and "active" in row
    rows: list[dict[str, Any]] = json.loads(cli("keys", "list", "--json", *seeded.args).stdout)
    assert {r["key_id"]: r["revoked_at"] for r in rows}[key_id] is None
    revoked = cli("keys", "revoke", key_id, "--json", *seeded.args)
    assert json.loads(revoked.stdout) == {"key_id": key_id, "revoked": True}
    again = cli("keys", "revoke", key_id, *seeded.args)
    assert again.exit_code == 1 and again.stderr == f"error: no active key {key_id!r}\n"
    gone = cli("sessions", "--url", seeded.url, "--api-key", secret)
    assert gone.exit_code == 1
    assert "refused the API key" in gone.stderr and "AGENTLEDGER_API_KEY" in gone.stderr
    made = json.loads(cli("keys", "create", "--name", agent_name, "--json", *seeded.args).stdout)
    assert made["key"] and made["scope"] == "read_write" and made["agent"] is None
    bad = cli("keys", "create", "--name", "x", "--scope", "root", *seeded.args)
    assert bad.exit_code == 2
    assert bad.stderr == "error: bad --scope 'root': use read_write or read_only\n"


def test_keys_need_a_key_that_may_manage_keys(cli: Cli, seeded: Seeded, agent_name: str) -> None:
    made = cli("keys", "create", "--name", agent_name, "--agent", seeded.agent, *seeded.args)
    bound = made.stdout.strip()
    refused = cli("keys", "list", "--url", seeded.url, "--api-key", bound)
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: the API key may not do this (scope: managing keys")
