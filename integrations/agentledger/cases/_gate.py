"""Corpus-level gates over every run of a suite: answer similarity to the source, truncations.

Per-case checks say whether each run did the right things; these say whether the candidate, over
the whole corpus, still answers like production did. Every gate fails closed: a gate asked for
whose measure cannot be computed (no embeddings, no run with a source answer, no run that
recorded a ``finish_reason``) fails and says why, it never passes for lack of data.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentledger.cases._checks import TRUNCATED_REASONS

__all__ = ["GateOptions", "GateResult", "SimilarityStats", "evaluate_gates"]

#: Bins of the similarity histogram in the report (equal width over [0, 1]).
HISTOGRAM_BINS = 10


@dataclass(frozen=True)
class GateOptions:
    """The corpus gates asked for (``None``: not asked)."""

    min_mean_similarity: float | None = None
    min_similarity: float | None = None
    max_truncations: int | None = None
    max_refusal_rate: float | None = None

    @property
    def needs_similarity(self) -> bool:
        """A similarity gate is asked for."""
        return self.min_mean_similarity is not None or self.min_similarity is not None


@dataclass(frozen=True)
class GateResult:
    """One corpus gate: what was required, what was measured, whether it passed."""

    name: str
    required: str
    measured: str
    passed: bool

    def to_json(self) -> dict[str, Any]:
        """The gate's part of the JSON report."""
        return {
            "gate": self.name,
            "required": self.required,
            "measured": self.measured,
            "passed": self.passed,
        }


@dataclass
class SimilarityStats:
    """Similarity of each run's answer to its case's source answer, over the suite.

    ``scores`` holds one ``(case_id, run, score)`` per scored run; ``unscored`` the runs that
    have a source answer but no score, with the reason (``(case_id, run, reason)``).
    """

    embedder: str
    scores: list[tuple[str, int, float]] = field(default_factory=list)
    unscored: list[tuple[str, int, str]] = field(default_factory=list)

    def values(self) -> list[float]:
        """The scores alone."""
        return [score for _, _, score in self.scores]

    def histogram(self) -> list[dict[str, Any]]:
        """Counts per bin of width 1/:data:`HISTOGRAM_BINS` over [0, 1] (a score below 0
        counts in the first bin, 1.0 in the last)."""
        counts = [0] * HISTOGRAM_BINS
        for value in self.values():
            index = min(HISTOGRAM_BINS - 1, max(0, int(value * HISTOGRAM_BINS)))
            counts[index] += 1
        return [
            {"from": i / HISTOGRAM_BINS, "to": (i + 1) / HISTOGRAM_BINS, "runs": count}
            for i, count in enumerate(counts)
        ]

    def to_json(self) -> dict[str, Any]:
        """The report's ``similarity`` section."""
        values = self.values()
        summary: dict[str, Any] = {
            "embedder": self.embedder,
            "runs_scored": len(values),
            "runs_unscored": len(self.unscored),
            "mean": statistics.fmean(values) if values else None,
            "min": min(values) if values else None,
            "p10": _quantile(values, 0.1),
            "median": statistics.median(values) if values else None,
            "max": max(values) if values else None,
            "histogram": self.histogram(),
            "unscored": [
                {"case_id": case_id, "run": run, "reason": reason}
                for case_id, run, reason in self.unscored
            ],
        }
        return summary


def _quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by linear interpolation between closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def evaluate_gates(
    options: GateOptions,
    similarity: SimilarityStats | None,
    finish_reasons: Sequence[str | None],
    refusals: Sequence[bool | None] = (),
) -> list[GateResult]:
    """The gates of ``options`` over the suite's measures.

    Args:
        options: the gates asked for.
        similarity: the scores (``None`` when similarity is turned off).
        finish_reasons: the final answer's ``finish_reason`` of every run (``None``: not
            recorded).
        refusals: per run, whether its answer declined (``None``: the run gave no answer).
    """
    results: list[GateResult] = []
    values = similarity.values() if similarity is not None else []
    why_none = _why_no_scores(similarity)
    if options.min_mean_similarity is not None:
        required = f"mean similarity >= {options.min_mean_similarity:.3f}"
        if not values:
            results.append(GateResult("min_mean_similarity", required, why_none, False))
        else:
            mean = statistics.fmean(values)
            measured = f"{mean:.3f} over {len(values)} runs"
            if similarity is not None and similarity.unscored:
                measured += f" ({len(similarity.unscored)} runs could not be scored)"
            passed = mean + 1e-12 >= options.min_mean_similarity and not (
                similarity is not None and similarity.unscored
            )
            results.append(GateResult("min_mean_similarity", required, measured, passed))
    if options.min_similarity is not None:
        required = f"every run's similarity >= {options.min_similarity:.3f}"
        if not values or similarity is None:
            results.append(GateResult("min_similarity", required, why_none, False))
        else:
            case_id, run, worst = min(similarity.scores, key=lambda s: s[2])
            below = sum(1 for v in values if v + 1e-12 < options.min_similarity)
            measured = f"lowest {worst:.3f} ({case_id} run {run}); {below} runs below"
            if similarity.unscored:
                measured += f"; {len(similarity.unscored)} runs could not be scored"
            passed = below == 0 and not similarity.unscored
            results.append(GateResult("min_similarity", required, measured, passed))
    if options.max_truncations is not None:
        required = f"at most {options.max_truncations} truncated final answers"
        known = [r for r in finish_reasons if r is not None]
        if not known:
            measured = "cannot compute: no run recorded a finish_reason"
            results.append(GateResult("max_truncations", required, measured, False))
        else:
            cut = sum(1 for r in known if r.lower() in TRUNCATED_REASONS)
            measured = f"{cut} of {len(known)} runs"
            unknown = len(finish_reasons) - len(known)
            if unknown:
                measured += f" ({unknown} runs recorded no finish_reason)"
            results.append(
                GateResult("max_truncations", required, measured, cut <= options.max_truncations)
            )
    if options.max_refusal_rate is not None:
        required = f"refusal rate <= {options.max_refusal_rate:.0%}"
        answered = [r for r in refusals if r is not None]
        if not answered:
            measured = "cannot compute: no run gave an answer"
            results.append(GateResult("max_refusal_rate", required, measured, False))
        else:
            rate = sum(answered) / len(answered)
            measured = f"{rate:.0%} ({sum(answered)} of {len(answered)} answers)"
            passed = rate <= options.max_refusal_rate + 1e-12
            results.append(GateResult("max_refusal_rate", required, measured, passed))
    return results


def _why_no_scores(similarity: SimilarityStats | None) -> str:
    if similarity is None:
        return "cannot compute: similarity is turned off (--no-similarity)"
    if similarity.unscored:
        return "cannot compute: " + similarity.unscored[0][2]
    return "cannot compute: no run has a case with a source answer"
