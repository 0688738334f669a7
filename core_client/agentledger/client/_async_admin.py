"""Administration on :class:`AsyncLedger`: API keys and retention policies. These need a
``read_write`` key not bound to an agent; they use the same :class:`Call` path (retries,
error mapping) as every read. The source of the blocking ``_admin.py``."""

from __future__ import annotations

from agentledger.client._async_reads import AsyncLedgerReads
from agentledger.client._models import (
    ApiKey,
    KeyRotation,
    RetentionEntry,
    RetentionPolicies,
    RetentionPolicy,
    RetentionRun,
)

__all__ = ["AsyncLedgerAdmin"]


class AsyncLedgerAdmin(AsyncLedgerReads):
    """Key management and retention, on top of every read."""

    # -- API keys --------------------------------------------------------------------------

    async def create_key(
        self,
        name: str,
        *,
        agent: str | None = None,
        scope: str = "read_write",
        expires_in_days: int | None = None,
    ) -> ApiKey:
        """Create an API key (``scope`` read_write|read_only); its secret is in ``.key``,
        shown this once."""
        return await self._request(self._call_create_key(name, agent, scope, expires_in_days))

    async def list_keys(self) -> list[ApiKey]:
        """The server's keys (no secrets)."""
        return await self._request(self._call_list_keys())

    async def revoke_key(self, key_id: str) -> None:
        """Revoke a key.

        Raises:
            NotFoundError: no such key.
        """
        await self._request(self._call_revoke_key(key_id))

    # -- retention -------------------------------------------------------------------------

    async def retention_policies(self) -> RetentionPolicies:
        """The default retention policy (``None`` when unset) and every per-agent policy.

        Raises:
            PermissionDeniedError: the key is read-only or bound to an agent.
        """
        return await self._request(self._call_retention_policies())

    async def set_retention(self, keep: str, *, agent: str | None = None) -> RetentionPolicy:
        """Keep ``agent``'s event content for ``keep`` (``30d``, ``12h``, ``90m``, ``2w``);
        older content is erased to tombstones by the server's sweep. ``agent=None`` sets the
        default, which applies to every agent without a policy of its own.

        Raises:
            UnprocessableEntityError: ``keep`` is not a window; NotFoundError: no events of
                ``agent`` are stored; PermissionDeniedError: not an administrator's key.
        """
        return await self._request(self._call_set_retention(keep, agent))

    async def unset_retention(self, *, agent: str | None = None) -> bool:
        """Remove ``agent``'s policy (the default applies to it again) or, with
        ``agent=None``, the default; returns whether there was one."""
        return await self._request(self._call_unset_retention(agent))

    async def run_retention(
        self, *, dry_run: bool = False, agent: str | None = None
    ) -> RetentionRun:
        """Sweep now (every agent, or one): erase the content of events older than their
        policy's window. ``dry_run`` only counts, per agent and rule, what would be erased.

        Raises:
            NotFoundError: no events of ``agent`` are stored.
        """
        return await self._request(self._call_run_retention(dry_run, agent))

    async def retention_log(
        self, *, agent: str | None = None, limit: int = 100
    ) -> list[RetentionEntry]:
        """The erasure report, newest sweep first: per sweep and agent, when, by which rule,
        how many events and which sessions (``limit`` 1..1,000)."""
        return await self._request(self._call_retention_log(agent, limit))

    # -- signing keys ----------------------------------------------------------------------

    async def rotate_signing_key(self) -> KeyRotation:
        """Retire the active signing key and make a fresh one (admin key); heads signed
        before keep verifying with the retired public key."""
        return await self._request(self._call_rotate_signing_key())
