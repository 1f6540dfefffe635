"""The stored record of a run's rate-limit wait."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from corral._units import format_rate_limit_wait

__all__ = ["RateLimitWaitRecord", "SharedWindow", "SharedWindows", "WaitReason"]

WaitReason = Literal["retry_after", "concurrency", "requests_per_minute", "tokens_per_minute"]


@dataclass(frozen=True, slots=True)
class RateLimitWaitRecord:
    """A run's model request waiting for its endpoint's shared rate limiter."""

    run_id: str
    endpoint: str
    reason: WaitReason
    since_ms: int
    """When the wait began (Unix ms)."""
    until_ms: int | None
    """When it is expected to end (Unix ms), when known."""

    def describe(self, now_ms: int) -> str:
        """`waiting (rate limit, Ns)`."""
        return format_rate_limit_wait(until_ms=self.until_ms, since_ms=self.since_ms, now_ms=now_ms)


@dataclass(frozen=True, slots=True)
class SharedWindow:
    """An endpoint's `Retry-After` window one process learnt, shared with the host and its Ray workers."""

    endpoint: str
    key_id: str
    """The API key's fingerprint (`EndpointKey.key_id`), never the key."""
    until: float
    """When the window ends (Unix seconds)."""


@dataclass(frozen=True, slots=True)
class SharedWindows:
    """The open windows the host pushes to its Ray workers with every pull."""

    windows: tuple[SharedWindow, ...]
