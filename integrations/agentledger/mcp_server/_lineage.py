"""The answers of the ``why`` and ``impact`` tools: the API's DAG (events with their causes and
scope, edges with their kinds, roots, missing causes, cut points) as ``structuredContent``, and
the tree ``agentledger why``/``impact`` print (``agentledger.timeline``) as text."""

from __future__ import annotations

from mcp.types import CallToolResult

from agentledger.client import Edge, Event, ImpactResult, WhyResult
from agentledger.mcp_server._text import answer, event_json
from agentledger.timeline import describe, lineage_lines, lineage_notes, lineage_title

__all__ = ["edges_json", "impact_answer", "lineage_text", "why_answer"]


def edges_json(edges: list[Edge]) -> list[dict[str, str]]:
    """A lineage answer's edges: ``effect`` was computed from ``cause``; ``kind`` says how."""
    return [{"effect": e.effect, "cause": e.cause, "kind": e.kind} for e in edges]


def lineage_text(result: WhyResult | ImpactResult, asked: Event | None = None) -> str:
    """A title, the tree of causes (or effects) with ids and edge kinds, then what its marks
    mean."""
    lines = lineage_lines(result, asked)
    text = [lineage_title(result)]
    text += [line.text(describe(line.event)) if line.event else line.text() for line in lines]
    text += lineage_notes(lines, result, how_to_raise="depth or limit")
    return "\n".join(text)


def why_answer(result: WhyResult) -> CallToolResult:
    """The ``why`` tool's answer."""
    return answer(
        lineage_text(result),
        {
            "event_id": result.event_id,
            "chain_length": result.chain_length,
            "chain_complete": result.chain_complete,
            "depth_truncated": result.depth_truncated,
            "size_truncated": result.size_truncated,
            "missing_parent": result.missing_parent,
            "roots": result.roots,
            "missing": result.missing,
            "cut_at": result.cut_at,
            "edges": edges_json(result.edges),
            "chain": [event_json(e) for e in result.chain],
        },
    )


def impact_answer(result: ImpactResult, asked: Event) -> CallToolResult:
    """The ``impact`` tool's answer; ``asked`` is the event asked about (drawn at the top)."""
    return answer(
        lineage_text(result, asked),
        {
            "event_id": result.event_id,
            "count": result.count,
            "truncated": result.truncated,
            "depth_truncated": result.depth_truncated,
            "cut_at": result.cut_at,
            "edges": edges_json(result.edges),
            "events": [event_json(e) for e in result.events],
        },
    )
