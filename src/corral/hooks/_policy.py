"""`ToolPolicy`: the user's rules and hooks as one agent's `ToolGate`.

Before a call: the `[permissions]` rules first (in-process; a deny rule ends it there, no hook runs),
then every PreToolUse hook whose matcher matches the tool, in parallel. The stricter answer wins:

* a hook's `deny` (or exit code 2) denies, with the hook's reason;
* an ask rule, or a hook's `ask`, asks (the agent's approver answers; with none, the call is denied);
* a hook's `allow` stands in for an allow rule: it allows a call no rule matched (whatever
  `permissions.default` says) but never one a deny or ask rule matched;
* otherwise the rules' verdict stands.

A hook that fails (times out, crashes, prints malformed JSON) is reported — a warning in the log and
a failed `corral.hook` span — and then counts as a denial (`fail = "closed"`, the default) or as no
answer (`"open"`). After the call ran, the PostToolUse hooks run the same way; what they add
(`additionalContext`, a block's reason, exit code 2's stderr) goes to the model with the result.

Every hook run is a `corral.hook` span under the call's `execute_tool` span; the call's decision and
the rule that made it are attributes of that span (`corral.permission.*`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from corral import _tracing
from corral.agent import ToolCheck, ToolResult, ToolVerdict
from corral.llm import TextContent
from corral.permissions import Permissions, RuleVerdict, claude_name, names_of, stricter
from corral.trust import find_project_dir

from ._outcome import HookAnswer, read_answer
from ._run import HookRun, hook_environment, run_command_hook

if TYPE_CHECKING:
    from corral.agent import AgentSession
    from corral.settings import (
        HookCommandSettings,
        HookEvent,
        HooksSettings,
        PermissionLayer,
        PermissionsSettings,
        Settings,
    )

__all__ = [
    "AgentIdentity",
    "Policy",
    "ToolPolicy",
    "compile_layers",
    "install_tool_policy",
    "policy_of",
    "tool_input",
]

_log = logging.getLogger("corral.hooks")

FailMode = Literal["closed", "open"]


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    """Who an agent is in the tree, as its hooks' events say."""

    agent_id: str
    """The lead's session id for the lead, the run id for a managed agent or teams member."""
    label: str
    """`lead`, or the agent's label (teams: its name)."""
    type: str
    """`lead`, the agent's definition, or its teams tier."""
    parent_id: str | None = None
    """The `agent_id` of its owner (the lead's session id, or the delegating agent's run id)."""
    lead_session_id: str | None = None
    """The session id of the lead at the top of its tree, when known."""


# --- matchers ------------------------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z0-9_|]+")


def _matcher(text: str) -> Callable[[str], bool]:
    """Claude Code's matcher rules: empty or `*` matches every tool; names joined by `|` match exactly;
    anything else is a regular expression searched in the name."""
    if not text or text == "*":
        return lambda name: True
    if _PLAIN.fullmatch(text):
        names = frozenset(part.strip() for part in text.split("|"))
        return names.__contains__
    pattern = re.compile(text)
    return lambda name: pattern.search(name) is not None


@dataclass(frozen=True, slots=True)
class _Hook:
    command: str
    timeout: float
    fail: FailMode


