"""What the user's policy adds to one tool call (issue 34; targets: rules ≤ 0.05 ms per call).

Measured one call at a time, on the gate an agent's loop asks before each tool call
(`ToolPolicy.before_tool`, corral/hooks/_policy.py):

* `rules`: `Permissions.check` alone — `[permissions]` rules in Claude Code's syntax (a realistic
  set: 4 allow, 2 ask, 6 deny) against a mix of calls (a compound `bash` command, a `read`, an `edit`,
  an MCP tool), `--rule-calls` calls; no process is started;
* `gate_without_hooks`: the whole gate with those rules and no hook (what every agent pays when only
  rules are set);
* `python_hook` / `shell_hook`: the gate with one PreToolUse command hook that reads the event and
  allows the call — a Python script (`python3 hook.py`, the interpreter running this benchmark) and a
  `/bin/sh` one-liner that looks at the input — `--hook-calls` calls each: the latency one hook adds
  to every tool call it matches (a process start per call, as in Claude Code).

Prints one JSON object; figures in milliseconds (p50, p95).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment, summary_ms

from corral.agent import ToolCheck
from corral.hooks import AgentIdentity, ToolPolicy, policy_of
from corral.permissions import Permissions
from corral.settings import Settings

TARGET_RULES_MS = 0.05

RULES = {
    "allow": ["Bash(git status)", "Bash(ls:*)", "Read", "Edit(src/**)"],
    "ask": ["Bash(git push:*)", "Edit(/docs/**)"],
    "deny": ["Bash(rm -rf:*)", "Read(.env)", "Read(~/.ssh/**)", "Edit(/secrets/**)", "mcp__github", "Task(writer)"],
}
CALLS = [
    ("bash", {"command": "git status && ls -la src"}),
    ("read", {"path": "src/corral/cli.py"}),
    ("edit", {"path": "src/corral/cli.py", "oldText": "a", "newText": "b"}),
    ("mcp__linear__get_issue", {"id": "ABC-1"}),
]
PYTHON_HOOK = """import json, sys
event = json.load(sys.stdin)
if "rm -rf" in event["tool_input"].get("command", ""):
    print("no", file=sys.stderr)
    sys.exit(2)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
"""
SHELL_HOOK = 'input=$(cat); case "$input" in *"rm -rf"*) echo no >&2; exit 2;; esac; exit 0'


def _checks(cwd: Path) -> list[ToolCheck]:
    return [ToolCheck(f"call-{i}", tool, args, "bench", None, cwd) for i, (tool, args) in enumerate(CALLS)]


def _rules(calls: int, cwd: Path) -> dict[str, object]:
    permissions = Permissions.parse(**RULES)
    for tool, args in CALLS:  # warm the per-tool rule lists
        permissions.check(tool, args, cwd=str(cwd))
    samples: list[float] = []
    per_tool: dict[str, list[float]] = {tool: [] for tool, _ in CALLS}
    for i in range(calls):
        tool, args = CALLS[i % len(CALLS)]
        started = time.perf_counter()
        permissions.check(tool, args, cwd=str(cwd))
        took = time.perf_counter() - started
        samples.append(took)
        per_tool[tool].append(took)
    summary = summary_ms(samples)
    return {
        **summary,
        "by_tool": {tool: summary_ms(values)["p50_ms"] for tool, values in per_tool.items()},
        "target_ms": TARGET_RULES_MS,
        "met": summary["p50_ms"] <= TARGET_RULES_MS,
    }


async def _gate(settings: Settings, calls: int, cwd: Path) -> dict[str, float]:
    gate = ToolPolicy(policy_of(settings), AgentIdentity("bench", "lead", "lead"), cwd=cwd)
    checks = _checks(cwd)
    await gate.before_tool(checks[0])  # warm up
    samples: list[float] = []
    for i in range(calls):
        started = time.perf_counter()
        await gate.before_tool(checks[i % len(checks)])
        samples.append(time.perf_counter() - started)
    return summary_ms(samples)


def _with_hook(command: str) -> Settings:
    return Settings.model_validate(
        {
            "permissions": RULES,
            "hooks": {"PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]},
        }
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rule-calls", type=int, default=20_000)
    parser.add_argument("--hook-calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-hooks-") as tmp:
        cwd = Path(tmp)
        (cwd / "src" / "corral").mkdir(parents=True)
        (cwd / "src" / "corral" / "cli.py").write_text("")
        hook = cwd / "hook.py"
        hook.write_text(PYTHON_HOOK)
        rules_only = Settings.model_validate({"permissions": RULES})
        out = {
            **environment("bench_hooks.py"),
            "rule_calls": args.rule_calls,
            "hook_calls": args.hook_calls,
            "rules": _rules(args.rule_calls, cwd),
            "gate_without_hooks": asyncio.run(_gate(rules_only, args.rule_calls, cwd)),
            "python_hook": asyncio.run(_gate(_with_hook(f"{sys.executable} {hook}"), args.hook_calls, cwd)),
            "shell_hook": asyncio.run(_gate(_with_hook(SHELL_HOOK), args.hook_calls, cwd)),
        }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
