"""The order the app tries its routes in: the hot routes come early (FastAPI walks the list on
every request), and no route can take a request meant for a route after it."""

from __future__ import annotations

import re
from pathlib import Path

from _twin_ledgers import served_routes
from agentledger.server._app import create_app
from agentledger.server._settings import Settings


def _probe(path: str) -> str:
    """A concrete path the route's own pattern matches: each parameter as a plain segment."""
    return re.sub(r"\{[^}]+\}", "x", path)


def test_no_route_takes_a_request_meant_for_a_later_route(tmp_path: Path) -> None:
    app = create_app(Settings(db=str(tmp_path / "order.db")))
    try:
        routes = [
            (route, path) for route, path in served_routes(app) if getattr(route, "methods", None)
        ]
    finally:
        app.state.store.close()
    assert len(routes) > 30
    shadowed = []
    for i, (later, later_path) in enumerate(routes):
        probe = _probe(later_path)
        for earlier, earlier_path in routes[:i]:
            both = set(earlier.methods) & set(later.methods) - {"HEAD"}
            if both and earlier_path != later_path and earlier.path_regex.match(probe):
                shadowed.append(f"{sorted(both)} {later_path} is taken by {earlier_path}")
    assert not shadowed, shadowed
