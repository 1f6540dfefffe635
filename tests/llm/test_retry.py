"""Transient-error classification (Pi's pattern) and back-off delays."""

from __future__ import annotations

import pytest

from corral.llm import RetryPolicy, is_retryable_error


@pytest.mark.parametrize(
    "message",
    [
        "529 Overloaded",
        "Rate limit reached for requests",
        "rate_limit_error",
        "Too Many Requests",
        "HTTP 429",
        "500 Internal Server Error",
        "502 Bad Gateway",
        "503 service unavailable: try later",
        "504 Gateway Timeout",
        "Service Unavailable",
        "server_error",
        "internal error",
        "Connection error.",
        "connect ECONNREFUSED: connection refused",
        "other side closed",
        "TypeError: fetch failed",
        "upstream connect error or disconnect",
        "reset before headers",
        "terminated",
        "retry delay exceeded",
    ],
)
def test_transient_errors_are_retryable(message: str) -> None:
    assert is_retryable_error(message)


@pytest.mark.parametrize(
    "message",
    ["400 invalid request: bad tool schema", "401 Unauthorized", "prompt is too long", "", None],
)
def test_other_errors_are_not_retryable(message: str | None) -> None:
    assert not is_retryable_error(message)


def test_delays_double_from_base_and_are_capped() -> None:
    policy = RetryPolicy()
    assert [policy.delay_ms(n) for n in (1, 2, 3)] == [2000, 4000, 8000]
    assert RetryPolicy(base_delay_ms=2000, max_delay_ms=5000).delay_ms(3) == 5000
    assert RetryPolicy(max_retries=3).should_retry(3)
    assert not RetryPolicy(max_retries=3).should_retry(4)


def test_bad_attempt_and_negative_values_are_rejected() -> None:
    with pytest.raises(ValueError):
        RetryPolicy().delay_ms(0)
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
