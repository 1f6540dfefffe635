"""Parameters of the teams tools: validation into frozen requests, and the schemas the model sees.

Each `parse_*` function checks one tool call's arguments and returns a frozen
request; a bad call raises `InvalidRequestError` (or the tiers module's
`UnknownTierError`/`SpawnFieldsError`) with one line that says what is wrong
and what to do. Checks run in this order: the arguments are an object;
`model`, `thinking` or `role` anywhere in a spawn is rejected with the tiers
module's message; unknown keys are named; then field types and rules
(pydantic models, strict types), then the rules across fields (tiers,
unique finding ids, unique swarm names).

Input tolerance: providers send `null` for optional fields, so `null` is
treated as absent everywhere (a required field that is `null` is missing).
Booleans also accept the strings `"true"`/`"false"`, as Pi's validator
coerces them. Optional free-text labels (`summary`, `reason`, an artifact's
`label`) that are blank count as absent; identifiers and paths must not be
blank. `prompt` and `content` are kept exactly as given.

Issue-5 fields (`checks`, `repair`, `checkpoint`, `completion_group`) are
parsed here by their features' own parsers into `Parsed` policies; a parse
error travels with the command and the core raises it where it admits the
agent (so one bad swarm member fails alone). `checks: []` is an explicit
"no checks" that overrides swarm defaults.

`TEAMS_SCHEMAS` holds the JSON schema of each tool's parameters, keyed by
tool name, as the lead is offered it; other callers' variants are keyed
`<tool>#<variant>`: `#nested` for an eligible writer's restricted spawn
tools, `#agent` for a spawned agent's `send_message` (recipient optional,
default `team-lead`) and `read_inbox` (no `agent_name`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypedDict, TypeVar, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
)
from pydantic_core import PydanticCustomError

from corral.orchestration.errors import InvalidRequestError, error_context
from corral.orchestration.teams import (
    DEFAULT_TIER,
    HELPER_TIERS,
    TIERS,
    Tier,
    TierName,
    UnknownTierError,
    check_spawn_fields,
    check_swarm_fields,
    resolve_helper_tier,
    resolve_tier,
)
from corral.orchestration.teams.checkpoints.records import CheckpointPolicy, parse_checkpoint_policy
from corral.orchestration.teams.checks._checks import CheckSpec, parse_check_policy
from corral.orchestration.teams.commands import (
    LEAD_RECIPIENT,
    MAX_EVIDENCE_CHARS,
    MAX_INSPECTED_EVIDENCE,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    TASK_OUTCOMES,
    AgentNameRequest,
    Artifact,
    ClaimRequest,
    Finding,
    Parsed,
    ReadInboxRequest,
    RepairPolicy,
    ReportSubmission,
    SendMessageRequest,
    SessionContextMode,
    SpawnRequest,
    StatusRequest,
    StopRequest,
    SwarmRequest,
    TaskOutcome,
)
from corral.orchestration.teams.groups.records import parse_completion_group
from corral.orchestration.teams.repair._repair import parse_repair_policy

__all__ = [
    "LEAD_RECIPIENT",
    "MAX_EVIDENCE_CHARS",
    "MAX_INSPECTED_EVIDENCE",
    "NAME_MAX_LENGTH",
    "NAME_PATTERN",
    "TASK_OUTCOMES",
    "TEAMS_SCHEMAS",
    "AgentNameRequest",
    "Artifact",
    "ClaimRequest",
    "Finding",
    "ReadInboxRequest",
    "ReportSubmission",
    "SendMessageRequest",
    "SessionContextMode",
    "SpawnRequest",
    "StatusRequest",
    "StopRequest",
    "SwarmRequest",
    "TaskOutcome",
    "parse_agent_name",
    "parse_claim",
    "parse_list_claims",
    "parse_nested_spawn",
    "parse_nested_swarm",
    "parse_read_inbox",
    "parse_report",
    "parse_send_message",
    "parse_spawn",
    "parse_status",
    "parse_stop",
    "parse_swarm",
]

_NAME_RE = re.compile(NAME_PATTERN)
_EXACT = "teams_exact"
_NESTED_SPAWN_FIELDS = ("name", "prompt", "model_slot")
_NESTED_SWARM_FIELDS = ("defaults", "agents")
_NESTED_DEFAULT_FIELDS = ("model_slot",)


# --- field validators ----------------------------------------------------------


def _show(value: object) -> str:
    """A value for a one-line message: plain when it is a printable string, else its repr."""
    text = value if isinstance(value, str) and value.isprintable() else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _exact(message: str) -> PydanticCustomError:
    return PydanticCustomError(_EXACT, message)


def _non_blank(value: Any) -> Any:
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be blank")
    return value


def _blank_is_none(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


def _bool_text(value: Any) -> Any:
    if isinstance(value, str) and value.strip() in ("true", "false"):
        return value.strip() == "true"
    return value


def _name(value: str) -> str:
    if not _NAME_RE.fullmatch(value):
        raise _exact(
            f"Invalid name {_show(value)}. Only alphanumeric characters, hyphens, and underscores are allowed."
        )
    if len(value) > NAME_MAX_LENGTH:
        raise _exact(f"Invalid name {_show(value)}. Names are at most {NAME_MAX_LENGTH} characters.")
    if value == LEAD_RECIPIENT:
        raise _exact(f"Invalid name {LEAD_RECIPIENT}. It is reserved for the lead; choose another name.")
    return value


def _session_context(value: Any) -> Any:
    if value not in get_args(SessionContextMode):
        raise _exact(f"{_show(value)} session_context must be none or lazy.")
    return value


def _outcome(value: Any) -> Any:
    if value not in TASK_OUTCOMES:
        raise ValueError(f"must be one of {', '.join(TASK_OUTCOMES)}, or omitted")
    return value


def _evidence_item(value: Any) -> Any:
    if isinstance(value, str) and not (0 < len(value) <= MAX_EVIDENCE_CHARS and value.strip()):
        raise ValueError(f"must be 1 to {MAX_EVIDENCE_CHARS} characters with a non-space character")
    return value


def _evidence_list(value: Any) -> Any:
    if isinstance(value, list) and len(value) > MAX_INSPECTED_EVIDENCE:
        raise ValueError(f"has {len(value)} items; give at most {MAX_INSPECTED_EVIDENCE}")
    return value


def _some_paths(value: Any) -> Any:
    if isinstance(value, list) and not value:
        raise ValueError("must list at least one path")
    return value


def _null_is_empty(value: Any) -> Any:
    return [] if value is None else value


_Text = Annotated[str, Strict(), BeforeValidator(_non_blank)]
_Ident = Annotated[str, Strict(), BeforeValidator(_non_blank), AfterValidator(str.strip)]
_Teammate = Annotated[_Ident, AfterValidator(_name)]
"""A teammate named by the lead (`check_teammate`, `interrupt_teammate`, `stop_teammate`): checked like
a spawned name (characters, length, not `team-lead`)."""
_Label = Annotated[Annotated[str, Strict()] | None, BeforeValidator(_blank_is_none)]
_Name = Annotated[str, Strict(), AfterValidator(_name)]
_Bool = Annotated[bool, Strict(), BeforeValidator(_bool_text)]
_SessionContext = Annotated[SessionContextMode, BeforeValidator(_session_context)]
_Metadata = Annotated[dict[str, Any], Strict()]
_TextList = list[_Text]
_Evidence = Annotated[str, Strict(), BeforeValidator(_evidence_item)]
_Outcome = Annotated[TaskOutcome, BeforeValidator(_outcome)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _SpawnParams(_Params):
    prompt: _Text
    model_slot: Any = None
    name: _Name | None = None
    cwd: _Text | None = None
    session_context: _SessionContext = "none"
    metadata: _Metadata | None = None
    allow_nested_read_agents: _Bool = False
    checks: Any = None
    repair: Any = None
    checkpoint: Any = None
    continue_from: _Text | None = None


class _SwarmDefaults(_Params):
    cwd: _Text | None = None
    model_slot: Any = None
    metadata: _Metadata | None = None
    session_context: _SessionContext | None = None
    allow_nested_read_agents: _Bool | None = None
    checks: Any = None
    repair: Any = None
    checkpoint: Any = None


class _SwarmParams(_Params):
    defaults: Any = None
    agents: Any = None
    completion_group: Any = None


class _NestedSpawnParams(_Params):
    name: _Name | None = None
    prompt: _Text
    model_slot: Any = None


class _SendMessageParams(_Params):
    recipient: _Ident | None = None
    content: _Text
    summary: _Label = None


class _ReadInboxParams(_Params):
    unread_only: _Bool = True
    mark_as_read: _Bool = True


class _LeadReadInboxParams(_ReadInboxParams):
    agent_name: _Ident | None = None


class _ArtifactParams(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    path: _Text
    label: _Label = None


class _FindingParams(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    id: _Text
    text: _Text
    evidence: Annotated[_TextList, BeforeValidator(_null_is_empty)] = Field(default_factory=list)


class _ReportParams(_Params):
    content: _Text
    summary: _Label = None
    outcome: _Outcome | None = None
    changed_paths: _TextList | None = Field(default=None, alias="changedPaths")
    artifacts: list[_ArtifactParams] | None = None
    findings: list[_FindingParams] | None = None
    questions: _TextList | None = None
    inspected_evidence: Annotated[list[_Evidence], BeforeValidator(_evidence_list)] | None = Field(
        default=None, alias="inspectedEvidence"
    )


class _AgentNameParams(_Params):
    agent_name: _Teammate


class _StopParams(_Params):
    agent_name: _Teammate
    reason: _Label = None


class _StatusParams(_Params):
    agent_name: _Ident | None = None


class _ClaimParams(_Params):
    paths: Annotated[_TextList, BeforeValidator(_some_paths)]


class _NoParams(_Params):
    pass


class _PolicyFields(TypedDict, total=False):
    checks: Parsed[tuple[CheckSpec, ...]]
    repair: Parsed[RepairPolicy]
    checkpoint: Parsed[CheckpointPolicy]


# --- validation plumbing ---------------------------------------------------------


def _wire_fields(model: type[BaseModel]) -> tuple[str, ...]:
    return tuple(info.alias or name for name, info in model.model_fields.items())


def _invalid(message: str, tool: str) -> InvalidRequestError:
    return InvalidRequestError(message, operation=tool)


def _object(raw: object, tool: str, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise _invalid(f"{where}: arguments must be a JSON object.", tool)
    return raw


def _known(raw: Mapping[str, Any], fields: tuple[str, ...], tool: str, where: str) -> dict[str, Any]:
    """`raw` without its `null` values; an unknown key fails, naming it and the allowed fields."""
    for key in raw:
        if key not in fields:
            allowed = ", ".join(fields) if fields else "none"
            raise _invalid(f"{where}: unknown field {_show(key)}; allowed fields: {allowed}.", tool)
    return {key: value for key, value in raw.items() if value is not None}


_M = TypeVar("_M", bound=BaseModel)

_TYPE_TEXT = {
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


def _validate(model: type[_M], data: Mapping[str, Any], tool: str, where: str) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        kind = error["type"]
        if kind == _EXACT:
            message = str(error["msg"])
            raise _invalid(message if where == tool else f"{where}: {message}", tool) from None
        path = ""
        for part in error["loc"]:
            path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
        if kind == "missing":
            raise _invalid(f"{where}: field {path} is required.", tool) from None
        text = _TYPE_TEXT.get(kind) or str(error["msg"]).removeprefix("Value error, ")
        raise _invalid(f"{where}: field {path} {text[:1].lower()}{text[1:]}.", tool) from None


def _parse(model: type[_M], params: object, tool: str) -> _M:
    """`params` validated against `model`: an object, no unknown keys, `null` as absent."""
    raw = _object(params, tool, tool)
    return _validate(model, _known(raw, _wire_fields(model), tool, tool), tool, tool)


def _tier(
    value: Any, tool: str, where: str, resolve: Callable[[object], Tier] = resolve_tier
) -> tuple[Tier, str]:
    if value is None:
        return resolve(DEFAULT_TIER), DEFAULT_TIER
    try:
        tier = resolve(value)
    except UnknownTierError as exc:
        message = exc.message if where == tool else f"{where}: {exc.message}"
        raise UnknownTierError(message, operation=tool) from None
    return tier, value.strip() if isinstance(value, str) else str(value)


def _spawn_request(params: _SpawnParams, tier: Tier, requested: str) -> SpawnRequest:
    return SpawnRequest(
        params.prompt,
        tier.name,
        requested,
        name=params.name,
        cwd=params.cwd,
        session_context=params.session_context,
        metadata=dict(params.metadata) if params.metadata is not None else None,
        allow_nested_read_agents=params.allow_nested_read_agents,
        continue_from=params.continue_from,
        **_policies(params),
    )


def _policies(params: _SpawnParams) -> _PolicyFields:
    """The spawn's policies, each parsed by its feature (an error is kept for the core to raise)."""
    fields: _PolicyFields = {}
    checks: Parsed[tuple[CheckSpec, ...]] | None = None
    if params.checks is not None:
        raw_checks = params.checks
        checks = fields["checks"] = Parsed.of(lambda: parse_check_policy(raw_checks))
    if params.repair is not None:
        raw_repair = params.repair
        assigned = () if checks is None or checks.error is not None else checks.get()
        fields["repair"] = Parsed.of(lambda: RepairPolicy(parse_repair_policy(raw_repair, checks=assigned)))
    if params.checkpoint is not None:
        raw_checkpoint = params.checkpoint
        fields["checkpoint"] = Parsed.of(lambda: parse_checkpoint_policy(raw_checkpoint))
    return fields


