"""Module budget: a module stays under ~500 lines, so each one keeps one clear purpose.

The modules listed in ``OVER_BUDGET`` are the known exceptions, each capped at its size when it
was listed. The list only shrinks: a listed module may not grow past its cap, and one that falls
back under the budget must be taken off the list.
"""

from __future__ import annotations

from layout._tree import source_modules

BUDGET = 500

#: path -> cap (lines). Shrink, never grow.
OVER_BUDGET: dict[str, int] = {}


def _line_counts() -> dict[str, int]:
    return {
        m.relative: len(m.path.read_text(encoding="utf-8").splitlines()) for m in source_modules()
    }


def test_every_module_is_within_its_budget() -> None:
    """Layout rule: modules over 500 lines are listed exceptions and do not grow."""
    over = {
        path: lines
        for path, lines in _line_counts().items()
        if lines > OVER_BUDGET.get(path, BUDGET)
    }
    assert not over, f"modules over budget (lines): {over}"


def test_the_exception_list_only_shrinks() -> None:
    """A listed module that no longer exists or fits the budget must leave the list."""
    counts = _line_counts()
    stale = {path: counts.get(path) for path in OVER_BUDGET if counts.get(path, 0) <= BUDGET}
    assert not stale, f"take these off OVER_BUDGET: {stale}"
