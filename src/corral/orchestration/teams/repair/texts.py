"""What a failed assigned check tells a model, in corral's words: the receipt and the repair prompt.

The verifier decides (`_verification.py`: a `VerificationDecision`); the functions here word it for
the agent — in `report_and_exit`'s answer (the teams surface) and in the prompt that asks for a
repaired final answer (a `RepairDue` fact, `teams/notices.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from corral.orchestration.teams.notices import RepairDue
    from corral.orchestration.teams.repair._verification import VerificationDecision

__all__ = ["receipt_text", "repair_prompt"]


def receipt_text(decision: VerificationDecision) -> str:
    """The receipt lines: verification, each non-passing check (name, state, exit code, log), repair."""
    error = decision.verification.error
    lines = [f"Assigned verification: {decision.verification.state}" + (f" ({error})" if error else "") + "."]
    for record in decision.records:
        if record.state == "passed":
            continue
        code = "none" if record.exit_code is None else str(record.exit_code)
        line = f"- check {record.assignment.name}: {record.state}, exit code {code}, log {record.log_path}"
        if record.error:
            line += f" ({record.error})"
        lines.append(line)
    if decision.repair is not None:
        if decision.repair_request is not None:
            lines.append(
                f"Repair requested ({decision.repair_request.id}, attempt {decision.repair_request.attempt} of "
                f"{decision.repair.max_attempts}): your report was not accepted. Fix the failing checks "
                "within your assigned scope (read the full logs above), then call report_and_exit again "
                "with the complete report. If the fix needs edits you may not make, report a blocker instead."
            )
        else:
            note = " — effective outcome blocked" if decision.repair.outcome == "blocked" else ""
            lines.append(f"Repair: {decision.repair.state}{note}.")
    return "\n".join(lines)


def repair_prompt(fact: RepairDue) -> str:
    """The prompt that asks for a repaired final answer after a failed assigned check: the check's
    receipt between the reason and what to do."""
    return (
        "An assigned check failed and a repair attempt is available.\n"
        f"{receipt_text(fact.decision)}\n"
        "Fix the cause within your assignment's scope, then give your final answer again."
    )
