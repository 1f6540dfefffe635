"""Bare `corral` (the terminal app) refuses a bad `--session`, `--model` or `--trace` before it takes the terminal."""

from __future__ import annotations

import pytest

from .conftest import RunCorral


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--session", "nope"], "no session id starts with 'nope'"),
        (["--session", "missing/file.jsonl"], "does not exist"),
        (["--model", "bogus/x"], "unknown provider 'bogus'"),
        (["--model", "scripted"], "provider/model"),
        (["--trace", "."], "is a directory"),
        (["--trace", "missing/t.jsonl"], "cannot write the trace file"),
    ],
)
def test_bad_session_or_model_fails_before_the_app_opens(
    corral: RunCorral, args: list[str], message: str
) -> None:
    done = corral(*args, timeout=30)
    assert done.returncode == 2
    assert done.stdout == ""  # the app never drew anything
    assert done.stderr.startswith("corral: error: ") and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
