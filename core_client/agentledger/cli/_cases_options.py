"""The options of ``agentledger cases run`` that gate a prompt or model change: similarity,
corpus gates, run naming, extra reports and the candidate overrides (their help texts)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "BaseUrlOpt",
    "HistogramOpt",
    "MarkdownOpt",
    "MaxRefusalRateOpt",
    "MaxTruncationsOpt",
    "MinMeanSimilarityOpt",
    "MinSimilarityOpt",
    "ModelOpt",
    "NoSimilarityOpt",
    "RunIdOpt",
    "SystemPromptOpt",
    "TemperatureOpt",
]

NoSimilarityOpt = Annotated[
    bool,
    typer.Option(
        "--no-similarity",
        help="Turn similarity off: similar_to checks are not evaluated and similarity "
        "gates cannot pass.",
    ),
]

MinMeanSimilarityOpt = Annotated[
    float | None,
    typer.Option(
        help="Corpus gate: mean similarity of the answers to the source answers.",
        min=-1.0,
        max=1.0,
    ),
]

MinSimilarityOpt = Annotated[
    float | None,
    typer.Option(
        help="Corpus gate: every run's similarity to its source answer.", min=-1.0, max=1.0
    ),
]

MaxTruncationsOpt = Annotated[
    int | None,
    typer.Option(help="Corpus gate: most final answers cut at a token limit.", min=0),
]

MaxRefusalRateOpt = Annotated[
    float | None,
    typer.Option(
        help="Corpus gate: most answers that decline (a phrase heuristic), 0..1.",
        min=0.0,
        max=1.0,
    ),
]

RunIdOpt = Annotated[
    str | None,
    typer.Option(
        help="Name of this run in the ledger (default in CI: the pipeline's run id); runs "
        "of this id that finished before are read back, not run again.",
        show_default=False,
    ),
]

MarkdownOpt = Annotated[
    Path | None, typer.Option(help="Write a Markdown summary (for a pull request) here.")
]

HistogramOpt = Annotated[
    Path | None,
    typer.Option(
        help="Draw the similarity scores (and the baseline's) to this image (needs "
        "agentledger[plot])."
    ),
]

SystemPromptOpt = Annotated[
    Path | None,
    typer.Option(
        "--system-prompt",
        help="A file with the candidate's system prompt, given to the factory as system_prompt=.",
        show_default=False,
    ),
]

ModelOpt = Annotated[
    str | None,
    typer.Option(help="The candidate's model, given to the factory as model=."),
]

TemperatureOpt = Annotated[
    float | None,
    typer.Option(help="The candidate's temperature, given to the factory as temperature="),
]

BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        help="The candidate's OpenAI-compatible endpoint, given to the factory as "
        "base_url= (agentledger.cases:openai_candidate uses it)."
    ),
]

TurnOpt = Annotated[
    str,
    typer.Option(
        "--turn",
        help="Multi-turn cases: all (regenerate every turn), last, each, or a turn number N; "
        "a chosen turn runs on the recorded conversation before it.",
    ),
]
