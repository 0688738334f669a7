"""The suite report: per-check pass rates, flaky cases, divergence, baseline changes.

One :class:`SuiteReport` holds a :class:`CaseReport` per case; each aggregates the
:class:`~agentledger.cases._checks.RunCheck` of its runs. The gate passes when
every check of every case meets its ``min_pass_rate``. Outputs: :meth:`SuiteReport.to_json`
(``--report``; also the ``--baseline`` input), :func:`write_junit` (``--junit``; one
``testcase`` per case) and :func:`print_summary` (a rich table).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agentledger.cases._checks import CheckResult, RunCheck
from agentledger.cases._divergence import (
    Divergence,
    divergence_json,
    divergence_lines,
    divergence_summary,
)
from agentledger.cases._gate import GateResult, SimilarityStats

__all__ = [
    "REPORT_VERSION",
    "CaseReport",
    "CheckStats",
    "SuiteReport",
    "load_baseline",
    "print_summary",
    "write_junit",
]

#: Version of the JSON report format.
REPORT_VERSION = 2


@dataclass
class CheckStats:
    """One check over all runs of a case: ``passes`` of ``evaluated`` runs (``skipped``
    runs did not evaluate it), the first failing run's ``expected``/``actual``."""

    check_id: str
    min_pass_rate: float
    safety: bool
    expected: str
    passes: int = 0
    evaluated: int = 0
    skipped: int = 0
    actual: str = ""
    failed_seen: bool = False

    @property
    def pass_rate(self) -> float | None:
        """passes / evaluated, ``None`` when no run evaluated it."""
        return self.passes / self.evaluated if self.evaluated else None

    @property
    def met(self) -> bool:
        """The rate reaches ``min_pass_rate`` (a check no run evaluated is met)."""
        rate = self.pass_rate
        return rate is None or rate + 1e-9 >= self.min_pass_rate

    def add(self, result: CheckResult) -> None:
        """Count one run's result (``actual`` keeps the first failure's text)."""
        if result.passed is None:
            self.skipped += 1
            self.actual = self.actual or result.actual
            return
        self.evaluated += 1
        if result.passed:
            self.passes += 1
            if not self.failed_seen:
                self.actual = self.actual or result.actual
        elif not self.failed_seen:
            self.actual = result.actual
            self.failed_seen = True


@dataclass
class CaseReport:
    """All runs of one case."""

    case_id: str
    file: str
    runs: list[RunCheck] = field(default_factory=list)
    checks: dict[str, CheckStats] = field(default_factory=dict)
    source_answer: str | None = None
    #: the production session the case was exported from, and its agent
    source_session: str | None = None
    source_agent: str | None = None

    def add(self, run: RunCheck) -> None:
        """Count one run."""
        self.runs.append(run)
        for result in run.checks:
            stats = self.checks.get(result.check_id)
            if stats is None:
                stats = CheckStats(
                    result.check_id, result.min_pass_rate, result.safety, result.expected
                )
                self.checks[result.check_id] = stats
            stats.add(result)

    @property
    def passed_runs(self) -> int:
        """Runs in which no check failed."""
        return sum(1 for r in self.runs if r.passed)

    @property
    def flaky(self) -> bool:
        """Passed some runs and failed others."""
        return 0 < self.passed_runs < len(self.runs)

    @property
    def gate_passed(self) -> bool:
        """Every check meets its ``min_pass_rate``."""
        return all(s.met for s in self.checks.values())

    @property
    def failed_checks(self) -> list[CheckStats]:
        """Checks below their ``min_pass_rate``."""
        return [s for s in self.checks.values() if not s.met]

    @property
    def first_divergence(self) -> tuple[int, Divergence] | None:
        """(run index, divergence) of the first failing run that left the source path, else
        of the first run that did."""
        ordered = [r for r in self.runs if not r.passed] + [r for r in self.runs if r.passed]
        for run in ordered:
            if run.divergence is not None:
                return self.runs.index(run), run.divergence
        return None

    def status(self) -> str:
        """``passed``, ``flaky`` (gate met or not, mixed runs) or ``failed``."""
        if self.flaky:
            return "flaky"
        return "passed" if self.gate_passed else "failed"

    def failure_message(self) -> str:
        """Readable text naming each failing check, expected and actual, and the path."""
        lines = [f"case {self.case_id}: {self.passed_runs}/{len(self.runs)} runs passed"]
        for stats in self.failed_checks:
            rate = stats.pass_rate or 0.0
            lines.append(
                f"  check {stats.check_id}: pass rate {rate:.0%} < {stats.min_pass_rate:.0%}; "
                f"expected {stats.expected}; actual {stats.actual}"
            )
        failing = next((r for r in self.runs if not r.passed), None)
        if failing is not None:
            lines.append("  actual path: " + (" -> ".join(failing.path) or "(nothing)"))
            if failing.error:
                lines.append(f"  agent error: {failing.error}")
        found = self.first_divergence
        if found is not None:
            lines.extend(divergence_lines(found[0] + 1, found[1]))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The case's part of the JSON report."""
        found = self.first_divergence
        return {
            "case_id": self.case_id,
            "file": self.file,
            "status": self.status(),
            "gate_passed": self.gate_passed,
            "runs": len(self.runs),
            "passed_runs": self.passed_runs,
            "pass_rate": self.passed_runs / len(self.runs) if self.runs else None,
            "flaky": self.flaky,
            "checks": [
                {
                    "check_id": s.check_id,
                    "pass_rate": s.pass_rate,
                    "passes": s.passes,
                    "evaluated": s.evaluated,
                    "skipped": s.skipped,
                    "min_pass_rate": s.min_pass_rate,
                    "safety": s.safety,
                    "met": s.met,
                    "expected": s.expected,
                    "actual": s.actual,
                }
                for s in self.checks.values()
            ],
            "first_divergence": None if found is None else divergence_json(found[0] + 1, found[1]),
            "source_answer": self.source_answer,
            "source_session": self.source_session,
            "source_agent": self.source_agent,
            "run_details": [
                {
                    "run": i + 1,
                    "passed": r.passed,
                    "path": r.path,
                    "answer": r.answer,
                    "similarity": r.extra.get("similarity"),
                    "finish_reason": r.extra.get("finish_reason"),
                    "model_calls": r.extra.get("model_calls"),
                    "truncated_calls": r.extra.get("truncated_calls"),
                    "refused": r.extra.get("refused"),
                    "models": r.extra.get("models"),
                    "served_models": r.extra.get("served_models"),
                    "model_changed": r.extra.get("model_changed"),
                    "error": r.error,
                    "session_id": r.extra.get("session_id"),
                    "reused": bool(r.extra.get("reused")),
                    "failures": [c.check_id for c in r.failures],
                }
                for i, r in enumerate(self.runs)
            ],
        }


