"""Lay out a ``why()`` or ``impact()`` answer as a layered graph drawn in SVG by the templates.

Causes are drawn above their effects: each event sits in the layer after its deepest cause
(longest path from the root causes), an edge spanning several layers passes through a bend
point in each layer between, and a few barycenter sweeps order each layer so that edges cross
less. Pure geometry over the API's wire-shape answer: the template writes the numbers into SVG
attributes (no inline style, which the dashboard's CSP forbids) and escapes every text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Final, Literal

from agentledger.server._ui._present import EventView, view_events

__all__ = ["GRAPH_NODES", "GraphEdge", "GraphNode", "LineageGraph", "lineage_graph"]

#: Most events drawn in one graph; the ones nearest the asked event are kept.
GRAPH_NODES: Final = 300
NODE_W: Final = 250
NODE_H: Final = 64
#: Room a bend point of a long edge takes in its layer.
BEND_W: Final = 16
GAP_X: Final = 30
GAP_Y: Final = 64
MARGIN: Final = 16
#: Characters of a summary that fit on a node.
SUMMARY_FIT: Final = 38
_SWEEPS: Final = 4

Direction = Literal["why", "impact"]


@dataclass(slots=True)
class GraphNode:
    """One drawn event, or a cause that is not stored (``view`` is ``None``).

    ``x``/``y`` are the top left corner; ``cut`` when a bound left its causes (``why``) or
    effects (``impact``) unfollowed, ``trimmed`` when the drawing left some of them out."""

    event_id: str
    view: EventView | None
    x: float = 0.0
    y: float = 0.0
    asked: bool = False
    root: bool = False
    cut: bool = False
    trimmed: bool = False

    @property
    def title(self) -> str:
        """First line: the event type, and the tool when there is one."""
        if self.view is None:
            return "not stored"
        kind = str(self.view.event.get("event") or "")
        return f"{kind} · {self.view.tool}" if self.view.tool else kind

    @property
    def short_summary(self) -> str:
        """Second line: the summary cut to fit the node (the full one is its tooltip)."""
        text = self.event_id if self.view is None else self.view.summary
        return text if len(text) <= SUMMARY_FIT else text[: SUMMARY_FIT - 1] + "…"

    @property
    def category(self) -> str:
        """Colour class of the node, as the badges of the other pages."""
        if self.view is None:
            return "missing"
        kind = str(self.view.event.get("event") or "")
        if self.view.is_error:
            return "err"
        for prefix, name in (("tool_", "tool"), ("llm_", "llm"), ("step_", "step")):
            if kind.startswith(prefix):
                return name
        return "msg" if kind in ("user_message", "assistant_response") else "other"


@dataclass(slots=True)
class GraphEdge:
    """One causal edge: the SVG path from the cause down to the effect, and its label."""

    effect: str
    cause: str
    kind: str
    path: str
    label_x: float
    label_y: float


@dataclass(slots=True)
class LineageGraph:
    """What the template draws: nodes, edges and the canvas size."""

    direction: Direction
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0
    #: Events of the answer the drawing left out (over :data:`GRAPH_NODES`).
    not_drawn: int = 0

    node_w: float = NODE_W
    node_h: float = NODE_H

    @property
    def mark_y(self) -> float:
        """Where a node's "not followed" mark goes: on the side its causes (``why``) or
        effects (``impact``) would be."""
        return -6.0 if self.direction == "why" else NODE_H + 14.0

    @property
    def kinds(self) -> list[str]:
        """The edge kinds drawn, for the legend."""
        return sorted({e.kind for e in self.edges})


def _keep_nearest(
    asked: str, ids: Sequence[str], edges: Sequence[tuple[str, str, str]], cap: int
) -> set[str]:
    """The ``cap`` events fewest edges away from ``asked`` (either way), breadth first."""
    near: dict[str, list[str]] = {}
    for effect, cause, _ in edges:
        near.setdefault(effect, []).append(cause)
        near.setdefault(cause, []).append(effect)
    known = set(ids)
    keep = {asked}
    queue = deque([asked])
    while queue and len(keep) < cap:
        for other in near.get(queue.popleft(), []):
            if other in known and other not in keep and len(keep) < cap:
                keep.add(other)
                queue.append(other)
    return keep


def _ranks(ids: Sequence[str], causes: Mapping[str, list[str]]) -> dict[str, int]:
    """Layer of each node: one below its deepest cause (0 for a root cause)."""
    effects: dict[str, list[str]] = {}
    waiting = {n: 0 for n in ids}
    for node in ids:
        for cause in causes.get(node, []):
            effects.setdefault(cause, []).append(node)
            waiting[node] += 1
    rank = dict.fromkeys(ids, 0)
    ready = deque(n for n in ids if waiting[n] == 0)
    while ready:
        node = ready.popleft()
        for effect in effects.get(node, []):
            rank[effect] = max(rank[effect], rank[node] + 1)
            waiting[effect] -= 1
            if waiting[effect] == 0:
                ready.append(effect)
    return rank


def _order_layers(
    layers: list[list[str]], up: Mapping[str, list[str]], down: Mapping[str, list[str]]
) -> None:
    """Barycenter sweeps, down then up, reordering each layer in place."""
    for sweep in range(_SWEEPS):
        downward = sweep % 2 == 0
        sequence = range(1, len(layers)) if downward else range(len(layers) - 2, -1, -1)
        for index in sequence:
            other = layers[index - 1] if downward else layers[index + 1]
            place = {n: i for i, n in enumerate(other)}
            links = up if downward else down
            current = layers[index]
            keys: dict[str, float] = {}
            for position, node in enumerate(current):
                spots = [place[n] for n in links.get(node, []) if n in place]
                keys[node] = sum(spots) / len(spots) if spots else float(position)
            current.sort(key=keys.__getitem__)


def lineage_graph(
    answer: Mapping[str, Any],
    *,
    direction: Direction,
    asked_event: Mapping[str, Any],
    limit: int = GRAPH_NODES,
) -> LineageGraph:
    """The drawing of a ``why`` answer (``chain``, ``missing``, ``roots``) or an ``impact``
    answer (``events``; the asked event is passed as ``asked_event``), with ``cut_at`` marked.

    Args:
        answer: the API's JSON answer.
        direction: which read it answers.
        asked_event: the asked event (wire shape).
        limit: most events drawn; the nearest to the asked event are kept.
    """
    asked = str(asked_event.get("event_id", ""))
    listed = list(answer.get("chain" if direction == "why" else "events") or [])
    if all(e.get("event_id") != asked for e in listed):
        listed = [dict(asked_event), *listed] if direction == "impact" else [*listed, asked_event]
    views = {v.event_id: v for v in view_events(listed)}
    missing = [str(m) for m in answer.get("missing") or []] if direction == "why" else []
    ids = [*missing, *views]
    raw = [
        (str(e.get("effect")), str(e.get("cause")), str(e.get("kind") or "cause"))
        for e in answer.get("edges") or []
        if isinstance(e, Mapping)
    ]
    graph = LineageGraph(direction)
    keep = set(ids) if len(ids) <= limit else _keep_nearest(asked, ids, raw, limit)
    graph.not_drawn = len(ids) - len(keep)
    ids = [n for n in ids if n in keep]
    edges = [e for e in raw if e[0] in keep and e[1] in keep]
    trimmed = {e[0] if direction == "why" else e[1] for e in raw if e not in edges}
    cut = {str(c) for c in answer.get("cut_at") or []}
    roots = {str(r) for r in answer.get("roots") or []}
    causes: dict[str, list[str]] = {}
    effects: dict[str, list[str]] = {}
    for effect, cause, _ in edges:
        causes.setdefault(effect, []).append(cause)
        effects.setdefault(cause, []).append(effect)
    rank = _ranks(ids, causes)

    # Bend points of edges longer than one layer are nodes of their own while ordering.
    depth = max(rank.values(), default=0) + 1
    layers: list[list[str]] = [[] for _ in range(depth)]
    for node in ids:
        layers[rank[node]].append(node)
    up: dict[str, list[str]] = {n: [] for n in ids}
    down: dict[str, list[str]] = {n: [] for n in ids}
    routes: list[list[str]] = []
    for number, (effect, cause, _) in enumerate(edges):
        route = [cause]
        for level in range(rank[cause] + 1, rank[effect]):
            bend = f"~{number}~{level}"
            layers[level].append(bend)
            up[bend], down[bend] = [], []
            route.append(bend)
        route.append(effect)
        for above, below in pairwise(route):
            down[above].append(below)
            up[below].append(above)
        routes.append(route)
    _order_layers(layers, up, down)

    widths = [
        sum(BEND_W if n.startswith("~") else NODE_W for n in layer) + GAP_X * (len(layer) - 1)
        for layer in layers
    ]
    canvas = max(widths, default=NODE_W)
    spot: dict[str, tuple[float, float]] = {}  # top left corner; bend points are lines
    for number, layer in enumerate(layers):
        x = MARGIN + (canvas - widths[number]) / 2
        y = MARGIN + number * (NODE_H + GAP_Y)
        for node in layer:
            spot[node] = (x, y)
            x += (BEND_W if node.startswith("~") else NODE_W) + GAP_X
    for node in ids:
        graph.nodes.append(
            GraphNode(
                event_id=node,
                view=views.get(node),
                x=spot[node][0],
                y=spot[node][1],
                asked=node == asked,
                root=node in roots,
                cut=node in cut,
                trimmed=node in trimmed,
            )
        )
    graph.edges = _edge_shapes(edges, routes, spot)
    graph.width = canvas + 2 * MARGIN
    graph.height = depth * (NODE_H + GAP_Y) - GAP_Y + 2 * MARGIN + 20
    return graph


def _edge_shapes(
    edges: Sequence[tuple[str, str, str]],
    routes: Sequence[list[str]],
    spot: Mapping[str, tuple[float, float]],
) -> list[GraphEdge]:
    """SVG paths: out of the cause's bottom, through the bend points, into the effect's top;
    the ends of the edges of one node are spread along its side, in the order they leave."""
    leaving: dict[str, list[int]] = {}
    entering: dict[str, list[int]] = {}
    for number, route in enumerate(routes):
        leaving.setdefault(route[0], []).append(number)
        entering.setdefault(route[-1], []).append(number)

    def spread(node: str, numbers: list[int], nxt: int) -> dict[int, float]:
        numbers = sorted(numbers, key=lambda n: spot[routes[n][nxt]][0])
        step = NODE_W / (len(numbers) + 1)
        return {n: spot[node][0] + step * (i + 1) for i, n in enumerate(numbers)}

    start_x: dict[int, float] = {}
    end_x: dict[int, float] = {}
    for node, numbers in leaving.items():
        start_x.update(spread(node, numbers, 1))
    for node, numbers in entering.items():
        end_x.update(spread(node, numbers, -2))
    shapes = []
    for number, ((effect, cause, kind), route) in enumerate(zip(edges, routes, strict=True)):
        points = [(start_x[number], spot[cause][1] + NODE_H)]
        for bend in route[1:-1]:
            x, y = spot[bend][0] + BEND_W / 2, spot[bend][1]
            points += [(x, y), (x, y + NODE_H)]
        points.append((end_x[number], spot[effect][1]))
        path = [f"M{points[0][0]:.1f},{points[0][1]:.1f}"]
        for (x0, y0), (x1, y1) in pairwise(points):
            if x0 == x1 and y1 - y0 == NODE_H:  # through a layer: straight down
                path.append(f"L{x1:.1f},{y1:.1f}")
            else:
                middle = (y0 + y1) / 2
                path.append(f"C{x0:.1f},{middle:.1f} {x1:.1f},{middle:.1f} {x1:.1f},{y1:.1f}")
        (x0, y0), (x1, y1) = points[-2], points[-1]
        shapes.append(
            GraphEdge(effect, cause, kind, " ".join(path), (x0 + x1) / 2, (y0 + y1) / 2 + 4)
        )
    return shapes
