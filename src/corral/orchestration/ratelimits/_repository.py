"""The repository of rate-limit waits: table `rate_limit_waits`, one short transaction a verb.

Writes are group-committed (`durable=False`, like recorded activity): a wait is a live fact, lost
harmlessly in a crash (the run is then lost too and no view shows its wait).
"""

from __future__ import annotations

from collections.abc import Sequence

from corral.orchestration.store._database import Row
from corral.orchestration.store._repository import Repository

from .records import RateLimitWaitRecord

__all__ = ["RateLimitWaits", "RateLimitWindows"]


def _from_row(row: Row) -> RateLimitWaitRecord:
    return RateLimitWaitRecord(
        run_id=row["run_id"],
        endpoint=row["endpoint"],
        reason=row["reason"],
        since_ms=row["since_ms"],
        until_ms=row["until_ms"],
    )


class RateLimitWaits(Repository):
    """Runs whose model request waits for the shared rate limiter now."""

    def record(self, wait: RateLimitWaitRecord) -> None:
        """Store (or replace) the run's current wait."""

        def body() -> None:
            self._execute(
                "INSERT INTO rate_limit_waits (run_id, endpoint, reason, since_ms, until_ms)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET endpoint = excluded.endpoint,"
                " reason = excluded.reason, since_ms = excluded.since_ms, until_ms = excluded.until_ms",
                (wait.run_id, wait.endpoint, wait.reason, wait.since_ms, wait.until_ms),
            )

        self._write(body, durable=False)

    def clear(self, run_id: str) -> None:
        """The run's request is no longer waiting (sent, cancelled, or the run ended)."""
        self._write(
            lambda: self._execute("DELETE FROM rate_limit_waits WHERE run_id = ?", (run_id,)), durable=False
        )

    def for_runs(self, run_ids: Sequence[str]) -> dict[str, RateLimitWaitRecord]:
        """The current waits of `run_ids` (runs without one are absent)."""
        if not run_ids:
            return {}
        marks = ", ".join("?" * len(run_ids))
        rows = self._read(
            lambda: self._all(f"SELECT * FROM rate_limit_waits WHERE run_id IN ({marks})", run_ids)
        )
        return {row["run_id"]: _from_row(row) for row in rows}


class RateLimitWindows(Repository):
    """`Retry-After` windows learnt by any process of the store, one row per endpoint and key."""

    def store(self, endpoint: str, key_id: str, until_ms: int) -> None:
        """Keep the endpoint closed until `until_ms` (Unix ms); a stored window only grows."""

        def body() -> None:
            self._execute(
                "INSERT INTO rate_limit_windows (endpoint, key_id, until_ms) VALUES (?, ?, ?)"
                " ON CONFLICT (endpoint, key_id) DO UPDATE SET until_ms = max(until_ms, excluded.until_ms)",
                (endpoint, key_id, until_ms),
            )

        self._write(body, durable=False)

    def until_ms(self, endpoint: str, key_id: str) -> int | None:
        """When the window stored for the endpoint and key ends (Unix ms), `None` without one."""
        row = self._read(
            lambda: self._one(
                "SELECT until_ms FROM rate_limit_windows WHERE endpoint = ? AND key_id = ?",
                (endpoint, key_id),
            )
        )
        return None if row is None else int(row["until_ms"])
