"""Tools rebuilt from the definitions a session's model was offered (``captured_with.
tool_schemas``), for a run given no ``--tools``: the candidate is offered the same names,
descriptions and argument schemas, and the case's stubs answer the calls. Their bodies never
run (the runner wraps them in stubs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["recorded_tools"]


def _definition(schema: Any) -> tuple[str, str, dict[str, Any]] | None:
    """``(name, description, JSON Schema of the arguments)`` of one recorded definition: Chat
    Completions (``{"type": "function", "function": {...}}``), Responses (``{"type":
    "function", "name": ...}``) or Anthropic (``{"name", "input_schema"}``); ``None`` for
    anything else (a provider's built-in tool)."""
    if not isinstance(schema, Mapping):
        return None
    function = schema.get("function")
    body = function if isinstance(function, Mapping) else schema
    name = body.get("name")
    if not isinstance(name, str) or not name:
        return None
    parameters = body.get("parameters", body.get("input_schema"))
    if not isinstance(parameters, Mapping):
        parameters = {"type": "object", "properties": {}}
    description = body.get("description")
    return name, description if isinstance(description, str) else "", dict(parameters)


def _never_runs(name: str) -> Callable[..., NoReturn]:
    def run(**kwargs: Any) -> NoReturn:
        raise RuntimeError(f"the recorded tool {name} has no code: only its stub answers")

    return run


def recorded_tools(schemas: Any) -> list[BaseTool]:
    """Tools with the recorded names, descriptions and argument schemas.

    Args:
        schemas: ``captured_with["tool_schemas"]`` of a case: a list of definitions in any
            of the shapes above; anything else (``None``, a string) counts as none.

    Returns:
        One tool per named definition, in recorded order, the first of a name winning; an
        empty list when nothing usable was recorded. Calling one raises ``RuntimeError``
        (the runner's stubs answer instead).
    """
    tools: list[BaseTool] = []
    seen: set[str] = set()
    for schema in schemas if isinstance(schemas, list) else []:
        found = _definition(schema)
        if found is None or found[0] in seen:
            continue
        name, description, parameters = found
        seen.add(name)
        tools.append(
            StructuredTool.from_function(
                func=_never_runs(name),
                name=name,
                description=description or name,
                args_schema=parameters,
            )
        )
    return tools
