"""A test that needs an outside tool (git, tmux, bubblewrap, Node, Ray, the MCP SDK, …) and does not
find it: a skip on a developer's machine, a failure under `CI=true`, where `.ci/run` installs every
such tool — a skipped test proves nothing."""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

__all__ = ["require", "unavailable"]


def unavailable(reason: str, *, module_level: bool = False) -> NoReturn:
    """Skip with `reason`, or fail with it under `CI=true`.

    Args:
        reason: What is missing and how to get it.
        module_level: Called while a test module is imported (skips the whole module).
    """
    __tracebackhide__ = True  # a skip is reported at its caller's line, not here
    import pytest  # here, so installers that import this module run without pytest (`.ci/run`)

    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (under CI=true this is a failure: .ci/run installs it)", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


def require(tool: str, why: str = "") -> str:
    """The path of the program `tool` on PATH; else `unavailable` (a skip here, a failure under CI).

    Args:
        tool: The program's name (`tmux`, `git`, `bwrap`, `node`, `npx`).
        why: What needs it, or how to get it, added to the reason.
    """
    __tracebackhide__ = True
    found = shutil.which(tool)
    if found is None:
        unavailable(f"{tool} is not installed" + (f" ({why})" if why else ""))
    return found
