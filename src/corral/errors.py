"""The root of corral's exception tree.

Every error a user can cause (bad flags, unknown model, missing API key,
unreadable session, malformed script or settings) derives from
`CorralError`. Front ends print its message as one line and exit with code 2;
anything else is a bug and keeps its traceback.

    CorralError
    ├── corral.settings.SettingsError
    ├── corral.session.SessionError (SessionFileError, SessionNotFoundError, SessionLockedError)
    ├── corral.llm.LlmError (ModelRefError, UnknownModelError, MissingApiKeyError, ScriptError)
    └── corral.agent.AgentError (AgentBusyError)
"""

from __future__ import annotations

__all__ = ["CorralError", "UsageError"]


class CorralError(Exception):
    """Base of every error caused by input a user or program gave corral."""


class UsageError(CorralError):
    """A command was called wrongly (conflicting or missing flags)."""
