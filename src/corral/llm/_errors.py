"""Errors of the model layer.

Every one is a user error (a bad ref, an unknown model, a missing key, a
malformed script): front ends print the one-line message and exit with code 2.
"""

from __future__ import annotations

from pathlib import Path

from corral.errors import CorralError

__all__ = ["LlmError", "MissingApiKeyError", "ModelRefError", "ScriptError", "UnknownModelError"]


class LlmError(CorralError):
    """Base of the model layer's errors."""


class ModelRefError(LlmError, ValueError):
    """A model ref is not of the form `provider/model[:thinking]`."""


class UnknownModelError(LlmError, LookupError):
    """A model ref names a provider or model the registry does not know."""


class MissingApiKeyError(LlmError):
    """A model needs an API key and its environment variable is not set."""

    def __init__(self, message: str, *, env_var: str) -> None:
        super().__init__(message)
        self.env_var = env_var
        """The environment variable that should hold the key."""


class ScriptError(LlmError):
    """A scripted model's script is missing or malformed, or a request to it failed.

    The message is one line and names the file (or the script name when no
    file was found) and the problem.
    """

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path
        """The script file concerned, when one was found."""
