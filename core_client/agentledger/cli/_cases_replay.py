"""``agentledger cases replay``: pick recorded sessions on the server, export them as cases and
run them against a candidate, in one command (``cases export`` then ``cases run``).

The sessions are picked as ``cases export`` picks them (``--session``, ``--search``, or a
drawn corpus); the candidate is the built-in :func:`agentledger.cases.openai_candidate`
unless ``--factory`` names another, with the overrides, gates and reports of ``cases run``.
Exit codes are those of ``cases run`` (0 passed, 1 a check or gate failed, 2 bad input), and of
``cases export`` before anything runs (1 the chain is broken, 2 nothing to replay).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agentledger.cli._cases_commands import run
from agentledger.cli._cases_export import Selection, export_sessions, fail
from agentledger.cli._cases_options import (
    BaseUrlOpt,
    HistogramOpt,
    MarkdownOpt,
    MaxRefusalRateOpt,
    MaxTruncationsOpt,
    MinMeanSimilarityOpt,
    MinSimilarityOpt,
    ModelOpt,
    NoSimilarityOpt,
    RunIdOpt,
    SystemPromptOpt,
    TemperatureOpt,
    TurnOpt,
)
from agentledger.cli._cases_select_options import (
    BaselineOpt,
    CauseOpt,
    DryRunOpt,
    EmbeddingsModelOpt,
    EmbeddingsUrlOpt,
    ForceOpt,
    FractionOpt,
    HalfLifeOpt,
    JunitOpt,
    LabelsOpt,
    LimitOpt,
    MinPassRateOpt,
    OrderIdsOpt,
    PerStratumOpt,
    ReportOpt,
    RunsOpt,
    SampleOpt,
    SearchOpt,
    SeedOpt,
    SessionsOpt,
    SinceOpt,
    StratifyByOpt,
    StratumOpt,
    ToolsOpt,
    UntilOpt,
)
from agentledger.cli._output import console as _console
from agentledger.cli.options import AgentOpt, KeyOpt, UrlOpt

__all__ = ["DEFAULT_CANDIDATE", "replay"]

#: The candidate when ``--factory`` is not given: the recording re-sent to an OpenAI-compatible
#: endpoint (``--base-url``), tools answered from the record.
DEFAULT_CANDIDATE = "agentledger.cases:openai_candidate"


def replay(
    agent: AgentOpt = None,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    session: SessionsOpt = None,
    search: SearchOpt = None,
    limit: LimitOpt = 10,
    label: LabelsOpt = None,
    cause: CauseOpt = None,
    order_ids: OrderIdsOpt = False,
    force: ForceOpt = False,
    sample: SampleOpt = None,
    per_stratum: PerStratumOpt = None,
    fraction: FractionOpt = None,
    stratify_by: StratifyByOpt = None,
    stratum: StratumOpt = None,
    half_life_days: HalfLifeOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    seed: SeedOpt = 0,
    dry_run: DryRunOpt = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Export the cases into this empty directory and keep them (default: a "
            "temporary one, removed at exit).",
        ),
    ] = None,
    factory: Annotated[
        str,
        typer.Option(
            "--factory", help="The candidate: module:attribute of a factory (tools -> agent)."
        ),
    ] = DEFAULT_CANDIDATE,
    tools: ToolsOpt = None,
    runs: RunsOpt = 1,
    report: ReportOpt = None,
    baseline: BaselineOpt = None,
    junit: JunitOpt = None,
    markdown: MarkdownOpt = None,
    histogram: HistogramOpt = None,
    runs_url: Annotated[
        str | None,
        typer.Option(
            "--runs-url",
            help="Log the runs to this server, to keep them (default: an embedded one, gone "
            "at exit).",
        ),
    ] = None,
    runs_key: Annotated[str | None, typer.Option("--runs-key", help="API key for --runs-url.")] = (
        None
    ),
    runs_agent: Annotated[
        str | None,
        typer.Option(
            "--runs-agent",
            help="Agent name the runs are logged under (default agentledger-cases).",
            show_default=False,
        ),
    ] = None,
    run_id: RunIdOpt = None,
    min_pass_rate: MinPassRateOpt = None,
    embeddings_url: EmbeddingsUrlOpt = None,
    embeddings_model: EmbeddingsModelOpt = None,
    no_similarity: NoSimilarityOpt = False,
    min_mean_similarity: MinMeanSimilarityOpt = None,
    min_similarity: MinSimilarityOpt = None,
    max_truncations: MaxTruncationsOpt = None,
    max_refusal_rate: MaxRefusalRateOpt = None,
    system_prompt: SystemPromptOpt = None,
    model: ModelOpt = None,
    temperature: TemperatureOpt = None,
    base_url: BaseUrlOpt = None,
    turn: TurnOpt = "all",
) -> None:
    """Replay recorded sessions against a candidate and gate on what changed: export the
    picked sessions (--session, --search, or a draw with --sample, --per-stratum or
    --fraction) and run them as cases run does; exit 1 when a check or gate fails."""
    console = _console(stderr=True)
    selection = Selection(
        sessions=session or [],
        search=search,
        limit=limit,
        labels=label or [],
        cause=cause,
        order_ids=order_ids,
        force=force,
        sample=sample,
        per_stratum=per_stratum,
        fraction=fraction,
        stratify_by=stratify_by,
        strata=stratum or [],
        half_life_days=half_life_days,
        since=since,
        until=until,
        seed=seed,
    )
    if not selection.sessions and selection.search is None and not _draws(selection):
        raise fail(console, "nothing picked: pass --session, --search or --sample", 2)
    if out is not None and out.is_dir() and any(out.rglob("*.json")):
        # ``cases run`` would run the files already there too
        raise fail(console, f"--out: {out} already holds case files; name an empty directory", 2)
    with tempfile.TemporaryDirectory(prefix="agentledger-replay-") as scratch:
        exported = out if out is not None else Path(scratch) / "cases"
        result = export_sessions(
            console,
            selection,
            out=exported,
            agent=agent,
            url=url,
            api_key=api_key,
            dry_run=dry_run,
            command="cases replay",
        )
        if dry_run:
            for sid in result.selected:
                typer.echo(sid)
            return
        for sid, reason in result.skipped.items():
            console.print(f"[yellow]skipped[/] {escape(sid)}: {escape(reason)}")
        if not result.files:
            raise fail(console, "no session to replay", 2)
        count = len(result.files)
        console.print(escape(f"replaying {count} session{'s' * (count != 1)}"), soft_wrap=True)
        run(
            cases_dir=exported,
            tools=tools,
            factory=factory,
            runs=runs,
            report=report,
            baseline=baseline,
            junit=junit,
            url=runs_url,
            api_key=runs_key,
            agent=runs_agent,
            min_pass_rate=min_pass_rate,
            embeddings_url=embeddings_url,
            embeddings_model=embeddings_model,
            no_similarity=no_similarity,
            min_mean_similarity=min_mean_similarity,
            min_similarity=min_similarity,
            max_truncations=max_truncations,
            max_refusal_rate=max_refusal_rate,
            run_id=run_id,
            markdown=markdown,
            histogram=histogram,
            system_prompt=system_prompt,
            model=model,
            temperature=temperature,
            base_url=base_url,
            turn=turn,
        )


def _draws(selection: Selection) -> bool:
    return any(
        value is not None for value in (selection.sample, selection.per_stratum, selection.fraction)
    )
