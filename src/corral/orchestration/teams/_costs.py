"""Token and cost accounting for a team: the lead's session plus each agent's.

Each session file is summed by `corral.session.session_usage_totals`: every
entry of the file, not just the active branch — assistant messages,
compaction and branch summaries, and tool results that carry usage. Entries a
fork or clone copied from its source keep their ids, and that function skips
the ones found along the `parentSession` chain, so a session's cost is what it
spent itself. The combined total is then the sum over the distinct session
files of the team (a file named twice counts once): an entry shared through a
fork is counted once, in the session that first wrote it. Entries a member
inherited from a session outside the team were spent outside it and are not
counted.

A cost is `complete` only when every file could be read and every assistant
message in it carries its usage; anything else keeps the total incomplete, as
the seed asks ("unfinished or missing usage keeps the total incomplete").
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corral.session import SessionError, session_usage_totals

__all__ = ["SessionCost", "TeamCosts", "session_cost", "team_costs"]


@dataclass(frozen=True, slots=True)
class SessionCost:
    """Tokens and cost one session spent (or, for `TeamCosts.combined`, a whole team)."""

    session_id: str
    """The session's id from its header; for a missing or unreadable file, the id in its
    file name (`<time>_<id>.jsonl`) or `""`. `TeamCosts.combined` carries the lead's id."""
    path: Path | None
    """The session file; `None` for a combined total."""
    input_tokens: int
    """Input tokens that were not read from the cache."""
    output_tokens: int
    """Output tokens."""
    cache_read_tokens: int
    """Input tokens read from the provider's cache."""
    cache_write_tokens: int
    """Input tokens written to the provider's cache."""
    cost_usd: float
    """Cost in US dollars, as recorded with each message when it completed."""
    complete: bool
    """`False` when a file was missing or unreadable, or an assistant message lacked usage."""

    @property
    def total_tokens(self) -> int:
        """Every token counted: input, output, cache reads and cache writes."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True, slots=True)
class TeamCosts:
    """What a team spent: the lead, each agent, and the combined total."""

    lead: SessionCost
    """The lead's session."""
    agents: tuple[tuple[str, SessionCost], ...]
    """`(name, cost)` per agent session, in the order given."""
    combined: SessionCost
    """Lead plus agents, each distinct session file once (so every entry is counted once, also
    across forks); `complete` only when every part is."""


def _id_from_name(path: Path) -> str:
    stem = path.name.removesuffix(".jsonl")
    _, sep, tail = stem.rpartition("_")
    return tail if sep else ""


def _header_id(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("type") != "session":
        return None
    value = header.get("id")
    return value if isinstance(value, str) and value else None


def _missing(path: Path) -> SessionCost:
    return SessionCost(_id_from_name(path), path, 0, 0, 0, 0, 0.0, complete=False)


def session_cost(path: Path) -> SessionCost:
    """Tokens and cost of one session file, without entries it inherited through a fork.

    Args:
        path: The session's `.jsonl` file.

    Returns:
        The sums; `complete` is `False` (and the sums zero) when the file is missing or
        unreadable, and `False` when an assistant message in it has no usable usage.
    """
    path = Path(path)
    session_id = _header_id(path)
    if session_id is None:
        return _missing(path)
    try:
        totals = session_usage_totals(path)
    except (SessionError, OSError):
        return _missing(path)
    usage = totals.usage
    return SessionCost(
        session_id=session_id,
        path=path,
        input_tokens=usage.input,
        output_tokens=usage.output,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
        cost_usd=usage.cost.total,
        complete=totals.missing_usage == 0,
    )


def _file_key(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return os.fspath(path.resolve())
    except OSError:
        return os.fspath(path.absolute())


def team_costs(lead_session: Path, agent_sessions: Sequence[tuple[str, Path]]) -> TeamCosts:
    """Per-agent and combined tokens and cost of a team.

    Args:
        lead_session: The lead's session file.
        agent_sessions: `(name, session file)` per agent; a file may appear more than once
            (an agent continued in the same session), and is then counted once in `combined`.

    Returns:
        The lead's cost, each agent's cost (in the given order) and the combined total, whose
        `session_id` is the lead's and whose `path` is `None`.
    """
    lead = session_cost(lead_session)
    agents = tuple((name, session_cost(path)) for name, path in agent_sessions)
    seen_files: set[str] = set()
    seen_ids: set[str] = set()
    distinct: list[SessionCost] = []
    for cost in (lead, *(cost for _, cost in agents)):
        key = _file_key(cost.path)
        if (key is not None and key in seen_files) or (cost.session_id and cost.session_id in seen_ids):
            continue
        if key is not None:
            seen_files.add(key)
        if cost.session_id:
            seen_ids.add(cost.session_id)
        distinct.append(cost)
    combined = SessionCost(
        session_id=lead.session_id,
        path=None,
        input_tokens=sum(c.input_tokens for c in distinct),
        output_tokens=sum(c.output_tokens for c in distinct),
        cache_read_tokens=sum(c.cache_read_tokens for c in distinct),
        cache_write_tokens=sum(c.cache_write_tokens for c in distinct),
        cost_usd=sum(c.cost_usd for c in distinct),
        complete=all(c.complete for c in (lead, *(cost for _, cost in agents))),
    )
    return TeamCosts(lead=lead, agents=agents, combined=combined)