@dataclass
class SuiteReport:
    """Every case of one ``cases run``; ``changes`` is filled by :meth:`compare`."""

    suite_id: str
    runs_per_case: int
    cases: list[CaseReport] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    ledger_url: str | None = None
    agent: str | None = None
    similarity: SimilarityStats | None = None
    gates: list[GateResult] = field(default_factory=list)

    @property
    def gate_passed(self) -> bool:
        """Every check of every case meets its ``min_pass_rate`` and every corpus gate
        passed."""
        return all(c.gate_passed for c in self.cases) and all(g.passed for g in self.gates)

    def compare(self, baseline: dict[str, Any]) -> list[dict[str, Any]]:
        """Cases whose status or check pass rates changed since ``baseline`` (a JSON report).

        Returns (and stores in ``changes``) items ``{"case_id", "before", "after",
        "checks": [{"check_id", "before", "after"}]}``; ``before``/``after`` are statuses,
        ``"absent"`` for a case only one side has.
        """
        old = {c["case_id"]: c for c in baseline.get("cases", []) if isinstance(c, dict)}
        changes: list[dict[str, Any]] = []
        for case in self.cases:
            before = old.pop(case.case_id, None)
            now = case.to_json()
            if before is None:
                changes.append(
                    {"case_id": case.case_id, "before": "absent", "after": now["status"]}
                )
                continue
            old_rates = {c["check_id"]: c.get("pass_rate") for c in before.get("checks", [])}
            check_changes = [
                {"check_id": c["check_id"], "before": old_rates.get(c["check_id"]), "after": r}
                for c in now["checks"]
                if (r := c["pass_rate"]) != old_rates.get(c["check_id"])
            ]
            if before.get("status") != now["status"] or check_changes:
                changes.append(
                    {
                        "case_id": case.case_id,
                        "before": before.get("status"),
                        "after": now["status"],
                        "checks": check_changes,
                    }
                )
        for case_id, before in old.items():
            changes.append({"case_id": case_id, "before": before.get("status"), "after": "absent"})
        self.changes = changes
        return changes

    def to_json(self) -> dict[str, Any]:
        """The JSON report (``--report``), version :data:`REPORT_VERSION`."""
        return {
            "report_version": REPORT_VERSION,
            "suite_id": self.suite_id,
            "runs_per_case": self.runs_per_case,
            "ledger_url": self.ledger_url,
            "agent": self.agent,
            "gate_passed": self.gate_passed,
            "gates": [g.to_json() for g in self.gates],
            "similarity": self.similarity.to_json() if self.similarity is not None else None,
            "cases": [c.to_json() for c in self.cases],
            "flaky_cases": [c.case_id for c in self.cases if c.flaky],
            "failed_cases": [c.case_id for c in self.cases if not c.gate_passed],
            "changes": self.changes,
        }

    def write_json(self, path: str | Path) -> Path:
        """Write :meth:`to_json` to ``path``."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")
        return target


def load_baseline(path: str | Path) -> dict[str, Any]:
    """Read an earlier JSON report.

    Raises:
        ValueError: unreadable, not JSON, or not a report (no ``cases`` list).
    """
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: cannot read the baseline report: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cases"), list):
        raise ValueError(f"{path}: field 'cases': a baseline report needs a list of cases")
    return document


def write_junit(report: SuiteReport, path: str | Path) -> Path:
    """JUnit XML: one ``testsuite`` ``agentledger-cases``, one ``testcase`` per case, a
    ``failure`` (message: the failing checks) when the case's gate fails."""
    failures = sum(1 for c in report.cases if not c.gate_passed)
    suite = ET.Element(
        "testsuite",
        name="agentledger-cases",
        tests=str(len(report.cases)),
        failures=str(failures),
        errors="0",
    )
    for case in report.cases:
        element = ET.SubElement(suite, "testcase", classname="agentledger.cases", name=case.case_id)
        if not case.gate_passed:
            message = "failed checks: " + ", ".join(s.check_id for s in case.failed_checks)
            found = case.first_divergence
            if found is not None:
                message += "; first divergent " + divergence_summary(found[1])
            failure = ET.SubElement(element, "failure", message=message)
            failure.text = case.failure_message()
        elif case.flaky:
            out = ET.SubElement(element, "system-out")
            out.text = f"flaky: {case.passed_runs}/{len(case.runs)} runs passed"
    if report.gates:  # the corpus gates as one more test case
        element = ET.SubElement(
            suite, "testcase", classname="agentledger.cases", name="corpus-gates"
        )
        failed = [g for g in report.gates if not g.passed]
        if failed:
            failure = ET.SubElement(
                element, "failure", message="failed gates: " + ", ".join(g.name for g in failed)
            )
            failure.text = "\n".join(
                f"{g.name}: required {g.required}; measured {g.measured}" for g in failed
            )
        suite.set("tests", str(len(report.cases) + 1))
        suite.set("failures", str(failures + (1 if failed else 0)))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(target, encoding="utf-8", xml_declaration=True)
    return target


