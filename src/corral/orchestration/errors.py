"""The orchestration error tree and its one public shape.

Every failure of an orchestration operation belongs to exactly one public
category (the `agent` tool contract, §2.11 of the detail notes). Each category
is a class that carries its category string, so code raises and catches
classes while the surfaces see strings:

    CorralError
    └── OrchestrationError                  (no category of its own; never raised directly)
        ├── AgentLabelExistsError           agent_label_exists
        ├── PaneNotReadyError               pane_not_ready
        ├── TargetNotFoundError             target_not_found
        ├── TargetAmbiguousError            target_ambiguous
        ├── RollbackFailureError            rollback_failure
        ├── ManagedAgentBusyError           agent_busy
        ├── InvalidRequestError             invalid_request
        └── InternalFailureError            internal_failure

The seed also has `not_running_inside_herdr`; corral runs its own runtimes and
has no Herdr, so that category does not exist here.

Context that is only known further up (the operation, the agent's ids) is
attached on the way out with `error_context`, the way httpx attaches a request
to its errors. `error_details` turns any exception into the structured error
object (`category`, `message`, `operation`, `rollbackOccurred`,
`retryAttempted`, then `ids`, `nextAction`, `primary`, `cleanup`, `details`
when present): it is the single place a surface builds that shape.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from corral.errors import CorralError

__all__ = [
    "ERROR_CATEGORIES",
    "AgentLabelExistsError",
    "ErrorCategory",
    "ErrorPart",
    "InternalFailureError",
    "InvalidRequestError",
    "ManagedAgentBusyError",
    "OrchestrationError",
    "PaneNotReadyError",
    "RollbackFailureError",
    "TargetAmbiguousError",
    "TargetNotFoundError",
    "category_for_ack",
    "error_class_for",
    "error_context",
    "error_details",
    "error_for_ack",
]

ErrorCategory = Literal[
    "agent_label_exists",
    "pane_not_ready",
    "target_not_found",
    "target_ambiguous",
    "rollback_failure",
    "agent_busy",
    "invalid_request",
    "internal_failure",
]
# `not_running_inside_herdr` is deliberately absent: corral has no Herdr.

ERROR_CATEGORIES: tuple[ErrorCategory, ...] = (
    "agent_label_exists",
    "pane_not_ready",
    "target_not_found",
    "target_ambiguous",
    "rollback_failure",
    "agent_busy",
    "invalid_request",
    "internal_failure",
)
"""Every public error category, in the order of the contract's table."""

_UNKNOWN_OPERATION = "unknown"
"""The operation of an error raised below the layer that knows the action."""


@dataclass(frozen=True)
class ErrorPart:
    """One failure inside a `rollback_failure`: the primary failure or the failed cleanup."""

    category: ErrorCategory
    """The public category of that failure."""
    message: str
    """Its one-line message."""
    operation: str
    """The operation (action or internal step) that failed."""

    def to_dict(self) -> dict[str, str]:
        """The public `{category, message, operation}` object."""
        return {"category": self.category, "message": self.message, "operation": self.operation}

    @classmethod
    def from_exception(cls, exc: BaseException, *, operation: str | None = None) -> ErrorPart:
        """Describe any exception as a part, classifying it as `error_details` does."""
        shape = error_details(exc, operation=operation)
        return cls(category=shape["category"], message=shape["message"], operation=shape["operation"])


