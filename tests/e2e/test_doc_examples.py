"""Every shell example in README.md and docs/ runs offline as written (issue 28).

A shell block (```sh, ```bash, ```shell, ```console) is preceded by one marker comment:

- `<!-- test: offline -->`: this test runs it, line by line in `bash`, with the real `corral` on
  PATH, in a private HOME, data root and config (no API key, no network), in a small git project
  that has a README.md; the blocks of one page share that sandbox, in page order. Each line must
  exit with the status `EXPECTED` gives it and print its key line.
- `<!-- not offline: why -->`: needs a key, a network service or another program (Claude Code,
  a collector); the page then has an offline block too.
- `<!-- not run: why -->`: interactive or an install step, never an example to copy offline.

A ```toml block is a corral settings file: `corral doctor` run with it as the user's settings.toml
finds the settings valid (its endpoint checks may fail: no server runs here). A block that is
another program's config is marked `<!-- not corral settings: whose -->`.

docs/python-api.md has its own test (`tests/lead/test_docs_examples.py`); docs/development.md is
for corral's engineers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.runtime._tmux_fixtures import require_tmux

REPO = Path(__file__).resolve().parents[2]
_NOT_HERE = {"python-api.md", "development.md"}
PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md") if p.name not in _NOT_HERE)]
BLOCK = re.compile(
    r"(?:<!--\s*(?P<marker>[^>]*?)\s*-->\n)?```(?P<lang>sh|bash|shell|console)\n(?P<body>.*?)```", re.DOTALL
)

MCP_HANDSHAKE = (
    "printf '%s\\n'"
    """ '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18","""
    """ "capabilities": {}, "clientInfo": {"name": "sh", "version": "1"}}}'"""
    """ '{"jsonrpc": "2.0", "method": "notifications/initialized"}'"""
    """ '{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}'"""
    " | corral mcp --model scripted/team"
)