@dataclass
class Policy:
    """A process's compiled `[permissions]` and `[hooks]` (shared by all its agents' gates)."""

    permissions: Permissions
    hooks: HooksSettings
    _groups: dict[HookEvent, list[tuple[Callable[[str], bool], tuple[_Hook, ...]]]] = field(
        default_factory=dict, init=False, repr=False
    )
    _by_tool: dict[tuple[HookEvent, str], tuple[_Hook, ...]] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        for event in ("PreToolUse", "PostToolUse"):
            self._groups[event] = [
                (_matcher(group.matcher), tuple(self._hook(h) for h in group.hooks))
                for group in self.hooks.groups(event)
            ]

    def _hook(self, hook: HookCommandSettings) -> _Hook:
        return _Hook(hook.command, hook.timeout, hook.fail or self.hooks.fail)

    @classmethod
    def of(cls, permissions: PermissionsSettings, hooks: HooksSettings) -> Policy:
        """Compile the settings' sections (their rules were checked when the settings were read)."""
        return cls(
            Permissions.parse(
                allow=permissions.allow,
                ask=permissions.ask,
                deny=permissions.deny,
                default=permissions.default,
            ),
            hooks,
        )

    @property
    def empty(self) -> bool:
        """Whether it lets every call run without a look (no rule, no hook)."""
        return self.permissions.empty and self.hooks.empty

    def hooks_for(self, event: HookEvent, tool: str) -> tuple[_Hook, ...]:
        """The hooks of `event` whose matcher matches `tool` (by corral's or Claude Code's name), each
        command once."""
        key = (event, tool)
        found = self._by_tool.get(key)
        if found is None:
            names = names_of(tool)
            seen: dict[str, _Hook] = {}
            for matches, hooks in self._groups[event]:
                if any(matches(name) for name in names):
                    for hook in hooks:
                        seen.setdefault(hook.command, hook)
            found = self._by_tool[key] = tuple(seen.values())
        return found


_POLICIES: dict[int, tuple[object, object, Policy]] = {}


def policy_of(settings: Settings) -> Policy:
    """The compiled policy of `settings` (compiled once per settings object in this process)."""
    key = id(settings)
    cached = _POLICIES.get(key)
    if cached is not None and cached[0] is settings.permissions and cached[1] is settings.hooks:
        return cached[2]
    policy = Policy.of(settings.permissions, settings.hooks)
    if len(_POLICIES) > 64:
        _POLICIES.clear()
    _POLICIES[key] = (settings.permissions, settings.hooks, policy)
    return policy


# --- events --------------------------------------------------------------------------------------