def print_summary(report: SuiteReport, console: Console) -> None:
    """A table: case, status, runs passed, failing checks with their rates, divergence."""
    table = Table(title=f"regression cases ({report.runs_per_case} runs each)")
    table.add_column("case", overflow="fold")
    table.add_column("status")
    table.add_column("runs passed", justify="right")
    table.add_column("checks below min_pass_rate")
    table.add_column("first divergent step")
    styles = {"passed": "green", "flaky": "yellow", "failed": "red"}
    for case in report.cases:
        status = case.status()
        failing = "; ".join(
            f"{s.check_id} {(s.pass_rate or 0.0):.0%} (need {s.min_pass_rate:.0%}): {s.actual}"
            for s in case.failed_checks
        )
        found = case.first_divergence
        divergence = divergence_summary(found[1]) if found else ""
        table.add_row(
            escape(case.case_id),
            f"[{styles[status]}]{status}[/]",
            f"{case.passed_runs}/{len(case.runs)}",
            escape(failing),
            escape(divergence),
        )
    console.print(table)
    for change in report.changes:
        console.print(
            f"changed since baseline: {escape(change['case_id'])}: "
            f"{change['before']} -> {change['after']}"
        )
    if report.similarity is not None and report.similarity.scores:
        values = report.similarity.values()
        console.print(
            f"similarity to the source answers ({escape(report.similarity.embedder)}): "
            f"mean {sum(values) / len(values):.3f}, lowest {min(values):.3f} "
            f"over {len(values)} runs"
        )
    for gate in report.gates:
        mark = "[green]passed[/]" if gate.passed else "[red]FAILED[/]"
        console.print(
            f"corpus gate {gate.name}: {mark}: required {escape(gate.required)}; "
            f"measured {escape(gate.measured)}",
            soft_wrap=True,
        )
    verdict = "[bold green]gate passed[/]" if report.gate_passed else "[bold red]gate failed[/]"
    console.print(verdict)
