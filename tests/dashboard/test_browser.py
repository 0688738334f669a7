"""The dashboard in headless Debian Chromium (Playwright for Python) against a real server.

Walks a seeded session the way a person would: index → session → j/k stepping with the side
panel → expand an event → why link → agent page; checks the XSS probe stays text and runs
nothing; logs how long a 5,000-event session takes to load. Screenshots go to
``test-artifacts/dashboard/``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from ._seed import XSS_TEXT, Seeded, seed_long_session
from .conftest import ARTIFACTS, REMOTE_HOST

pytestmark = pytest.mark.server


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def selected_id(page: Any) -> str:
    return str(page.eval_on_selector("#timeline tr.ev.sel", "row => row.dataset.id"))


def test_walk_a_session_with_the_keyboard(page: Any, ledger_server: Any, seeded: Seeded) -> None:
    page.goto(f"{ledger_server.url}/ui/?agent={seeded.agent}")
    assert page.locator("#sessions").get_by_text(seeded.session_id).is_visible()
    shot(page, "01-index")

    page.get_by_role("link", name=seeded.session_id).click()
    page.wait_for_selector("#timeline tr.ev.sel")
    assert selected_id(page) == seeded.ids["start"]  # the first event is selected on load
    rows = page.locator("#timeline tbody tr.ev")
    assert rows.count() == len(seeded.order)

    # j steps forward through the timeline, k back; the panel follows.
    target = seeded.order.index("verify_error")
    for _ in range(target):
        page.keyboard.press("j")
    assert selected_id(page) == seeded.ids["verify_error"]
    assert "tool_error" in page.inner_text("#panel-title")
    assert "verify_charge" in page.inner_text("#panel-title")
    assert "payment gateway timed out" in page.inner_text("#panel-body")
    page.keyboard.press("k")
    assert selected_id(page) == seeded.ids["verify"]
    page.keyboard.press("j")
    # The selection is in the address (a shareable link). Read it from the document: Playwright's
    # page.url learns of a same-document history change asynchronously and may lag a keypress.
    assert page.evaluate("window.location.hash") == f"#e-{seeded.ids['verify_error']}"
    assert page.locator("#timeline tr.ev[aria-selected='true']").count() == 1

    # o expands the selected row to its full JSON.
    row = page.locator(f"#e-{seeded.ids['verify_error']}")
    assert not row.locator("details").evaluate("d => d.open")
    page.keyboard.press("o")
    assert row.locator("details").evaluate("d => d.open")
    assert '"type": "TimeoutError"' in row.locator("pre.json.data").inner_text()
    shot(page, "02-session-stepping")

    # The causal tree selects rows too; the error is marked there as well.
    tree_item = page.locator(f"#tree li[data-id='{seeded.ids['lookup_result']}'] a")
    tree_item.click()
    assert selected_id(page) == seeded.ids["lookup_result"]
    assert "err" in (
        page.locator(f"#tree li[data-id='{seeded.ids['verify_error']}']").get_attribute("class")
        or ""
    )

    # "why & impact" leads to the event page; its why chain links lead further up.
    for _ in range(seeded.order.index("answer") - seeded.order.index("lookup_result")):
        page.keyboard.press("j")
    assert selected_id(page) == seeded.ids["answer"]
    page.click("#panel-why")
    page.wait_for_url(re.compile(f"/ui/events/{seeded.ids['answer']}$"))
    chain = page.locator("#why-graph g.node")
    assert chain.count() == 5
    start = page.locator(f"#why-graph g.node[data-id='{seeded.ids['start']}']")
    assert "session_start" in start.text_content()
    asked = page.locator("#why-graph g.node.asked")
    assert "Refund of 49.90 EUR" in asked.text_content()
    assert start.bounding_box()["y"] < asked.bounding_box()["y"]  # causes above
    shot(page, "03-event-why")

    # The step_start ancestor's node opens its own event page.
    page.locator(f"#why-graph g.node[data-id='{seeded.ids['step']}'] a.open").click()
    page.wait_for_url(re.compile(f"/ui/events/{seeded.ids['step']}$"))
    impact = page.locator("#impact-graph g.node")
    assert impact.count() == len(seeded.order) - 3 + 1  # what descends, and the step itself
    shot(page, "04-event-impact")

    page.locator("#session-link").click()
    page.wait_for_selector("#timeline tr.ev.sel")
    assert selected_id(page) == seeded.ids["step"]

    page.goto(f"{ledger_server.url}/ui/agents/{seeded.agent}")
    assert "intact" in page.inner_text("#chain-verdict")
    assert re.fullmatch(r"[0-9a-f]{64}", page.inner_text("#chain-head"))
    shot(page, "05-agent")


def test_event_data_with_markup_shows_as_text_and_runs_nothing(
    page: Any, ledger_server: Any, seeded: Seeded
) -> None:
    for path in (f"/ui/sessions/{seeded.session_id}", f"/ui/events/{seeded.ids['xss']}"):
        page.goto(f"{ledger_server.url}{path}")
        page.wait_for_load_state("load")
        assert page.evaluate("window.__xss") is None
        assert page.locator("img[src='x']").count() == 0
        assert page.locator("main b", has_text="not bold").count() == 0
        assert page.locator("textarea").count() == 0
    # On the event page the probe is shown verbatim as text.
    assert XSS_TEXT in page.inner_text("#record").replace('\\"', '"')
    page.goto(f"{ledger_server.url}/ui/sessions/{seeded.session_id}#e-{seeded.ids['xss']}")
    page.wait_for_selector("#timeline tr.ev.sel")
    page.keyboard.press("o")
    assert "<script>window.__xss" in page.inner_text(f"#e-{seeded.ids['xss']} summary")
    assert "<script>window.__xss" in page.inner_text("#panel-body")
    assert page.evaluate("window.__xss") is None
    shot(page, "06-xss-as-text")


def test_a_remote_host_asks_for_a_key_once(page: Any, ledger_server: Any, seeded: Seeded) -> None:
    """A host name that is not loopback gets the login page; the dev key is refused there
    (it is honoured only for a loopback asker), a stored key opens the dashboard."""
    created = httpx.post(
        f"{ledger_server.url}/v1/keys",
        json={"name": f"ui-{seeded.agent}", "scope": "read_only"},
        headers=ledger_server.headers(),
        timeout=10,
    )
    assert created.status_code == 201, created.text
    stored_key = created.json()["key"]
    base = f"http://{REMOTE_HOST}:{ledger_server.port}"
    page.goto(f"{base}/ui/sessions/{seeded.session_id}")
    page.wait_for_url(re.compile(r"/ui/login\?next="))
    page.fill("#key", "al_not-a-key")
    page.click("button[type=submit]")
    assert "unknown or revoked" in page.inner_text("#login-error")
    page.fill("#key", ledger_server.api_key)  # the dev key, from a non-loopback host name
    page.click("button[type=submit]")
    page.wait_for_selector("#login-error")
    assert "/ui/login" in page.url
    page.fill("#key", stored_key)
    shot(page, "07-login")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(f"/ui/sessions/{seeded.session_id}"))
    assert page.locator("#timeline tr.ev").count() == len(seeded.order)
    # The key is kept for the browser session: other pages open without asking again.
    page.goto(f"{base}/ui/agents/{seeded.agent}")
    assert "intact" in page.inner_text("#chain-verdict")
    cookies = {c["name"]: c for c in page.context.cookies()}
    cookie = cookies["agentledger_ui_key"]
    assert cookie["httpOnly"] and cookie["expires"] == -1 and cookie["path"] == "/ui"
    assert page.evaluate("document.cookie") == ""  # not readable from scripts
    page.click("form.logout button")
    page.wait_for_url(re.compile(r"/ui/login"))


def test_a_5000_event_session_loads_and_pages_with_the_keyboard(
    page: Any, ledger_server: Any, agent_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long = seed_long_session(ledger_server.url, ledger_server.headers(), agent_name, count=5000)
    url = f"{ledger_server.url}/ui/sessions/{long.session_id}"
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("#timeline tr.ev.sel")
        timings.append((time.perf_counter() - started) * 1000)
    assert page.locator("#timeline tbody tr.ev").count() == 200
    shot(page, "08-long-session")
    # k on the first row of page 2 goes back to the last row of page 1, j forward again.
    page.click(".pager a.next >> nth=0")
    page.wait_for_selector("#timeline tr.ev.sel")
    assert page.inner_text("#timeline tr.ev.sel td.num >> nth=0") == "201"
    page.keyboard.press("k")
    page.wait_for_url(re.compile(r"page=1.*#last$"))
    page.wait_for_selector("#timeline tr.ev.sel")
    assert page.inner_text("#timeline tr.ev.sel td.num >> nth=0") == "200"
    page.keyboard.press("j")
    page.wait_for_url(re.compile(r"page=2.*#first$"))
    page.wait_for_selector("#timeline tr.ev.sel")
    assert page.inner_text("#timeline tr.ev.sel td.num >> nth=0") == "201"
    with capsys.disabled():
        print(
            f"\n[dashboard] 5,000-event session in Chromium (navigation to selected row): "
            f"median {sorted(timings)[1]:.0f} ms (runs: {', '.join(f'{t:.0f}' for t in timings)})"
        )