def _member_where(index: int, agent: Mapping[str, Any]) -> str:
    name = agent.get("name")
    shown = f" ({name})" if isinstance(name, str) and _NAME_RE.fullmatch(name) else ""
    return f"spawn_swarm_agents agents[{index}]{shown}"


def _agents(raw: Mapping[str, Any], tool: str) -> list[Mapping[str, Any]]:
    agents = raw.get("agents")
    if agents is None or (isinstance(agents, list) and not agents):
        raise _invalid("spawn_swarm_agents requires at least one agent.", tool)
    if not isinstance(agents, list):
        raise _invalid("spawn_swarm_agents: field agents must be an array of agent objects.", tool)
    for index, agent in enumerate(agents):
        if not isinstance(agent, Mapping):
            raise _invalid(f"spawn_swarm_agents agents[{index}] must be an object.", tool)
    return agents


def _unique_names(members: list[SpawnRequest], tool: str) -> None:
    seen: set[str] = set()
    for index, member in enumerate(members):
        if member.name is None or member.continue_from is not None:
            continue
        if member.name in seen:
            raise _invalid(
                f"spawn_swarm_agents agents[{index}]: name {member.name} is used twice; "
                "give each agent a unique name.",
                tool,
            )
        seen.add(member.name)


# --- parsers -------------------------------------------------------------------


