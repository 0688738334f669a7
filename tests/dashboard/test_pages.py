"""Dashboard pages over plain HTTP against a real ``agentledger serve`` (no browser needed), on
either store (``store_server``: the pages read only through the ``/v1`` API, so they must show
the same on SQLite and PostgreSQL).

Pages are read without any key (loopback + dev key: no login) unless a test says otherwise;
what they show is compared with what the JSON API answers for the same data.
"""

from __future__ import annotations

import html
import re
import time
import uuid
from typing import Any

import httpx
import markupsafe
import pytest

from ._seed import (
    XSS_TEXT,
    Seeded,
    seed_drifting_sessions,
    seed_long_session,
    seed_support_session,
)

pytestmark = pytest.mark.server

ROW_IDS = re.compile(r'<tr class="ev[^"]*" id="e-([0-9a-f-]{36})"')


@pytest.fixture
def seeded(store_server: Any, agent_name: str) -> Seeded:
    """A support session of a fresh agent on this module's server."""
    return seed_support_session(store_server.url, store_server.headers(), agent_name)


def get(server: Any, path: str, **kwargs: Any) -> httpx.Response:
    """A page as a developer's browser reads it: with the dev-session cookie."""
    kwargs.setdefault("cookies", server.ui_cookies())
    return httpx.get(server.url + path, timeout=30.0, **kwargs)


def row_classes(page: str) -> dict[str, str]:
    return {
        m.group(2): m.group(1)
        for m in re.finditer(r'<tr class="(ev[^"]*)" id="e-([0-9a-f-]{36})"', page)
    }


def test_index_lists_the_session_with_errors_and_tokens(store_server: Any, seeded: Seeded) -> None:
    response = get(store_server, "/ui/", params={"agent": seeded.agent})
    assert response.status_code == 200
    page = response.text
    assert f"/ui/sessions/{seeded.session_id}?agent={seeded.agent}" in page
    row = page.split(seeded.session_id, 1)[1].split("</tr>", 1)[0]
    assert ">15<" in row  # events
    assert '<td class="num err">1' in row  # one tool_error
    assert "1,030 / 57" in row  # 420 + 610 input, 35 + 22 output tokens
    assert f'href="/ui/agents/{seeded.agent}"' in page


def test_session_timeline_is_oldest_first_with_errors_and_interruptions_marked(
    store_server: Any, seeded: Seeded
) -> None:
    response = get(store_server, f"/ui/sessions/{seeded.session_id}")
    assert response.status_code == 200
    page = response.text
    assert ROW_IDS.findall(page) == [seeded.ids[role] for role in seeded.order]
    classes = row_classes(page)
    assert "err" in classes[seeded.ids["verify_error"]].split()
    assert "intr" in classes[seeded.ids["interrupt"]].split()
    assert classes[seeded.ids["lookup_result"]] == "ev"
    assert "TimeoutError: payment gateway timed out" in page
    assert "420 / 35" in page and "840 ms" in page
    # The causal tree lists every event once.
    tree = page.split('id="tree"', 1)[1].split("</details>", 1)[0]
    assert sorted(re.findall(r'data-id="([0-9a-f-]{36})"', tree)) == sorted(seeded.ids.values())


def graph_nodes(page: str, section: str) -> set[str]:
    """Ids of the events drawn in the graph of the page's ``section`` (``why``/``impact``)."""
    part = page.split(f'id="{section}"', 1)[1].split("</section>", 1)[0]
    return set(re.findall(r'<g class="node[^"]*" data-id="([0-9a-f-]{36})"', part))


def test_event_page_draws_why_and_impact_graphs(store_server: Any, seeded: Seeded) -> None:
    answer = get(store_server, f"/ui/events/{seeded.ids['answer']}").text
    api = httpx.get(
        f"{store_server.url}/v1/events/{seeded.ids['answer']}/why",
        headers=store_server.headers(),
    ).json()
    assert graph_nodes(answer, "why") == {e["event_id"] for e in api["chain"]}
    assert graph_nodes(answer, "why") == {
        seeded.ids[r] for r in ("start", "step", "interrupt", "xss", "answer")
    }
    assert f'href="/ui/events/{seeded.ids["answer"]}/why"' in answer

    step = get(store_server, f"/ui/events/{seeded.ids['step']}").text
    expected = {seeded.ids[r] for r in seeded.order if r not in ("start", "user", "step")}
    assert graph_nodes(step, "impact") == expected | {seeded.ids["step"]}
    assert f"{len(expected)} event(s) computed from it" in step


