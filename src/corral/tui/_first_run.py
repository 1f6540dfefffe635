"""What a first start shows: the hint that points a new installation to `/onboard`, and the
offline model offered when no model is configured (`DEMO_MODEL`).

The rule is checked once, when the app starts and before the lead's session
is opened: the installation is *new* when the user settings file
(`corral.settings.user_settings_path()`) does not exist and no session file
(`*.jsonl`, at any depth) exists under `corral._paths.sessions_root()`. Nothing
is written to remember that the hint was shown: the first saved session or
settings file ends it. Anything unreadable counts as "not new", so an error
never shows the hint.
"""

from __future__ import annotations

from pathlib import Path

from corral._paths import sessions_root
from corral.settings import user_settings_path

__all__ = ["DEMO_MODEL", "ONBOARD_HINT", "is_new_installation"]

DEMO_MODEL = "scripted/tour"
"""The offline model the app offers when no model is configured: a guided tour of any directory."""

ONBOARD_HINT = (
    "New here? /onboard asks the lead to review your set-up (models, agent tiers, read-only sandbox) "
    "and recommend a model and thinking level per tier; nothing changes until you run the commands "
    "it proposes."
)
"""The one info notice the chat shows on a new installation."""


def is_new_installation(*, settings_file: Path | None = None, sessions: Path | None = None) -> bool:
    """Whether corral looks freshly installed: no user settings file and no saved session.

    Args:
        settings_file: The user settings file; default `corral.settings.user_settings_path()`.
        sessions: The sessions folder; default `corral._paths.sessions_root()`.

    Returns:
        `True` only when neither exists; `False` when either exists or cannot be checked.
    """
    settings_file = user_settings_path() if settings_file is None else settings_file
    sessions = sessions_root() if sessions is None else sessions
    try:
        if settings_file.exists():
            return False
        return not any(path.is_file() for path in sessions.rglob("*.jsonl"))
    except OSError:
        return False
