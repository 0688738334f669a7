"""Process hooks of a client: flush at interpreter exit, a fresh sender after ``fork()``."""

from __future__ import annotations

import atexit
import os
import weakref
from collections.abc import Callable

from agentledger.client._batcher import BatchSender
from agentledger.client._guard import capture_internal_exceptions, logger

__all__ = ["register_process_hooks", "unregister_exit_hook"]


def _close_at_exit(sender: BatchSender, timeout_s: float) -> None:
    """Interpreter exit: flush within ``timeout_s``, then spill (or count) the rest."""
    with capture_internal_exceptions("client.atexit"):
        if sender.closed:
            return
        result = sender.sync_close(timeout_s)
        if result.pending or result.dropped:
            logger.warning(
                "agentledger: at exit %d events pending, %d dropped, %d spilled",
                result.pending,
                result.dropped,
                result.spilled,
            )


def register_process_hooks(
    sender: BatchSender, timeout_s: float, after_fork: Callable[[], None]
) -> Callable[[], None]:
    """Register the exit hook (flush within ``timeout_s``) and the fork hook (the child resets
    ``sender``, then calls ``after_fork``). Returns the exit hook, for
    :func:`unregister_exit_hook`.

    Both hooks hold their targets weakly: the worker thread keeps the sender alive while events
    are pending, so an unclosed client that was garbage-collected still flushes at exit.
    """
    sender_ref = weakref.ref(sender)
    after_fork_ref = weakref.WeakMethod(after_fork)  # after_fork is a bound method

    def at_exit() -> None:
        target = sender_ref()
        if target is not None:
            _close_at_exit(target, timeout_s)

    def in_child() -> None:
        target = sender_ref()
        if target is not None:
            target.after_fork_in_child()
        callback = after_fork_ref()
        if callback is not None:
            callback()

    atexit.register(at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=in_child)
    return at_exit


def unregister_exit_hook(at_exit: Callable[[], None]) -> None:
    """Remove an exit hook of :func:`register_process_hooks` (the client was closed)."""
    atexit.unregister(at_exit)
