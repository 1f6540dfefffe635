"""What every repository shares: a handle on the one `Database` and its open transaction.

A repository owns some tables: their SQL, their rows → records, and the verbs
over them. Each public verb is one transaction (`self._write(body)` or
`self._read(body)`, or `with self._db.write() as tx:`); the helpers a verb calls
run inside it and reach it through `self._one`/`self._all`/`self._execute`
(the thread's open `Tx`). A verb that writes another aggregate's rows calls
that repository's `*_in(tx, ...)` pieces inside its own transaction, so the
whole write stays one `BEGIN IMMEDIATE`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from corral.orchestration.store._database import Database, Row, Tx

__all__ = ["Repository"]

_T = TypeVar("_T")


class Repository:
    """Base of the repositories: SQL over the shared `Database`, inside its transactions."""

    def __init__(self, db: Database) -> None:
        """Work over `db` (shared with every other repository of the data root)."""
        self._db = db

    @property
    def db(self) -> Database:
        """The database this repository writes to."""
        return self._db

    @property
    def _tx(self) -> Tx:
        return self._db.current

    def _inside(self, tx: Tx) -> None:
        """Check that `tx` is the transaction this thread has open on this repository's database."""
        if tx is not self._db.current:
            raise RuntimeError("Pass the transaction this thread has open on the same database.")

    def _clock(self) -> int:
        return self._db.clock()

    def _write(self, body: Callable[[], _T], *, durable: bool = True) -> _T:
        with self._db.write(durable=durable):
            return body()

    def _read(self, body: Callable[[], _T]) -> _T:
        with self._db.read():
            return body()

    def _execute(self, sql: str, params: Sequence[object] = ()) -> int:
        return self._db.current.execute(sql, params)

    def _one(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        return self._db.current.one(sql, params)

    def _all(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        return self._db.current.all(sql, params)
