"""``agentledger cases export``: personal data out, secrets never written, chain first."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentledger.cases import Case, load_case
from agentledger.client import Ledger

from .conftest import EXAMPLE, Production, cli, production

pytestmark = pytest.mark.langchain

PERSONAL = (
    "Dana",
    "Reyes",
    "dana.reyes@example.org",
    "170 1234567",
    "1234567",
    "4242 4242 4242 4242",
    "4242424242424242",
    "DE89",
    "3704 0044 0532 0130 00",
)


def export(prod: Production, out: Path, *extra: str) -> Any:
    return cli("cases", "export", *prod.args(), "--session", prod.session, "--out", out, *extra)


def test_personal_data_does_not_survive_export(
    production_session: Production, tmp_path: Path
) -> None:
    result = export(production_session, tmp_path / "cases")
    assert result.exit_code == 0, result.output
    (path,) = (tmp_path / "cases").glob("*.json")
    text = path.read_text()
    for item in PERSONAL:
        assert item not in text, item
    case = load_case(path)
    # Stand-ins keep structure and stay consistent across inputs, stubs and the answer.
    # the tool returned a dict: the ledger (and so the case) keeps it as an object
    stub = case.tool_stubs["lookup_order"][0].result
    assert isinstance(stub, dict), stub
    assert stub["email"] == "user1@example.com" and stub["email"] in case.inputs[0]
    assert stub["customer"] in case.inputs[0] and stub["customer"] in (case.source_answer or "")
    assert stub["phone"].startswith("+49 ") and stub["phone"] in case.inputs[0]
    assert len(stub["card_number"]) == len("4242 4242 4242 4242")
    digits = stub["card_number"].replace(" ", "")
    assert (
        sum(
            int(d) * (1 + i % 2) // 10 + int(d) * (1 + i % 2) % 10
            for i, d in enumerate(reversed(digits))
        )
        % 10
        == 0
    )  # still Luhn-valid
    assert stub["refund_iban"].startswith("DE") and stub["refund_iban"] != "DE89"
    # Order ids stay unless asked for; provenance is recorded.
    assert case.tool_stubs["verify_charge"][0].args == {"order_id": "A1234"}
    assert case.source_session == production_session.session
    assert case.source_agent == production_session.agent
    assert case.chain_head is not None and case.chain_head.sequence_no > 0
    assert case.subject_ref and case.subject_ref.startswith("sha256:")
    assert case.captured_with["config"] == {"prompt_version": "refund-v1"}
    assert [m.tool for m in case.expect.must_call] == [
        "lookup_order",
        "verify_charge",
        "issue_refund",
    ]
    assert case.expect.must_call_in_order is not None


def test_order_ids_replaced_when_asked_and_the_case_still_passes(
    production_session: Production, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = export(production_session, tmp_path / "cases", "--order-ids")
    assert result.exit_code == 0, result.output
    (path,) = (tmp_path / "cases").glob("*.json")
    assert "A1234" not in path.read_text()
    case = load_case(path)
    new_id = case.tool_stubs["lookup_order"][0].args["order_id"]
    assert new_id[0] == "A" and len(new_id) == 5 and new_id in case.inputs[0]
    monkeypatch.chdir(EXAMPLE)
    run = cli(
        "cases",
        "run",
        path,
        "--factory",
        "refund_agent:build_agent",
        "--tools",
        "refund_tools:TOOLS",
    )
    assert run.exit_code == 0, run.output


def test_secrets_are_never_written(ledger_server: Any, agent_name: str, tmp_path: Path) -> None:
    session = "s-secrets"
    with Ledger(
        ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None, redact=False
    ) as ledger:
        root = ledger.log(
            "user_message",
            {"text": "my key is sk-live-abcdefghijklmnop1234, call me at +1 415 555 0199"},
            session_id=session,
        )
        call = ledger.log(
            "tool_call",
            {"tool": "crm", "args": {"q": "x"}, "call_id": "c1"},
            session_id=session,
            parent_id=root,
        )
        ledger.log(
            "tool_result",
            {
                "tool": "crm",
                "call_id": "c1",
                "result": json.dumps(
                    {
                        "contact": {
                            "name": "Maria Lopez",
                            "session_token": "tok-secret-123",
                            "note": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
                        }
                    }
                ),
            },
            session_id=session,
            parent_id=call,
        )
        assert ledger.flush(10).complete
    out = tmp_path / "cases"
    result = cli(
        "cases",
        "export",
        "--url",
        ledger_server.url,
        "--api-key",
        ledger_server.api_key,
        "--agent",
        agent_name,
        "--session",
        session,
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    text = next(out.glob("*.json")).read_text()
    for secret in (
        "sk-live-abcdefghijklmnop1234",
        "tok-secret-123",
        "eyJhbGciOiJIUzI1NiJ9",
        "Maria",
        "Lopez",
        "555 0199",
    ):
        assert secret not in text, secret
    assert "[REDACTED]" in text


def test_broken_chain_blocks_export_unless_forced(
    server_factory: Any, payments: str, agent_name: str, tmp_path: Path
) -> None:
    server = server_factory()
    session = production.run_production_session(server.url, server.api_key, agent_name, payments)
    prod = Production(server.url, server.api_key, agent_name, session)
    server.stop()
    with sqlite3.connect(server.db) as sql:  # an insider edits a stored tool result
        changed = sql.execute(
            "UPDATE events SET event='tool_result_edited' WHERE agent=? AND event='tool_result'"
            " AND sequence_no=(SELECT MIN(sequence_no) FROM events WHERE agent=? AND "
            "event='tool_result')",
            (agent_name, agent_name),
        ).rowcount
    assert changed == 1
    server.start()
    out = tmp_path / "cases"
    refused = export(prod, out)
    assert refused.exit_code == 1, refused.output
    assert "broken" in refused.output and "--force" in refused.output
    assert not out.exists() or not list(out.glob("*.json"))
    forced = export(prod, out, "--force")
    assert forced.exit_code == 0, forced.output
    case = load_case(next(out.glob("*.json")))
    assert isinstance(case, Case) and case.chain_head is not None


def test_export_by_search_and_bad_input(production_session: Production, tmp_path: Path) -> None:
    out = tmp_path / "cases"
    found = cli(
        "cases",
        "export",
        *production_session.args(),
        "--search",
        "charged twice",
        "--limit",
        "5",
        "--out",
        out,
    )
    assert found.exit_code == 0, found.output
    assert load_case(next(out.glob("*.json"))).source_session == production_session.session
    missing = cli("cases", "export", *production_session.args(), "--out", out)
    assert missing.exit_code == 2 and "--session" in missing.output
    unknown = cli(
        "cases",
        "export",
        *production_session.args(),
        "--session",
        "nope",
        "--out",
        tmp_path / "none",
    )
    assert unknown.exit_code == 2 and "nope" in unknown.output