def parse_spawn(params: Mapping[str, Any]) -> SpawnRequest:
    """Validate the lead's `spawn_agent` arguments.

    Args:
        params: The arguments the model sent.

    Returns:
        The request, with `model_slot` canonical (default `read-review`).

    Raises:
        SpawnFieldsError: `model`, `thinking` or `role` was passed.
        UnknownTierError: `model_slot` is not a tier or legacy alias.
        InvalidRequestError: any other bad argument (named in the message).
    """
    tool = "spawn_agent"
    with error_context(tool):
        check_spawn_fields(_object(params, tool, tool), where=tool)
        parsed = _parse(_SpawnParams, params, tool)
        tier, requested = _tier(parsed.model_slot, tool, tool)
        return _spawn_request(parsed, tier, requested)


def parse_swarm(params: Mapping[str, Any]) -> SwarmRequest:
    """Validate the lead's `spawn_swarm_agents` arguments; every member is checked before any starts.

    Each member is the shallow merge `{...defaults, ...agent}` (`null` values count as
    absent on both sides, so they never override). `continue_from` belongs on individual
    agents only. Names (other than `continue_from` prefixes) must be unique in the swarm.

    Raises:
        SpawnFieldsError: `model`, `thinking` or `role` in the call, its defaults or a member.
        UnknownTierError: a member's tier is unknown (the message names the member).
        InvalidRequestError: no agents, or any other bad argument (named in the message).
    """
    tool = "spawn_swarm_agents"
    with error_context(tool):
        raw = _object(params, tool, tool)
        check_spawn_fields(raw, where=tool)
        check_swarm_fields(raw)
        top = _validate(_SwarmParams, _known(raw, _wire_fields(_SwarmParams), tool, tool), tool, tool)
        defaults_raw = top.defaults if top.defaults is not None else {}
        where = f"{tool} defaults"
        if not isinstance(defaults_raw, Mapping):
            raise _invalid(f"{tool}: field defaults must be an object.", tool)
        if defaults_raw.get("continue_from") is not None:
            raise _invalid(f"{where} cannot set continue_from; set continue_from on individual agents.", tool)
        defaults = _known(defaults_raw, _wire_fields(_SwarmDefaults), tool, where)
        _tier(_validate(_SwarmDefaults, defaults, tool, where).model_slot, tool, where)
        members: list[SpawnRequest] = []
        for index, agent in enumerate(_agents(raw, tool)):
            where = _member_where(index, agent)
            own = _known(agent, _wire_fields(_SpawnParams), tool, where)
            parsed = _validate(_SpawnParams, {**defaults, **own}, tool, where)
            tier, requested = _tier(parsed.model_slot, tool, where)
            members.append(_spawn_request(parsed, tier, requested))
        _unique_names(members, tool)
        group = top.completion_group
        return SwarmRequest(
            tuple(members),
            completion_group=None if group is None else Parsed.of(lambda: parse_completion_group(group)),
        )


