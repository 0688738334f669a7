"""The options ``agentledger cases export`` and ``cases replay`` pick sessions with, and the
ones ``cases run`` and ``cases replay`` run and report with (their help texts)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "BaselineOpt",
    "CauseOpt",
    "DryRunOpt",
    "EmbeddingsModelOpt",
    "EmbeddingsUrlOpt",
    "ForceOpt",
    "FractionOpt",
    "HalfLifeOpt",
    "JunitOpt",
    "LabelsOpt",
    "LimitOpt",
    "MinPassRateOpt",
    "OrderIdsOpt",
    "PerStratumOpt",
    "ReportOpt",
    "RunsOpt",
    "SampleOpt",
    "SearchOpt",
    "SeedOpt",
    "SessionsOpt",
    "SinceOpt",
    "StratifyByOpt",
    "StratumOpt",
    "ToolsOpt",
    "UntilOpt",
]

SessionsOpt = Annotated[
    list[str] | None, typer.Option("--session", help="Session id (repeatable).")
]
SearchOpt = Annotated[
    str | None, typer.Option(help="Also take the sessions of search hits for these words.")
]
LimitOpt = Annotated[int, typer.Option(help="Search hits to take.", min=1)]
ForceOpt = Annotated[bool, typer.Option(help="Export even when the chain is broken.")]
OrderIdsOpt = Annotated[bool, typer.Option(help="Also replace order-like ids (A1234, ORD-99812).")]
CauseOpt = Annotated[
    str | None, typer.Option(help="cause_category (default: failure/normal from events).")
]
LabelsOpt = Annotated[list[str] | None, typer.Option("--label", help="Label (repeatable).")]
SampleOpt = Annotated[
    int | None,
    typer.Option(help="Draw N sessions in all (strata in proportion to their size).", min=1),
]
PerStratumOpt = Annotated[
    int | None, typer.Option(help="Draw K sessions per stratum (all of a smaller one).", min=1)
]
FractionOpt = Annotated[
    float | None,
    typer.Option(help="Draw this fraction of the sessions (0 < F <= 1).", min=0.0, max=1.0),
]
StratifyByOpt = Annotated[
    str | None,
    typer.Option(help="Label key in the sessions' metadata or user messages (e.g. intent)."),
]
StratumOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--stratum",
        help="Only sessions whose --stratify-by label has this value (repeatable).",
    ),
]
HalfLifeOpt = Annotated[
    float | None,
    typer.Option(help="Weigh sessions by recency: weight halves every D days of age."),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(help="Only sessions last active at or after this (ISO date/time or 7d)."),
]
UntilOpt = Annotated[
    str | None,
    typer.Option(help="Only sessions last active before this (ISO date/time or 7d)."),
]
SeedOpt = Annotated[int, typer.Option(help="Seed of the draw (same seed, same sample).")]
DryRunOpt = Annotated[
    bool, typer.Option(help="Print the selection (and the strata table); write nothing.")
]

ToolsOpt = Annotated[
    str | None,
    typer.Option("--tools", help="Real tools module:attribute (a list; none for a plain chatbot)."),
]
RunsOpt = Annotated[int, typer.Option(help="Runs per case.", min=1)]
ReportOpt = Annotated[Path | None, typer.Option(help="Write the JSON report here.")]
BaselineOpt = Annotated[Path | None, typer.Option(help="An earlier JSON report to compare with.")]
JunitOpt = Annotated[Path | None, typer.Option(help="Write JUnit XML here.")]
MinPassRateOpt = Annotated[
    float | None,
    typer.Option(help="Rate for non-safety checks that set none (0..1).", min=0.0, max=1.0),
]
EmbeddingsUrlOpt = Annotated[
    str | None,
    typer.Option(help="OpenAI-compatible embeddings base URL for similar_to checks."),
]
EmbeddingsModelOpt = Annotated[str | None, typer.Option(help="Embeddings model.")]
