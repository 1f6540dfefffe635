"""The store on a full disk (a real, small tmpfs): a failed write raises StoreError, changes nothing, loses nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from corral.orchestration import Repositories
from corral.orchestration.store._database import INLINE_RESULT_LIMIT, StoreError
from tests.orchestration._store_helpers import dump, new_generation
from tests.tmpfs import fill, small_tmpfs


@pytest.mark.parametrize(
    "size", [INLINE_RESULT_LIMIT - 1024, INLINE_RESULT_LIMIT + 1], ids=["inline", "artifact"]
)
def test_store_result_on_a_full_disk_fails_cleanly_then_succeeds(tmp_path: Path, size: int) -> None:
    with small_tmpfs(tmp_path / "fs", "2m") as fs:
        db = fs / "corral.db"
        with Repositories.open(db) as store:
            generation, task = new_generation(store.kernel, session_id="child-session")
            before = dump(db)
            filler = fill(fs)
            text = "r" * size  # needs new pages (inline, in the database) or a new file (artifact)
            with pytest.raises(StoreError, match="nothing was recorded"):
                store.kernel.store_result(generation.run_id, task.request_id, status="completed", text=text)
            assert dump(db) == before
            filler.unlink()
            stored = store.kernel.store_result(
                generation.run_id, task.request_id, status="completed", text=text
            )
            assert stored.status == "completed"
            assert store.kernel.result_text(stored) == text
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.close()
        assert not [p for p in fs.rglob("*") if p.name.endswith((".tmp", ".staged"))]