def _nested_keys(raw: Mapping[str, Any], fields: tuple[str, ...], where: str, tool: str) -> None:
    for key in raw:
        if key not in fields:
            verb = "accept" if where.endswith("defaults") else "accepts"
            raise _invalid(f"{where} {verb} only {', '.join(fields)}; do not pass {_show(key)}.", tool)


def _nested_member(raw: Mapping[str, Any], tool: str, where: str, default_slot: Any) -> SpawnRequest:
    data = {key: value for key, value in raw.items() if value is not None}
    parsed = _validate(_NestedSpawnParams, data, tool, where)
    slot = parsed.model_slot if parsed.model_slot is not None else default_slot
    tier, requested = _tier(slot, tool, where, resolve_helper_tier)
    return SpawnRequest(parsed.prompt, tier.name, requested, name=parsed.name)


def parse_nested_spawn(params: Mapping[str, Any]) -> SpawnRequest:
    """Validate a writer's restricted `spawn_agent` (a nested read helper).

    Only `name`, `prompt` and `model_slot` are accepted; `model_slot` must be a
    canonical `read-*` tier (default `read-review`). Cwd and team are the parent's.

    Raises:
        SpawnFieldsError: `model`, `thinking` or `role` was passed.
        UnknownTierError: the tier is an alias, a `write-*` tier or unknown.
        InvalidRequestError: any other key, or a bad value.
    """
    tool = "spawn_agent"
    with error_context(tool):
        raw = _object(params, tool, tool)
        check_spawn_fields(raw, where=tool)
        _nested_keys(raw, _NESTED_SPAWN_FIELDS, tool, tool)
        return _nested_member(raw, tool, tool, None)


