"""A repository's `.corral/agents` that links to a large directory outside the project, through the
real `corral` command (issue 27, item 14): nothing is loaded from it, the walk does not go in, and the
link is named once on stderr however often the roster is read in the process."""

from __future__ import annotations

import json

from .conftest import Env, RunCorral

LIST_TWICE = """
steps:
  - text: "Roster."
    tool_calls:
      - {name: agent, args: {action: list}}
  - text: "Again."
    tool_calls:
      - {name: agent, args: {action: list}}
  - text: "Done."
"""


def test_agents_dir_linked_to_a_large_outside_directory(corral: RunCorral, cli_env: Env) -> None:
    outside = cli_env.root / "usr"
    for folder in range(30):
        sub = outside / f"share{folder:02d}"
        sub.mkdir(parents=True)
        for n in range(20):
            (sub / f"d{n}.md").write_text(f"---\nname: planted{folder}x{n}\n---\nbody\n")
        (sub / "README.md").write_text("not a definition\n")
    (cli_env.project / ".corral").mkdir()
    link = cli_env.project / ".corral" / "agents"
    link.symlink_to(outside)
    assert corral("trust").returncode == 0

    listed = corral("agents", "definitions", "--json")
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    names = json.dumps(data)
    assert "planted" not in names
    assert [item["path"] for item in data["invalid"]] == [str(link)]
    assert f"outside {cli_env.project}" in data["invalid"][0]["problem"]

    cli_env.script("lead", LIST_TWICE)
    run = corral("run", "--mode", "json", "--model", "scripted/lead", "-p", "go")
    assert run.returncode == 0, run.stderr
    assert "planted" not in run.stdout
    named = [
        line
        for line in run.stderr.splitlines()
        if line.startswith(f"corral: warning: not reading the agent definition path {link}:")
    ]
    assert len(named) == 1, run.stderr
