"""Tool calls as the checks see them: arguments read from any framework's form, matched
against the case's argument matchers, and described in one short line."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["as_args", "call_text", "match", "short"]


def short(value: Any, limit: int = 120) -> str:
    """``value`` as short text (JSON for structures), cut to ``limit`` characters."""
    kind = type(value)
    text: str
    if kind is str:
        text = str(value)
    elif kind is int or kind is float or kind is bool:
        text = "true" if value is True else "false" if value is False else repr(value)
    else:
        text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_text(tool: str, args: Mapping[str, Any]) -> str:
    """``tool(a=1, b=x)``: arguments sorted by name, each value cut short."""
    inner = ", ".join(f"{k}={short(a, 40)}" for k, a in sorted(args.items()))
    return f"{tool}({inner})"


def as_args(value: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict, whichever form a framework logged them in."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):  # a framework that logged the args as a JSON string
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {} if value is None else {"input": value}


def match(matcher: Any, actual: Any) -> bool:
    """One argument matcher (see :data:`agentledger.cases._model.ArgMatcher`)."""
    if isinstance(matcher, Mapping) and len(matcher) == 1:
        ((op, operand),) = matcher.items()
        if op == "$any":
            return bool(operand)
        if op == "$regex":
            return actual is not None and re.search(str(operand), str(actual)) is not None
        if op == "$contains":
            return actual is not None and str(operand) in str(actual)
        if op == "$approx":
            try:
                return math.isclose(float(actual), float(operand), rel_tol=1e-6, abs_tol=1e-9)
            except (TypeError, ValueError):
                return False
    if isinstance(matcher, Mapping) and isinstance(actual, Mapping):
        return set(matcher) == set(actual) and all(match(matcher[k], actual[k]) for k in matcher)
    if isinstance(matcher, int | float) and isinstance(actual, int | float):
        return not isinstance(matcher, bool) and float(matcher) == float(actual)
    if isinstance(matcher, str) and not isinstance(actual, str) and actual is not None:
        return matcher == json.dumps(actual) or matcher == str(actual)
    return bool(matcher == actual)
