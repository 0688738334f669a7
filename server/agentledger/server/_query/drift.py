"""Baselines and behaviour drift (``/v1/agents/{agent}/baseline`` and ``/behavior-change``):
sessions reduced to shapes (:func:`session_shapes`), recent against baseline compared by
:func:`compare` (Jensen–Shannon distance, chi-square, Fisher's test per step).

Design (the tests and the verdict thresholds): ``docs/design/server-drift.md``.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import chain
from typing import Any

__all__ = [
    "ALPHA",
    "MIN_SESSIONS",
    "EventRow",
    "SessionShape",
    "compare",
    "label_of",
    "session_shapes",
]

#: Significance level of every test (family-wise for the step tests).
ALPHA = 0.01
#: Sessions needed on each side before anything is concluded.
MIN_SESSIONS = 10
_STEP_COMMON = 0.9
_STEP_RARE = 0.02
_STEP_MIN_CHANGE = 0.1
_MIN_CELL = 5


@dataclass(slots=True)
class EventRow:
    """One event as the drift analysis needs it (``data`` may be ``None`` when not needed)."""

    session_id: str
    event_id: str
    parent_id: str | None
    event: str
    timestamp: str
    data: dict[str, Any] | None


@dataclass(slots=True)
class SessionShape:
    """What one session did, reduced for comparison (sequences in time order)."""

    session_id: str
    started_at: str
    ended_at: str
    event_count: int
    label_seq: list[str] = field(default_factory=list)
    transition_seq: list[str] = field(default_factory=list)
    type_seq: list[str] = field(default_factory=list)
    errors: int = 0
    tokens: int | None = None
    depth: int = 0
    duration_s: float = 0.0
    #: the ``prompt_hash`` values of the session's model calls, first use first
    prompt_hashes: list[str] = field(default_factory=list)
    #: the models its calls asked for (``llm_start.data.model``), first use first
    models: list[str] = field(default_factory=list)

    @property
    def labels(self) -> Counter[str]:
        """Label counts."""
        return Counter(self.label_seq)

    @property
    def transitions(self) -> Counter[str]:
        """Transition counts."""
        return Counter(self.transition_seq)

    @property
    def event_types(self) -> Counter[str]:
        """Event-type counts."""
        return Counter(self.type_seq)


def _dt(ts: str) -> datetime:
    return datetime.fromisoformat(ts)


def label_of(event: str, data: dict[str, Any] | None) -> str:
    """``event`` or ``event:name`` for tool and step events (``data.tool`` / ``data.name``)."""
    if data is not None:
        if event.startswith("tool_"):
            name = data.get("tool")
        elif event.startswith("step_"):
            name = data.get("name")
        else:
            name = None
        if isinstance(name, str) and name:
            return f"{event}:{name[:100]}"
    return event


def _tokens(data: dict[str, Any] | None) -> int | None:
    if not data:
        return None
    usage = data.get("token_usage")
    if not isinstance(usage, dict):
        return None
    total = 0
    seen = False
    for key in ("input_tokens", "output_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
            seen = True
    return total if seen else None


def _note(values: list[str], value: Any) -> None:
    if isinstance(value, str) and value and value not in values:
        values.append(value[:200])


def _configuration(shape: SessionShape, event: str, data: dict[str, Any] | None) -> None:
    """Record the prompt version and model an ``llm_start`` was made with."""
    if event == "llm_start" and data:
        _note(shape.prompt_hashes, data.get("prompt_hash"))
        _note(shape.models, data.get("model"))


def session_shapes(rows: Iterable[EventRow]) -> list[SessionShape]:
    """Group rows (any order) by session and reduce each session; sorted by start time."""
    by_session: dict[str, list[EventRow]] = {}
    for row in rows:
        by_session.setdefault(row.session_id, []).append(row)
    shapes = []
    for session_id, items in by_session.items():
        items.sort(key=lambda r: r.timestamp)
        labels = {r.event_id: label_of(r.event, r.data) for r in items}
        parents = {r.event_id: r.parent_id for r in items}
        shape = SessionShape(
            session_id=session_id,
            started_at=items[0].timestamp,
            ended_at=items[-1].timestamp,
            event_count=len(items),
        )
        if shape.ended_at != shape.started_at:
            shape.duration_s = max(
                0.0, (_dt(shape.ended_at) - _dt(shape.started_at)).total_seconds()
            )
        depth_of: dict[str, int] = {}
        for r in items:
            label = labels[r.event_id]
            shape.label_seq.append(label)
            shape.type_seq.append(r.event)
            if r.event.endswith("_error"):
                shape.errors += 1
            _configuration(shape, r.event, r.data)
            tokens = _tokens(r.data)
            if tokens is not None:
                shape.tokens = (shape.tokens or 0) + tokens
            parent = r.parent_id
            if parent is not None and parent in labels:
                shape.transition_seq.append(f"{labels[parent]} -> {label}")
        for r in items:
            # Depth by walking up (bounded by the session's size; memoized).
            chain = []
            node: str | None = r.event_id
            while node is not None and node not in depth_of and node in parents:
                chain.append(node)
                node = parents[node]
                if len(chain) > len(items):
                    break
            base = depth_of.get(node, 0) if node is not None else 0
            for offset, member in enumerate(reversed(chain)):
                depth_of[member] = base + offset + 1
        shape.depth = max(depth_of.values(), default=0)
        shapes.append(shape)
    shapes.sort(key=lambda s: (s.started_at, s.session_id))
    return shapes


def _distribution(counter: Counter[str], top: int = 50) -> dict[str, float]:
    total = sum(counter.values())
    if not total:
        return {}
    return {k: round(v / total, 6) for k, v in counter.most_common(top)}


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 3) if values else None


def window_summary(shapes: Sequence[SessionShape]) -> dict[str, Any]:
    """The shape of a set of sessions: distributions and per-session averages."""
    types = Counter(chain.from_iterable(s.type_seq for s in shapes))
    labels = Counter(chain.from_iterable(s.label_seq for s in shapes))
    transitions = Counter(chain.from_iterable(s.transition_seq for s in shapes))
    tokens = [s.tokens for s in shapes if s.tokens is not None]
    counts = [s.event_count for s in shapes]
    return {
        "sessions": len(shapes),
        "events": sum(counts),
        "first_session_at": shapes[0].started_at if shapes else None,
        "last_session_at": shapes[-1].started_at if shapes else None,
        "event_types": _distribution(types),
        "steps": _distribution(labels),
        "transitions": _distribution(transitions),
        "events_per_session": _mean(counts),
        "events_per_session_median": statistics.median(counts) if counts else None,
        "session_duration_s": _mean([s.duration_s for s in shapes]),
        "causal_depth": _mean([s.depth for s in shapes]),
        "error_rate": round(sum(1 for s in shapes if s.errors) / len(shapes), 6)
        if shapes
        else None,
        "tokens_per_session": _mean(tokens),
        "prompts": _session_shares(shapes, "prompt_hashes"),
        "models": _session_shares(shapes, "models"),
    }


def _session_shares(shapes: Sequence[SessionShape], attr: str) -> dict[str, float]:
    """The share of sessions that used each value of ``attr`` (``prompt_hashes``/``models``);
    a session that used two prompts counts for both."""
    if not shapes:
        return {}
    counts = _presence(shapes, attr)
    return {k: round(v / len(shapes), 6) for k, v in counts.most_common(50)}


def configuration_changes(base: dict[str, Any], recent: dict[str, Any]) -> list[dict[str, Any]]:
    """Prompt versions and models the recent sessions used that the baseline never did
    (``new_prompt``/``new_model``), and ones the baseline used that no recent session did
    (``gone_prompt``/``gone_model``), with the share of sessions on each side."""
    changes: list[dict[str, Any]] = []
    for kind, name in (("prompt", "prompts"), ("model", "models")):
        b, r = base[name], recent[name]
        for key in sorted(set(r) - set(b), key=lambda k: -r[k]):
            changes.append({"kind": "new_" + kind, "key": key, "baseline": 0.0, "recent": r[key]})
        for key in sorted(set(b) - set(r), key=lambda k: -b[k]):
            changes.append({"kind": "gone_" + kind, "key": key, "baseline": b[key], "recent": 0.0})
    return changes


def _js_distance(a: Counter[str], b: Counter[str]) -> float:
    from scipy.spatial.distance import jensenshannon

    keys = sorted(set(a) | set(b))
    if not keys or not sum(a.values()) or not sum(b.values()):
        return 0.0
    value = float(jensenshannon([a[k] for k in keys], [b[k] for k in keys], base=2))
    return 0.0 if math.isnan(value) else round(value, 6)


def _chi_square(a: Counter[str], b: Counter[str]) -> dict[str, Any]:
    from scipy.stats import chi2_contingency

    pooled_a = 0
    pooled_b = 0
    rows_a: list[int] = []
    rows_b: list[int] = []
    for key in sorted(set(a) | set(b)):
        if a[key] + b[key] < _MIN_CELL:
            pooled_a += a[key]
            pooled_b += b[key]
        else:
            rows_a.append(a[key])
            rows_b.append(b[key])
    if pooled_a + pooled_b:
        rows_a.append(pooled_a)
        rows_b.append(pooled_b)
    if len(rows_a) < 2 or not sum(rows_a) or not sum(rows_b):
        return {"statistic": 0.0, "p_value": 1.0, "dof": 0}
    result = chi2_contingency([rows_a, rows_b], correction=False)
    return {
        "statistic": round(float(result.statistic), 4),
        "p_value": float(result.pvalue),
        "dof": int(result.dof),
    }


def _presence(shapes: Sequence[SessionShape], attr: str) -> Counter[str]:
    """How many sessions hold each label (``attr`` = ``label_seq``/``transition_seq``)."""
    return Counter(chain.from_iterable(set(getattr(s, attr)) for s in shapes))


def _step_changes(
    baseline: Sequence[SessionShape], recent: Sequence[SessionShape]
) -> list[dict[str, Any]]:
    from scipy.stats import fisher_exact

    nb, nr = len(baseline), len(recent)
    candidates: list[tuple[str, str, int, int]] = []
    for kind, attr in (("step", "label_seq"), ("transition", "transition_seq")):
        pb, pr = _presence(baseline, attr), _presence(recent, attr)
        for key in set(pb) | set(pr):
            rb, rr = pb[key] / nb, pr[key] / nr
            if rb >= _STEP_COMMON and rb - rr >= _STEP_MIN_CHANGE:
                candidates.append(("missing_" + kind, key, pb[key], pr[key]))
            elif rb <= _STEP_RARE and rr - rb >= _STEP_MIN_CHANGE:
                candidates.append(("new_" + kind, key, pb[key], pr[key]))
    eb = sum(1 for s in baseline if s.errors)
    er = sum(1 for s in recent if s.errors)
    if er / nr - eb / nb >= _STEP_MIN_CHANGE:
        candidates.append(("more_errors", "sessions with an *_error event", eb, er))
    tests = max(1, len(candidates))
    found: list[dict[str, Any]] = []
    for kind, key, cb, cr in candidates:
        _, p_value = fisher_exact([[cb, nb - cb], [cr, nr - cr]])
        if p_value < ALPHA / tests:
            found.append(
                {
                    "kind": kind,
                    "key": key,
                    "baseline_sessions": f"{cb}/{nb}",
                    "recent_sessions": f"{cr}/{nr}",
                    "baseline_share": round(cb / nb, 4),
                    "recent_share": round(cr / nr, 4),
                    "p_value": float(p_value),
                }
            )
    found.sort(key=lambda f: -abs(f["recent_share"] - f["baseline_share"]))
    return found


def _biggest_changes(base: dict[str, Any], recent: dict[str, Any]) -> list[dict[str, Any]]:
    changes = []
    for kind, name in (("event_type", "event_types"), ("transition", "transitions")):
        b, r = base[name], recent[name]
        for key in set(b) | set(r):
            delta = r.get(key, 0.0) - b.get(key, 0.0)
            changes.append(
                {
                    "kind": kind,
                    "key": key,
                    "baseline": b.get(key, 0.0),
                    "recent": r.get(key, 0.0),
                    "delta": round(delta, 6),
                }
            )
    changes.sort(key=lambda c: -abs(c["delta"]))
    metrics = []
    for name in (
        "events_per_session",
        "session_duration_s",
        "error_rate",
        "tokens_per_session",
        "causal_depth",
    ):
        b, r = base[name], recent[name]
        if b is None or r is None:
            continue
        relative = (r - b) / b if b else (0.0 if r == b else None)
        metrics.append(
            {
                "kind": "metric",
                "key": name,
                "baseline": b,
                "recent": r,
                "delta": round(r - b, 6),
                "relative_change": round(relative, 4) if relative is not None else None,
            }
        )
    return [c for c in changes[:10] if c["delta"]] + metrics


def compare(
    baseline: Sequence[SessionShape], recent: Sequence[SessionShape], *, split: dict[str, Any]
) -> dict[str, Any]:
    """The drift report of ``recent`` against ``baseline`` (see the module docstring).

    Args:
        baseline: the earlier sessions.
        recent: the sessions under test.
        split: how the windows were chosen (echoed as ``window``).

    Returns:
        ``{status, verdict, drift_score, p_value, window, sessions, baseline, recent, drift}``.
    """
    base_summary = window_summary(baseline)
    recent_summary = window_summary(recent)
    report: dict[str, Any] = {
        "window": split,
        "sessions": {"baseline": len(baseline), "recent": len(recent)},
        "baseline": base_summary,
        "recent": recent_summary,
    }
    if len(baseline) < MIN_SESSIONS or len(recent) < MIN_SESSIONS:
        need = {
            "baseline_sessions": MIN_SESSIONS,
            "recent_sessions": MIN_SESSIONS,
            "have_baseline_sessions": len(baseline),
            "have_recent_sessions": len(recent),
        }
        report.update(
            status="insufficient_data",
            verdict="insufficient_data",
            drift_score=None,
            p_value=None,
            needed=need,
            drift={
                "score": None,
                "verdict": "insufficient_data",
                "reason": (
                    f"need at least {MIN_SESSIONS} baseline and {MIN_SESSIONS} recent sessions; "
                    f"have {len(baseline)} and {len(recent)}"
                ),
                "needed": need,
                "biggest_changes": [],
            },
        )
        return report
    types_b = Counter(chain.from_iterable(s.label_seq for s in baseline))
    types_r = Counter(chain.from_iterable(s.label_seq for s in recent))
    trans_b = Counter(chain.from_iterable(s.transition_seq for s in baseline))
    trans_r = Counter(chain.from_iterable(s.transition_seq for s in recent))
    js_types = _js_distance(types_b, types_r)
    js_trans = _js_distance(trans_b, trans_r)
    chi_types = _chi_square(types_b, types_r)
    chi_trans = _chi_square(trans_b, trans_r)
    steps = _step_changes(baseline, recent)
    score = max(js_types, js_trans)
    p_value = min(chi_types["p_value"], chi_trans["p_value"])
    significant = p_value < ALPHA / 2 or bool(steps)
    reasons = []
    if not significant:
        verdict = "stable"
        reasons.append(
            f"no test significant at {ALPHA} (chi-square p={p_value:.3g}, "
            f"Jensen-Shannon distance {score:.3f})"
        )
    else:
        verdict = (
            "minor_drift"
            if score < 0.1
            else "noticeable_drift"
            if score < 0.2
            else "significant_drift"
        )
        missing = [c for c in steps if c["kind"].startswith("missing_")]
        worst = max((c["baseline_share"] - c["recent_share"] for c in missing), default=0.0)
        if worst >= 0.5:
            verdict = "significant_drift"
        elif worst >= _STEP_MIN_CHANGE and verdict == "minor_drift":
            verdict = "noticeable_drift"
        if p_value < ALPHA / 2:
            reasons.append(f"distributions differ (chi-square p={p_value:.3g})")
        for c in steps:
            reasons.append(
                f"{c['kind']} {c['key']}: {c['baseline_sessions']} baseline sessions vs "
                f"{c['recent_sessions']} recent (p={c['p_value']:.3g})"
            )
    configuration = configuration_changes(base_summary, recent_summary)
    for c in configuration:
        side = "recent" if c["kind"].startswith("new_") else "baseline"
        reasons.append(
            f"{c['kind'].replace('_', ' ')} {c['key']} (in {c[side]:.0%} of {side} sessions)"
        )
    report.update(
        status="ok",
        verdict=verdict,
        drift_score=score,
        p_value=p_value,
        drift={
            "score": score,
            "verdict": verdict,
            "js_distance": {"steps": js_types, "transitions": js_trans},
            "chi_square": {"steps": chi_types, "transitions": chi_trans},
            "step_changes": steps,
            "biggest_changes": _biggest_changes(base_summary, recent_summary),
            "configuration_changes": configuration,
            "reasons": reasons,
        },
    )
    return report
