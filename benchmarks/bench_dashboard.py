"""Dashboard benchmark: how long a large session's page takes, next to the raw replay call.

For sessions of N events on a real ``agentledger serve`` (one SQLite file), medians of:

* ``api``: GET ``/v1/sessions/{sid}/events`` (the replay the page reads, JSON only: the floor);
* ``page``: GET ``/ui/sessions/{sid}`` (first page of 200 rows, causal tree, stats) over HTTP;
* ``browser``: headless Chromium navigating to the page until the first row is selected by
  the page's script (needs ``/usr/bin/chromium`` and Playwright; skipped otherwise).

Target: a 5,000-event session renders under 2 s.

Usage: ``python benchmarks/bench_dashboard.py [--quick] [--sizes 1000,5000,20000] [--runs 5]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from agentledger.server._ui._viewer import COOKIE
from agentledger.testing import EmbeddedServer

KEY = "bench-key"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@contextmanager
def server(db: Path) -> Iterator[str]:
    with EmbeddedServer(db, api_key=KEY) as served:
        yield served.url


def seed(url: str, count: int) -> str:
    """One session of ``count`` events: tool call/result pairs under one root, LLM usage."""
    session = f"bench-{uuid.uuid4().hex[:10]}"
    t0 = datetime.now(UTC) - timedelta(hours=2)
    root = str(uuid.uuid4())
    events: list[dict[str, Any]] = [
        {
            "event_id": root,
            "agent": "bench-ui",
            "session_id": session,
            "event": "session_start",
            "data": {"framework": "bench"},
            "timestamp": t0.isoformat(),
        }
    ]
    call = root
    for i in range(1, count):
        event_id = str(uuid.uuid4())
        is_call = i % 2 == 1
        data: dict[str, Any] = (
            {"tool": f"tool_{i % 7}", "args": {"order_id": f"A{i}", "note": "x" * 80}}
            if is_call
            else {"tool": f"tool_{(i - 1) % 7}", "result": {"ok": True, "i": i}, "duration_ms": 3}
        )
        events.append(
            {
                "event_id": event_id,
                "agent": "bench-ui",
                "session_id": session,
                "event": "tool_call" if is_call else "tool_result",
                "data": data,
                "parent_id": root if is_call else call,
                "timestamp": (t0 + timedelta(milliseconds=10 * i)).isoformat(),
            }
        )
        if is_call:
            call = event_id
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        for start in range(0, len(events), 500):
            http.post("/v1/events/batch", json={"events": events[start : start + 500]})
    return session


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def login(ui: httpx.Client) -> str:
    """Log the client in as a user does: the key through the login form, kept as a cookie.
    Returns the cookie's value, for the browser to carry too."""
    response = ui.post("/ui/login", data={"key": KEY, "next": "/ui/"})
    assert response.status_code == 303, response.text[:500]
    cookie = ui.cookies.get(COOKIE)
    assert cookie, "the login set no cookie"
    return cookie


def browser_timer() -> tuple[Callable[[str, str, str, int], float] | None, Callable[[], None]]:
    if not CHROMIUM.exists():
        return None, lambda: None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None, lambda: None
    playwright = sync_playwright().start()
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 900})

    def measure(base: str, path: str, cookie: str, runs: int) -> float:
        if not page.context.cookies(base):  # the session the login form opened
            page.context.add_cookies([{"name": COOKIE, "value": cookie, "url": base + "/ui"}])

        def load() -> None:
            page.goto(base + path)
            page.wait_for_selector("#timeline tr.ev.sel")

        return median_ms(load, runs)

    def close() -> None:
        browser.close()
        playwright.stop()

    return measure, close


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1,000 and 5,000, 3 runs")
    parser.add_argument("--sizes", default="1000,5000,20000", help="session sizes (events)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per measurement")
    args = parser.parse_args()
    sizes = [1000, 5000] if args.quick else [int(s) for s in args.sizes.split(",")]
    runs = 3 if args.quick else args.runs
    headers = {"Authorization": f"Bearer {KEY}"}
    measure_browser, close_browser = browser_timer()
    rows = []
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            server(Path(tmp) / "bench.db") as url,
            httpx.Client(base_url=url, timeout=120) as ui,
        ):
            cookie = login(ui)
            for size in sizes:
                session = seed(url, size)
                api = median_ms(
                    lambda s=session: httpx.get(
                        f"{url}/v1/sessions/{s}/events",
                        params={"limit": 100_000},
                        headers=headers,
                        timeout=120,
                    ).raise_for_status(),
                    runs,
                )
                page = median_ms(
                    lambda s=session: ui.get(f"/ui/sessions/{s}").raise_for_status(),
                    runs,
                )
                browser = (
                    measure_browser(url, f"/ui/sessions/{session}", cookie, runs)
                    if measure_browser
                    else None
                )
                rows.append((size, api, page, browser))
    finally:
        close_browser()
    print(f"\ndashboard session page, medians of {runs} runs (target: 5,000 events < 2,000 ms)")
    print(f"{'events':>8} {'api replay ms':>14} {'page ms':>9} {'page/api':>9} {'browser ms':>11}")
    for size, api, page, browser in rows:
        shown = f"{browser:,.0f}" if browser is not None else "n/a"
        print(f"{size:>8,} {api:>14,.0f} {page:>9,.0f} {page / api:>8.2f}x {shown:>11}")


if __name__ == "__main__":
    main()
