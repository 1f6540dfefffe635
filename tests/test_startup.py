"""`corral._startup`: the collector's start-up pause, its holders and its end (in a fresh interpreter:
the pause and `gc.freeze` are process-wide)."""

from __future__ import annotations

import subprocess
import sys

CODE = """\
import gc
from corral import _startup

steps = []
_startup.started()  # nothing paused: nothing happens
_startup.hold()()
steps.append((gc.isenabled(), gc.get_freeze_count() > 0))
_startup.pause_for_startup()
steps.append(gc.isenabled())
release = _startup.hold()  # a background import keeps the pause past start-up
_startup.started()
_startup.started()  # once only
steps.append(gc.isenabled())
release()
release()  # once only
steps.append((gc.isenabled(), gc.get_freeze_count() > 0))
_startup.hold()()  # after start-up, holding pauses nothing
steps.append(gc.isenabled())
print(steps)
"""


def test_the_pause_ends_when_start_up_and_every_holder_are_done() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[(True, False), False, False, (True, True), True]"


def test_a_collector_the_program_turned_off_stays_off() -> None:
    code = """\
import gc
from corral import _startup
gc.disable()
_startup.pause_for_startup()
_startup.started()
print(gc.isenabled(), gc.get_freeze_count() > 0)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False False"
