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

The verification and continuation fields (`checks`, `repair`, `checkpoint`,
`completion_group`) are parsed here by their features' own parsers into
`Parsed` policies; a parse error travels with the command and the core raises
it where it admits the agent (so one bad swarm member fails alone). `checks: []` is an explicit
"no checks" that overrides swarm defaults.

`TEAMS_SCHEMAS` holds the JSON schema of each tool's parameters, generated
from the wire model that validates the call (`surfaces/_schema.py`; the
policies' and tiers' shapes, validated by their own parsers, are given as
`json_schema_extra`), keyed by tool name, as the lead is offered it; other callers' variants are keyed
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
from corral.orchestration.surfaces._schema import model_schema, object_schema
from corral.orchestration.teams._errors import UnknownTierError
from corral.orchestration.teams._tiers import (
    DEFAULT_TIER,
    HELPER_TIERS,
    TIERS,
    Tier,
    TierName,
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


# --- the schemas' pieces validated by other parsers (tiers, policies) --------------------------


def _tier_slot(names: tuple[TierName, ...]) -> dict[str, Any]:
    return {"type": "string", "enum": list(names), "default": DEFAULT_TIER}


_SLOT_TEXT = "Intent tier (read-* investigate, write-* edit). " + " ".join(
    f"{name}: {TIERS[name].purpose}" for name in TIERS
)
_HELPER_SLOT_TEXT = "Read tier (canonical read-* only)."
_STRINGS: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
_CHECKS: dict[str, Any] = {
    "type": "array",
    "items": object_schema(
        {
            "name": {"type": "string"},
            "command": {"type": "string", "description": "Shell command, run in cwd."},
            "timeoutSeconds": {"type": "number"},
            "inputs": {**_STRINGS, "description": "Paths it covers (default all)."},
        },
        ("name", "command", "timeoutSeconds"),
    ),
}
_REPAIR = object_schema({"maxAttempts": {"type": "integer", "minimum": 0, "maximum": 5}}, ("maxAttempts",))
_CHECKPOINT = object_schema(
    {
        "inputs": {**_STRINGS, "minItems": 1, "description": "Paths that scope it."},
        "retentionDays": {"type": "integer", "minimum": 1, "maximum": 365, "description": "Default 30."},
        "decisions": {**_STRINGS, "description": "Decisions to record."},
    },
    ("inputs",),
)
_COMPLETION_GROUP = object_schema(
    {"delivery": {"type": "string", "enum": ["immediate", "all-settled"]}}, ("delivery",)
)
_NAME_RULE: dict[str, Any] = {"pattern": NAME_PATTERN, "maxLength": NAME_MAX_LENGTH}


def _undescribed(node: Any) -> Any:
    """`node` without descriptions (a swarm's copy of spawn_agent's fields, described once there)."""
    if isinstance(node, dict):
        return {key: _undescribed(value) for key, value in node.items() if key != "description"}
    return node


# --- wire models (each also defines its tool's JSON schema) ------------------------------------


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _SpawnParams(_Params):
    prompt: _Text = Field(
        description="Self-contained: goal, file boundaries, decisions, evidence, the result you need."
    )
    model_slot: Any = Field(None, description=_SLOT_TEXT, json_schema_extra=_tier_slot(tuple(TIERS)))
    name: _Name | None = Field(
        None,
        description="Default generated; not team-lead. A stopped agent's name can be reused; with "
        "continue_from, a prefix.",
        json_schema_extra=_NAME_RULE,
    )
    cwd: _Text | None = Field(None, description="Default yours.")
    session_context: _SessionContext = Field(
        "none",
        description="lazy: the agent may read a snapshot of your branch; none: prompt only.",
    )
    metadata: _Metadata | None = Field(None, description="For integrations; grants nothing.")
    allow_nested_read_agents: _Bool = Field(
        False, description="Let a write-feature/write-critical agent spawn read helpers."
    )
    checks: Any = Field(
        None,
        description="Run before the report is accepted; [] = none.",
        json_schema_extra=_CHECKS,
    )
    repair: Any = Field(
        None, description="Attempts after failed checks (needs checks).", json_schema_extra=_REPAIR
    )
    checkpoint: Any = Field(
        None,
        description="Save the report for a later continue_from.",
        json_schema_extra=_CHECKPOINT,
    )
    continue_from: _Text | None = Field(None, description="checkpoint:<64 hex> id to continue.")


class _SwarmDefaults(_Params):
    cwd: _Text | None = None
    model_slot: Any = Field(None, json_schema_extra=_tier_slot(tuple(TIERS)))
    metadata: _Metadata | None = None
    session_context: _SessionContext | None = Field(None, json_schema_extra={"default": "none"})
    allow_nested_read_agents: _Bool | None = Field(None, json_schema_extra={"default": False})
    checks: Any = Field(None, json_schema_extra=_undescribed(_CHECKS))
    repair: Any = Field(None, json_schema_extra=_REPAIR)
    checkpoint: Any = Field(None, json_schema_extra=_undescribed(_CHECKPOINT))


class _SwarmParams(_Params):
    defaults: Any = Field(
        None,
        description="spawn_agent fields for every agent that does not set them.",
        json_schema_extra=model_schema(_SwarmDefaults),
    )
    agents: Any = Field(
        None,
        description="Each takes spawn_agent's fields.",
        json_schema_extra={"type": "array", "items": _undescribed(model_schema(_SpawnParams)), "minItems": 1},
    )
    completion_group: Any = Field(
        None,
        description="immediate: indexes as members settle; all-settled: wait for the batch.",
        json_schema_extra=_COMPLETION_GROUP,
    )


class _NestedSpawnParams(_Params):
    name: _Name | None = Field(
        None,
        description="Helper name (default generated); not a running or queued agent's.",
        json_schema_extra=_NAME_RULE,
    )
    prompt: _Text = Field(description="The complete, self-contained question and the result you need.")
    model_slot: Any = Field(None, description=_HELPER_SLOT_TEXT, json_schema_extra=_tier_slot(HELPER_TIERS))


class _NestedDefaults(_Params):
    model_slot: Any = Field(None, description=_HELPER_SLOT_TEXT, json_schema_extra=_tier_slot(HELPER_TIERS))


class _NestedSwarmParams(_Params):
    defaults: Any = Field(
        None,
        description="The tier every helper gets unless it sets one.",
        json_schema_extra=model_schema(_NestedDefaults),
    )
    agents: Any = Field(
        None,
        description="The helpers (at least one).",
        json_schema_extra={"type": "array", "items": model_schema(_NestedSpawnParams), "minItems": 1},
    )


class _SendMessageParams(_Params):
    recipient: _Ident | None = Field(None, description="A running agent's name, or team-lead (the default).")
    content: _Text
    summary: _Label = Field(None, json_schema_extra={"default": "Message"})


class _ReadInboxParams(_Params):
    unread_only: _Bool = True
    mark_as_read: _Bool = Field(True, description="false peeks.")


class _LeadReadInboxParams(_ReadInboxParams):
    agent_name: _Ident | None = Field(None, description="Whose inbox (default yours).")


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
    content: _Text = Field(description="The complete deliverable, not a summary.")
    summary: _Label = None
    outcome: _Outcome | None = None
    changed_paths: _TextList | None = Field(default=None, alias="changedPaths")
    artifacts: list[_ArtifactParams] | None = Field(None, description="Files or outputs you produced.")
    findings: list[_FindingParams] | None = Field(None, description="Unique ids (F1, F2, …).")
    questions: _TextList | None = Field(None, description="Open questions for the lead.")
    inspected_evidence: Annotated[list[_Evidence], BeforeValidator(_evidence_list)] | None = Field(
        default=None,
        alias="inspectedEvidence",
        description=f"What you inspected, each 1-{MAX_EVIDENCE_CHARS} characters.",
        json_schema_extra={"maxItems": MAX_INSPECTED_EVIDENCE},
    )


class _AgentNameParams(_Params):
    agent_name: _Teammate


class _StopParams(_Params):
    agent_name: _Teammate
    reason: _Label = Field(None, description="Why (shown to the user).")


class _StatusParams(_Params):
    agent_name: _Ident | None = Field(None, description="One agent (default all of yours).")


class _ClaimParams(_Params):
    paths: Annotated[_TextList, BeforeValidator(_some_paths)] = Field(
        description="Repository-relative; no absolute paths, no ..", json_schema_extra={"minItems": 1}
    )


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

_NESTED_SPAWN_FIELDS = _wire_fields(_NestedSpawnParams)
_NESTED_SWARM_FIELDS = _wire_fields(_NestedSwarmParams)
_NESTED_DEFAULT_FIELDS = _wire_fields(_NestedDefaults)


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

TEAMS_SCHEMAS: dict[str, dict[str, Any]] = {
    "spawn_agent": model_schema(_SpawnParams),
    "spawn_swarm_agents": model_schema(_SwarmParams, required=("agents",)),
    "spawn_agent#nested": model_schema(_NestedSpawnParams),
    "spawn_swarm_agents#nested": model_schema(_NestedSwarmParams, required=("agents",)),
    "send_message": model_schema(
        _SendMessageParams,
        required=("recipient", "content"),
        descriptions={"recipient": "A running agent's name."},
    ),
    "send_message#agent": model_schema(_SendMessageParams),
    "read_inbox": model_schema(_LeadReadInboxParams),
    "read_inbox#agent": model_schema(_ReadInboxParams),
    "report_and_exit": model_schema(_ReportParams),
    "get_agent_status": model_schema(_StatusParams),
    "check_teammate": model_schema(_AgentNameParams),
    "interrupt_teammate": model_schema(_AgentNameParams),
    "stop_teammate": model_schema(_StopParams),
    "claim_file": model_schema(_ClaimParams),
    "release_file": model_schema(_ClaimParams),
    "list_file_claims": model_schema(_NoParams),
}
"""The parameters schema of each teams tool, generated from its wire model (see the module docstring
for the `#` variants)."""
