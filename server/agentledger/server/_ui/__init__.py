"""The web dashboard served by ``agentledger serve`` at ``/ui/``: server-rendered pages that
read everything through the app's own ``/v1`` routes with the viewer's key. :func:`mount`
adds the pages to an app.

Pages and design: ``docs/design/server-dashboard.md``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import PlainTextResponse

__all__ = ["STATIC_DIR", "TEMPLATE_DIR", "mount"]

logger = logging.getLogger("agentledger.server")

#: Jinja2 templates of the pages.
TEMPLATE_DIR = Path(__file__).parent / "templates"
#: CSS and JS served under ``/ui/static/``.
STATIC_DIR = Path(__file__).parent / "static"


def mount(app: FastAPI) -> None:
    """Add the dashboard routes and ``/ui/static`` to ``app``.

    Needs Jinja2 (part of the ``server`` extra). Without it the server still runs: ``/ui/``
    answers 503 naming the package to install, and a warning is logged once.
    """
    try:
        import jinja2

        from agentledger.server._ui._compare import router as compare_router
        from agentledger.server._ui._lineage_pages import router as lineage_router
        from agentledger.server._ui._pages import duration, router, url_segment
        from agentledger.server._ui._present import pretty_json, without_data
    except ImportError as error:  # pragma: no cover - depends on the environment
        logger.warning("dashboard disabled: %s (pip install 'agentledger[server]')", error)
        message = f"the dashboard needs Jinja2: pip install 'agentledger[server]' ({error})"

        @app.get("/ui/{rest:path}", include_in_schema=False)
        async def dashboard_unavailable(rest: str) -> PlainTextResponse:
            return PlainTextResponse(message, status_code=503)

        return

    from starlette.staticfiles import StaticFiles

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty_json"] = pretty_json
    env.filters["seg"] = url_segment
    env.filters["without_data"] = without_data
    env.filters["duration"] = duration
    app.state.ui_templates = env
    app.include_router(router)
    app.include_router(lineage_router)
    app.include_router(compare_router)
    app.mount("/ui/static", StaticFiles(directory=STATIC_DIR), name="ui-static")
