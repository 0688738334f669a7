"""Retention bad input: malformed windows, unknown agents, read-only and agent-bound keys."""

from __future__ import annotations

import httpx
import pytest

from _servers import ServerProcess

from ._helpers import ago, set_keep, write


@pytest.mark.parametrize("keep", ["30x", "-5d", "0d", "0s", "1.5d", "", "d", "30", "99999999d"])
def test_malformed_window_is_422_naming_keep(ledger_server: ServerProcess, keep: str) -> None:
    with httpx.Client(base_url=ledger_server.url, headers=ledger_server.headers()) as client:
        write(client, "bad-window", [ago(days=1)], "s")
        for agent in ("bad-window", None):
            response = set_keep(client, agent, keep)
            assert response.status_code == 422, response.text
            [error] = response.json()["detail"]
            assert error["loc"] == ["body", "keep"], error
            assert "keep" in error["msg"], error
        policies = client.get("/v1/retention/policies").json()
        assert "bad-window" not in {p["agent"] for p in policies["policies"]}


def test_unknown_agent_is_404_naming_agent(ledger_server: ServerProcess) -> None:
    with httpx.Client(base_url=ledger_server.url, headers=ledger_server.headers()) as client:
        for method, url, body, loc in (
            ("PUT", "/v1/retention/policies/nobody-here", {"keep": "1d"}, ["path", "agent"]),
            ("POST", "/v1/retention/run", {"agent": "nobody-here"}, ["body", "agent"]),
            ("GET", "/v1/retention/log?agent=nobody-here", None, ["query", "agent"]),
        ):
            response = client.request(method, url, json=body)
            assert response.status_code == 404, response.text
            [error] = response.json()["detail"]
            assert error["loc"] == loc and "nobody-here" in error["msg"]
        assert client.put("/v1/retention/policies/bad name", json={"keep": "1d"}).status_code == 422
        extra = client.post("/v1/retention/run", json={"dry": True})
        assert extra.status_code == 422 and "dry" in extra.text


def test_read_only_and_bound_keys_get_403(ledger_server: ServerProcess) -> None:
    with httpx.Client(base_url=ledger_server.url, headers=ledger_server.headers()) as admin:
        write(admin, "ret-keys", [ago(days=1)], "s")
        keys = {
            scope: admin.post(
                "/v1/keys", json={"name": f"ret-{scope}", "scope": scope, "agent": agent}
            ).json()["key"]
            for scope, agent in (("read_only", None), ("read_write", "ret-keys"))
        }
    for scope, key in keys.items():
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=ledger_server.url, headers=headers) as client:
            for method, url, body in (
                ("GET", "/v1/retention/policies", None),
                ("PUT", "/v1/retention/policies/ret-keys", {"keep": "1d"}),
                ("PUT", "/v1/retention/default", {"keep": "1d"}),
                ("POST", "/v1/retention/run", {"dry_run": True}),
                ("GET", "/v1/retention/log", None),
            ):
                response = client.request(method, url, json=body)
                assert response.status_code == 403, (scope, url, response.text)
                expected = "read_only" if scope == "read_only" else "not bound to an agent"
                assert expected in response.text
