"""``agentledger.client.__all__`` is the whole public surface, sorted, documented and complete."""

from __future__ import annotations

import agentledger.client as client


def test_all_exports_exist() -> None:
    missing = [name for name in client.__all__ if not hasattr(client, name)]
    assert missing == []


def test_all_is_complete() -> None:
    public = {
        name
        for name, value in vars(client).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("agentledger")
    }
    public |= {"vocabulary"}
    assert public - {"annotations"} <= set(client.__all__), sorted(public - set(client.__all__))


def test_exported_members_have_docstrings() -> None:
    undocumented = [
        name
        for name in client.__all__
        if callable(getattr(client, name)) and not (getattr(client, name).__doc__ or "").strip()
    ]
    assert undocumented == []


def test_all_is_sorted_and_unique() -> None:
    assert len(client.__all__) == len(set(client.__all__))
    assert list(client.__all__) == sorted(client.__all__, key=lambda s: (not s.isupper(), s))


def test_sanitize_is_a_public_module_for_integrations() -> None:
    from agentledger.client import sanitize

    assert {"cut_string", "jsonable", "snapshot"} <= set(sanitize.__all__)
    missing = [name for name in sanitize.__all__ if not hasattr(sanitize, name)]
    assert missing == []
    assert sanitize.cut_string("abcdef", 3) == "abc…[cut, 6 chars]"
    assert sanitize.jsonable({1: {"x"}}) == {"1": ["x"]}
