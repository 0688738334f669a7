"""Point-in-time state (``GET /v1/events/at``) from ``state_set`` / ``state_delete`` events.

The state at time T is, per key, the value of the last ``state_set`` at or before T unless a
later ``state_delete`` (at or before T) removed it; ties on the timestamp are broken by the
per-agent ``sequence_no`` (event vocabulary: ``state_set``/``state_delete`` carry ``key`` and
``value``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["STATE_EVENTS", "fold_state"]

#: The event types that change state.
STATE_EVENTS = ("state_set", "state_delete")


def fold_state(events: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Apply ``(event type, data)`` pairs, oldest first, and return the resulting state.

    Items whose ``data.key`` is not a string are ignored (they name no key).
    """
    state: dict[str, Any] = {}
    for event, data in events:
        key = data.get("key")
        if not isinstance(key, str):
            continue
        if event == "state_set":
            state[key] = data.get("value")
        elif event == "state_delete":
            state.pop(key, None)
    return state
