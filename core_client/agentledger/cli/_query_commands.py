"""Query commands of the ``agentledger`` CLI: ``baseline`` and ``at``.

``agentledger baseline --agent A`` prints the drift report (verdict, divergence, p-value, the
per-session metrics and the biggest changes) as tables; ``--plot FILE.png`` also draws the
recent and baseline distributions side by side with matplotlib (imported only then; install
it with ``pip install matplotlib``). ``agentledger at --agent A --time T`` prints the agent's
key/value state at ``T``. Both take ``--url``/``--api-key`` like the other client commands
and print JSON with ``--json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.table import Table

from agentledger.cli._errors import NO_AGENT
from agentledger.cli._output import check_agent_known, fail
from agentledger.cli._output import console as _console
from agentledger.cli._output import dump as _dump
from agentledger.cli._output import err as _err
from agentledger.cli._output import open_ledger as _ledger
from agentledger.cli.options import AgentOpt, JsonOpt, KeyOpt, UrlOpt

__all__ = ["plot_report", "register", "why_no_verdict"]

_VERDICT_STYLE = {
    "stable": "green",
    "minor_drift": "yellow",
    "noticeable_drift": "dark_orange",
    "significant_drift": "red",
    "insufficient_data": "dim",
}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def plot_report(report: dict[str, Any], path: Path, *, top: int = 12) -> None:
    """Draw the baseline and recent step and transition distributions side by side.

    Args:
        report: a baseline/behavior-change answer (wire shape).
        path: the image file to write (format from the suffix, e.g. ``.png``).
        top: most categories per chart (largest in either window).

    Raises:
        ImportError: matplotlib is not installed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charts = [("steps", "Steps (event type:tool)"), ("transitions", "Transitions")]
    fig, axes = plt.subplots(1, 2, figsize=(16, 7), constrained_layout=True)
    for axis, (name, title) in zip(axes, charts, strict=True):
        base: dict[str, float] = report.get("baseline", {}).get(name) or {}
        recent: dict[str, float] = report.get("recent", {}).get(name) or {}
        keys = sorted(set(base) | set(recent), key=lambda k: -max(base.get(k, 0), recent.get(k, 0)))
        keys = keys[:top][::-1]
        positions = range(len(keys))
        axis.barh(
            [p + 0.2 for p in positions],
            [base.get(k, 0) for k in keys],
            0.4,
            label=f"baseline ({report.get('sessions', {}).get('baseline', 0)} sessions)",
        )
        axis.barh(
            [p - 0.2 for p in positions],
            [recent.get(k, 0) for k in keys],
            0.4,
            label=f"recent ({report.get('sessions', {}).get('recent', 0)} sessions)",
        )
        axis.set_yticks(
            list(positions), [k if len(k) < 60 else k[:57] + "…" for k in keys], fontsize=8
        )
        axis.set_xlabel("share")
        axis.set_title(title)
        axis.legend(loc="lower right")
    fig.suptitle(
        f"{report.get('agent', '')}: {report.get('verdict')} "
        f"(drift score {_fmt(report.get('drift_score'))}, p={_fmt(report.get('p_value'))})"
    )
    fig.savefig(path)
    plt.close(fig)


def why_no_verdict(report: dict[str, Any], recent_window: int, window: str | None) -> str:
    """Why an ``insufficient_data`` report has no verdict, and what to do about it."""
    needed = report.get("needed") or {}
    sessions = report.get("sessions") or {}
    least = int(needed.get("baseline_sessions") or 0)
    least_recent = int(needed.get("recent_sessions") or least)
    base, recent = int(sessions.get("baseline", 0)), int(sessions.get("recent", 0))
    total = base + recent
    if window is not None:
        return (
            f"no verdict yet: the recent window is the sessions started in the last {window} "
            f"({recent}) and the baseline is the sessions before them ({base}); each needs at "
            f"least {least}. Log more sessions, try another --window, or compare by count "
            "with --recent-window N."
        )
    text = (
        f"no verdict yet: the recent window is the last {recent_window} sessions "
        f"(--recent-window) and the baseline is the sessions before them; the baseline needs "
        f"at least {least} sessions and the recent window {least_recent}, so a verdict needs "
        f"{recent_window + least} sessions and this agent has {total}."
    )
    if total >= least + least_recent:
        return text + f" Compare a smaller window: --recent-window {total - least}."
    return text + f" Log more sessions: any verdict needs at least {least + least_recent}."


