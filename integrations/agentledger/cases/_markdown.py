"""A Markdown summary of a suite for a pull request (``cases run --markdown``).

The verdict first, then the corpus gates, the similarity distribution, the cases that failed
with what they expected and what they did, and the answers side by side (the source's and the
candidate's) for the runs that scored lowest. User text is escaped for tables and code spans so
an answer cannot break the layout or inject markup.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from agentledger.cases._checks import RunCheck
from agentledger.cases._report import CaseReport, SuiteReport

__all__ = ["markdown_summary", "write_markdown"]

#: Answer pairs shown, lowest similarity first.
PAIRS_SHOWN = 10
#: Characters of an answer shown in the table.
ANSWER_CHARS = 300


def _cell(text: str | None, limit: int = ANSWER_CHARS) -> str:
    """Text fit for one table cell: one line, pipes and HTML escaped, cut at ``limit``."""
    if text is None:
        return "—"
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[:limit] + "…"
    return (
        flat.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("|", "\\|")
        .replace("`", "\\`")
    )


def compare_url(report: SuiteReport, case: CaseReport, run: RunCheck) -> str | None:
    """The dashboard page showing the run beside the production session it replays, when the
    ledger's URL and both sessions are known."""
    session = run.extra.get("session_id")
    if not report.ledger_url or not case.source_session or not isinstance(session, str):
        return None
    query = {"a": case.source_session, "agent_a": case.source_agent or "", "b": session}
    query["agent_b"] = report.agent or ""
    return f"{report.ledger_url.rstrip('/')}/ui/compare?{urlencode(query)}"


def markdown_summary(report: SuiteReport) -> str:
    """The summary as Markdown text."""
    verdict = "✅ gate passed" if report.gate_passed else "❌ gate failed"
    passed = sum(1 for c in report.cases if c.gate_passed)
    lines = [
        f"## Regression cases: {verdict}",
        "",
        f"{passed} of {len(report.cases)} cases passed, {report.runs_per_case} runs each "
        f"(run `{_cell(report.suite_id, 80)}`).",
        "",
    ]
    if report.gates:
        lines += ["| corpus gate | required | measured | result |", "|---|---|---|---|"]
        for gate in report.gates:
            mark = "passed" if gate.passed else "**failed**"
            lines.append(
                f"| {gate.name} | {_cell(gate.required)} | {_cell(gate.measured)} | {mark} |"
            )
        lines.append("")
    similarity = report.similarity
    if similarity is not None:
        summary = similarity.to_json()
        if summary["runs_scored"]:
            lines.append(
                f"Similarity to the source answers ({_cell(similarity.embedder, 80)}): mean "
                f"{summary['mean']:.3f}, median {summary['median']:.3f}, p10 "
                f"{summary['p10']:.3f}, lowest {summary['min']:.3f} over "
                f"{summary['runs_scored']} runs."
            )
        if similarity.unscored:
            lines.append(f"{len(similarity.unscored)} runs could not be scored.")
        lines.append("")
    failed = [c for c in report.cases if not c.gate_passed]
    if failed:
        lines += ["### Failed cases", ""]
        for case in failed:
            lines.append(
                f"**{_cell(case.case_id, 120)}**: {case.passed_runs}/{len(case.runs)} runs"
            )
            for stats in case.failed_checks:
                lines.append(
                    f"- `{_cell(stats.check_id, 120)}`: expected {_cell(stats.expected)}; "
                    f"actual {_cell(stats.actual)}"
                )
            lines.append("")
    pairs = []
    for case in report.cases:
        for index, run in enumerate(case.runs, start=1):
            score = run.extra.get("similarity")
            if case.source_answer is not None:
                pairs.append((score, case, index, run))
    pairs.sort(key=lambda p: (p[0] is not None, p[0] if p[0] is not None else 0.0))
    if pairs:
        lines += [
            "### Answers, lowest similarity first",
            "",
            "| case | run | similarity | finish | source answer | candidate answer | compare |",
            "|---|---|---|---|---|---|---|",
        ]
        for score, case, index, run in pairs[:PAIRS_SHOWN]:
            shown = f"{score:.3f}" if isinstance(score, float) else "—"
            link = compare_url(report, case, run)
            # the URL's query is percent-encoded: no pipe, bracket or space can break the cell
            compare = f"[side by side]({link})" if link else "—"
            lines.append(
                f"| {_cell(case.case_id, 80)} | {index} | {shown} | "
                f"{_cell(run.extra.get('finish_reason'), 40)} | {_cell(case.source_answer)} | "
                f"{_cell(run.answer)} | {compare} |"
            )
        lines.append("")
    return "\n".join(lines)


def write_markdown(report: SuiteReport, path: str | Path) -> Path:
    """Write :func:`markdown_summary` to ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(markdown_summary(report) + "\n", encoding="utf-8")
    return target