def test_agent_page_shows_the_same_chain_head_as_the_api(store_server: Any, seeded: Seeded) -> None:
    page = get(store_server, f"/ui/agents/{seeded.agent}").text
    report = httpx.get(
        f"{store_server.url}/v1/events/chain",
        params={"agent": seeded.agent},
        headers=store_server.headers(),
    ).json()
    assert report["intact"] is True
    assert "✔ intact" in page
    assert f'<code id="chain-head">{report["chain_head"]["chain_hash"]}</code>' in page
    assert f"#{report['chain_head']['sequence_no']} " in page


def test_agent_page_reports_a_broken_chain(server_factory: Any, agent_name: str) -> None:
    import sqlite3

    from ._seed import seed_support_session

    server = server_factory()
    seeded = seed_support_session(server.url, server.headers(), agent_name)
    server.stop()
    with sqlite3.connect(server.db) as db:
        db.execute(
            "UPDATE events SET record = CAST(replace(record, 'payment gateway', "
            "'PAYMENT GATEWAY') AS BLOB) WHERE event_id = ?",
            (seeded.ids["verify_error"],),
        )
    server.start()
    report = httpx.get(
        f"{server.url}/v1/events/chain", params={"agent": agent_name}, headers=server.headers()
    ).json()
    assert report["intact"] is False, report  # the edit itself took effect
    page = get(server, f"/ui/agents/{agent_name}").text
    assert "✘ broken" in page, page[-3000:]
    problems = page.split('id="chain-problems"', 1)[1].split("</table>", 1)[0]
    assert "content_changed" in problems
    assert seeded.ids["verify_error"] in problems


def test_event_data_is_escaped_and_no_inline_script_is_allowed(
    store_server: Any, seeded: Seeded
) -> None:
    for path in (
        f"/ui/sessions/{seeded.session_id}",
        f"/ui/events/{seeded.ids['xss']}",
        f"/ui/events/{seeded.ids['answer']}",
        f"/ui/events/{seeded.ids['answer']}/why",
        f"/ui/events/{seeded.ids['start']}/impact",
    ):
        response = get(store_server, path)
        assert response.status_code == 200
        page = response.text
        assert "<script>window.__xss" not in page
        assert "<img src=x" not in page
        assert "<b>not bold</b>" not in page
        assert html.escape("<script>window.__xss", quote=False) in page
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
    # The markup also survives a round trip as text in the summary (not cut into tags).
    assert (
        str(markupsafe.escape(XSS_TEXT[:40]))
        in get(store_server, f"/ui/sessions/{seeded.session_id}").text
    )


def test_session_ids_with_markup_are_escaped_in_pages_and_links(
    store_server: Any, agent_name: str
) -> None:
    from ._seed import seed_support_session

    weird = "s<svg onload=alert(1)>\"'&x"
    seed_support_session(store_server.url, store_server.headers(), agent_name, session_id=weird)
    index = get(store_server, "/ui/", params={"agent": agent_name}).text
    assert "<svg onload" not in index
    assert "/ui/sessions/s%3Csvg%20onload%3Dalert%281%29%3E%22%27%26x" in index
    page = get(store_server, "/ui/sessions/s%3Csvg%20onload%3Dalert%281%29%3E%22%27%26x")
    assert page.status_code == 200
    assert "<svg onload" not in page.text
    assert str(markupsafe.escape(weird)) in page.text


def test_pages_need_a_key_when_the_host_is_not_loopback(store_server: Any, seeded: Seeded) -> None:
    # A page reached through another host name (e.g. DNS rebinding) gets no dev-key access.
    remote = {"Host": "dashboard.test"}
    response = get(store_server, "/ui/", headers=remote, params={"agent": seeded.agent})
    assert response.status_code == 303
    assert response.headers["location"].startswith("/ui/login?next=")
    assert seeded.session_id not in response.text

    login = get(store_server, "/ui/login", headers=remote)
    assert login.status_code == 200 and 'name="key"' in login.text


def test_login_with_a_read_only_key_sets_a_session_cookie(
    store_server: Any, seeded: Seeded
) -> None:
    created = httpx.post(
        f"{store_server.url}/v1/keys",
        json={"name": "viewer", "scope": "read_only"},
        headers=store_server.headers(),
    )
    assert created.status_code in (200, 201), created.text
    raw = created.json()["key"]
    remote = {"Host": "dashboard.test", "Origin": "http://dashboard.test"}
    with httpx.Client(base_url=store_server.url, headers=remote, timeout=30.0) as browser:
        bad = browser.post("/ui/login", data={"key": "al_wrong", "next": "/ui/"})
        assert bad.status_code == 401 and 'id="login-error"' in bad.text

        target = f"/ui/sessions/{seeded.session_id}"
        ok = browser.post("/ui/login", data={"key": raw, "next": target})
        assert ok.status_code == 303 and ok.headers["location"] == target
        cookie = ok.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/ui" in cookie
        assert "expires" not in cookie.lower() and "max-age" not in cookie.lower()

        page = browser.get(target)
        assert page.status_code == 200
        assert seeded.ids["answer"] in page.text
        assert 'action="/ui/logout"' in page.text

        out = browser.post("/ui/logout")
        assert out.status_code == 303
        assert browser.get(target).status_code == 303


