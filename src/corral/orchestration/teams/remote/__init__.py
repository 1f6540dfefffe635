"""Teams members on a Ray worker: their calls cross to the lead's host as facts (`records.py`); the
worker's port (`_worker.py`) and the host's side (`_host.py`). The Ray worker (`corral.lead`)
builds the member with the same tools as in-process over the port."""

from __future__ import annotations

from ._host import RemoteMembers, RemoteRun
from ._worker import RemoteTeams
from .records import MemberAnswer, MemberCall, MemberMessage, MemberPush, MemberTaken

__all__ = [
    "MemberAnswer",
    "MemberCall",
    "MemberMessage",
    "MemberPush",
    "MemberTaken",
    "RemoteMembers",
    "RemoteRun",
    "RemoteTeams",
]
