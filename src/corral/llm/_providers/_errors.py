"""Provider failures as one-line error messages.

Every exception from pydantic-ai, the OpenAI and Anthropic SDKs or the HTTP
stack ends here and becomes the `error_message` of an assistant message with
`stop_reason="error"`. The line keeps what the agent loop's classifiers look
for: the HTTP status first (`429`, `503`, …), then the provider's own
message (`overloaded`, `prompt is too long`, `maximum context length`, …),
then the error type or code when the provider sent one.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["endpoint_hint", "error_message", "unreachable_endpoint"]

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
    from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError

    if isinstance(exc, ModelHTTPError):
        message, kind = _body_message(exc.body)
        if message is None and isinstance(exc.__cause__, Exception):
            message = str(exc.__cause__) or None
        parts = [str(exc.status_code), message or "HTTP error"]
        if kind and kind not in (message or ""):
            parts.append(f"({kind})")
        return _one_line(" ".join(parts))
    if isinstance(exc, ModelAPIError):
        message, kind = _body_message(exc.body)
        text = message or exc.message
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
    from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

    base = (base_url or "the provider's endpoint").rstrip("/")
    table = f"[providers.{provider}]"
    if isinstance(exc, ModelHTTPError) and exc.status_code == 404:
        url = f"{base}{_PATHS.get(api, '')}"
        if api == "openai-responses":
            return (
                f"{url} does not exist: the server may not have the Responses API; set "
                f'api = "openai-chat" under {table}, or check its base_url'
            )
        return f"{url} does not exist: check base_url under {table} (OpenAI-compatible servers end it in /v1) and the model id"
    if isinstance(exc, UnexpectedModelBehavior) and "ended without content" in str(exc):
        return (
            f"{base} sent an empty reply stream (some servers report errors only unstreamed: "
            f"try stream = false under {table})"
        )
    return None
