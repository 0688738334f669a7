"""What the pages derive from events: summaries, durations, trees, charts, redirects."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentledger.server._ui._charts import baseline_charts, report_metrics
from agentledger.server._ui._present import (
    flatten_tree,
    format_duration_ms,
    session_stats,
    summarize,
    view_events,
)
from agentledger.server._ui._viewer import safe_next


def ev(event: str, data: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"event_id": str(uuid.uuid4()), "event": event, "data": data, "agent": "a", **fields}


@pytest.mark.parametrize(
    ("event", "data", "expected"),
    [
        ("user_message", {"text": "charged   twice\n"}, "charged twice"),
        ("tool_call", {"tool": "lookup", "args": {"id": 1}}, 'lookup({"id":1})'),
        ("tool_result", {"tool": "lookup", "result": "ok"}, "ok"),
        ("tool_error", {"tool": "t", "error": "boom", "type": "ValueError"}, "ValueError: boom"),
        ("llm_start", {"model": "m", "messages": [{"content": "hi"}]}, "m · 1 message(s) · hi"),
        ("llm_end", {"text": "", "tool_calls": [{"name": "a"}, {"name": "b"}]}, "calls a, b"),
        ("retrieval", {"query": "q", "documents": [1, 2]}, "q → 2 document(s)"),
        ("step_start", {"name": "agent", "kind": "graph_node"}, "agent · graph_node"),
        ("interrupted", {"reason": "approval"}, "approval"),
        ("state_set", {"key": "k", "value": [1]}, "k = [1]"),
        ("custom", {"a": 1, "b": "x"}, "a=1, b=x"),
    ],
)
def test_summaries_follow_the_vocabulary(event: str, data: dict[str, Any], expected: str) -> None:
    assert summarize(ev(event, data)) == expected


def test_summaries_are_cut_and_erased_events_say_so() -> None:
    long = summarize(ev("user_message", {"text": "x" * 500}))
    assert len(long) == 160 and long.endswith("…")
    assert summarize(ev("user_message", {}, erased=True)) == "(erased by forget)"


def test_durations_come_from_data_or_from_the_start_event() -> None:
    start = ev("tool_call", {"tool": "t"}, timestamp="2026-01-01T00:00:00+00:00")
    end = ev(
        "tool_result",
        {"tool": "t", "result": 1},
        timestamp="2026-01-01T00:00:01.250000Z",
        parent_id=start["event_id"],
    )
    llm = ev(
        "llm_end",
        {"duration_ms": 840, "token_usage": {"input_tokens": 10, "output_tokens": None}},
        timestamp="2026-01-01T00:00:02+00:00",
    )
    failed = ev("tool_error", {"tool": "t", "error": "x"}, timestamp="2026-01-01T00:00:03+00:00")
    rows = view_events([start, end, llm, failed])
    assert rows[1].duration_ms == pytest.approx(1250)
    assert rows[2].duration_ms == 840 and rows[2].input_tokens == 10
    assert rows[2].output_tokens is None  # unknown stays unknown, never 0
    assert rows[3].offset_ms == pytest.approx(3000) and rows[3].is_error
    stats = session_stats(rows)
    assert (stats.events, stats.errors, stats.input_tokens, stats.tool_calls) == (4, 1, 10, 1)
    assert format_duration_ms(stats.duration_ms) == "3.0 s"


def test_format_duration() -> None:
    assert [format_duration_ms(v) for v in (None, 5, 2400, 185_000, 7_500_000)] == [
        "",
        "5 ms",
        "2.4 s",
        "3 min 5 s",
        "2 h 5 min",
    ]


def test_tree_is_depth_first_and_survives_a_10000_deep_chain() -> None:
    events = [ev("step_start", {"name": "root"})]
    for i in range(10_000):
        events.append(ev("step_start", {"name": str(i)}, parent_id=events[-1]["event_id"]))
    lines, total = flatten_tree(view_events(events), limit=50)
    assert total == 10_001 and len(lines) == 50
    assert [line.depth for line in lines] == list(range(50))
    assert lines[45].drawn_depth == 40  # indentation is capped, the depth is still shown


def test_tree_orders_siblings_by_time_and_draws_around_a_page() -> None:
    root = ev("session_start", {})
    a = ev("tool_call", {"tool": "a"}, parent_id=root["event_id"])
    a1 = ev("tool_result", {"tool": "a"}, parent_id=a["event_id"])
    b = ev("tool_call", {"tool": "b"}, parent_id=root["event_id"])
    orphan = ev("tool_result", {"tool": "z"}, parent_id=str(uuid.uuid4()))
    rows = view_events([root, a, a1, b, orphan])
    lines, total = flatten_tree(rows)
    assert [(line.view.tool, line.depth) for line in lines] == [
        ("", 0),
        ("a", 1),
        ("a", 2),
        ("b", 1),
        ("z", 0),  # a parent not in the session makes a root
    ]
    assert total == 5
    around, count = flatten_tree(rows, around=[a1["event_id"]])
    assert [line.view.event_id for line in around] == [
        root["event_id"],
        a["event_id"],
        a1["event_id"],
    ]
    assert count == 3
    below, _ = flatten_tree(rows, root_id=root["event_id"])
    assert [line.depth for line in below] == [0, 1, 0]


def test_baseline_pairs_are_found_in_either_nesting() -> None:
    nested = {
        "verdict": "minor_drift",
        "baseline": {"event_types": {"a": 0.5, "b": 0.5}, "events_per_session": 4.0},
        "recent": {"event_types": {"a": 0.9, "c": 0.1}, "events_per_session": 6.0},
        "sessions": {"baseline": 20, "recent": 10},
    }
    (chart,) = baseline_charts(nested)
    assert chart.title == "event types"
    assert [(b.label, b.baseline, b.recent) for b in chart.bars] == [
        ("a", 0.5, 0.9),
        ("b", 0.5, 0.0),
        ("c", 0.0, 0.1),
    ]
    assert chart.bars[0].recent_w == 360  # the largest share fills the bar width
    assert report_metrics(nested) == [("events_per_session", 4.0, 6.0)]

    inverted = {"event_types": {"baseline": {"x": 3, "y": 1}, "recent": {"x": 1, "y": 1}}}
    (chart,) = baseline_charts(inverted)
    assert chart.bars[0].baseline == 0.75 and chart.bars[0].recent == 0.5  # counts → shares
    assert baseline_charts({"baseline": {"only": {"x": 1}}}) == []


def test_many_labels_fold_into_other_and_long_labels_lose_their_middle() -> None:
    labels = {
        f"tool_result:verify_step_{i:02d} -> tool_call:refund_step_{i:02d}": 1 for i in range(20)
    }
    (chart,) = baseline_charts({"baseline": {"t": labels}, "recent": {"t": labels}})
    assert len(chart.bars) == 12 and chart.bars[-1].label == "other (9)"
    first = chart.bars[0]
    assert first.label.startswith("tool_result:verify_step_00")
    assert first.short.count("…") == 1 and len(first.short) == 52
    assert first.short.endswith("refund_step_00")


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/ui/sessions/s?agent=a", "/ui/sessions/s?agent=a"),
        (None, "/ui/"),
        ("https://evil.example/ui/", "/ui/"),
        ("//evil.example/ui/", "/ui/"),
        ("/v1/agents", "/ui/"),
        ("/ui/\\\\evil.example", "/ui/"),
    ],
)
def test_login_redirects_stay_on_the_dashboard(target: str | None, expected: str) -> None:
    assert safe_next(target) == expected
