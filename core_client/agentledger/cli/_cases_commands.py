"""``agentledger cases``: ``export`` sessions as case files, ``run`` them against a
candidate agent, print the case file ``schema`` (``replay``, export and run in one, lives in
:mod:`._cases_replay`).

Exit codes of ``run``: 0 every check meets its ``min_pass_rate``; 1 one does not; 2 bad input
(a case file, a ``module:attribute`` spec, a baseline report, an option). ``export``: 0 done;
1 the chain is broken (nothing written, ``--force`` overrides); 2 bad input or the server
refused. The harness (:mod:`agentledger.cases`, LangChain for ``run`` and ``record``) is
imported inside the commands, so the root CLI stays light.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from agentledger.cli._cases_export import Selection, export_sessions
from agentledger.cli._cases_export import fail as _fail
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
from agentledger.cli._output import missing_extra
from agentledger.cli.options import AgentOpt, KeyOpt, UrlOpt

__all__ = ["cases_app"]

cases_app = typer.Typer(
    name="cases",
    help="Regression cases from production sessions: export, run, gate.",
    no_args_is_help=True,
)


@cases_app.command("export")
def export(
    out: Annotated[Path, typer.Option("--out", help="Directory the case files go to.")],
    agent: AgentOpt = None,
    session: SessionsOpt = None,
    search: SearchOpt = None,
    limit: LimitOpt = 10,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    force: ForceOpt = False,
    order_ids: OrderIdsOpt = False,
    cause: CauseOpt = None,
    label: LabelsOpt = None,
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
) -> None:
    """Export sessions as case files (chain verified first; personal data replaced).

    Name sessions (--session, --search) or draw a corpus (--sample, --per-stratum or
    --fraction, with --stratify-by, --half-life-days, --since, --until and --seed)."""
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
    result = export_sessions(
        console, selection, out=out, agent=agent, url=url, api_key=api_key, dry_run=dry_run
    )
    if dry_run:
        for sid in result.selected:
            typer.echo(sid)
        return
    for path in result.files:
        typer.echo(str(path))
    for sid, reason in result.skipped.items():
        console.print(f"[yellow]skipped[/] {escape(sid)}: {escape(reason)}")
    if not result.files:
        raise _fail(console, "no case written", 2)


@cases_app.command("run")
def run(
    cases_dir: Annotated[Path, typer.Argument(help="Case file or directory of case files.")],
    tools: ToolsOpt = None,
    factory: Annotated[
        str | None,
        typer.Option(
            "--factory",
            help="The candidate agent: module:attribute of a factory (tools -> agent).",
            show_default=False,
        ),
    ] = None,
    runs: RunsOpt = 1,
    report: ReportOpt = None,
    baseline: BaselineOpt = None,
    junit: JunitOpt = None,
    url: Annotated[
        str | None, typer.Option(help="Log runs to this server (default: an embedded one).")
    ] = None,
    api_key: Annotated[str | None, typer.Option(help="API key for --url.")] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            "--agent-name",
            help="Agent name the runs are logged under (default agentledger-cases).",
            show_default=False,
        ),
    ] = None,
    min_pass_rate: MinPassRateOpt = None,
    embeddings_url: EmbeddingsUrlOpt = None,
    embeddings_model: EmbeddingsModelOpt = None,
    no_similarity: NoSimilarityOpt = False,
    min_mean_similarity: MinMeanSimilarityOpt = None,
    min_similarity: MinSimilarityOpt = None,
    max_truncations: MaxTruncationsOpt = None,
    max_refusal_rate: MaxRefusalRateOpt = None,
    run_id: RunIdOpt = None,
    markdown: MarkdownOpt = None,
    histogram: HistogramOpt = None,
    system_prompt: SystemPromptOpt = None,
    model: ModelOpt = None,
    temperature: TemperatureOpt = None,
    base_url: BaseUrlOpt = None,
    turn: TurnOpt = "all",
) -> None:
    """Run every case N times against the candidate; exit 1 when a check misses its rate
    or a corpus gate fails."""
    try:
        from agentledger.cases import (
            CaseError,
            EmbeddedServerError,
            GateOptions,
            SpecError,
            default_run_id,
            expand_turns,
            ledger_target,
            load_baseline,
            load_cases,
            load_object,
            parse_turn,
            print_summary,
            resolve_embedder,
            run_suite,
            suite_run_id,
            write_junit,
            write_markdown,
        )
    except ImportError as error:
        raise missing_extra("cases run", "langchain", error) from error

    console = _console(stderr=True)
    out = Console()
    if not out.is_terminal:  # CI logs: wide enough for case ids and check texts
        out = Console(width=160)
    if agent is not None and ":" in agent and factory is None:  # the old meaning of --agent
        console.print(
            "[bold yellow]warning:[/] --agent module:attribute is deprecated: pass the factory "
            "with --factory (--agent names the agent the runs are logged under)",
            soft_wrap=True,
        )
        factory, agent = agent, None
    if factory is None:
        raise _fail(console, "no candidate: pass --factory module:attribute", 2)
    agent_name = agent or "agentledger-cases"
    try:
        cases = expand_turns(load_cases(cases_dir), parse_turn(turn))
        candidate = load_object(factory, "--factory")
        real_tools = load_object(tools, "--tools") if tools is not None else []
        if not callable(candidate):
            raise SpecError(f"--factory: {factory!r} is not callable")
        if callable(real_tools) and not isinstance(real_tools, list | tuple):
            real_tools = real_tools()
        if not isinstance(real_tools, list | tuple):
            raise SpecError(f"--tools: {tools!r} is not a list of tools")
        old = load_baseline(baseline) if baseline is not None else None
    except (CaseError, SpecError, ValueError) as error:
        raise _fail(console, str(error), 2) from error
    overrides: dict[str, Any] = {}
    if system_prompt is not None:
        try:
            overrides["system_prompt"] = system_prompt.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            message = f"--system-prompt: cannot read {system_prompt}: {error}"
            raise _fail(console, message, 2) from error
    if model is not None:
        overrides["model"] = model
    if temperature is not None:
        overrides["temperature"] = temperature
    if base_url is not None:
        overrides["base_url"] = base_url
    gates = GateOptions(min_mean_similarity, min_similarity, max_truncations, max_refusal_rate)
    if no_similarity and gates.needs_similarity:
        raise _fail(console, "--no-similarity cannot be combined with a similarity gate", 2)
    # the configured endpoint, else the offline model, else similarity fails closed
    embed: Any = None if no_similarity else "auto"
    embedder_name = "off"
    if not no_similarity:
        choice = resolve_embedder(embeddings_url, embeddings_model)
        if choice.embed is not None:
            embed, embedder_name = choice.embed, choice.name
    try:
        name = run_id if run_id is not None else default_run_id(factory, agent_name, tools or "")
        named = suite_run_id(name) if name is not None else None
    except SpecError as error:
        raise _fail(console, str(error), 2) from error
    total = len(cases) * runs
    try:
        with (
            ledger_target(url, api_key, agent_name) as target,
            _progress_bar(console, total) as progress,
        ):
            suite = run_suite(
                cases,
                factory=candidate,
                tools=list(real_tools),
                target=target,
                runs=runs,
                default_min_pass_rate=min_pass_rate,
                embed=embed,
                progress=progress,
                gates=gates,
                run_id=named,
                overrides=overrides,
                embedder_name=embedder_name,
            )
    except (SpecError, TypeError) as error:
        raise _fail(console, str(error), 2) from error
    except EmbeddedServerError as error:
        raise _fail(console, str(error), 2) from error
    if old is not None:
        suite.compare(old)
    if report is not None:
        suite.write_json(report)
    if junit is not None:
        write_junit(suite, junit)
    if markdown is not None:
        write_markdown(suite, markdown)
    if histogram is not None:
        from agentledger.cases import baseline_scores, write_histogram

        try:
            write_histogram(suite, histogram, baseline_scores(old) if old else None)
        except ImportError as error:
            raise missing_extra("cases run --histogram", "plot", error) from error
    print_summary(suite, out)
    for case in suite.cases:
        if not case.gate_passed:
            out.print(escape(case.failure_message()), soft_wrap=True)
    raise typer.Exit(0 if suite.gate_passed else 1)


@cases_app.command("record")
def record(
    case_file: Annotated[Path, typer.Argument(help="The case file to add a cassette to.")],
    tools: Annotated[str, typer.Option("--tools", help="Real tools module:attribute (a list).")],
    tool: Annotated[
        list[str], typer.Option("--tool", help="An HTTP-backed tool to record (repeatable).")
    ],
) -> None:
    """Record a vcrpy cassette: run the source's calls of --tool against the LIVE system once
    (use a staging or stand-in system for tools with side effects)."""
    try:
        from agentledger.cases import CaseError, SpecError, load_case, load_object, record_cassette
    except ImportError as error:
        raise missing_extra("cases record", "langchain", error) from error

    console = _console(stderr=True)
    try:
        case = load_case(case_file)
        real_tools = load_object(tools, "--tools")
        if callable(real_tools) and not isinstance(real_tools, list | tuple):
            real_tools = real_tools()
        updated = record_cassette(case, case_file, list(real_tools), tool)
    except (CaseError, SpecError, KeyError, TypeError) as error:
        raise _fail(console, str(error), 2) from error
    assert updated.cassette is not None
    typer.echo(str(case_file.parent / updated.cassette.path))


@cases_app.command("schema")
def schema() -> None:
    """Print the JSON Schema of a case file."""
    try:
        from agentledger.cases import case_json_schema
    except ImportError as error:
        raise missing_extra("cases schema", "langchain", error) from error

    typer.echo(json.dumps(case_json_schema(), indent=2))


@contextlib.contextmanager
def _progress_bar(console: Console, total: int) -> Iterator[Callable[[str, int], None] | None]:
    """A progress callback drawing a transient bar on a terminal; ``None`` elsewhere (CI logs)."""
    if not console.is_terminal:
        yield None
        return
    from rich.progress import Progress

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("running cases", total=total)
        yield lambda case_id, done: bar.update(task, completed=done, description=case_id)
