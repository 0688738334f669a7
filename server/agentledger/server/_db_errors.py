"""Database errors that are the database refusing for now, not a bug in the request or in us.

* **Busy** (a lock or statement timeout; SQLite "database is locked", PostgreSQL 55P03, 57014,
  40P01): nothing was written and the same request may be retried at once (503).
* **Full** (SQLite ``SQLITE_FULL`` "database or disk is full", PostgreSQL 53100 ``disk_full``):
  the transaction was rolled back, nothing is half-written, and the same request can succeed
  once space is freed (507 Insufficient Storage, RFC 4918 §11.5).

Both are answered with ``Retry-After`` (:func:`refusal_response`). The app registers its
handler for :data:`DATABASE_ERRORS` by class, so the response is complete and the connection
stays open (Starlette's catch-all handler re-raises, and uvicorn then drops the connection).
"""

from __future__ import annotations

import importlib
import logging
import sqlite3

from fastapi import Response
from sqlalchemy.exc import DBAPIError

from agentledger.server._http import json_response

__all__ = ["DATABASE_ERRORS", "database_busy", "database_full", "refusal_response"]

logger = logging.getLogger("agentledger.server")


def _driver_errors() -> tuple[type[Exception], ...]:
    try:  # the PostgreSQL driver is an optional extra
        psycopg = importlib.import_module("psycopg")
    except ImportError:  # pragma: no cover - depends on the environment
        return ()
    error: type[Exception] = psycopg.Error
    return (error,)


#: Exception classes a store raises for the database (wrapped by SQLAlchemy or raw).
DATABASE_ERRORS: tuple[type[Exception], ...] = (DBAPIError, sqlite3.Error, *_driver_errors())

# PostgreSQL lock_not_available, query_canceled (statement/lock timeout), deadlock_detected.
_BUSY_SQLSTATES = frozenset({"55P03", "57014", "40P01"})
_DISK_FULL_SQLSTATE = "53100"
_SQLITE_FULL = 13  # primary result code (the low byte of an extended one)


def _origin(exc: BaseException) -> BaseException:
    return exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc


def database_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is a lock or statement timeout."""
    origin = _origin(exc)
    if getattr(origin, "sqlstate", None) in _BUSY_SQLSTATES:
        return True
    return isinstance(origin, sqlite3.OperationalError) and "database is locked" in str(origin)


def database_full(exc: BaseException) -> bool:
    """Whether ``exc`` is the database (or its disk) out of space."""
    origin = _origin(exc)
    if getattr(origin, "sqlstate", None) == _DISK_FULL_SQLSTATE:
        return True
    if isinstance(origin, sqlite3.Error):
        code = getattr(origin, "sqlite_errorcode", None)
        if isinstance(code, int):
            return code & 0xFF == _SQLITE_FULL
        return "database or disk is full" in str(origin)
    return False


def refusal_response(exc: BaseException, request_id: str) -> Response | None:
    """507 (full) or 503 (busy) with ``Retry-After``, logged as a warning; ``None`` for any other
    error (a bug: the caller answers 500)."""
    if database_full(exc):
        # Out of space: the transaction was rolled back; the same request succeeds once space
        # is freed (RFC 4918 §11.5, 507 Insufficient Storage).
        logger.warning("database full (request %s): %s", request_id, exc)
        detail = "database full: the server's storage is out of space; nothing was written"
        status, retry_after = 507, "30"
    elif database_busy(exc):
        # A lock or statement timeout: the write did not happen and may be retried, which our
        # client does on 503 with the same ids (RFC 9110 §15.6.4, Retry-After).
        logger.warning("database busy (request %s): %s", request_id, exc)
        detail, status, retry_after = "database busy, retry later", 503, "1"
    else:
        return None
    response = json_response({"detail": detail, "request_id": request_id}, status_code=status)
    response.headers["Retry-After"] = retry_after
    return response