def parse_nested_swarm(params: Mapping[str, Any]) -> SwarmRequest:
    """Validate a writer's restricted `spawn_swarm_agents`: `defaults {model_slot?}`, `agents [{name?, prompt, model_slot?}]`.

    Raises:
        SpawnFieldsError: `model`, `thinking` or `role` anywhere.
        UnknownTierError: a member's tier is not a canonical `read-*` tier (the message names it).
        InvalidRequestError: no agents, a key outside the whitelist, or a bad value.
    """
    tool = "spawn_swarm_agents"
    with error_context(tool):
        raw = _object(params, tool, tool)
        check_spawn_fields(raw, where=tool)
        check_swarm_fields(raw)
        _nested_keys(raw, _NESTED_SWARM_FIELDS, tool, tool)
        defaults = raw.get("defaults")
        if defaults is None:
            defaults = {}
        if not isinstance(defaults, Mapping):
            raise _invalid(f"{tool}: field defaults must be an object.", tool)
        _nested_keys(defaults, _NESTED_DEFAULT_FIELDS, f"{tool} defaults", tool)
        default_slot = defaults.get("model_slot")
        if default_slot is not None:
            _tier(default_slot, tool, f"{tool} defaults", resolve_helper_tier)
        members: list[SpawnRequest] = []
        for index, agent in enumerate(_agents(raw, tool)):
            _nested_keys(agent, _NESTED_SPAWN_FIELDS, tool, tool)
            members.append(_nested_member(agent, tool, _member_where(index, agent), default_slot))
        _unique_names(members, tool)
        return SwarmRequest(tuple(members))


def parse_send_message(params: Mapping[str, Any], *, lead: bool) -> SendMessageRequest:
    """Validate `send_message`; the lead must name a recipient, an agent defaults to `team-lead`.

    Raises:
        InvalidRequestError: a bad argument, or the lead named no recipient.
    """
    tool = "send_message"
    with error_context(tool):
        parsed = _parse(_SendMessageParams, params, tool)
        recipient = parsed.recipient
        if recipient is None:
            if lead:
                raise _invalid("recipient is required when the lead sends a message.", tool)
            recipient = LEAD_RECIPIENT
        return SendMessageRequest(recipient, parsed.content, summary=parsed.summary or "Message")


