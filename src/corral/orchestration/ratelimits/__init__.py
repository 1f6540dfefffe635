"""Rate-limit waits of agent runs, kept in the store for status views in other processes.

The limiter itself is the model layer's (`corral.llm.RateLimiter`, docs/fleet.md); this feature
records each run's current wait (`RateLimitsExtension`, a `HostExtension` fed by the agents'
`rate_limit_wait` events) and reads it back (`stored_wait`).
"""

from ._extension import RateLimitsExtension, StoredWindows, stored_waits
from .records import RateLimitWaitRecord

__all__ = ["RateLimitWaitRecord", "RateLimitsExtension", "StoredWindows", "stored_waits"]
