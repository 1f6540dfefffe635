"""Provider failures as one-line error messages.

Every exception from corral's Chat Completions client (the classes below),
pydantic-ai, the OpenAI and Anthropic SDKs or the HTTP stack ends here and becomes the `error_message` of an assistant message with
`stop_reason="error"`. The line keeps what the agent loop's classifiers look
for: the HTTP status first (`429`, `503`, …), then the provider's own
message (`overloaded`, `prompt is too long`, `maximum context length`, …),
then the error type or code when the provider sent one.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = [
    "ModelAPIError",
    "ModelConnectionError",
    "ModelHTTPError",
    "ModelResponseError",
    "endpoint_hint",
    "error_message",
    "unreachable_endpoint",
]


class ModelAPIError(Exception):
    """A request to a model API failed (corral's own client; pydantic-ai's class of the same name for the SDKs).

    Args:
        message: What went wrong.
        body: The provider's error body, when it sent one.
    """

    def __init__(self, message: str, *, body: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.body = body


class ModelHTTPError(ModelAPIError):
    """The endpoint answered with an error status (or an error event inside a stream, as `500`)."""

    def __init__(self, status_code: int, *, body: object = None) -> None:
        super().__init__(f"status_code: {status_code}, body: {body}", body=body)
        self.status_code = status_code


class ModelConnectionError(ModelAPIError):
    """No answer: the connection failed, broke or timed out (the HTTP error is the `__context__`)."""


class ModelResponseError(Exception):
    """The endpoint answered, but not as the API should (an empty stream, a body that is not JSON)."""


def _pydantic_ai_errors() -> Any:
    """pydantic-ai's exceptions module when something already imported it (never imported here for that)."""
    return sys.modules.get("pydantic_ai.exceptions")


_MAX_LEN = 2000


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MAX_LEN else line[: _MAX_LEN - 1] + "…"


def _body_message(body: Any) -> tuple[str | None, str | None]:
    """The provider's message and error type/code from an error body, when it has them."""
    if isinstance(body, str | bytes):
        try:
            body = json.loads(body)
        except ValueError:
            text = body.decode(errors="replace") if isinstance(body, bytes) else body
            return (text or None), None
    if not isinstance(body, dict):
        return None, None
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    assert isinstance(inner, dict)
    message = inner.get("message")
    kind = inner.get("type") or inner.get("code")
    return (
        str(message) if message not in (None, "") else None,
        str(kind) if kind not in (None, "") else None,
    )


def error_message(exc: BaseException) -> str:
    """One line describing a failed request: status, provider message, error type."""
    pai = _pydantic_ai_errors()
    http_errors: tuple[type[BaseException], ...] = (ModelHTTPError,)
    api_errors: tuple[type[BaseException], ...] = (ModelAPIError,)
    if pai is not None:
        http_errors += (pai.ModelHTTPError,)
        api_errors += (pai.ModelAPIError,)
    if isinstance(exc, http_errors):
        body: Any = getattr(exc, "body", None)
        message, kind = _body_message(body)
        if message is None and isinstance(exc.__cause__, Exception):
            message = str(exc.__cause__) or None
        parts = [str(getattr(exc, "status_code", "")), message or "HTTP error"]
        if kind and kind not in (message or ""):
            parts.append(f"({kind})")
        return _one_line(" ".join(parts))
    if isinstance(exc, api_errors):
        message, kind = _body_message(getattr(exc, "body", None))
        text = message or str(getattr(exc, "message", exc))
        cause = exc.__cause__
        if cause is not None and str(cause) and str(cause) not in text:
            text = f"{text}: {cause}"
        if kind and kind not in text:
            text = f"{text} ({kind})"
        return _one_line(f"{type(exc).__name__}: {text}")
    text = str(exc)
    return _one_line(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


_CONNECT_FAILURES = ("ConnectError", "ConnectTimeout", "APIConnectionError", "APITimeoutError")


def unreachable_endpoint(exc: BaseException, base_url: str | None) -> str | None:
    """`cannot reach <url>` when the request never got a connection to the endpoint, else `None`."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__name__ in _CONNECT_FAILURES:
            return f"cannot reach {base_url or 'the provider'} (is the server running? check its base_url)"
        seen = seen.__cause__ or seen.__context__
    return None


_PATHS = {"openai-responses": "/responses", "openai-chat": "/chat/completions", "anthropic": "/v1/messages"}


def endpoint_hint(exc: BaseException, *, api: str, provider: str, base_url: str | None) -> str | None:
    """What to change when the endpoint answered but not as a model API should, else `None`.

    A 404 names the URL that was asked and, for the Responses API (which most local servers
    lack), the setting that switches to Chat Completions; a stream that ended without anything
    suggests `stream = false`, under which such servers report their errors.
    """
    pai = _pydantic_ai_errors()
    http_errors: tuple[type[BaseException], ...] = (ModelHTTPError,)
    odd_replies: tuple[type[BaseException], ...] = (ModelResponseError,)
    if pai is not None:
        http_errors += (pai.ModelHTTPError,)
        odd_replies += (pai.UnexpectedModelBehavior,)
    base = (base_url or "the provider's endpoint").rstrip("/")
    table = f"[providers.{provider}]"
    if isinstance(exc, http_errors) and getattr(exc, "status_code", None) == 404:
        url = f"{base}{_PATHS.get(api, '')}"
        if api == "openai-responses":
            return (
                f"{url} does not exist: the server may not have the Responses API; set "
                f'api = "openai-chat" under {table}, or check its base_url'
            )
        return f"{url} does not exist: check base_url under {table} (OpenAI-compatible servers end it in /v1) and the model id"
    if isinstance(exc, odd_replies) and "ended without content" in str(exc):
        return (
            f"{base} sent an empty reply stream (some servers report errors only unstreamed: "
            f"try stream = false under {table})"
        )
    return None
