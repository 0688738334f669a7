"""The human-readable parts of an evidence bundle: ``summary.md`` (what the event is, its root
causes, what it affected, what a verifier checks, what the bundle does not prove) and
``graph.png``, the causal graph drawn with matplotlib (optional: without it the bundle says so).
"""

from __future__ import annotations

import io
from typing import Any

import orjson

from agentledger.server._signing._bundle_material import BundleMaterial

__all__ = ["render_graph", "render_summary"]

#: Nodes drawn with their labels; a larger graph is drawn as dots and lines.
_LABELLED = 40


def _describe(event: dict[str, Any]) -> str:
    if event.get("erased"):
        return f"`{event['event_id']}` ({event.get('event') or 'event'}, **erased**)"
    data = orjson.dumps(event.get("data") or {}).decode()
    preview = data if len(data) <= 120 else data[:117] + "..."
    return (
        f"`{event['event_id']}` `{event.get('event')}` at {event.get('timestamp')} "
        f"(agent `{event.get('agent')}`, session `{event.get('session_id')}`): {preview}"
    )


def _bullets(material: BundleMaterial, ids: list[str], most: int = 20) -> list[str]:
    by_id = {e["event_id"]: e for e in material.events}
    lines = [f"- {_describe(by_id[i])}" for i in ids[:most] if i in by_id]
    if len(ids) > most:
        lines.append(f"- ... and {len(ids) - most} more (all in `lineage.json`)")
    return lines or ["- none"]


def render_summary(material: BundleMaterial, graph_note: str) -> bytes:
    """``summary.md``."""
    why, impact = material.why, material.impact
    causes = [i for i in why["events"] if i != material.event_id]
    lines = [
        f"# Evidence bundle: event {material.event_id}",
        "",
        "## The event",
        "",
        _describe(material.event),
        "",
        f"## Root causes ({len(why['roots'])} of {len(causes)} causes)",
        "",
        *_bullets(material, why["roots"]),
    ]
    if why["missing"]:
        lines += ["", f"Causes named but not stored: {', '.join(why['missing'])}."]
    if why["depth_truncated"] or why["size_truncated"]:
        lines += [
            "",
            "The ancestry was cut at the server's lineage bounds (`cut_at` in lineage.json).",
        ]
    lines += [
        "",
        f"## What it affected ({len(impact['events'])} events)",
        "",
        *_bullets(material, impact["events"]),
        "",
        "## What was verified",
        "",
        "A verifier (`agentledger evidence verify bundle.zip --public-key KEY`) checks, with "
        "only the server's public key:",
        "",
        "- the signature of `manifest.json` and the SHA-256 of every file it lists;",
        "- every record's SHA-256 against its checksum, and its row columns against the record;",
        "- every chain link from the first record of each segment up to the signed head, "
        "the erasure mark of every erased event and the seal of its shown columns;",
        "- the signed head's signature and that the segment ends at its sequence number;",
        "- that this event and every event of its lineage are in the segments, and that each "
        "edge is named by its effect's record.",
        "",
        "Chain segments:",
        "",
    ]
    for segment in material.segments:
        head = segment.head
        erased = sum(1 for r in segment.rows if r["record"] is None)
        lines.append(
            f"- agent `{segment.agent}`: sequence numbers {segment.first_seq} to "
            f"{head['sequence_no']} ({len(segment.rows)} records, {erased} erased), head "
            f"signed at {head['signed_at']} by `{head['key_id']}`"
            + (" for this bundle" if segment.signed_now else "")
            + ("; **HMAC-keyed links**" if head["hmac_links"] else "")
        )
    if any(s.head["hmac_links"] for s in material.segments):
        lines += [
            "",
            "With HMAC-keyed links (`AGENTLEDGER_CHAIN_KEY`) an outsider cannot recompute the "
            "links, erasure marks or seals. What still holds: the server's key signed the head "
            "and the manifest, the manifest fixes every record's bytes, and each record matches "
            "its checksum. Compare the head with a copy published earlier to tie it to a time.",
        ]
    lines += [
        "",
        "## What this bundle does not prove",
        "",
        "- That the content was true: a record says what the agent (or its integration) sent.",
        "- That any clock was right: event timestamps and `signed_at` are the writer's and the "
        "server's clocks.",
        "- That the ledger was not rewritten before the head was signed: only a head published "
        "earlier, somewhere the operator cannot rewrite, shows that.",
        "- Anything about events outside the lineage, or about records before an erased event "
        "that no signed head reaches (an erased record's link cannot be recomputed).",
        "- That the key is the server's: compare its fingerprint out of band.",
        "",
        f"Graph: {graph_note}",
        "",
    ]
    return "\n".join(lines).encode()


def _layers(material: BundleMaterial) -> dict[str, int]:
    """Each event's column: its longest path from a root (causes left of effects)."""
    order = [*material.why["events"], *material.impact["events"]]
    causes: dict[str, list[str]] = {}
    for edge in material.edges:
        causes.setdefault(edge["effect"], []).append(edge["cause"])
    layer: dict[str, int] = {}
    for node in order:  # causes come before their effects in both lists
        layer[node] = 1 + max((layer[c] for c in causes.get(node, ()) if c in layer), default=-1)
    return layer


def render_graph(material: BundleMaterial) -> tuple[bytes | None, str]:
    """``(png, note)``; ``(None, why)`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot
        from matplotlib.collections import LineCollection
    except ImportError:
        return None, "not drawn: matplotlib is not installed (pip install 'agentledger[evidence]')"
    layer = _layers(material)
    rows: dict[int, int] = {}
    place: dict[str, tuple[float, float]] = {}
    for node, column in layer.items():
        place[node] = (float(column), float(rows.get(column, 0)))
        rows[column] = rows.get(column, 0) + 1
    by_id = {e["event_id"]: e for e in material.events}
    width = min(40.0, 2.0 + 1.6 * (max(layer.values(), default=0) + 1))
    height = min(40.0, 2.0 + 0.6 * max(rows.values(), default=1))
    figure, axes = pyplot.subplots(figsize=(width, height), dpi=80)
    try:
        lines = [
            (place[e["cause"]], place[e["effect"]])
            for e in material.edges
            if e["cause"] in place and e["effect"] in place
        ]
        axes.add_collection(LineCollection(lines, colors="#888888", linewidths=0.8))
        colour = [
            "#d62728"
            if n == material.event_id
            else "#bbbbbb"
            if by_id.get(n, {}).get("erased")
            else "#1f77b4"
            for n in place
        ]
        xs, ys = zip(*place.values(), strict=True)
        axes.scatter(xs, ys, c=colour, s=60 if len(place) <= _LABELLED else 8, zorder=2)
        if len(place) <= _LABELLED:
            for node, (x, y) in place.items():
                event = by_id.get(node, {})
                label = f"{event.get('event') or '?'}\n{node[:8]}"
                axes.annotate(label, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
        axes.set_title(f"causal graph of {material.event_id} (red; grey: erased)", fontsize=9)
        axes.set_axis_off()
        axes.margins(0.1)
        out = io.BytesIO()
        figure.savefig(out, format="png", bbox_inches="tight")
    finally:
        pyplot.close(figure)
    return out.getvalue(), f"graph.png ({len(place)} events, {len(lines)} edges)"
