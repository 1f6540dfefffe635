"""The launch rules of `corral run` live in the composition root, `corral.lead._compose`.

Re-exported here for the command-line front ends that import them from `_cli`.
"""

from __future__ import annotations

import os
from pathlib import Path

from corral._paths import corral_home, ensure_private_dir
from corral.errors import UsageError
from corral.lead._compose import (
    DEFAULT_NOTICE_FILE,
    NO_MODEL_HINT,
    SURFACE_NAMES,
    Launched,
    LaunchOptions,
    ModelSource,
    PromptOverrides,
    announce_default_model,
    launch_session,
    warn,
)

__all__ = [
    "DEFAULT_NOTICE_FILE",
    "NO_MODEL_HINT",
    "SURFACE_NAMES",
    "LaunchOptions",
    "Launched",
    "ModelSource",
    "PromptOverrides",
    "announce_default_model",
    "check_data_root",
    "launch_session",
    "warn",
]

_DATA_ROOT_HINT = "set CORRAL_HOME to a writable directory (unset, it is ~/.local/share/corral)"


def check_data_root() -> Path:
    """Create the data root (0700) and check that corral can keep its store and sessions there.

    Raises:
        UsageError: the root is a file, cannot be created or written, or `corral.db` in it is
            not a file — one line naming the path and what to do.
    """
    root = corral_home()
    try:
        ensure_private_dir(root)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(f"data root {root} is not usable ({reason}): {_DATA_ROOT_HINT}") from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise UsageError(f"data root {root} is not writable: {_DATA_ROOT_HINT}")
    for name in ("corral.db", "sessions"):
        entry = root / name
        wrong = (name == "corral.db" and entry.is_dir()) or (name == "sessions" and entry.is_file())
        if wrong or (entry.is_symlink() and not entry.exists()):
            kind = "file" if name == "corral.db" else "directory"
            raise UsageError(f"data root {root}: {entry} is not a {kind}: move it away, or {_DATA_ROOT_HINT}")
    return root