def test_login_refuses_cross_site_posts_and_foreign_redirects(store_server: Any) -> None:
    hostile = {"Origin": "http://evil.example"}
    response = httpx.post(
        f"{store_server.url}/ui/login",
        data={"key": "dev-test-key-0123456789", "next": "/ui/"},
        headers=hostile,
    )
    assert response.status_code == 401 and "cross-site" in response.text

    for target in ("https://evil.example/", "//evil.example/ui/", "/v1/agents", "/ui/\\evil"):
        response = httpx.post(
            f"{store_server.url}/ui/login",
            data={"key": store_server.api_key, "next": target},
        )
        assert response.status_code == 303
        assert response.headers["location"] == "/ui/", target


def test_an_agent_bound_key_sees_only_its_agent(
    store_server: Any, seeded: Seeded, agent_name: str
) -> None:
    created = httpx.post(
        f"{store_server.url}/v1/keys",
        json={"name": "other", "scope": "read_only", "agent": "someone-else"},
        headers=store_server.headers(),
    )
    bound = {"Authorization": f"Bearer {created.json()['key']}"}
    session = get(store_server, f"/ui/sessions/{seeded.session_id}", headers=bound)
    assert session.status_code in (403, 404)
    assert seeded.ids["answer"] not in session.text
    event = get(store_server, f"/ui/events/{seeded.ids['answer']}", headers=bound)
    assert event.status_code == 404
    assert "Refund of 49.90" not in event.text
    index = get(store_server, "/ui/", headers=bound)
    assert index.status_code == 200 and seeded.session_id not in index.text


def test_unknown_things_are_404_pages(store_server: Any) -> None:
    for path in (
        "/ui/events/00000000-0000-4000-8000-000000000000",
        "/ui/events/not-a-uuid",
        "/ui/sessions/no-such-session",
        "/ui/agents/no-such-agent",
    ):
        response = get(store_server, path)
        assert response.status_code in (404, 422), path
        assert 'id="error-message"' in response.text, path


def test_static_assets_and_root_redirect(store_server: Any) -> None:
    css = get(store_server, "/ui/static/dashboard.css")
    js = get(store_server, "/ui/static/dashboard.js")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert js.status_code == 200 and "javascript" in js.headers["content-type"]
    root = get(store_server, "/ui")
    assert root.status_code == 307 and root.headers["location"] == "/ui/"


