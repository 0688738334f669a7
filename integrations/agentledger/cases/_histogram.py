"""``cases run --histogram FILE``: the similarity scores of this run next to the baseline's.

The candidate's answers scored against their source answers, binned over [0, 1]; with
``--baseline`` the same for the earlier report's runs, so a prompt change that moves the
distribution shows at a glance. matplotlib is imported only here (extra ``agentledger[plot]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentledger.cases._report import SuiteReport

__all__ = ["baseline_scores", "write_histogram"]


def baseline_scores(baseline: dict[str, Any]) -> list[float]:
    """The per-run similarity scores of an earlier JSON report (none in a version 1 report)."""
    scores: list[float] = []
    for case in baseline.get("cases") or []:
        for run in (case.get("run_details") or []) if isinstance(case, dict) else []:
            value = run.get("similarity") if isinstance(run, dict) else None
            if isinstance(value, int | float) and not isinstance(value, bool):
                scores.append(float(value))
    return scores


def write_histogram(
    report: SuiteReport, path: str | Path, baseline: Sequence[float] | None = None
) -> Path:
    """Draw the histogram to ``path`` (format from the suffix, e.g. ``.png``).

    Raises:
        ImportError: matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def shown(values: Sequence[float]) -> list[float]:  # rounding can put 1.0 a hair above
        return [min(1.0, max(0.0, v)) for v in values]

    current = shown(report.similarity.values() if report.similarity is not None else [])
    baseline = shown(baseline or [])
    bins = [i / 20 for i in range(21)]
    fig, axis = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    if baseline:
        axis.hist(list(baseline), bins=bins, alpha=0.55, label=f"baseline ({len(baseline)} runs)")
    axis.hist(current, bins=bins, alpha=0.55, label=f"this run ({len(current)} runs)")
    for gate in report.gates:
        if gate.name in ("min_mean_similarity", "min_similarity"):
            threshold = float(gate.required.rsplit(" ", 1)[-1])
            axis.axvline(threshold, linestyle="--", color="black", linewidth=1)
    embedder = report.similarity.embedder if report.similarity is not None else "off"
    axis.set_xlabel(f"similarity to the source answer ({embedder})")
    axis.set_ylabel("runs")
    axis.set_xlim(0, 1)
    axis.set_title(f"suite {report.suite_id}: {'passed' if report.gate_passed else 'failed'}")
    axis.legend(loc="upper left")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target)
    plt.close(fig)
    return target
