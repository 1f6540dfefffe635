"""Teams' part of a worker launch (`corral.orchestration.host.protocol.WorkerLaunch`).

A launch that carries a `MemberLaunch` runs a teams member: its worker gives the agent the member
tools (a Ray worker over the `RemoteTeams` port, a tmux worker over a worker-local `Teams` on the
shared store) instead of `ask_owner`. The host carries the part without knowing teams; the teams
spawn (`_SpawnSteps.worker_launch`) and `TeamsExtension.handoff_launch` write it, the workers read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from typing import ClassVar

from corral.orchestration.host.protocol import LaunchError
from corral.orchestration.teams.roster.records import TeamMemberRecord

__all__ = ["MemberLaunch"]


@dataclass(frozen=True, slots=True)
class MemberLaunch:
    """A teams member's part of its launch."""

    extension: ClassVar[str] = "teams"
    member: TeamMemberRecord
    """Its member row as the host read it (a tmux worker reads the row from the store again)."""
    _: KW_ONLY
    mission: str | None = None
    """The run's first prompt when it is not its task's payload (a spawn's continuation or
    session-context note); `None`: the task's payload."""

    def to_json(self) -> dict[str, object]:
        """The part as a JSON object."""
        return {"member": dataclasses.asdict(self.member), "mission": self.mission}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> MemberLaunch:
        """The part `to_json` wrote.

        Raises:
            LaunchError: The member row or the mission is not valid.
        """
        member = data.get("member")
        mission = data.get("mission")
        if not isinstance(member, dict):
            raise LaunchError("the launch's teams part has no `member` object")
        if mission is not None and not isinstance(mission, str):
            raise LaunchError("the launch's teams `mission` is not text")
        try:
            record = TeamMemberRecord(**member)
        except TypeError as exc:
            raise LaunchError(f"the launch's teams member is not a member row: {exc}") from None
        return cls(record, mission=mission)
