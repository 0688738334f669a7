"""A replay run beside the production session it replays, in the dashboard: the run's session
page names its source and links to ``/ui/compare``, which aligns the two tool paths and shows
both answers; the PR summary links to the same page. docs/pages/regression-cases.md "5. Gate
a prompt or model change" and docs/pages/dashboard.md "Compare two sessions"."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from . import model_server, replay_agent
from .conftest import cli

pytestmark = pytest.mark.langchain

RUN = ["--factory", "cases.replay_agent:build", "--tools", "cases.replay_agent:TOOLS"]


def _page(server: Any, path: str, **params: str) -> str:
    url = server.url + path
    if params:  # an empty params mapping would replace the query the path carries
        url += "?" + urlencode(params)
    response = httpx.get(url, cookies=server.ui_cookies(), timeout=30.0)
    assert response.status_code == 200, response.text
    return response.text


def _replay(case_dir: Path, tmp_path: Path, prompt: str, server: Any) -> tuple[dict[str, Any], str]:
    """One run of the case with ``prompt``, logged to ``server`` (where the production
    session is); its report's case and the PR summary."""
    prompt_file = tmp_path / f"prompt-{abs(hash(prompt))}.txt"
    prompt_file.write_text(prompt, encoding="utf-8")
    report, summary = tmp_path / "report.json", tmp_path / "summary.md"
    cli(
        "cases",
        "run",
        case_dir,
        *RUN,
        "--system-prompt",
        prompt_file,
        "--no-similarity",
        "--report",
        report,
        "--markdown",
        summary,
        "--url",
        server.url,
        "--api-key",
        server.api_key,
    )
    body = json.loads(report.read_text())
    (case,) = body["cases"]
    case["agent"] = body["agent"]
    return case, summary.read_text()


def _compare_path(page: str) -> str:
    match = re.search(r'id="compare-link" href="([^"]+)"', page)
    assert match, "the run's session page links to no comparison"
    return html.unescape(match.group(1))


def test_a_replay_run_is_shown_beside_its_source_session(
    case_dir: Path, model: model_server.ModelServer, ledger_server: Any, tmp_path: Path
) -> None:
    case, summary = _replay(case_dir, tmp_path, replay_agent.PRODUCTION_PROMPT, ledger_server)
    assert case["source_session"] == "prod-1"
    run_session = case["run_details"][0]["session_id"]

    page = _page(ledger_server, f"/ui/sessions/{run_session}", agent=case["agent"])
    assert f"case <code>{case['case_id']}</code>" in page
    assert "/ui/sessions/prod-1" in page
    link = _compare_path(page)
    assert link.startswith("/ui/compare?")

    compare = _page(ledger_server, link)
    assert "<code>prod-1</code>" in compare and f"<code>{run_session}</code>" in compare
    assert "The tool paths are the same (2 calls)." in compare
    assert compare.count("<code>lookup_order({&#34;order_id&#34;:&#34;A1234&#34;})</code>") == 2
    answers = re.findall(r'<pre class="answer" id="answer-[ab]">(.*?)</pre>', compare, re.S)
    assert answers == [html.escape(model_server.ANSWER, quote=False)] * 2

    # the PR summary links to the same page on the ledger the run was logged to
    (url,) = re.findall(r"\[side by side\]\(([^)]+)\)", summary)
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}" == ledger_server.url
    linked = urlsplit(link)
    assert parts.path == linked.path == "/ui/compare"
    assert parse_qs(parts.query) == parse_qs(linked.query)


def test_the_comparison_marks_where_a_prompt_change_parts_the_paths(
    case_dir: Path, model: model_server.ModelServer, ledger_server: Any, tmp_path: Path
) -> None:
    # a prompt that does not ask for verification: the candidate skips it
    case, _ = _replay(case_dir, tmp_path, "You are a refund agent.", ledger_server)
    run_session = case["run_details"][0]["session_id"]
    page = _page(ledger_server, f"/ui/sessions/{run_session}", agent=case["agent"])
    compare = _page(ledger_server, _compare_path(page))
    assert "The paths part at call 2." in compare
    first = re.search(r'<tr class="differs first">(.*?)</tr>', compare, re.S)
    assert first is not None
    assert "verify_charge" in first.group(1)  # production verified; the candidate did not
    assert 'class="differs"><th>prompt versions</th>' in compare


def test_comparing_a_session_that_does_not_exist_is_a_404_page(
    case_dir: Path, ledger_server: Any
) -> None:
    response = httpx.get(
        ledger_server.url + "/ui/compare",
        params={"a": "prod-1", "b": "no-such-session"},
        cookies=ledger_server.ui_cookies(),
        timeout=30.0,
    )
    assert response.status_code == 404
    assert "no events in session" in response.text
    missing = httpx.get(
        ledger_server.url + "/ui/compare",
        params={"a": "prod-1"},
        cookies=ledger_server.ui_cookies(),
        timeout=30.0,
    )
    assert missing.status_code == 422
    assert missing.json()["detail"][0]["loc"] == ["query", "b"]
