"""Which provider errors are transient, and how long to wait before retrying.

An assistant message that ended with `stop_reason` `error` (and is not a
context overflow, which the agent handles by compacting) is retried when its
error is transient, after `base * 2^(attempt-1)` milliseconds capped at
`max_delay_ms`, plus up to 25 % jitter so agents that failed together do not
retry together.

Transient is decided by the HTTP status first: provider errors start with it
(`_providers/_errors.py`), and `408`, `409`, `425`, `429`, `529` and every
`5xx` are retried while any other status is not, whatever the text says (a
`400` whose message happens to contain `5000` is not). A message without a
status (a dropped connection, an error event inside a stream) falls back to
Pi's pattern, whose numbers must stand alone.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

__all__ = [
    "RETRYABLE_ERROR_PATTERN",
    "RetryPolicy",
    "error_status",
    "is_retryable_error",
    "is_retryable_status",
]

RETRYABLE_ERROR_PATTERN = re.compile(
    r"overloaded|rate.?limit|too many requests|\b(?:429|500|502|503|504|529)\b|service.?unavailable"
    r"|server.?error|internal.?error|connection.?(error|refused)|other side closed|fetch failed"
    r"|upstream.?connect|reset before headers|terminated|retry delay",
    re.IGNORECASE,
)
"""Pi's pattern for transient provider errors, for messages without a leading HTTP status."""

_STATUS = re.compile(r"^\s*(?:HTTP\s+)?([1-5]\d\d)(?=\s|$|:)")

_RETRYABLE_4XX = frozenset({408, 409, 425, 429})


def error_status(message: str | None) -> int | None:
    """The HTTP status a provider error message starts with (`429 Too many requests` → 429), else `None`."""
    match = _STATUS.match(message or "")
    return int(match.group(1)) if match else None


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is transient: 408, 409, 425, 429 and every 5xx (529 included)."""
    return status >= 500 or status in _RETRYABLE_4XX


def is_retryable_error(message: str | None) -> bool:
    """Whether a provider error message describes a transient failure worth retrying (status first)."""
    if not message:
        return False
    status = error_status(message)
    if status is not None:
        return is_retryable_status(status)
    return RETRYABLE_ERROR_PATTERN.search(message) is not None


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential back-off for transient provider errors (defaults: 3 retries, 2 s, 4 s, 8 s)."""

    max_retries: int = 3
    """Retries after the first failure; 0 disables retrying."""
    base_delay_ms: int = 2000
    """Delay before the first retry."""
    max_delay_ms: int = 60000
    """Upper bound of any delay."""

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay_ms < 0 or self.max_delay_ms < 0:
            raise ValueError("RetryPolicy values must not be negative")

    def delay_ms(self, attempt: int) -> int:
        """Milliseconds to wait before retry number `attempt` (1-based): `base * 2^(attempt-1)`, capped.

        Raises:
            ValueError: `attempt` is less than 1.
        """
        if attempt < 1:
            raise ValueError(f"retry attempt must be 1 or more, got {attempt}")
        return int(min(self.base_delay_ms * 2 ** (attempt - 1), self.max_delay_ms))

    def jittered_delay_ms(self, attempt: int, *, rng: random.Random | None = None) -> int:
        """`delay_ms(attempt)` plus 0-25 % jitter (never less than the back-off itself)."""
        delay = self.delay_ms(attempt)
        return int(delay + delay * 0.25 * (rng or random).random())

    def should_retry(self, attempt: int) -> bool:
        """Whether retry number `attempt` (1-based) is still allowed."""
        return 1 <= attempt <= self.max_retries
