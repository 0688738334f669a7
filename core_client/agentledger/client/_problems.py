"""What the sender does with problems: events the server refused for good go to the
dead-letter file (warned about once, counted always), and configuration or availability
problems are logged once per episode, kept for ``stats().last_error`` and handed to
``on_error`` (docs/design/client-sender.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentledger.client._dead_letter import DeadLetterFile
from agentledger.client._exporter import Answer
from agentledger.client._guard import capture_internal_exceptions, logger
from agentledger.client._models import DeliveryError
from agentledger.client._tally import Tally

__all__ = ["Problems", "Refusal"]


@dataclass(frozen=True, slots=True)
class Refusal:
    """Events the server refused for good: ``(index, status, reason)`` each, and how many of
    them the dead-letter file took."""

    rejected: list[tuple[int, int | None, str]]
    written: int


class Problems:
    """Dead-lettering and error reporting of one sender (its worker thread only)."""

    def __init__(
        self,
        tally: Tally,
        dead_letter: DeadLetterFile | None,
        on_error: Callable[[DeliveryError], object] | None,
    ) -> None:
        self._tally = tally
        self._dead_letter = dead_letter
        self._on_error = on_error
        self._reported: str | None = None  # kind of the problem last logged
        self._warned_dead_letter = False

    def refused(self, lines: list[bytes], answer: Answer) -> tuple[int, int]:
        """Dead-letter the lines the server refused for good and tell about it; returns
        (failed, written)."""
        return self.announce(self.dead_letter(lines, answer))

    def dead_letter(self, lines: list[bytes], answer: Answer) -> Refusal | None:
        """Write the lines the server refused for good to the dead-letter file, without
        logging or callbacks (safe under the spill's lock); ``None``: nothing refused."""
        rejected = answer.rejected
        if not rejected:
            return None
        entries = [(lines[i], status, reason) for i, status, reason in rejected]
        written = 0
        if self._dead_letter is not None:
            try:
                self._dead_letter.append(entries)
                written = len(entries)
            except OSError as error:
                logger.warning("agentledger: dead-letter write failed: %s", error)
        return Refusal(rejected, written)

    def announce(self, refusal: Refusal | None) -> tuple[int, int]:
        """Log and hand to ``on_error`` what :meth:`dead_letter` wrote; returns (failed,
        written)."""
        if refusal is None:
            return 0, 0
        rejected, written = refusal.rejected, refusal.written
        for _, status, reason in rejected[:3]:
            logger.warning("agentledger: event refused by the server (HTTP %s): %s", status, reason)
        if written and self._dead_letter is not None:
            where = str(self._dead_letter.path)
        elif self._dead_letter is not None:
            where = "nowhere (the dead-letter write failed)"
        else:
            where = "nowhere (no spill directory)"
        if not self._warned_dead_letter:
            self._warned_dead_letter = True
            logger.warning(
                "agentledger: the server refused %d event(s) for good; kept in %s with the "
                "reason (later refusals are counted in stats().failed without this warning)",
                len(rejected),
                where,
            )
        message = f"server refused {len(rejected)} event(s) for good; written to {where}"
        self._emit(DeliveryError("rejected", rejected[0][1], message, len(rejected)))
        return len(rejected), written

    def report(self, error: DeliveryError | None) -> None:
        """Log a configuration or availability problem once per episode; always tell
        ``on_error`` and remember it for ``stats().last_error``."""
        if error is None:
            return
        self._tally.error(error.message, error.kind)
        if self._reported != error.kind:
            self._reported = error.kind
            if error.kind == "unavailable":
                logger.warning("agentledger: %s", error.message)
            else:
                logger.error("agentledger: %s", error.message)
        self._emit(error)

    def solved(self) -> None:
        self._reported = None
        self._tally.error(None)

    def _emit(self, error: DeliveryError) -> None:
        callback = self._on_error
        if callback is not None:
            with capture_internal_exceptions("client.on_error"):
                callback(error)