# The command (its text before any `  # comment`) → (exit status, a line or part of one it prints).
EXPECTED: dict[str, tuple[int, str]] = {
    # README.md
    'corral run --model scripted/tour -p "show me around"': (0, "Both scouts delivered their results"),
    'corral run --continue -p "Fix it."': (0, "The tour is over"),
    'corral run --model scripted/team -p "what is in the README?"': (
        0,
        "The scout `reader` delivered its result",
    ),
    "corral run --mode json --model scripted/hello -p hi": (0, '{"type":"run_end","exitCode":0}'),
    """echo '{"type": "get_state"}' | corral run --mode rpc --model scripted/hello""": (
        0,
        '"command":"get_state","success":true',
    ),
    "git log -1 | corral run --model scripted/hello -p -": (0, "Hello from the scripted model."),
    "corral models": (0, "scripted/tour"),
    "corral sessions": (0, '"show me around"'),
    "corral agents list": (0, "No agents."),
    "corral doctor": (0, "ok    store: orchestration store"),
    "corral checks list": (0, "No unresolved checks."),
    # docs/skills.md
    "corral skills list": (0, "No skills found."),
    "corral skills list --json": (0, '"skills": []'),
    # docs/scripted-model.md
    'corral run --model scripted/hello -p "hi"': (0, "Hello from the scripted model."),
    # docs/agent-api.md, docs/settings.md
    "corral agents list --json": (0, "[]"),
    "corral trust --show": (0, "Not trusted; run `corral trust"),
    "corral trust": (0, "Trusted "),
    'corral trust "$PWD"': (0, "Trusted "),
    "corral untrust": (0, "No longer trusted: "),
    # docs/fleet.md
    'corral run --model scripted/team --trace run.jsonl -p "what is in the README?"': (
        0,
        "The scout `reader` delivered its result",
    ),
    "corral trace run.jsonl": (0, "│     └─ invoke_agent reader            reader"),
    # docs/runtimes.md
    """mkdir -p tmux-try/.corral && printf 'runtime = "tmux"\\n' > tmux-try/.corral/settings.toml""": (0, ""),
    "corral trust tmux-try": (0, "Trusted "),
    'corral run --cwd tmux-try --model scripted/team -p "what is in the README?"': (
        0,
        "The scout `reader` delivered its result",
    ),
    # docs/mcp.md
    MCP_HANDSHAKE: (0, '"name":"agent_delegate"'),
    # docs/hooks.md
    "mkdir -p ~/.config/corral ~/hooks": (0, ""),
    """printf '#!/bin/sh\\ngrep -q "rm -rf" && { echo "no rm -rf here: delete the one directory by name" >&2; exit 2; }\\nexit 0\\n' > ~/hooks/no-rm.sh && chmod +x ~/hooks/no-rm.sh""": (
        0,
        "",
    ),
    """printf '[[hooks.PreToolUse]]\\nmatcher = "Bash"\\nhooks = [{ type = "command", command = "~/hooks/no-rm.sh" }]\\n' >> ~/.config/corral/settings.toml""": (
        0,
        "",
    ),
    """corral permissions check Bash '{"command": "rm -rf build"}' --run-hooks""": (
        0,
        "deny: no rm -rf here: delete the one directory by name",
    ),
    """corral permissions check bash '{"command": "ls"}' --run-hooks""": (
        0,
        "allow: no permission rule matches, and calls are allowed by default",
    ),
    # docs/permissions.md
    "mkdir -p ~/.config/corral": (0, ""),
    """printf '[permissions]\\ndeny = ["Bash(git push:*)", "Read(.env)"]\\nask = ["Bash(rm:*)"]\\n' >> ~/.config/corral/settings.toml""": (
        0,
        "",
    ),
    """corral permissions check Bash '{"command": "cd app && git push origin main"}'""": (
        0,
        "deny: the permission rule `Bash(git push:*)` denies it",
    ),
    """corral permissions check read '{"path": "config/.env"}'""": (0, "deny: the permission rule `Read(.env)` denies it"),
    """corral permissions check bash '{"command": "rm -r build"}'""": (
        0,
        "ask: the permission rule `Bash(rm:*)` asks for approval",
    ),
    """corral permissions check bash '{"command": "git status"}'""": (
        0,
        "allow: no permission rule matches, and calls are allowed by default",
    ),
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    marker: str
    body: str

    @property
    def id(self) -> str:
        return f"{self.page.name}:{self.line}"

    def commands(self) -> list[str]:
        return [line for line in self.body.splitlines() if line.strip() and not line.startswith("#")]


def _blocks(page: Path) -> list[Block]:
    text = page.read_text()
    return [
        Block(page, text.count("\n", 0, m.start("body")), (m.group("marker") or "").strip(), m.group("body"))
        for m in BLOCK.finditer(text)
    ]


def _key(command: str) -> str:
    return re.split(r"\s{2,}#", command, maxsplit=1)[0].strip()


ALL = [block for page in PAGES for block in _blocks(page)]
OFFLINE = [block for block in ALL if block.marker == "test: offline"]


def test_every_shell_example_is_marked() -> None:
    unmarked = [
        b.id
        for b in ALL
        if b.marker != "test: offline" and not re.fullmatch(r"not (offline|run): \S.*", b.marker)
    ]
    assert unmarked == [], (
        "mark each shell block: <!-- test: offline -->, <!-- not offline: why --> or <!-- not run: why -->"
    )


def test_a_page_with_an_example_that_is_not_offline_has_an_offline_one() -> None:
    pages = {b.page.name for b in ALL if b.marker.startswith("not offline")}
    assert pages - {b.page.name for b in OFFLINE} == set()


def test_every_offline_command_has_its_expected_output_and_no_expectation_is_stale() -> None:
    commands = {_key(c) for b in OFFLINE for c in b.commands()}
    assert sorted(commands - EXPECTED.keys()) == [], "add these doc commands to EXPECTED"
    assert sorted(EXPECTED.keys() - commands) == [], "no page runs these any more"


def _sandbox(root: Path) -> tuple[Path, dict[str, str]]:
    """A git project with a README, and an environment with no key and private roots."""
    project = root / "app"
    project.mkdir(parents=True)
    (project / "README.md").write_text("# app\n\nA small project.\nTODO: write the docs.\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_", "OTEL_"))
    }
    home = root / "home"
    home.mkdir()
    env.update(
        HOME=str(home),
        CORRAL_HOME=str(home / ".local" / "share" / "corral"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        GIT_AUTHOR_NAME="A",
        GIT_AUTHOR_EMAIL="a@example.com",
        GIT_COMMITTER_NAME="A",
        GIT_COMMITTER_EMAIL="a@example.com",
    )
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
        subprocess.run(argv, cwd=project, env=env, check=True, capture_output=True)
    return project, env


def _run(
    argv: list[str], project: Path, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`argv` in the sandbox's project, with no stdin."""
    return subprocess.run(
        argv,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("page", sorted({b.page for b in OFFLINE}), ids=lambda p: p.name)
def test_the_offline_examples_of_a_page_run_as_written(page: Path, tmp_path: Path) -> None:
    """The page's offline blocks, in order, in one sandbox (a later line may read what an earlier wrote)."""
    if page.name == "runtimes.md":
        require_tmux()  # its offline examples run the tmux runtime
    project, env = _sandbox(tmp_path)
    try:
        _run_blocks(page, project, env)
    finally:  # the tmux runtime's example leaves corral's private tmux server running
        socket = Path(env["CORRAL_HOME"]) / "tmux" / "default"
        if socket.exists():
            subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, check=False)


def _run_blocks(page: Path, project: Path, env: dict[str, str]) -> None:
    for block in (b for b in OFFLINE if b.page == page):
        for command in block.commands():
            status, needle = EXPECTED[_key(command)]
            done = _run(["bash", "-c", command], project, env, timeout=180)
            shown = f"{block.id}: {command}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
            assert done.returncode == status, shown
            assert needle in done.stdout + done.stderr, shown
            assert "Traceback" not in done.stderr, shown


SETTINGS = re.compile(r"(?:<!--\s*(?P<marker>[^>]*?)\s*-->\n)?```toml\n(?P<body>.*?)```", re.DOTALL)
TOML = [
    Block(page, text.count("\n", 0, m.start("body")), (m.group("marker") or "").strip(), m.group("body"))
    for page in PAGES
    for text in [page.read_text()]
    for m in SETTINGS.finditer(text)
]


def test_the_pages_have_settings_examples() -> None:
    assert len([b for b in TOML if not b.marker]) >= 10


@pytest.mark.parametrize(
    "block", [b for b in TOML if not b.marker.startswith("not corral settings: ")], ids=lambda b: b.id
)
def test_a_settings_example_is_valid_settings(block: Block, tmp_path: Path) -> None:
    project, env = _sandbox(tmp_path)
    config = Path(env["XDG_CONFIG_HOME"]) / "corral"
    config.mkdir(parents=True)
    (config / "settings.toml").write_text(block.body)
    done = _run(["corral", "doctor", "--json"], project, env)
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["settings"]["status"] == "ok", (block.id, checks["settings"])
    assert checks["definitions"]["status"] == "ok", (block.id, checks["definitions"])


DEFINITION = re.compile(r"```markdown\n(?P<body>---\n.*?)```", re.DOTALL)
DEFINITIONS = [
    (f"{page.name}:{text.count(chr(10), 0, m.start('body'))}", m.group("body"))
    for page in PAGES
    for text in [page.read_text()]
    for m in DEFINITION.finditer(text)
]


@pytest.mark.parametrize(("where", "body"), DEFINITIONS, ids=[w for w, _ in DEFINITIONS])
def test_a_definition_example_loads(where: str, body: str, tmp_path: Path) -> None:
    """An agent definition shown on a page loads as a user definition (no unknown field, no bad value)."""
    project, env = _sandbox(tmp_path)
    match = re.search(r"^name:\s*(\S+)", body, re.MULTILINE)
    assert match is not None, where
    agents = Path(env["XDG_CONFIG_HOME"]) / "corral" / "agents"
    agents.mkdir(parents=True)
    (agents / f"{match.group(1)}.md").write_text(body)
    done = _run(["corral", "agents", "definitions", "--json"], project, env)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed.get("invalid", []) == [], where
    [loaded] = [d for d in listed["definitions"] if d["name"] == match.group(1)]
    assert loaded.get("overrideSource", loaded.get("extensionSource", "")).startswith(str(agents)), loaded
