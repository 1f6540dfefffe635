"""The orchestration error tree and the one function that shapes errors for surfaces."""

from __future__ import annotations

import pytest

import corral.orchestration as orch
from corral.errors import CorralError
from corral.orchestration import errors as errors_module
from corral.orchestration.errors import (
    ERROR_CATEGORIES,
    AgentLabelExistsError,
    ErrorPart,
    InternalFailureError,
    InvalidRequestError,
    ManagedAgentBusyError,
    OrchestrationError,
    PaneNotReadyError,
    RollbackFailureError,
    TargetAmbiguousError,
    TargetNotFoundError,
    category_for_ack,
    error_class_for,
    error_context,
    error_details,
    error_for_ack,
)
from corral.trust import TrustStoreError

EXPECTED = {
    AgentLabelExistsError: "agent_label_exists",
    PaneNotReadyError: "pane_not_ready",
    TargetNotFoundError: "target_not_found",
    TargetAmbiguousError: "target_ambiguous",
    RollbackFailureError: "rollback_failure",
    ManagedAgentBusyError: "agent_busy",
    InvalidRequestError: "invalid_request",
    InternalFailureError: "internal_failure",
}


@pytest.mark.parametrize(("cls", "category"), EXPECTED.items())
def test_each_class_carries_its_category_and_derives_from_corral_error(
    cls: type[OrchestrationError], category: str
) -> None:
    exc = cls("boom", operation="delegate")
    assert isinstance(exc, OrchestrationError)
    assert isinstance(exc, CorralError)
    assert exc.category == category
    assert error_class_for(exc.category) is cls
    assert error_details(exc)["category"] == category


def test_categories_are_the_seed_ones_without_herdr() -> None:
    assert set(ERROR_CATEGORIES) == set(EXPECTED.values())
    assert "not_running_inside_herdr" not in ERROR_CATEGORIES
    assert "not_running_inside_herdr" in (errors_module.__doc__ or "")


def test_trust_store_error_is_an_invalid_request() -> None:
    assert error_details(TrustStoreError("bad store"))["category"] == "invalid_request"


def test_error_details_minimal_shape_and_key_order() -> None:
    shape = error_details(
        TargetNotFoundError("Agent scout belongs to another owner session", operation="inspect")
    )
    assert shape == {
        "category": "target_not_found",
        "message": "Agent scout belongs to another owner session",
        "operation": "inspect",
        "rollbackOccurred": False,
        "retryAttempted": False,
    }
    assert list(shape) == ["category", "message", "operation", "rollbackOccurred", "retryAttempted"]


def test_error_details_full_shape() -> None:
    exc = PaneNotReadyError(
        "Agent did not initialize",
        operation="delegate",
        rollback_occurred=True,
        retry_attempted=True,
        ids={"label": "scout"},
        next_action="Retry the delegation.",
        details={"stage": "readiness"},
    )
    assert error_details(exc) == {
        "category": "pane_not_ready",
        "message": "Agent did not initialize",
        "operation": "delegate",
        "rollbackOccurred": True,
        "retryAttempted": True,
        "ids": {"label": "scout"},
        "nextAction": "Retry the delegation.",
        "details": {"stage": "readiness"},
    }


def test_rollback_failure_keeps_primary_and_cleanup() -> None:
    primary = PaneNotReadyError("Agent did not initialize", operation="delegate", ids={"label": "w"})
    cleanup = OSError("could not stop the worker")
    exc = RollbackFailureError.from_failures(
        primary, cleanup, operation="delegate", details={"stage": "start"}
    )
    shape = error_details(exc)
    assert shape["category"] == "rollback_failure"
    assert shape["rollbackOccurred"] is True
    assert shape["retryAttempted"] is True
    assert shape["primary"] == {
        "category": "pane_not_ready",
        "message": "Agent did not initialize",
        "operation": "delegate",
    }
    assert shape["cleanup"] == {
        "category": "internal_failure",
        "message": "OSError: could not stop the worker",
        "operation": "delegate",
    }
    assert shape["ids"] == {"label": "w"}
    assert shape["details"] == {"stage": "start"}
    assert "nextAction" in shape
    assert "\n" not in shape["message"]


def test_error_context_fills_operation_and_ids_without_overriding() -> None:
    with pytest.raises(InvalidRequestError) as info, error_context("steer", ids={"label": "a", "x": "1"}):
        raise InvalidRequestError("files[0] is blank", ids={"label": "own"})
    assert info.value.operation == "steer"
    assert info.value.ids == {"label": "own", "x": "1"}

    with pytest.raises(InvalidRequestError) as info, error_context("steer"):
        raise InvalidRequestError("x", operation="files")
    assert info.value.operation == "files"


def test_retry_attempted_survives_wrapping_contexts() -> None:
    with (
        pytest.raises(ManagedAgentBusyError) as info,
        error_context("delegate"),
        error_context("recovery", retry_attempted=True),
    ):
        raise ManagedAgentBusyError("busy")
    assert info.value.retry_attempted is True
    assert info.value.operation == "recovery"
    assert error_details(info.value)["retryAttempted"] is True


def test_error_context_leaves_foreign_exceptions_alone() -> None:
    with pytest.raises(KeyError), error_context("list"):
        raise KeyError("x")


def test_error_details_of_other_exceptions() -> None:
    class _UserError(CorralError):
        pass

    assert error_details(_UserError("bad model ref"), operation="delegate") == {
        "category": "invalid_request",
        "message": "bad model ref",
        "operation": "delegate",
        "rollbackOccurred": False,
        "retryAttempted": False,
    }
    bug = error_details(RuntimeError("invariant broken"))
    assert bug["category"] == "internal_failure"
    assert bug["message"] == "RuntimeError: invariant broken"
    assert bug["operation"] == "unknown"


def test_operation_argument_used_only_when_error_has_none() -> None:
    assert error_details(InvalidRequestError("x"), operation="close")["operation"] == "close"
    assert error_details(InvalidRequestError("x", operation="list"), operation="close")["operation"] == "list"


@pytest.mark.parametrize(
    ("code", "category"),
    [
        ("busy", "agent_busy"),
        ("idle", "agent_busy"),
        ("ambiguous", "target_ambiguous"),
        ("invalid", "invalid_request"),
        ("identity", "target_not_found"),
        ("delivery", "internal_failure"),
        ("something-new", "internal_failure"),
    ],
)
def test_child_ack_codes_map_to_categories(code: str, category: str) -> None:
    assert category_for_ack(code) == category
    exc = error_for_ack(code, "rejected", operation="steer", ids={"label": "a"})
    assert exc.category == category
    assert error_details(exc)["details"] == {"ackCode": code}
    assert error_details(exc)["operation"] == "steer"


def test_error_part_from_exception() -> None:
    assert ErrorPart.from_exception(AgentLabelExistsError("taken", operation="continue")) == ErrorPart(
        "agent_label_exists", "taken", "continue"
    )


def test_str_is_the_message() -> None:
    assert str(InvalidRequestError("one line")) == "one line"


def _isort_key(name: str) -> tuple[int, str]:
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_package_exports_are_sorted_and_real() -> None:
    assert list(orch.__all__) == sorted(orch.__all__, key=_isort_key)
    assert len(set(orch.__all__)) == len(orch.__all__)
    for name in orch.__all__:
        assert hasattr(orch, name), name
    for name in errors_module.__all__:
        assert name in orch.__all__, name