def parse_read_inbox(params: Mapping[str, Any], *, lead: bool) -> ReadInboxRequest:
    """Validate `read_inbox`; only the lead may name another inbox with `agent_name`.

    Raises:
        InvalidRequestError: a bad argument (an agent passing `agent_name` is an unknown field).
    """
    tool = "read_inbox"
    with error_context(tool):
        parsed = _parse(_LeadReadInboxParams if lead else _ReadInboxParams, params, tool)
        agent_name = parsed.agent_name if isinstance(parsed, _LeadReadInboxParams) else None
        return ReadInboxRequest(
            unread_only=parsed.unread_only, mark_as_read=parsed.mark_as_read, agent_name=agent_name
        )


def parse_report(params: Mapping[str, Any]) -> ReportSubmission:
    """Validate `report_and_exit`.

    Unknown keys inside an artifact or a finding are ignored; unknown top-level keys
    (such as ids, verification or acceptance, which a report can never set) fail.

    Raises:
        InvalidRequestError: blank `content`, a bad claim, or a repeated finding id
            ("Finding IDs must be unique; duplicate X.").
    """
    tool = "report_and_exit"
    with error_context(tool):
        parsed = _parse(_ReportParams, params, tool)
        findings = tuple(Finding(f.id, f.text, evidence=tuple(f.evidence)) for f in parsed.findings or ())
        seen: set[str] = set()
        for finding in findings:
            if finding.id in seen:
                raise _invalid(f"Finding IDs must be unique; duplicate {_show(finding.id)}.", tool)
            seen.add(finding.id)
        return ReportSubmission(
            parsed.content,
            summary=parsed.summary,
            outcome=parsed.outcome,
            changed_paths=tuple(parsed.changed_paths or ()),
            artifacts=tuple(Artifact(a.path, label=a.label) for a in parsed.artifacts or ()),
            findings=findings,
            questions=tuple(parsed.questions or ()),
            inspected_evidence=tuple(parsed.inspected_evidence or ()),
        )


def parse_agent_name(params: Mapping[str, Any], *, tool: str) -> AgentNameRequest:
    """Validate a call whose only field is a required `agent_name` (`check_teammate`, `interrupt_teammate`).

    Raises:
        InvalidRequestError: `agent_name` missing or blank, or another key.
    """
    with error_context(tool):
        parsed = _parse(_AgentNameParams, params, tool)
        return AgentNameRequest(parsed.agent_name)


def parse_stop(params: Mapping[str, Any]) -> StopRequest:
    """Validate `stop_teammate` (`agent_name`, optional `reason`).

    Raises:
        InvalidRequestError: `agent_name` missing or blank, or a bad argument.
    """
    tool = "stop_teammate"
    with error_context(tool):
        parsed = _parse(_StopParams, params, tool)
        return StopRequest(parsed.agent_name, reason=parsed.reason)


def parse_status(params: Mapping[str, Any]) -> StatusRequest:
    """Validate `get_agent_status` (optional `agent_name`).

    Raises:
        InvalidRequestError: a blank `agent_name`, or another key.
    """
    tool = "get_agent_status"
    with error_context(tool):
        parsed = _parse(_StatusParams, params, tool)
        return StatusRequest(agent_name=parsed.agent_name)


def parse_claim(params: Mapping[str, Any], *, tool: str) -> ClaimRequest:
    """Validate `claim_file` or `release_file`: `paths`, a non-empty array of non-blank strings.

    Raises:
        InvalidRequestError: `paths` missing, empty, or holding a blank or non-string entry.
    """
    with error_context(tool):
        parsed = _parse(_ClaimParams, params, tool)
        return ClaimRequest(tuple(parsed.paths))


def parse_list_claims(params: Mapping[str, Any]) -> None:
    """Validate `list_file_claims`, which takes no arguments.

    Raises:
        InvalidRequestError: any argument (even `null`).
    """
    tool = "list_file_claims"
    with error_context(tool):
        _parse(_NoParams, params, tool)


# --- schemas ---------------------------------------------------------------------


def _prop(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, **extra, "description": description}


def _strings(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, **extra, "description": description}


def _object_schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _tier_slot(names: tuple[TierName, ...], lead_in: str) -> dict[str, Any]:
    uses = " ".join(f"{name}: {TIERS[name].purpose}" for name in names)
    return _prop("string", f"{lead_in} {uses}", enum=list(names), default=DEFAULT_TIER)


