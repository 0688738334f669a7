"""The one shape every framework integration has (README, "Integrations").

``instrument(target, ledger, *, session_id=None, metadata=None, max_scopes=None, ...)`` in
every integration package, next to the framework-native object it returns or binds.
"""

from __future__ import annotations

import importlib
import inspect

SHARED_OPTIONS = ("session_id", "metadata", "max_scopes")


def assert_one_shape(module_name: str) -> None:
    """``module_name.instrument`` takes (target, ledger) and the shared keyword options."""
    module = importlib.import_module(module_name)
    assert "instrument" in module.__all__
    parameters = list(inspect.signature(module.instrument).parameters.values())
    positional = [p for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert len(positional) == 2 and positional[1].name == "ledger", parameters
    by_name = {p.name: p for p in parameters}
    for name in SHARED_OPTIONS:
        assert name in by_name, f"{module_name}.instrument has no {name}="
        assert by_name[name].kind is inspect.Parameter.KEYWORD_ONLY
        assert by_name[name].default is None