class OrchestrationError(CorralError):
    """Base of every orchestration error; each subclass is one public category.

    Args:
        message: One line saying what is wrong and what to do.
        operation: The action or step that failed (`delegate`, `close`, …); `error_context`
            fills it in when the raiser does not know it.
        rollback_occurred: Whether state changed by the operation was rolled back.
        retry_attempted: Whether a retry or recovery was scheduled or entered. Once true it
            stays true through wrapping.
        ids: Identity evidence of the agent involved (`label`, and whatever the runtime uses).
        next_action: What the caller should do next, when that is not obvious from the message.
        primary: The primary failure, when this error also reports a cleanup failure.
        cleanup: The cleanup failure that accompanied `primary`.
        details: Free-form JSON-able evidence (`stage`, `startupDiagnostic`, …).
    """

    category: ClassVar[ErrorCategory] = "internal_failure"
    """The public category string of this class."""

    def __init__(
        self,
        message: str,
        *,
        operation: str = _UNKNOWN_OPERATION,
        rollback_occurred: bool = False,
        retry_attempted: bool = False,
        ids: Mapping[str, str] | None = None,
        next_action: str | None = None,
        primary: ErrorPart | None = None,
        cleanup: ErrorPart | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.operation = operation
        self.rollback_occurred = rollback_occurred
        self.retry_attempted = retry_attempted
        self.ids: dict[str, str] = dict(ids or {})
        self.next_action = next_action
        self.primary = primary
        self.cleanup = cleanup
        self.details: dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        return self.message


class AgentLabelExistsError(OrchestrationError):
    """A requested, inherited or claimed label is already live or occupied."""

    category: ClassVar[ErrorCategory] = "agent_label_exists"


class PaneNotReadyError(OrchestrationError):
    """A child did not become ready in time (the seed's mailbox readiness)."""

    category: ClassVar[ErrorCategory] = "pane_not_ready"


class TargetNotFoundError(OrchestrationError):
    """Exact identity or ownership could not be proven (which may mean "could not prove", not "absent")."""

    category: ClassVar[ErrorCategory] = "target_not_found"


class TargetAmbiguousError(OrchestrationError):
    """More than one candidate, or presence or ancestry that cannot be proven."""

    category: ClassVar[ErrorCategory] = "target_ambiguous"


class RollbackFailureError(OrchestrationError):
    """A primary failure whose cleanup also failed; carries both as `primary` and `cleanup`."""

    category: ClassVar[ErrorCategory] = "rollback_failure"

    @classmethod
    def from_failures(
        cls,
        primary: BaseException,
        cleanup: BaseException,
        *,
        operation: str,
        ids: Mapping[str, str] | None = None,
        next_action: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> RollbackFailureError:
        """Wrap a primary failure and the failure of its rollback.

        `rollback_occurred` is true (a rollback was attempted) and `retry_attempted`
        is true as the contract requires; `ids` and `details` of the primary error are
        kept unless overridden.
        """
        primary_part = ErrorPart.from_exception(primary, operation=operation)
        cleanup_part = ErrorPart.from_exception(cleanup, operation=operation)
        merged_ids: dict[str, str] = {}
        merged_details: dict[str, Any] = {}
        if isinstance(primary, OrchestrationError):
            merged_ids.update(primary.ids)
            merged_details.update(primary.details)
        merged_ids.update(ids or {})
        merged_details.update(details or {})
        return cls(
            f"{primary_part.message}; cleanup also failed: {cleanup_part.message}",
            operation=operation,
            rollback_occurred=True,
            retry_attempted=True,
            ids=merged_ids,
            next_action=next_action
            or "Inspect the agent with `list`; close it if it is still present, then retry.",
            primary=primary_part,
            cleanup=cleanup_part,
            details=merged_details,
        )


class ManagedAgentBusyError(OrchestrationError):
    """The agent's state or readiness forbids the action now (includes lock contention).

    Named apart from `corral.agent.AgentBusyError`, which is the agent loop's own
    "a run is already in progress".
    """

    category: ClassVar[ErrorCategory] = "agent_busy"


class InvalidRequestError(OrchestrationError):
    """Bad fields or values, an unusable definition or file, a failed precondition or a size limit."""

    category: ClassVar[ErrorCategory] = "invalid_request"


class InternalFailureError(OrchestrationError):
    """An invariant or underlying failure outside the narrower categories."""

    category: ClassVar[ErrorCategory] = "internal_failure"


_CLASSES: dict[ErrorCategory, type[OrchestrationError]] = {
    "agent_label_exists": AgentLabelExistsError,
    "pane_not_ready": PaneNotReadyError,
    "target_not_found": TargetNotFoundError,
    "target_ambiguous": TargetAmbiguousError,
    "rollback_failure": RollbackFailureError,
    "agent_busy": ManagedAgentBusyError,
    "invalid_request": InvalidRequestError,
    "internal_failure": InternalFailureError,
}

_ACK_CATEGORIES: dict[str, ErrorCategory] = {
    "busy": "agent_busy",
    "idle": "agent_busy",
    "ambiguous": "target_ambiguous",
    "invalid": "invalid_request",
    "identity": "target_not_found",
    "delivery": "internal_failure",
}


def error_class_for(category: ErrorCategory) -> type[OrchestrationError]:
    """The class that carries `category`."""
    return _CLASSES[category]


def category_for_ack(code: str) -> ErrorCategory:
    """Map a child's rejection code to a category.

    `busy` and `idle` → `agent_busy`; `ambiguous` → `target_ambiguous`;
    `invalid` → `invalid_request`; `identity` → `target_not_found`; `delivery`
    and any other code → `internal_failure`.
    """
    return _ACK_CATEGORIES.get(code, "internal_failure")


def error_for_ack(
    code: str,
    message: str,
    *,
    operation: str,
    ids: Mapping[str, str] | None = None,
    next_action: str | None = None,
) -> OrchestrationError:
    """Build the error for a child's rejection code; the code is kept in `details["ackCode"]`."""
    cls = _CLASSES[category_for_ack(code)]
    return cls(message, operation=operation, ids=ids, next_action=next_action, details={"ackCode": code})


@contextmanager
def error_context(
    operation: str,
    *,
    ids: Mapping[str, str] | None = None,
    retry_attempted: bool = False,
) -> Iterator[None]:
    """Attach the operation (and ids) to orchestration errors raised inside the block.

    An error that already names an operation keeps it; given ids are added without
    replacing ids the raiser set. `retry_attempted=True` marks errors raised inside
    a retry or recovery path; a true flag is never cleared.
    """
    try:
        yield
    except OrchestrationError as exc:
        if exc.operation == _UNKNOWN_OPERATION:
            exc.operation = operation
        for key, value in (ids or {}).items():
            exc.ids.setdefault(key, value)
        exc.retry_attempted = exc.retry_attempted or retry_attempted
        raise


def error_details(exc: BaseException, *, operation: str | None = None) -> dict[str, Any]:
    """The public structured error for any exception; the one place surfaces build it.

    An `OrchestrationError` gives its own fields. Another `CorralError` (a bad model
    ref, an unreadable session, …) was caused by input and becomes `invalid_request`.
    Anything else is a bug or an environment failure and becomes `internal_failure`
    naming the exception type.

    Args:
        exc: The exception to describe.
        operation: The operation to report when the error does not name one.

    Returns:
        A JSON-able dict: `category`, `message`, `operation`, `rollbackOccurred`,
        `retryAttempted`, and `ids`, `nextAction`, `primary`, `cleanup`, `details`
        only when set.
    """
    fallback_operation = operation or _UNKNOWN_OPERATION
    if isinstance(exc, OrchestrationError):
        shape: dict[str, Any] = {
            "category": exc.category,
            "message": exc.message,
            "operation": exc.operation if exc.operation != _UNKNOWN_OPERATION else fallback_operation,
            "rollbackOccurred": exc.rollback_occurred,
            "retryAttempted": exc.retry_attempted,
        }
        if exc.ids:
            shape["ids"] = dict(exc.ids)
        if exc.next_action:
            shape["nextAction"] = exc.next_action
        if exc.primary is not None:
            shape["primary"] = exc.primary.to_dict()
        if exc.cleanup is not None:
            shape["cleanup"] = exc.cleanup.to_dict()
        if exc.details:
            shape["details"] = dict(exc.details)
        return shape
    if isinstance(exc, CorralError):
        category: ErrorCategory = "invalid_request"
        message = str(exc) or type(exc).__name__
    else:
        category = "internal_failure"
        text = str(exc)
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return {
        "category": category,
        "message": message,
        "operation": fallback_operation,
        "rollbackOccurred": False,
        "retryAttempted": False,
    }
