"""``agentledger cases forget --subject``: the case files exported from a subject's sessions are
found (by ``subject_ref``, by the value left in the file, by a session id naming the value) and
deleted with their own cassettes; the report lists each file and why (docs: Regression cases,
"Erasure")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentledger.cases import forget_cases, load_case, subject_ref_of
from agentledger.client import Ledger

from .conftest import cli

pytestmark = pytest.mark.langchain

EMAIL = "alice.smith@example.com"


def _session(ledger: Ledger, session: str, metadata: dict[str, Any] | None) -> None:
    root = ledger.log(
        "user_message", {"text": "where is my refund?"}, session_id=session, metadata=metadata
    )
    ledger.log("assistant_response", {"text": "on its way"}, session_id=session, parent_id=root)


def _export(server: Any, agent: str, session: str, out: Path) -> Path:
    """``agentledger cases export`` of one session; returns the case file."""
    result = cli(
        "cases",
        "export",
        "--url",
        server.url,
        "--api-key",
        server.api_key,
        "--agent",
        agent,
        "--session",
        session,
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    (path,) = out.glob("*.json")
    return path


@pytest.fixture
def exported(ledger_server: Any, agent_name: str, tmp_path: Path) -> dict[str, Path]:
    sessions = {
        "u2": ("s-u2", {"user_id": "u-2"}),
        "u23": ("s-u23", {"user_id": "u-23"}),
        "alice": (f"chat-{EMAIL}", None),
    }
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        for session, metadata in sessions.values():
            _session(ledger, session, metadata)
        assert ledger.flush(10).complete
    out = tmp_path / "cases"
    files: dict[str, Path] = {}
    for name, (session, _) in sessions.items():
        files[name] = _export(ledger_server, agent_name, session, out / name)
    return files


def test_forget_by_subject_ref_removes_only_that_subjects_cases(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    assert load_case(exported["u2"]).subject_ref == subject_ref_of("u-2")
    root = tmp_path / "cases"
    dry = cli("cases", "forget", root, "--subject", "u-2", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    report = json.loads(dry.stdout)
    assert report["dry_run"] is True and report["scanned"] == 3
    assert [(Path(r["path"]), r["matched"]) for r in report["removed"]] == [
        (exported["u2"], ["subject_ref"])
    ]
    assert exported["u2"].exists()

    done = cli("cases", "forget", root, "--subject", "u-2")
    assert done.exit_code == 0, done.output
    assert f"deleted {exported['u2']}" in done.stdout
    assert not exported["u2"].exists() and exported["u23"].exists() and exported["alice"].exists()
    again = forget_cases(root, "u-2")
    assert again.removed == [] and again.scanned == 2


def test_forget_finds_a_session_id_that_names_the_subject(exported: dict[str, Path]) -> None:
    outcome = forget_cases(exported["alice"].parent.parent, EMAIL)
    assert [case.path for case in outcome.removed] == [exported["alice"]]
    assert "source_session" in outcome.removed[0].matched
    assert not exported["alice"].exists()


def test_a_cassette_goes_with_its_case_unless_another_case_uses_it(tmp_path: Path) -> None:
    root = tmp_path / "cases"
    root.mkdir()
    for name, subject, cassette in (
        ("a", "u-1", "a.yaml"),
        ("b", "u-1", "shared.yaml"),
        ("c", "u-9", "shared.yaml"),
    ):
        (root / cassette).write_text("interactions: []\n")
        (root / f"{name}.json").write_text(
            json.dumps(
                {
                    "case_id": name,
                    "inputs": ["hi"],
                    "subject_ref": subject_ref_of(subject),
                    "cassette": {"path": cassette, "tools": ["t"]},
                }
            )
        )
    outcome = forget_cases(root, "u-1")
    assert sorted(c.case_id for c in outcome.removed) == ["a", "b"]
    assert not (root / "a.yaml").exists() and (root / "shared.yaml").exists()
    assert {c.case_id: c.cassette for c in outcome.removed} == {
        "a": (root / "a.yaml").resolve(),
        "b": None,
    }


def test_forget_mistakes_are_exit_2_with_a_message(tmp_path: Path) -> None:
    missing = cli("cases", "forget", tmp_path / "nope", "--subject", "u-1")
    assert missing.exit_code == 2 and "no such case file or directory" in missing.output
    (tmp_path / "empty").mkdir()
    empty = cli("cases", "forget", tmp_path / "empty", "--subject", "u-1")
    assert empty.exit_code == 0 and "0 of 0 case file(s)" in empty.output
    blank = cli("cases", "forget", tmp_path / "empty", "--subject", " ")
    assert blank.exit_code == 2 and "must not be empty" in blank.output
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.json").write_text("{")
    bad = cli("cases", "forget", tmp_path / "bad", "--subject", "u-1")
    assert bad.exit_code == 2 and "not valid JSON" in bad.output


def test_export_after_forget_invents_no_tool(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """An erased tool call is a tombstone without its tool name: the case leaves it out of
    ``must_call`` and the stubs (no tool called "tool"), an erased result becomes an error
    stub that says so, and the case is labelled ``erased-events``."""
    session = "s-erased"
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        root = ledger.log("user_message", {"text": "refund order 7"}, session_id=session)
        call = ledger.log_tool(
            "lookup", {"user_id": "u-9"}, call_id="c1", session_id=session, parent_id=root
        )
        ledger.log(
            "tool_result",
            {"tool": "lookup", "call_id": "c1", "result": "ok"},
            session_id=session,
            parent_id=call,
        )
        call2 = ledger.log_tool(
            "refund", {"order": 7}, call_id="c2", session_id=session, parent_id=root
        )
        ledger.log(
            "tool_result",
            {"tool": "refund", "call_id": "c2", "result": {"user_id": "u-9", "ok": True}},
            session_id=session,
            parent_id=call2,
        )
        ledger.log("assistant_response", {"text": "refunded"}, session_id=session, parent_id=root)
        assert ledger.flush(10).complete
        erased = ledger.forget("user_id", "u-9")
        assert erased.deleted_events == 2
    path = _export(ledger_server, agent_name, session, tmp_path / "cases")
    case = load_case(path)
    assert [check.tool for check in case.expect.must_call] == ["refund"]
    assert set(case.tool_stubs) == {"refund"}
    assert "erased by forget" in (case.tool_stubs["refund"][0].error or "")
    assert "erased-events" in case.labels
    assert '"tool": "tool"' not in json.dumps(case.expect.model_dump(mode="json"))