def baseline(
    agent: AgentOpt = None,
    recent_window: Annotated[int, typer.Option(help="Recent window: the last N sessions.")] = 50,
    window: Annotated[
        str | None, typer.Option(help="Recent window by time instead: 24h, 7d or 30d.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Also draw both distributions to this image (PNG).")
    ] = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare an agent's recent sessions with its earlier ones (drift verdict)."""
    with _ledger(url, api_key, agent) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        result = ledger.baseline(recent_window=recent_window, window=window)
        counts = result.raw.get("sessions") or {}
        if not counts.get("baseline") and not counts.get("recent"):
            check_agent_known(ledger, ledger.agent)
    report = result.raw
    if plot is not None:
        try:
            plot_report(report, plot)
        except ImportError:
            _err("--plot needs matplotlib: pip install matplotlib")
            raise typer.Exit(2) from None
    if as_json:
        _dump(report)
        return
    console = _console()
    verdict = str(report.get("verdict"))
    style = _VERDICT_STYLE.get(verdict, "bold")
    sessions = report.get("sessions", {})
    console.print(
        f"{result.agent}: [{style}]{verdict}[/{style}]  drift score "
        f"{_fmt(report.get('drift_score'))}  p-value {_fmt(report.get('p_value'))}  "
        f"(baseline {sessions.get('baseline', 0)} sessions, recent {sessions.get('recent', 0)})"
    )
    drift = report.get("drift") or {}
    if verdict == "insufficient_data":
        console.print(why_no_verdict(report, recent_window, window), markup=False)
    for reason in drift.get("reasons", []):
        console.print(f"  - {reason}")
    metrics = Table(title="per session", show_lines=False)
    metrics.add_column("metric")
    metrics.add_column("baseline", justify="right")
    metrics.add_column("recent", justify="right")
    for name in (
        "events_per_session",
        "session_duration_s",
        "causal_depth",
        "error_rate",
        "tokens_per_session",
    ):
        metrics.add_row(
            name,
            _fmt((report.get("baseline") or {}).get(name)),
            _fmt((report.get("recent") or {}).get(name)),
        )
    console.print(metrics)
    changes = [c for c in drift.get("biggest_changes", []) if c.get("kind") != "metric"]
    if changes:
        table = Table(title="biggest changes (share of events / transitions)")
        table.add_column("kind")
        table.add_column("key", overflow="fold")
        table.add_column("baseline", justify="right")
        table.add_column("recent", justify="right")
        table.add_column("delta", justify="right")
        for change in changes:
            table.add_row(
                change["kind"],
                change["key"],
                _fmt(change["baseline"]),
                _fmt(change["recent"]),
                f"{change['delta']:+.4f}",
            )
        console.print(table)
    if plot is not None:
        console.print(f"plot written to {plot}")


def at(
    time: Annotated[str, typer.Option("--time", help="ISO-8601 time, e.g. 2026-05-01T15:00Z.")],
    agent: AgentOpt = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print an agent's key/value state (state_set / state_delete) at a point in time."""
    with _ledger(url, api_key, agent, options={"timestamp": "--time"}) as ledger:
        if ledger.agent is None:
            raise fail(NO_AGENT, 2)
        state = ledger.at(time)
        if state.event_count == 0:
            check_agent_known(ledger, ledger.agent)
    if as_json:
        _dump(state)
        return
    console = _console()
    console.print(
        f"{state.agent} at {state.at}: {state.event_count} events so far, "
        f"{len(state.state)} keys" + (" (truncated)" if state.truncated else "")
    )
    call = state.model_call
    if call is not None:
        console.print(
            f"last model call {call.get('timestamp')}: model {call.get('model') or '?'}, "
            f"prompt {call.get('prompt_hash') or 'without a system prompt'}",
            markup=False,
        )
    table = Table(show_header=True)
    table.add_column("key")
    table.add_column("value", overflow="fold")
    for key, value in sorted(state.state.items()):
        table.add_row(key, value if isinstance(value, str) else orjson.dumps(value).decode())
    console.print(table)


def register(app: typer.Typer) -> None:
    """Add ``baseline`` and ``at`` to the root ``agentledger`` app."""
    app.command("baseline")(baseline)
    app.command("at")(at)
