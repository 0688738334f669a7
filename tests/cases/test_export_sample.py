"""``agentledger cases export --sample``: a stratified, seeded draw from a real server's
sessions, the same files for the same seed, and the draw recorded in each case."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentledger.cases import allocate_strata, case_json_schema, load_case, load_cases
from agentledger.cases._candidates import read_candidates
from agentledger.client import Ledger

from .conftest import cli

pytestmark = pytest.mark.langchain

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)
#: 60 sessions: strata of 25, 18, 9 and 2, and 6 without the label
INTENTS: list[str | None] = (
    ["billing"] * 25 + ["refund"] * 18 + ["shipping"] * 9 + ["cancel"] * 2 + [None] * 6
)


@dataclass
class Corpus:
    url: str
    api_key: str
    agent: str
    #: session id -> (intent or None, last activity)
    sessions: dict[str, tuple[str | None, dt.datetime]]

    def export(self, *args: Any) -> Any:
        common = ["--url", self.url, "--api-key", self.api_key, "--agent", self.agent]
        return cli("cases", "export", *common, *args)

    def expected_sizes(self, since: dt.datetime | None = None) -> dict[str, int]:
        return dict(
            Counter(
                intent or "(none)"
                for intent, last in self.sessions.values()
                if since is None or last >= since
            )
        )


def _log_session(
    ledger: Ledger, sid: str, intent: str | None, start: dt.datetime, where: int
) -> dt.datetime:
    """One session: session_start, user_message, tool call and result, answer. The label goes
    into the session_start metadata, the user_message data or its metadata (``where``)."""
    label = {"intent": intent} if intent is not None else {}
    at = [start + dt.timedelta(seconds=s) for s in range(5)]
    root = ledger.log(
        "session_start",
        {"framework": "test"},
        session_id=sid,
        metadata=label if where == 0 else None,
        timestamp=at[0],
    )
    user = ledger.log(
        "user_message",
        {"text": f"help with my order {sid}", **(label if where == 1 else {})},
        session_id=sid,
        parent_id=root,
        metadata=label if where == 2 else None,
        timestamp=at[1],
    )
    call = ledger.log(
        "tool_call",
        {"tool": "lookup_order", "args": {"order_id": sid}, "call_id": f"c-{sid}"},
        session_id=sid,
        parent_id=user,
        timestamp=at[2],
    )
    ledger.log(
        "tool_result",
        {"tool": "lookup_order", "call_id": f"c-{sid}", "result": {"status": "shipped"}},
        session_id=sid,
        parent_id=call,
        timestamp=at[3],
    )
    ledger.log(
        "assistant_response",
        {"text": "Your order has shipped."},
        session_id=sid,
        parent_id=user,
        timestamp=at[4],
    )
    return at[4]


@pytest.fixture
def corpus(ledger_server: Any, agent_name: str) -> Corpus:
    rng = random.Random(11)
    intents = list(INTENTS)
    rng.shuffle(intents)
    sessions: dict[str, tuple[str | None, dt.datetime]] = {}
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        for i, intent in enumerate(intents):
            sid = f"s-{i:02d}"
            start = NOW - dt.timedelta(days=i, hours=rng.randrange(12))
            sessions[sid] = (intent, _log_session(ledger, sid, intent, start, i % 3))
        # no user_message: nothing to replay, so never a candidate
        ledger.log("session_start", {"framework": "test"}, session_id="no-input")
        assert ledger.flush(20).complete
    return Corpus(ledger_server.url, ledger_server.api_key, agent_name, sessions)


def _table(output: str) -> dict[str, tuple[int, int]]:
    rows: dict[str, tuple[int, int]] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            rows[parts[0]] = (int(parts[1]), int(parts[2]))
    return rows


def test_the_same_seed_exports_the_same_stratified_files(corpus: Corpus, tmp_path: Path) -> None:
    runs = []
    for name in ("first", "second"):
        out = tmp_path / name
        result = corpus.export("--sample", 12, "--stratify-by", "intent", "--seed", 7, "--out", out)
        assert result.exit_code == 0, result.output
        runs.append((out, result.output))
    files = [{p.name: p.read_bytes() for p in out.glob("*.json")} for out, _ in runs]
    assert len(files[0]) == 12 and files[0] == files[1]

    sizes = corpus.expected_sizes()
    shares = allocate_strata(sizes, 12)
    assert shares == {"billing": 5, "refund": 3, "shipping": 2, "cancel": 1, "(none)": 1}
    cases = [case for _, case in load_cases(runs[0][0])]
    drawn = Counter(case.selection.stratum for case in cases if case.selection is not None)
    assert drawn == {s: n for s, n in shares.items() if n}
    for case in cases:
        assert case.selection is not None and case.source_session is not None
        assert case.selection.method == "proportional" and case.selection.seed == 7
        assert case.selection.stratify_by == "intent"
        intent, _ = corpus.sessions[case.source_session]
        assert case.selection.stratum == (intent or "(none)")
    # the table on stderr names each stratum, what it had and what was drawn
    table = _table(runs[0][1])
    assert table == {
        **{s: (sizes[s], shares[s]) for s in sizes},
        "total": (60, 12),
    }
    assert "1 session without a user_message" in runs[0][1]

    other = corpus.export(
        "--sample", 12, "--stratify-by", "intent", "--seed", 8, "--out", tmp_path / "other"
    )
    assert other.exit_code == 0, other.output
    assert {p.name for p in (tmp_path / "other").glob("*.json")} != set(files[0])


def test_every_session_is_read_across_pages_with_its_label(corpus: Corpus) -> None:
    """Small pages: the cursor walks every event; labels from session_start metadata,
    user_message data and user_message metadata are all found."""
    with Ledger(corpus.url, corpus.api_key, corpus.agent, spill_dir=None) as ledger:
        scan = read_candidates(ledger, agent=corpus.agent, stratify_by="intent", page_size=7)
        unlabelled = read_candidates(ledger, agent=corpus.agent, page_size=1000)
    assert {c.session_id: (c.stratum, c.last_activity) for c in scan.candidates} == (
        corpus.sessions
    )
    assert scan.without_input == unlabelled.without_input == ["no-input"]
    assert {c.stratum for c in unlabelled.candidates} == {None}
    assert len(unlabelled.candidates) == 60


def test_dry_run_prints_the_draw_and_writes_nothing(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "cases"
    dry = corpus.export(
        "--per-stratum", 3, "--stratify-by", "intent", "--seed", 7, "--dry-run", "--out", out
    )
    assert dry.exit_code == 0, dry.output
    assert not out.exists()
    picked = [line for line in dry.stdout.splitlines() if line.startswith("s-")]
    assert len(picked) == 3 + 3 + 3 + 2 + 3 and len(set(picked)) == len(picked)
    assert Counter(corpus.sessions[s][0] or "(none)" for s in picked) == {
        "billing": 3,
        "refund": 3,
        "shipping": 3,
        "cancel": 2,
        "(none)": 3,
    }
    real = corpus.export("--per-stratum", 3, "--stratify-by", "intent", "--seed", 7, "--out", out)
    assert real.exit_code == 0, real.output
    assert sorted(load_case(p).source_session for p in out.glob("*.json")) == sorted(picked)


def test_window_and_recency_are_respected(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "cases"
    result = corpus.export(
        "--fraction",
        0.5,
        "--stratify-by",
        "intent",
        "--since",
        "470h",  # 19.6 days: two hours from the nearest session either side
        "--half-life-days",
        "3",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    since = NOW - dt.timedelta(hours=470)
    in_window = [sid for sid, (_, last) in corpus.sessions.items() if last >= since]
    cases = [case for _, case in load_cases(out)]
    assert len(cases) == round(len(in_window) / 2)
    for case in cases:
        assert case.source_session in in_window
        assert case.selection is not None
        assert case.selection.method == "fraction+recency"
        assert case.selection.half_life_days == 3.0 and case.selection.since is not None
    assert _table(result.output)["total"] == (len(in_window), len(cases))


def test_a_session_active_in_the_window_keeps_the_label_it_got_before(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    """The label and the user message were logged before --since, the last event after: the
    session is a candidate of its stratum."""
    with Ledger(ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None) as ledger:
        user = ledger.log(
            "user_message",
            {"text": "where is my parcel", "intent": "shipping"},
            session_id="long-running",
            timestamp=NOW - dt.timedelta(days=30),
        )
        ledger.log(
            "assistant_response",
            {"text": "On its way."},
            session_id="long-running",
            parent_id=user,
            timestamp=NOW - dt.timedelta(days=1),
        )
        ledger.log(
            "user_message",
            {"text": "old", "intent": "billing"},
            session_id="old",
            timestamp=NOW - dt.timedelta(days=30),
        )
        assert ledger.flush(20).complete
    base = ["--url", ledger_server.url, "--api-key", ledger_server.api_key, "--agent", agent_name]
    result = cli(
        "cases",
        "export",
        *base,
        "--fraction",
        1,
        "--stratify-by",
        "intent",
        "--since",
        "7d",
        "--dry-run",
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == ["long-running"]
    table = _table(result.output)
    assert table["shipping"] == (1, 1) and "billing" not in table
    until = cli(
        "cases",
        "export",
        *base,
        "--sample",
        5,
        "--until",
        "7d",
        "--dry-run",
        "--out",
        tmp_path,
    )
    assert until.exit_code == 0, until.output
    assert until.stdout.split() == ["old"]
    assert "1 session outside the window" in until.output


def test_bad_combinations_are_usage_errors(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "cases"
    for args, message in [
        (["--sample", 3, "--session", "s-01"], "--session"),
        (["--sample", 3, "--per-stratum", 2], "exactly one"),
        (["--stratify-by", "intent", "--session", "s-01"], "--stratify-by"),
        (["--sample", 3, "--since", "last week"], "neither a duration"),
        (["--per-stratum", 2], "--stratify-by"),
        (["--fraction", 0], "(0, 1]"),
        (["--sample", 3, "--since", "1d", "--until", "2d"], "empty window"),
    ]:
        result = corpus.export(*args, "--out", out)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
    assert not out.exists()


def test_selection_is_optional_and_in_the_schema(tmp_path: Path) -> None:
    schema = case_json_schema()
    assert "selection" in schema["properties"] and "selection" not in schema.get("required", [])
    path = tmp_path / "c.json"
    document = {
        "case_id": "c",
        "inputs": ["hi"],
        "selection": {"method": "proportional", "seed": 7, "stratum": "billing"},
    }
    path.write_text(json.dumps(document))
    case = load_case(path)
    assert case.selection is not None and case.selection.stratum == "billing"
    path.write_text(json.dumps({"case_id": "c", "inputs": ["hi"]}))
    assert load_case(path).selection is None
    printed = cli("cases", "schema")
    assert printed.exit_code == 0 and '"Selection"' in printed.stdout


def test_a_stratum_holding_personal_data_or_a_secret_is_not_written(
    ledger_server: Any, agent_name: str, tmp_path: Path
) -> None:
    with Ledger(
        ledger_server.url, ledger_server.api_key, agent_name, spill_dir=None, redact=False
    ) as ledger:
        for sid, email in [("a", "dana@example.org"), ("b", "li@example.org")]:
            token = {"session_token": "tok-1"} if sid == "a" else {}
            ledger.log(
                "user_message",
                {"text": f"hello, I am {email}"},
                session_id=sid,
                metadata={"contact": email, "customer_name": f"Maria {sid.upper()}x", **token},
            )
        assert ledger.flush(20).complete
    base = ["--url", ledger_server.url, "--api-key", ledger_server.api_key, "--agent", agent_name]
    for key in ("contact", "session_token", "customer_name"):
        out = tmp_path / key
        result = cli("cases", "export", *base, "--sample", 2, "--stratify-by", key, "--out", out)
        assert result.exit_code == 0, result.output
        cases = [case for _, case in load_cases(out)]
        text = "".join(p.read_text() for p in out.glob("*.json"))
        for value in ("dana@example.org", "tok-1", "Maria", "Ax"):
            assert value not in text, (key, value)
        strata = sorted(c.selection.stratum for c in cases if c.selection is not None)
        if key == "contact":
            assert all(s.endswith("@example.com") for s in strata), strata
        elif key == "session_token":
            assert strata == ["(none)", "[REDACTED]"]
        else:  # stand-ins are consistent within a case, not across cases
            assert len(strata) == 2 and not any("Maria" in s for s in strata), strata