def tool_input(tool: str, arguments: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """A call's arguments as a hook reads them: corral's own, plus Claude Code's names where they differ
    (`file_path`, absolute, for `path`; `old_string` / `new_string` for a single edit), so a copied
    hook finds what it looks for."""
    data = dict(arguments)
    path = arguments.get("path")
    if tool in ("read", "edit", "write") and isinstance(path, str) and "file_path" not in data:
        expanded = path[1:] if path.startswith("@") else path
        data["file_path"] = str(Path(expanded).expanduser() if expanded.startswith("~") else cwd / expanded)
    if tool == "edit" and "oldText" in arguments:
        data.setdefault("old_string", arguments["oldText"])
        data.setdefault("new_string", arguments.get("newText", ""))
    return data


def _event(name: str, check: ToolCheck, agent: AgentIdentity, **more: Any) -> dict[str, Any]:
    return {
        "session_id": check.session_id,
        "transcript_path": None if check.transcript_path is None else str(check.transcript_path),
        "cwd": str(check.cwd),
        "permission_mode": "default",
        "hook_event_name": name,
        "tool_name": claude_name(check.tool_name) or check.tool_name,
        "tool_input": tool_input(check.tool_name, check.arguments, check.cwd),
        "tool_use_id": check.call_id,
        "corral_tool_name": check.tool_name,
        "agent_id": agent.agent_id,
        "agent_label": agent.label,
        "agent_type": agent.type,
        "parent_agent_id": agent.parent_id,
        "lead_session_id": agent.lead_session_id,
        **more,
    }


def _result_text(result: ToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def _short(command: str) -> str:
    line = " ".join(command.split())
    return line if len(line) <= 80 else line[:79] + "…"


# --- the gate ------------------------------------------------------------------------------------


def compile_layers(layers: Sequence[PermissionLayer]) -> tuple[tuple[str, Permissions], ...]:
    """The narrowing layers' rules, compiled (their texts were checked when they were read); layers
    that say nothing are dropped."""
    return tuple(
        (
            layer.source,
            Permissions.parse(
                allow=layer.rules.allow,
                ask=layer.rules.ask,
                deny=layer.rules.deny,
                default=layer.rules.default,
            ),
        )
        for layer in layers
        if not layer.rules.empty
    )


class ToolPolicy:
    """One agent's `ToolGate` over its process's `Policy`, narrowed by its own and its ancestors'
    `PermissionLayer`s (a definition's `permissions:`, a teams tier's): every layer is checked and the
    strictest verdict stands, so a child never gets more than its parent."""

    def __init__(
        self,
        policy: Policy,
        agent: AgentIdentity,
        *,
        cwd: Path,
        layers: Sequence[PermissionLayer] = (),
    ) -> None:
        self.policy = policy
        self.agent = agent
        self.layers = compile_layers(layers)
        project = find_project_dir(cwd) or cwd
        self.project = str(project)
        self._env = hook_environment(project)

    def rules(self, check: ToolCheck) -> RuleVerdict:
        """What the `[permissions]` rules, narrowed by the agent's layers, say about `check`."""
        cwd = str(check.cwd)
        verdict = self.policy.permissions.check(
            check.tool_name, check.arguments, cwd=cwd, project=self.project
        )
        for source, rules in self.layers:
            if verdict.decision == "deny":
                break
            other = rules.check(check.tool_name, check.arguments, cwd=cwd, project=self.project)
            # on a tie the one a rule made, else the narrower layer's default: neither a layer's ask
            # rule nor its default is taken for the settings' default, which a hook's `allow` may answer
            if stricter(verdict, other) is other:
                verdict = dataclasses.replace(other, source=source)
        return verdict

    async def before_tool(self, check: ToolCheck) -> ToolVerdict:
        """The rules, then the PreToolUse hooks (see the module docstring)."""
        ruled = self.rules(check)
        if ruled.decision == "deny":
            return self._decided(ToolVerdict("deny", ruled.reason(check.tool_name)), ruled)
        hooks = self.policy.hooks_for("PreToolUse", check.tool_name)
        if not hooks:
            verdict = ToolVerdict(
                ruled.decision, ruled.reason(check.tool_name) if ruled.decision != "allow" else ""
            )
            return self._decided(verdict, ruled)
        answers = await self._run_all("PreToolUse", hooks, _event("PreToolUse", check, self.agent), check)
        context = "\n\n".join(a.context for a in answers if a.context)
        denied = next((a for a in answers if a.decision == "deny"), None)
        if denied is not None:
            return self._decided(ToolVerdict("deny", denied.reason, context), ruled, by_hook=True)
        if ruled.decision == "ask" and not ruled.default:
            return self._decided(ToolVerdict("ask", ruled.reason(check.tool_name), context), ruled)
        asked = next((a for a in answers if a.decision == "ask"), None)
        if asked is not None:
            reason = asked.reason or "a PreToolUse hook asks for approval"
            return self._decided(ToolVerdict("ask", reason, context), ruled, by_hook=True)
        # a hook's `allow` stands in for an allow rule of the settings: it cannot answer a narrowing
        # layer's default (an allow rule of the settings does not either)
        if any(a.decision == "allow" for a in answers) and ruled.source is None:
            return self._decided(ToolVerdict("allow", "", context), ruled, by_hook=True)
        reason = ruled.reason(check.tool_name) if ruled.decision != "allow" else ""
        return self._decided(ToolVerdict(ruled.decision, reason, context), ruled)

    async def after_tool(self, check: ToolCheck, result: ToolResult) -> str | None:
        """The PostToolUse hooks' additions for the model, or `None`."""
        hooks = self.policy.hooks_for("PostToolUse", check.tool_name)
        if not hooks:
            return None
        response = {"content": _result_text(result), "is_error": result.is_error}
        event = _event("PostToolUse", check, self.agent, tool_response=response)
        answers = await self._run_all("PostToolUse", hooks, event, check)
        return "\n\n".join(a.context for a in answers if a.context) or None

    # --- running ---------------------------------------------------------------------------------

    async def _run_all(
        self, event: HookEvent, hooks: Sequence[_Hook], data: dict[str, Any], check: ToolCheck
    ) -> list[HookAnswer]:
        payload = json.dumps(data, ensure_ascii=False, default=str).encode()
        if len(hooks) == 1:
            return [await self._run_one(event, hooks[0], payload, check)]
        return list(await asyncio.gather(*(self._run_one(event, hook, payload, check) for hook in hooks)))

    async def _run_one(self, event: HookEvent, hook: _Hook, payload: bytes, check: ToolCheck) -> HookAnswer:
        tracer = _tracing.active
        span = None
        if tracer is not None:
            span = tracer.start(
                "corral.hook",
                {
                    "corral.hook.event": event,
                    "corral.hook.command": _short(hook.command),
                    "gen_ai.tool.name": check.tool_name,
                    "gen_ai.tool.call.id": check.call_id,
                    "corral.agent": self.agent.label,
                },
            )
        try:
            run = await run_command_hook(
                hook.command, payload, cwd=check.cwd, env=self._env, timeout=hook.timeout
            )
        except BaseException:
            if span is not None:
                span.fail("aborted")
                span.end()
            raise
        answer = read_answer(run, event)
        answer = self._failed(event, hook, run, answer)
        if span is not None:
            attributes: dict[str, str | int | float | bool] = {
                "corral.hook.duration_ms": round(run.duration_ms, 3)
            }
            if run.exit_code is not None:
                attributes["corral.hook.exit_code"] = run.exit_code
            if answer.decision is not None:
                attributes["corral.hook.decision"] = answer.decision
            span.update(attributes)
            if answer.failure is not None:
                span.fail(answer.failure)
            span.end()
        return answer

    def _failed(self, event: HookEvent, hook: _Hook, run: HookRun, answer: HookAnswer) -> HookAnswer:
        """Report a failed hook; for PreToolUse, apply its `fail` mode."""
        if answer.failure is None:
            return answer
        what = f"the {event} hook `{_short(hook.command)}` {answer.failure}"
        if event != "PreToolUse":
            _log.warning("%s (agent %s)", what, self.agent.label)
            return answer
        if hook.fail == "open":
            _log.warning("%s; the call runs, as the hook fails open (agent %s)", what, self.agent.label)
            return HookAnswer(failure=answer.failure)
        _log.warning("%s; the call is blocked, as the hook fails closed (agent %s)", what, self.agent.label)
        return HookAnswer("deny", f"{what} (a failing hook blocks the call)", failure=answer.failure)

    def _decided(self, verdict: ToolVerdict, ruled: RuleVerdict, *, by_hook: bool = False) -> ToolVerdict:
        if not by_hook and ruled.rule is None:
            verdict = dataclasses.replace(verdict, by_default=True)
        tracer = _tracing.active
        if tracer is not None:
            span = tracer.current()
            if span is not None:
                span.update(
                    {
                        "corral.permission.decision": verdict.decision,
                        "corral.permission.source": "hook"
                        if by_hook
                        else "rule"
                        if ruled.rule
                        else "default",
                        "corral.permission.rule": ruled.rule or "",
                    }
                )
        return verdict


def install_tool_policy(
    agent: AgentSession,
    settings: Settings,
    identity: AgentIdentity,
    *,
    layers: Sequence[PermissionLayer] = (),
) -> ToolPolicy | None:
    """Give `agent` the gate of `settings`' rules and hooks narrowed by `layers` (its own and its
    ancestors' definition or tier rules); none when all of them say nothing."""
    policy = policy_of(settings)
    if policy.empty and all(layer.rules.empty for layer in layers):
        agent.set_tool_gate(None)
        return None
    gate = ToolPolicy(policy, identity, cwd=agent.cwd, layers=layers)
    agent.set_tool_gate(gate)
    return gate
