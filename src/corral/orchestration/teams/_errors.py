"""Errors of the teams groundwork (tiers and capacity).

Each class sits under the orchestration error tree, so a surface maps it to
its public category with `corral.orchestration.error_details`:

    OrchestrationError
    ├── InvalidRequestError
    │   ├── UnknownTierError           an unknown `model_slot`
    │   ├── SpawnFieldsError           `model`, `thinking` or `role` in a spawn
    │   ├── TierModelError             a tier resolved to no model, or to an unknown one
    │   └── CapacityConfigError        a bad `maxConcurrent` or an unknown capacity kind
    └── ManagedAgentBusyError
        ├── CapacityReachedError       at capacity and `queueOverflow` is disabled
        ├── AdmissionConflictError     the name already holds a slot or is being admitted
        └── AdmissionCancelledError    queued work was cancelled before it got a slot
"""

from __future__ import annotations

from corral.orchestration.errors import InvalidRequestError, ManagedAgentBusyError

__all__ = [
    "AdmissionCancelledError",
    "AdmissionConflictError",
    "CapacityConfigError",
    "CapacityReachedError",
    "SpawnFieldsError",
    "TierModelError",
    "UnknownTierError",
]


class UnknownTierError(InvalidRequestError):
    """A `model_slot` that is neither a canonical tier nor a legacy alias (or not allowed here)."""


class SpawnFieldsError(InvalidRequestError):
    """A spawn passed `model`, `thinking` or `role`; only `model_slot` chooses the model."""


class TierModelError(InvalidRequestError):
    """A tier resolved to no model, or to a model the lead's registry does not know."""


class CapacityConfigError(InvalidRequestError):
    """A capacity limit that is not a finite number ≥ 1, or a kind without a limit."""


class CapacityReachedError(ManagedAgentBusyError):
    """The kind is at capacity and its overflow queue is disabled."""


class AdmissionConflictError(ManagedAgentBusyError):
    """The name already holds a slot; stop (and settle) that run before admitting the name again."""


class AdmissionCancelledError(ManagedAgentBusyError):
    """Queued work was cancelled (stopped, replaced or abandoned) before it got a slot."""
