"""Fixtures of the dashboard suite: a seeded session on the shared server, and headless
Chromium (Debian's ``chromium`` package) driven by Playwright for Python.

Browser tests skip with the install lines when ``/usr/bin/chromium`` or Playwright is missing;
never ``playwright install`` (it downloads its own browser build).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _servers import DASHBOARD_TOKEN

from ._seed import Seeded, seed_support_session

pytest.importorskip("jinja2", reason="the dashboard needs Jinja2 (agentledger[server])")

CHROMIUM = Path("/usr/bin/chromium")
#: Where screenshots go (gitignored; CI keeps the folder as test artifacts).
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
#: A host name that resolves to 127.0.0.1 inside the test browser only: pages opened through
#: it are not "loopback" for the dashboard, so the login form is required (DNS-rebinding case).
REMOTE_HOST = "dashboard.test"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    f"--host-resolver-rules=MAP {REMOTE_HOST} 127.0.0.1",
]
INSTALL_HINT = (
    "apt-get install -y chromium (as root) and pip install 'playwright>=1.45'; "
    "do not run 'playwright install'"
)


@pytest.fixture
def seeded(ledger_server: Any, agent_name: str) -> Seeded:
    """A support session of a fresh agent on the shared server."""
    return seed_support_session(ledger_server.url, ledger_server.headers(), agent_name)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Debian Chromium, once per test module.

    Not session-scoped: Playwright's sync API keeps an asyncio loop marked as running in the
    main thread while it is open, which would break every later ``asyncio.run`` test.
    """
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: {INSTALL_HINT}")
    sync_api = pytest.importorskip("playwright.sync_api", reason=INSTALL_HINT)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh browser context and page; page errors and dialogs fail the test. The context
    holds the dev-session cookie for 127.0.0.1 (what opening the link ``serve`` prints
    gives), so pages on the loopback address open without a login, as for a developer."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.add_cookies(
        [
            {
                "name": "agentledger_ui_dev",
                "value": DASHBOARD_TOKEN,
                "domain": "127.0.0.1",
                "path": "/ui",
            }
        ]
    )
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on(
        "dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss())
    )

    def on_console(message: Any) -> None:
        # A refused login is answered 401 on purpose; any other console error is a problem.
        if message.type == "error" and "status of 401" not in message.text:
            problems.append(f"console {message.type}: {message.text}")

    tab.on("console", on_console)
    try:
        yield tab
    finally:
        context.close()
    assert not problems, problems
