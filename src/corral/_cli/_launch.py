"""The launch rules of `corral run` live in the composition root, `corral.lead._compose`.

Re-exported here for the command-line front ends that import them from `_cli`.
"""

from __future__ import annotations

from corral.lead._compose import (
    DEFAULT_NOTICE_FILE,
    NO_MODEL_HINT,
    SURFACE_NAMES,
    Launched,
    LaunchOptions,
    ModelSource,
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
    "announce_default_model",
    "launch_session",
    "warn",
]