_CANONICAL: tuple[TierName, ...] = tuple(TIERS)
_SLOT = _tier_slot(
    _CANONICAL,
    "Intent tier; it picks the model (your favorite for the tier, else your current model). read-* "
    "tiers start a read agent, write-* tiers an edit agent. Default read-review; legacy names are "
    "accepted but use these.",
)
_HELPER_SLOT = _tier_slot(
    HELPER_TIERS, "Read tier of the helper (canonical read-* only). Default read-review."
)
_PROMPT = _prop(
    "string",
    "The complete assignment (non-blank): goal, file boundaries, decisions, evidence already collected "
    "and the result you need. The agent starts with an isolated conversation.",
)
_NAME = _prop(
    "string",
    "Display and recipient name: letters, digits, - and _ (at most 128; not team-lead). Default: "
    "generated. Reusing a live agent's name replaces it once it has stopped. With continue_from, a prefix.",
    pattern=NAME_PATTERN,
    maxLength=NAME_MAX_LENGTH,
)
_HELPER_NAME = _prop(
    "string",
    "Helper name: letters, digits, - and _ (default: generated); it must not be a running or queued agent.",
    pattern=NAME_PATTERN,
    maxLength=NAME_MAX_LENGTH,
)
_CHECKS = {
    "type": "array",
    "items": _object_schema(
        {
            "name": _prop("string", "Unique check name."),
            "command": _prop("string", "Shell command run in the agent's cwd."),
            "timeoutSeconds": _prop("number", "Timeout in seconds (> 0)."),
            "inputs": _strings("Repository paths relative to cwd the check covers (default: all)."),
        },
        ("name", "command", "timeoutSeconds"),
    ),
    "description": "Checks run before the agent's report is accepted; [] means none (and drops swarm defaults).",
}
_REPAIR = {
    **_object_schema(
        {"maxAttempts": _prop("integer", "Repair attempts, 0-5 (0 disables).", minimum=0, maximum=5)},
        ("maxAttempts",),
    ),
    "description": "Bounded repair after failed checks (needs checks).",
}
_CHECKPOINT = {
    **_object_schema(
        {
            "inputs": _strings("Repository paths relative to cwd that scope the checkpoint.", minItems=1),
            "retentionDays": _prop("integer", "Days to keep it, 1-365 (default 30).", minimum=1, maximum=365),
            "decisions": _strings("Lead decisions to record with it."),
        },
        ("inputs",),
    ),
    "description": "Save a checkpoint of this agent's report that a later spawn can continue_from.",
}
_SPAWN_OPTIONS: dict[str, Any] = {
    "cwd": _prop("string", "Working directory (default: yours)."),
    "session_context": _prop(
        "string",
        "lazy lets the agent read a bounded, filtered snapshot of your active branch on demand; none "
        "(default) gives it only the prompt.",
        enum=list(get_args(SessionContextMode)),
        default="none",
    ),
    "metadata": _prop("object", "Free-form record for integrations (operationId, …); it grants nothing."),
    "allow_nested_read_agents": _prop(
        "boolean",
        "Let a write-feature or write-critical agent spawn read helpers (default false).",
        default=False,
    ),
    "checks": _CHECKS,
    "repair": _REPAIR,
    "checkpoint": _CHECKPOINT,
}
_CONTINUE_FROM = _prop(
    "string", "Exact checkpoint:<64 hex> id to continue a saved specialist from; name becomes a prefix."
)
_SPAWN_PROPERTIES: dict[str, Any] = {
    "model_slot": _SLOT,
    "prompt": _PROMPT,
    "name": _NAME,
    **_SPAWN_OPTIONS,
    "continue_from": _CONTINUE_FROM,
}
_AGENT_NAME = _prop("string", "The agent's name.")
_READ_INBOX = {
    "unread_only": _prop("boolean", "Only unread messages (default true).", default=True),
    "mark_as_read": _prop(
        "boolean", "Mark returned messages read (default true; false peeks).", default=True
    ),
}
_SEND_MESSAGE = {
    "recipient": _prop("string", "A running agent's name, or team-lead (the default)."),
    "content": _prop("string", "The message (non-blank)."),
    "summary": _prop("string", "Short label (default Message).", default="Message"),
}
_CLAIM_PATHS = _strings("Repository-relative file paths (no absolute paths, no ..).", minItems=1)