def wait_until_searchable(server: Any, agent: str, event_id: str, timeout_s: float = 20.0) -> None:
    """The keyword index is filled after the write: wait until the API itself finds the
    event, so the test then checks what the page makes of the API's answer."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = httpx.post(
            f"{server.url}/v1/search",
            json={"query": "refund", "agent": agent, "mode": "keyword", "limit": 50},
            headers=server.headers(),
        )
        if event_id in {hit["event_id"] for hit in found.json()["results"]}:
            return
        time.sleep(0.1)
    raise AssertionError(f"the API's keyword search did not find {event_id}")


def test_search_box_searches_or_says_why_not(store_server: Any, seeded: Seeded) -> None:
    paths = httpx.get(f"{store_server.url}/openapi.json").json()["paths"]
    if "/v1/search" in paths:
        wait_until_searchable(store_server, seeded.agent, seeded.ids["answer"])
    page = get(store_server, "/ui/", params={"agent": seeded.agent, "q": "refund"}).text
    if "/v1/search" in paths:
        results = page.split('id="search-results"', 1)[1].split("</section>", 1)[0]
        assert seeded.ids["answer"] in results
        assert 'id="search-box" disabled' not in page
    else:
        assert 'id="search-box" disabled' in page
        assert 'id="search-unavailable"' in page
        assert seeded.session_id in page  # the session list still shows


def test_a_5000_event_session_pages_and_renders_quickly(
    store_server: Any, agent_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long = seed_long_session(store_server.url, store_server.headers(), agent_name, count=5000)
    path = f"/ui/sessions/{long.session_id}"
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        response = get(store_server, path)
        timings.append((time.perf_counter() - started) * 1000)
    assert response.status_code == 200
    assert len(ROW_IDS.findall(response.text)) == 200
    assert "page 1 of 25" in response.text
    last = get(store_server, path, params={"focus": long.ids["last"]}).text
    assert "page 25 of 25" in last
    assert f'class="ev focus" id="e-{long.ids["last"]}"' in last
    big = get(store_server, path, params={"per_page": 1000, "page": 5}).text
    assert len(ROW_IDS.findall(big)) == 1000 and "page 5 of 5" in big
    with capsys.disabled():
        print(
            f"\n[dashboard] 5,000-event session page over HTTP: "
            f"median {sorted(timings)[1]:.0f} ms (runs: {', '.join(f'{t:.0f}' for t in timings)})"
        )


def test_agent_page_draws_baseline_against_recent_when_the_route_exists(
    store_server: Any, agent_name: str
) -> None:
    paths = httpx.get(f"{store_server.url}/openapi.json").json()["paths"]
    seed_drifting_sessions(store_server.url, store_server.headers(), agent_name)
    page = get(store_server, f"/ui/agents/{agent_name}").text
    section = page.split('id="baseline"', 1)[1].split("</section>", 1)[0]
    if "/v1/agents/{agent}/baseline" not in paths:
        assert 'id="baseline-unavailable"' in section
        return
    # Every session counts as recent by the route's default; the page picks the last third.
    api = httpx.get(
        f"{store_server.url}/v1/agents/{agent_name}/baseline",
        params={"recent_window": 10},
        headers=store_server.headers(),
    ).json()
    verdict = section.split('id="baseline-verdict"', 1)[1].split("</dl>", 1)[0]
    assert f"<dd>{api['verdict']}</dd>" in verdict and "drift" in api["verdict"]
    assert "verify_charge" in section
    charts = re.findall(r"<figcaption>([^<]+)<", section)
    assert [c.strip() for c in charts] == ["event types", "steps", "transitions"]
    assert section.count('class="recent"') >= 3
    assert "tool_result:lookup_order -&gt; tool_call:issue_refund" in section
    # An explicit window is passed through.
    again = get(store_server, f"/ui/agents/{agent_name}", params={"recent": 25}).text
    assert 'name="recent" min="1" max="100000" value="25"' in again


def test_without_jinja2_the_server_runs_and_ui_says_what_to_install(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = f"""
import sys
sys.modules["jinja2"] = None  # as if Jinja2 were not installed
from fastapi.testclient import TestClient
from agentledger.server._app import create_app
from agentledger.server._settings import Settings
app = create_app(Settings(db={str(tmp_path / "l.db")!r}, dev_key="k"))
with TestClient(app) as client:
    ui = client.get("/ui/")
    health = client.get("/health")
print(ui.status_code, health.status_code, ui.text)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    status, health, message = done.stdout.strip().split(" ", 2)
    assert (status, health) == ("503", "200")
    assert "pip install 'agentledger[server]'" in message
    assert "dashboard disabled" in done.stderr


def test_a_session_of_two_agents_shows_both_or_one_when_filtered(
    store_server: Any, agent_name: str
) -> None:
    from ._seed import post_events

    session = f"handoff-{agent_name}"
    triage, billing = f"{agent_name}-triage", f"{agent_name}-billing"
    first = str(uuid.uuid4())
    post_events(
        store_server.url,
        store_server.headers(),
        [
            {
                "event_id": first,
                "agent": triage,
                "session_id": session,
                "event": "user_message",
                "data": {"text": "refund please"},
                "timestamp": "2026-01-01T00:00:00+00:00",
            },
            {
                "agent": billing,
                "session_id": session,
                "event": "tool_call",
                "data": {"tool": "issue_refund", "args": {}},
                "parent_id": first,
                "timestamp": "2026-01-01T00:00:01+00:00",
            },
        ],
    )
    both = get(store_server, f"/ui/sessions/{session}").text
    assert len(ROW_IDS.findall(both)) == 2
    assert f"<small>{triage}</small>" in both and f"<small>{billing}</small>" in both
    only = get(store_server, f"/ui/sessions/{session}", params={"agent": billing}).text
    assert len(ROW_IDS.findall(only)) == 1 and "issue_refund" in only
    assert "refund please" not in only
    index = get(store_server, "/ui/", params={"agent": triage}).text
    assert f"/ui/sessions/{session}?agent={triage}" in index
    assert f'href="/ui/agents/{billing}"' in index  # the session's other agent is listed
