"""Small human-readable units shared by the front ends (the CLI and the terminal app)."""

from __future__ import annotations

__all__ = ["format_bytes", "format_elapsed", "format_rate_limit_wait"]


def format_elapsed(ms: int | None) -> str:
    """`42s`, `3m05s`, `1h02m`; `-` when unknown."""
    if ms is None or ms < 0:
        return "-"
    seconds = ms // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_bytes(size: int) -> str:
    """`512 B`, `4.0 KiB`, `41.3 MiB`, `1.2 GiB`."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"  # pragma: no cover - the loop returns


def format_rate_limit_wait(*, until_ms: int | None, since_ms: int, now_ms: int) -> str:
    """`waiting (rate limit, 12s)`: the seconds left when the end is known, else the seconds waited so far."""
    if until_ms is not None:
        seconds = max(0, -(-(until_ms - now_ms) // 1000))
    else:
        seconds = max(0, (now_ms - since_ms) // 1000)
    return f"waiting (rate limit, {seconds}s)"