TEAMS_SCHEMAS: dict[str, dict[str, Any]] = {
    "spawn_agent": _object_schema(_SPAWN_PROPERTIES, ("prompt",)),
    "spawn_swarm_agents": _object_schema(
        {
            "defaults": {
                **_object_schema({"model_slot": _SLOT, **_SPAWN_OPTIONS}),
                "description": "Fields every agent gets unless it sets them itself (shallow merge).",
            },
            "agents": {
                "type": "array",
                "items": _object_schema(_SPAWN_PROPERTIES, ("prompt",)),
                "minItems": 1,
                "description": "The agents (at least one); each takes spawn_agent's fields.",
            },
            "completion_group": {
                **_object_schema(
                    {"delivery": _prop("string", "How reports arrive.", enum=["immediate", "all-settled"])},
                    ("delivery",),
                ),
                "description": "Group the reports: immediate sends compact indexes as members settle; "
                "all-settled waits for the whole batch.",
            },
        },
        ("agents",),
    ),
    "spawn_agent#nested": _object_schema(
        {"name": _HELPER_NAME, "prompt": _PROMPT, "model_slot": _HELPER_SLOT}, ("prompt",)
    ),
    "spawn_swarm_agents#nested": _object_schema(
        {
            "defaults": {
                **_object_schema({"model_slot": _HELPER_SLOT}),
                "description": "The tier every helper gets unless it sets one.",
            },
            "agents": {
                "type": "array",
                "items": _object_schema(
                    {"name": _HELPER_NAME, "prompt": _PROMPT, "model_slot": _HELPER_SLOT}, ("prompt",)
                ),
                "minItems": 1,
                "description": "The helpers (at least one).",
            },
        },
        ("agents",),
    ),
    "send_message": _object_schema(
        {**_SEND_MESSAGE, "recipient": _prop("string", "A running agent's name (required).")},
        ("recipient", "content"),
    ),
    "send_message#agent": _object_schema(_SEND_MESSAGE, ("content",)),
    "read_inbox": _object_schema(
        {**_READ_INBOX, "agent_name": _prop("string", "Whose inbox (default: yours).")}
    ),
    "read_inbox#agent": _object_schema(_READ_INBOX),
    "report_and_exit": _object_schema(
        {
            "content": _prop("string", "The complete deliverable, not a summary (non-blank)."),
            "summary": _prop("string", "Short label."),
            "outcome": _prop("string", "Your task outcome (omit if unspecified).", enum=list(TASK_OUTCOMES)),
            "changedPaths": _strings("Paths you changed."),
            "artifacts": {
                "type": "array",
                "items": {
                    **_object_schema(
                        {"path": _prop("string", "Artifact path."), "label": _prop("string", "Label.")},
                        ("path",),
                    ),
                },
                "description": "Files or outputs you produced.",
            },
            "findings": {
                "type": "array",
                "items": _object_schema(
                    {
                        "id": _prop("string", "Stable id, unique in this report (F1, F2, …)."),
                        "text": _prop("string", "The finding."),
                        "evidence": _strings("File/line or command references."),
                    },
                    ("id", "text"),
                ),
                "description": "Findings with unique ids.",
            },
            "questions": _strings("Open questions for the lead."),
            "inspectedEvidence": _strings(
                f"References you inspected (at most {MAX_INSPECTED_EVIDENCE}, each 1-{MAX_EVIDENCE_CHARS} "
                "characters).",
                maxItems=MAX_INSPECTED_EVIDENCE,
            ),
        },
        ("content",),
    ),
    "get_agent_status": _object_schema({"agent_name": _prop("string", "One agent (default: all of yours).")}),
    "check_teammate": _object_schema({"agent_name": _AGENT_NAME}, ("agent_name",)),
    "interrupt_teammate": _object_schema({"agent_name": _AGENT_NAME}, ("agent_name",)),
    "stop_teammate": _object_schema(
        {"agent_name": _AGENT_NAME, "reason": _prop("string", "Why (shown to the user).")}, ("agent_name",)
    ),
    "claim_file": _object_schema({"paths": _CLAIM_PATHS}, ("paths",)),
    "release_file": _object_schema({"paths": _CLAIM_PATHS}, ("paths",)),
    "list_file_claims": _object_schema({}),
}
"""The parameters schema of each teams tool (see the module docstring for the `#` variants)."""
