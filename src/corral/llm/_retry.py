"""Which provider errors are transient, and how long to wait before retrying.

The pattern is Pi's: an assistant message that ended with `stop_reason`
`error` whose message matches it (and is not a context overflow, which the
agent handles by compacting) is retried after `base * 2^(attempt-1)`
milliseconds, capped at `max_delay_ms`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["RETRYABLE_ERROR_PATTERN", "RetryPolicy", "is_retryable_error"]

RETRYABLE_ERROR_PATTERN = re.compile(
    r"overloaded|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error"
    r"|internal.?error|connection.?(error|refused)|other side closed|fetch failed|upstream.?connect"
    r"|reset before headers|terminated|retry delay",
    re.IGNORECASE,
)
"""Pi's pattern for transient provider errors (matched anywhere in the message)."""


def is_retryable_error(message: str | None) -> bool:
    """Whether a provider error message describes a transient failure worth retrying."""
    return bool(message) and RETRYABLE_ERROR_PATTERN.search(message or "") is not None


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

    def should_retry(self, attempt: int) -> bool:
        """Whether retry number `attempt` (1-based) is still allowed."""
        return 1 <= attempt <= self.max_retries
