"""Baseline-vs-recent bar charts for the agent page, drawn as server-side SVG geometry.

The baseline report (``GET /v1/agents/{agent}/baseline``) holds distributions as
``{label: count or share}`` objects for the baseline and the recent sessions. The report's exact
nesting belongs to that route, so this module finds the pairs instead of hard-coding them: two
objects of numbers whose paths differ only where one says ``baseline`` and the other ``recent``
(``{"event_types": {"baseline": {...}, "recent": {...}}}`` and
``{"baseline": {"event_types": {...}}, "recent": {...}}`` both work). Each side is normalised
to shares so counts and proportions draw alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Bar", "Chart", "baseline_charts", "report_metrics", "report_scalars"]

#: Labels drawn per chart (the largest shares); the rest are folded into "other".
MAX_BARS = 12
#: SVG geometry in px.
LABEL_W = 400
#: Label characters drawn (monospace 12 px ≈ 7.3 px each); longer ones lose their middle.
LABEL_CHARS = 52
BAR_W = 360
ROW_H = 24
TOP = 28


@dataclass(slots=True)
class Bar:
    """One label's share on each side, with precomputed SVG geometry."""

    label: str
    baseline: float
    recent: float
    y: float = 0.0
    short: str = ""
    baseline_w: float = 0.0
    recent_w: float = 0.0


@dataclass(slots=True)
class Chart:
    """A grouped horizontal bar chart."""

    title: str
    bars: list[Bar] = field(default_factory=list)
    width: int = LABEL_W + BAR_W + 70
    height: int = TOP

    @property
    def label_w(self) -> int:
        """Width of the label column."""
        return LABEL_W


def _is_distribution(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
            for v in value.values()
        )
    )


def _walk(
    value: Any, path: tuple[str, ...], out: dict[tuple[str, ...], Mapping[str, float]]
) -> None:
    if len(path) > 6:
        return
    if _is_distribution(value):
        out[path] = value
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            _walk(item, (*path, str(key)), out)


def _side(path: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    for i, segment in enumerate(path):
        lowered = segment.lower()
        for side in ("baseline", "recent"):
            if side in lowered:
                return side, (*path[:i], lowered.replace(side, "*"), *path[i + 1 :])
    return None


def _middle_cut(label: str) -> str:
    if len(label) <= LABEL_CHARS:
        return label
    half = (LABEL_CHARS - 1) // 2
    return label[:half] + "…" + label[-(LABEL_CHARS - 1 - half) :]


def _shares(dist: Mapping[str, float]) -> dict[str, float]:
    total = float(sum(dist.values()))
    return {str(k): (float(v) / total if total else 0.0) for k, v in dist.items()}


def baseline_charts(report: Mapping[str, Any]) -> list[Chart]:
    """Charts for every baseline/recent pair of distributions found in ``report``.

    Args:
        report: the decoded JSON of the baseline route.

    Returns:
        One :class:`Chart` per pair, titled by the shared part of the two paths.
    """
    found: dict[tuple[str, ...], Mapping[str, float]] = {}
    _walk(report, (), found)
    pairs: dict[tuple[str, ...], dict[str, Mapping[str, float]]] = {}
    for path, dist in found.items():
        side = _side(path)
        if side is not None:
            pairs.setdefault(side[1], {})[side[0]] = dist
    charts: list[Chart] = []
    for key, sides in pairs.items():
        if set(sides) != {"baseline", "recent"}:
            continue
        base, recent = _shares(sides["baseline"]), _shares(sides["recent"])
        labels = sorted(
            set(base) | set(recent), key=lambda k: (-max(base.get(k, 0), recent.get(k, 0)), k)
        )
        bars = [Bar(label, base.get(label, 0.0), recent.get(label, 0.0)) for label in labels]
        if len(bars) > MAX_BARS:
            rest = bars[MAX_BARS - 1 :]
            bars = bars[: MAX_BARS - 1]
            bars.append(
                Bar(
                    f"other ({len(rest)})",
                    sum(b.baseline for b in rest),
                    sum(b.recent for b in rest),
                )
            )
        top = max((max(b.baseline, b.recent) for b in bars), default=0.0) or 1.0
        for i, bar in enumerate(bars):
            bar.short = _middle_cut(bar.label)
            bar.y = TOP + i * ROW_H
            bar.baseline_w = round(BAR_W * bar.baseline / top, 1)
            bar.recent_w = round(BAR_W * bar.recent / top, 1)
        parts = [p.replace("*", "").replace("_", " ").strip() for p in key]
        title = " / ".join(p for p in parts if p) or "distribution"
        charts.append(Chart(title=title, bars=bars, height=TOP + len(bars) * ROW_H + 8))
    return charts


def report_scalars(report: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Top-level scalar fields of a report (verdict, scores, p-value...), in report order."""
    return [
        (str(k), v)
        for k, v in report.items()
        if v is None or isinstance(v, str | int | float | bool)
    ]


def report_metrics(report: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Numeric fields that ``report["baseline"]`` and ``report["recent"]`` both hold
    (events per session, duration, error rate, tokens...): ``[(name, baseline, recent)]``."""
    base, recent = report.get("baseline"), report.get("recent")
    if not isinstance(base, Mapping) or not isinstance(recent, Mapping):
        return []
    rows = []
    for key, value in base.items():
        other = recent.get(key)
        numeric = (
            isinstance(value, int | float | None)
            and isinstance(other, int | float | None)
            and not isinstance(value, bool)
            and not isinstance(other, bool)
        )
        if numeric and (value is not None or other is not None):
            rows.append((str(key), value, other))
    return rows
