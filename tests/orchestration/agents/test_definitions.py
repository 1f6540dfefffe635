"""Agent definitions: strict frontmatter, three layers, project trust, and the bundled roster."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from corral.errors import UsageError
from corral.orchestration import (
    AgentDefinition,
    InvalidRequestError,
    Roster,
    ToolPolicy,
    bundled_definitions_dir,
    is_delegating,
    is_trusted,
    leaf_projection,
    load_roster,
    trust_project,
    trust_store_path,
    untrust_project,
)
from corral.trust import TrustStoreError

FIXTURES = Path(__file__).parent / "fixtures" / "defs"
BUNDLED = ("generalist", "implementer", "researcher", "reviewer", "scout")
READ_ONLY = {"read", "ls", "find", "grep"}
WRITE_TOOLS = {"write", "edit", "bash"}


@pytest.fixture(autouse=True)
def _private_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "xdg-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config / "corral"


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(bundled dir, project cwd, user dir), all empty."""
    bundled, cwd, user = tmp_path / "bundled", tmp_path / "project", tmp_path / "user"
    for path in (bundled, cwd, user):
        path.mkdir()
    return bundled, cwd, user


def write_def(directory: Path, filename: str, frontmatter: str, body: str = "") -> Path:
    path = directory / filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{frontmatter.strip()}\n---\n{body}", encoding="utf-8")
    return path


def load(layers: tuple[Path, Path, Path], *, trust: bool | None = True) -> Roster:
    bundled, cwd, user = layers
    return load_roster(cwd, user_dir=user, bundled_dir=bundled, trust=trust)


def project_dir(layers: tuple[Path, Path, Path]) -> Path:
    return layers[1] / ".corral" / "agents"


def the(roster: Roster, name: str) -> AgentDefinition:
    defn = roster.get(name)
    assert defn is not None, f"{name} missing from {roster.names}"
    return defn


# --- the bundled roster ------------------------------------------------------------------------


def test_reloading_parses_each_unchanged_file_once_and_an_edit_takes_effect_at_once(
    layers: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    parsed: list[str] = []
    real_load = yaml.load

    def counting_load(stream: str, Loader: type) -> object:
        parsed.append(stream)
        return real_load(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "load", counting_load)
    user = layers[2]
    path = write_def(user, "probe.md", "name: probe-cache-1\ndescription: first\ntools: [read]")
    for _ in range(20):  # a swarm of delegates reloads the roster each time
        assert the(load(layers), "probe-cache-1").description == "first"
    assert len([p for p in parsed if "probe-cache-1" in p]) == 1  # parsed once, not once per load
    path.write_text("---\nname: probe-cache-1\ndescription: second\ntools: [read]\n---\n", encoding="utf-8")
    assert the(load(layers), "probe-cache-1").description == "second"  # no stale parse


def test_bundled_five_load_cleanly(tmp_path: Path) -> None:
    roster = load_roster(tmp_path, user_dir=tmp_path / "no-user", trust=False)
    assert roster.issues == ()
    assert roster.names == BUNDLED
    for defn in roster.definitions:
        assert defn.enabled and defn.layer == "bundled"
        assert defn.path is not None and defn.path.parent == bundled_definitions_dir()
        assert defn.description and len(defn.body) > 200
        assert defn.system_prompt_mode == "append"
        assert defn.inherit_project_context is True
        assert defn.inherit_global_context is False


def test_bundled_tools_read_only_versus_write(tmp_path: Path) -> None:
    roster = load_roster(tmp_path, user_dir=tmp_path / "no-user", trust=False)
    for name in ("scout", "researcher", "reviewer"):
        tools = set(the(roster, name).tool_policy.tools or ())
        assert tools - {"agent"} == READ_ONLY, name
    for name in ("implementer", "generalist"):
        tools = set(the(roster, name).tool_policy.tools or ())
        assert {"read", "write", "edit", "bash"} <= tools, name


def test_bundled_delegation(tmp_path: Path) -> None:
    roster = load_roster(tmp_path, user_dir=tmp_path / "no-user", trust=False)
    assert {d.name: d.agents for d in roster.definitions if is_delegating(d)} == {
        "generalist": ("scout", "researcher"),
        "implementer": ("scout",),
        "reviewer": ("scout", "researcher"),
    }
    assert "agent" in (the(roster, "reviewer").tool_policy.tools or ())
    assert "No findings." in the(roster, "reviewer").body
    for name in BUNDLED:
        roster.resolve(name)


# --- file format -------------------------------------------------------------------------------


def test_every_field_is_parsed(layers: tuple[Path, Path, Path]) -> None:
    bundled, _, _ = layers
    shutil.copy(FIXTURES / "every-field.md", bundled / "every-field.md")
    write_def(bundled, "scout.md", "name: scout")
    roster = load(layers)
    assert roster.issues == ()
    defn = the(roster, "auditor")
    assert defn.description == "Uses every field a definition may set."
    assert defn.model == "scripted/auditor:high"
    assert defn.thinking == "low"
    assert defn.system_prompt_mode == "replace"
    assert defn.tool_policy == ToolPolicy(
        tools=("read", "grep", "agent"), exclude_tools=("bash",), no_tools=False, no_builtin_tools=True
    )
    assert defn.permission == {"bash": "ask"}
    assert defn.skill_policy.skills == ("checklists",)
    assert defn.skill_policy.choice == ("checklists",)
    assert defn.no_extensions is True and defn.extensions == ("./ext.ts",)
    assert defn.agents == ("scout",) and is_delegating(defn)
    assert defn.inherit_project_context is True and defn.inherit_global_context is False
    assert defn.runtime == "tmux"
    assert defn.body.splitlines() == [
        "You audit things.",
        "",
        f"@{bundled / 'checklist.md'}",
        "@alice stays literal",
    ]


def test_minimal_definition_defaults(layers: tuple[Path, Path, Path]) -> None:
    shutil.copy(FIXTURES / "minimal.md", layers[0] / "minimal.md")
    defn = the(load(layers), "minimal")
    assert defn == AgentDefinition(
        "minimal",
        layer="bundled",
        path=layers[0] / "minimal.md",
        sources={"bundled": layers[0] / "minimal.md"},
    )
    assert defn.enabled and defn.model is None and defn.thinking is None and defn.runtime is None
    assert defn.tool_policy.tools is None and defn.skill_policy.choice == "inherit"
    assert not is_delegating(defn)


def test_example_files_and_non_markdown_are_ignored_subdirectories_are_searched(
    layers: tuple[Path, Path, Path],
) -> None:
    bundled = layers[0]
    shutil.copy(FIXTURES / "pi-style.example.md", bundled / "pi-style.example.md")
    (bundled / "notes.txt").write_text("---\nname: not-a-definition\n---\n")
    write_def(bundled / "team" / "deeper", "whatever-file-name.md", "name: nested")
    roster = load(layers)
    assert roster.names == ("nested",)
    assert roster.issues == ()


def test_bom_crlf_and_flow_or_block_lists(layers: tuple[Path, Path, Path]) -> None:
    path = layers[0] / "crlf.md"
    path.write_bytes(
        "\ufeff---\r\nname: crlf\r\ntools: read, grep\r\nskills:\r\n  - a\r\n---\r\nBody\r\n".encode()
    )
    defn = the(load(layers), "crlf")
    assert defn.tool_policy.tools == ("read", "grep")
    assert defn.skill_policy.skills == ("a",)
    assert defn.body == "Body"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("false", "off"), ("off", "off"), ("max", "xhigh"), ("xhigh", "xhigh"), ("minimal", "minimal")],
)
def test_thinking_values(layers: tuple[Path, Path, Path], value: str, expected: str) -> None:
    write_def(layers[0], "t.md", f"name: t\nthinking: {value}")
    assert the(load(layers), "t").thinking == expected


def test_delegate_named_definition_inherits_context_by_default(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "d.md", "name: delegate")
    write_def(layers[0], "g.md", "name: g\ninheritProjectContext: true")
    roster = load(layers)
    assert the(roster, "delegate").inherit_project_context and the(roster, "delegate").inherit_global_context
    assert the(roster, "g").inherit_global_context is True


INVALID = [
    ("name: x\ncolour: blue", "unknown field(s) colour"),
    ("description: no name", "the required field name is missing"),
    ("name: ''", "name must not be empty"),
    ("name: [a]", "name must be a string"),
    ("name: off", "quote it"),
    ("name: x\ndescription: 3", "description must be a string"),
    ("name: x\nenabled: 'yes'", "enabled must be true or false"),
    ("name: x\nmodel: ''", "model must not be empty"),
    ("name: x\nmodel: gpt-5", "must look like provider/model"),
    ("name: x\nmodel: 5", "model must be a string"),
    (
        "name: x\nthinking: extreme",
        "thinking must be one of off, minimal, low, medium, high, xhigh, max or false",
    ),
    ("name: x\nthinking: true", "thinking must be one of"),
    ("name: x\nsystemPromptMode: prepend", "systemPromptMode must be one of append, replace"),
    ("name: x\nnoTools: 'no'", "noTools must be true or false"),
    ("name: x\nnoBuiltinTools: 1", "noBuiltinTools must be true or false"),
    ("name: x\ntools: 5", "tools must be a list of strings"),
    ("name: x\ntools: ['']", "tools must hold non-empty strings"),
    ("name: x\nexcludeTools: [1]", "excludeTools must hold non-empty strings"),
    ("name: x\npermission: [a]", "permission must be a mapping"),
    ("name: x\nnoSkills: maybe", "noSkills must be true or false"),
    ("name: x\ninheritSkills: 0", "inheritSkills must be true or false"),
    ("name: x\nskills: one", "skills must be inherit, none or a list of skill names"),
    ("name: x\nnoExtensions: 'true'", "noExtensions must be true or false"),
    ("name: x\nextensions: {a: 1}", "extensions must be a list of strings"),
    ("name: x\nagents: [scout, scout]", "agents names scout more than once"),
    ("name: x\nagents: ['']", "agents must hold non-empty strings"),
    ("name: x\nagents: scout", "agents must be a list of strings"),
    ("name: x\ninheritProjectContext: 'yes'", "inheritProjectContext must be true or false"),
    ("name: x\ninheritGlobalContext: []", "inheritGlobalContext must be true or false"),
    ("name: x\nruntime: docker", "runtime must be one of inprocess, tmux"),
    ("name: x\nmodel:", "model has no value"),
    ("name: x\nbudget: 5", "budget must be a mapping of agent_tokens"),
    ("name: x\nbudget: {tree_tokens: 5}", "budget.tree_tokens is not a budget key"),
    ("name: x\nbudget: {agent_tokens: -1}", "budget.agent_tokens: Input should be greater than 0"),
    ("name: x\nbudget: {agent_minutes: soon}", "budget.agent_minutes: Input should be a valid number"),
    ("name: x\nname: y", "duplicate key 'name'"),
    ("name: [unclosed", "the frontmatter is not valid YAML"),
    ("- name: x", "the frontmatter must be a YAML mapping"),
]


@pytest.mark.parametrize(("frontmatter", "problem"), INVALID)
def test_invalid_field_is_reported_and_the_rest_loads(
    layers: tuple[Path, Path, Path], frontmatter: str, problem: str
) -> None:
    bad = write_def(layers[2], "bad.md", frontmatter)
    write_def(layers[2], "good.md", "name: good")
    roster = load(layers)
    assert the(roster, "good").enabled
    assert len(roster.issues) == 1
    assert roster.issues[0].path == bad
    assert problem in roster.issues[0].problem
    assert str(bad) in str(roster.issues[0])


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"name: x\n", "must start with a `---` line"),
        (b"", "must start with a `---` line"),
        (b"\n---\nname: x\n---\n", "must start with a `---` line"),
        (b"---\nname: x\n", "the frontmatter is not closed"),
        (b"---\nname: caf\xe9\n---\n", "not valid UTF-8"),
    ],
)
def test_malformed_files_are_reported(layers: tuple[Path, Path, Path], content: bytes, problem: str) -> None:
    (layers[0] / "broken.md").write_bytes(content)
    write_def(layers[0], "good.md", "name: good")
    roster = load(layers)
    assert roster.names == ("good",)
    assert [(i.path.name, problem in i.problem) for i in roster.issues] == [("broken.md", True)]


def test_non_regular_definition_file_is_reported_without_blocking(layers: tuple[Path, Path, Path]) -> None:
    os.mkfifo(layers[0] / "pipe.md")
    write_def(layers[0], "good.md", "name: good")
    roster = load(layers)
    assert roster.names == ("good",)
    assert "not a regular file" in roster.issues[0].problem


def test_invalid_override_disables_rather_than_falls_back(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "scout.md", "name: scout\ntools: [read]")
    bad = write_def(layers[2], "scout.md", "name: scout\ntools: [read, write]\ncolour: red")
    roster = load(layers)
    scout = the(roster, "scout")
    assert not scout.enabled
    assert str(bad) in (scout.disabled_reason or "")
    assert roster.disabled_reasons() == {"scout": scout.disabled_reason}
    with pytest.raises(InvalidRequestError, match="Agent definition scout is disabled") as info:
        roster.resolve("scout")
    assert info.value.next_action and "Enable scout" in info.value.next_action


def test_duplicate_names_in_one_layer(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "a.md", "name: twin")
    write_def(layers[0], "b.md", "name: twin")
    write_def(layers[0], "c.md", "name: solo")
    write_def(layers[2], "solo-one.md", "name: solo")
    write_def(layers[2], "solo-two.md", "name: solo")
    roster = load(layers)
    assert roster.get("twin") is None
    assert not the(roster, "solo").enabled
    problems = sorted((i.path.name, i.problem) for i in roster.issues)
    assert [name for name, _ in problems] == ["b.md", "solo-two.md"]
    assert all("names must be unique within a layer" in problem for _, problem in problems)


def test_unknown_agents_reference_disables_the_definition(layers: tuple[Path, Path, Path]) -> None:
    path = write_def(layers[0], "lead.md", "name: boss\nagents: [ghost]")
    roster = load(layers)
    assert not the(roster, "boss").enabled
    assert [(i.path, "ghost" in i.problem) for i in roster.issues] == [(path, True)]


def test_bodymode_on_a_standalone_definition_is_reported(layers: tuple[Path, Path, Path]) -> None:
    path = write_def(layers[2], "x.md", "name: x\nbodyMode: append", "text")
    roster = load(layers)
    assert roster.get("x") is None
    assert roster.issues[0].path == path and "bodyMode" in roster.issues[0].problem


def test_enabled_false_is_listed_disabled(layers: tuple[Path, Path, Path]) -> None:
    path = write_def(layers[0], "idle.md", "name: idle\nenabled: false")
    roster = load(layers)
    assert roster.names == ("idle",)
    assert roster.enabled() == ()
    assert roster.disabled_reasons() == {"idle": f"disabled by `enabled: false` in {path}"}


# --- layering ---------------------------------------------------------------------------------


def test_user_overrides_project_overrides_bundled(layers: tuple[Path, Path, Path]) -> None:
    bundled, _, user = layers
    b = write_def(
        bundled, "scout.md", "name: scout\ndescription: bundled\ntools: [read, grep]\nthinking: low", "Base."
    )
    p = write_def(project_dir(layers), "s.md", "name: scout\ndescription: project\nmodel: scripted/p")
    u = write_def(user, "mine.md", "name: scout\ndescription: user\nthinking: high")
    roster = load(layers)
    scout = the(roster, "scout")
    assert roster.issues == ()
    assert (scout.description, scout.model, scout.thinking) == ("user", "scripted/p", "high")
    assert scout.tool_policy.tools == ("read", "grep")
    assert scout.body == "Base."
    assert (scout.layer, scout.path) == ("user", u)
    assert scout.sources == {"bundled": b, "project": p, "user": u}
    assert scout.metadata() == {
        "name": "scout",
        "extensionSource": str(b),
        "projectSource": str(p),
        "overrideSource": str(u),
        "description": "user",
        "model": "scripted/p",
        "thinking": "high",
        "tools": ["read", "grep"],
    }


def test_overlay_lists_replace_wholesale(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "a.md", "name: a\ntools: [read, grep, ls]\nskills: [x, y]")
    write_def(layers[2], "a.md", "name: a\ntools: [read]\nskills: []")
    defn = the(load(layers), "a")
    assert defn.tool_policy.tools == ("read",)
    assert defn.skill_policy.skills == ()


@pytest.mark.parametrize(
    ("overlay", "body", "expected"),
    [
        ("", "", "Lower."),
        ("", "Upper.", "Upper."),
        ("\nbodyMode: replace", "Upper.", "Upper."),
        ("\nbodyMode: append", "Upper.", "Lower.\n\nUpper."),
    ],
)
def test_overlay_body(layers: tuple[Path, Path, Path], overlay: str, body: str, expected: str) -> None:
    write_def(layers[0], "a.md", "name: a", "Lower.\n")
    write_def(layers[2], "a.md", f"name: a{overlay}", body)
    assert the(load(layers), "a").body == expected


def test_relative_body_refs_resolve_against_their_own_file(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "a.md", "name: a", "@./lower.md\n")
    write_def(
        layers[2] / "sub", "a.md", "name: a\nbodyMode: append", "  @../upper.md  \n@~/home.md\n@/abs.md"
    )
    body = the(load(layers), "a").body
    assert body.splitlines() == [
        f"@{layers[0] / 'lower.md'}",
        "",
        f"@{layers[2] / 'upper.md'}",
        "@~/home.md",
        "@/abs.md",
    ]


# --- project trust ----------------------------------------------------------------------------


def test_untrusted_project_definitions_are_listed_disabled(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "scout.md", "name: scout\ndescription: bundled")
    overlay = write_def(project_dir(layers), "scout.md", "name: scout\ndescription: project")
    write_def(project_dir(layers), "local.md", "name: local\ndescription: project only")
    roster = load(layers, trust=False)
    assert roster.project_trusted is False
    assert the(roster, "scout").description == "bundled" and the(roster, "scout").enabled
    local = the(roster, "local")
    assert not local.enabled and local.layer == "project"
    assert "is not trusted" in (local.disabled_reason or "") and "corral trust" in (
        local.disabled_reason or ""
    )
    assert [(i.path, i.problem.startswith("not applied: ")) for i in roster.issues] == [(overlay, True)]
    with pytest.raises(InvalidRequestError, match="not trusted"):
        roster.resolve("local")


def test_trusted_project_layer_is_active(layers: tuple[Path, Path, Path]) -> None:
    write_def(project_dir(layers), "local.md", "name: local")
    roster = load(layers, trust=True)
    assert roster.project_trusted and the(roster, "local").enabled and the(roster, "local").layer == "project"


def test_trust_store_decides_when_trust_is_not_given(
    layers: tuple[Path, Path, Path], _private_config: Path, tmp_path: Path
) -> None:
    write_def(project_dir(layers), "local.md", "name: local")
    assert not the(load(layers, trust=None), "local").enabled
    alias = tmp_path / "alias"
    alias.symlink_to(layers[1])
    assert trust_project(alias) == Path(os.path.realpath(layers[1]))
    assert is_trusted(layers[1]) and is_trusted(alias)
    assert the(load(layers, trust=None), "local").enabled

    store = trust_store_path()
    assert store == _private_config / "trusted-projects.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    data = json.loads(store.read_text())
    assert data["version"] == 1 and list(data["projects"]) == [os.path.realpath(layers[1])]

    assert untrust_project(layers[1]) is True
    assert untrust_project(layers[1]) is False
    assert not the(load(layers, trust=None), "local").enabled


def test_trusting_a_missing_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        trust_project(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        trust_project(tmp_path / "file")


@pytest.mark.parametrize("content", ["{not json", "[]", '{"version": 2, "projects": {}}', '{"version": 1}'])
def test_malformed_trust_store_fails_closed(layers: tuple[Path, Path, Path], content: str) -> None:
    store = trust_store_path()
    store.parent.mkdir(parents=True)
    store.write_text(content)
    with pytest.raises(TrustStoreError, match="trust store"):
        is_trusted(layers[1])
    with pytest.raises(TrustStoreError):
        trust_project(layers[1])
    assert store.read_text() == content
    write_def(project_dir(layers), "local.md", "name: local")
    roster = load(layers, trust=None)
    assert not the(roster, "local").enabled
    assert roster.issues[0].path == store


# --- delegation policy and resolution ---------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "delegating"),
    [
        ("", True),
        ("\ntools: [read]", True),
        ("\nexcludeTools: [agent]", False),
        ("\nnoTools: true", False),
        ("\nnoTools: true\ntools: [agent]", True),
        ("\ntools: []", False),
    ],
)
def test_delegation_inference(layers: tuple[Path, Path, Path], extra: str, delegating: bool) -> None:
    write_def(layers[0], "kid.md", "name: kid")
    write_def(layers[0], "boss.md", f"name: boss\nagents: [kid]{extra}")
    assert is_delegating(the(load(layers), "boss")) is delegating


def test_explicit_tools_gain_the_agent_sentinel_only_when_delegating(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "kid.md", "name: kid\ntools: [read]")
    write_def(layers[0], "boss.md", "name: boss\nagents: [kid]\ntools: [read]")
    roster = load(layers)
    assert the(roster, "boss").tool_policy.tools == ("read", "agent")
    assert the(roster, "kid").tool_policy.tools == ("read",)


def test_leaf_projection(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "kid.md", "name: kid")
    write_def(layers[0], "boss.md", "name: boss\nagents: [kid]\ntools: [read]")
    write_def(layers[0], "only.md", "name: only\nagents: [kid]\ntools: [agent]")
    roster = load(layers)
    boss = leaf_projection(the(roster, "boss"))
    assert boss.agents == () and boss.tool_policy.tools == ("read",) and not is_delegating(boss)
    only = leaf_projection(the(roster, "only"))
    assert only.tool_policy.tools == () and only.tool_policy.no_tools is True


def test_resolve_checks_existence_allowlist_and_children(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "kid.md", "name: kid\nenabled: false")
    write_def(layers[0], "boss.md", "name: boss\nagents: [kid]")
    write_def(layers[0], "solo.md", "name: solo")
    roster = load(layers)
    with pytest.raises(InvalidRequestError, match=r"^Agent definition nobody was not found$"):
        roster.resolve("nobody")
    with pytest.raises(InvalidRequestError, match="is not allowed for this delegating agent"):
        roster.resolve("solo", allowed=["kid"])
    with pytest.raises(InvalidRequestError, match="may delegate to kid, which is disabled"):
        roster.resolve("boss")
    assert roster.resolve("solo", allowed=["solo"]).name == "solo"


def test_runtime_field(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "a.md", "name: a\nruntime: inprocess")
    defn = the(load(layers), "a")
    assert defn.runtime == "inprocess"
    assert defn.metadata()["runtime"] == "inprocess"


def test_harness_and_command_choose_what_runs_the_agent(layers: tuple[Path, Path, Path]) -> None:
    write_def(layers[0], "mine.md", "name: mine\nharness: acp\ncommand: [my-agent, --stdio, --stdio]")
    write_def(layers[0], "gem.md", "name: gem\nharness: gemini")
    roster = load(layers)
    assert roster.issues == ()
    mine, gem = the(roster, "mine"), the(roster, "gem")
    assert (mine.harness, mine.command, mine.enabled) == ("acp", ("my-agent", "--stdio", "--stdio"), True)
    assert mine.metadata()["harness"] == "acp" and mine.metadata()["command"] == [
        "my-agent",
        "--stdio",
        "--stdio",
    ]
    assert (gem.harness, gem.command, gem.enabled) == ("gemini", (), True)
    assert gem.metadata()["harness"] == "gemini" and "command" not in gem.metadata()


@pytest.mark.parametrize(
    ("frontmatter", "reason"),
    [
        (
            "harness: claude",
            "its harness 'claude' is unknown; use one of corral, acp, claude-code, codex, opencode, gemini, goose",
        ),
        ("harness: acp", "harness acp needs command"),
        ("command: [my-agent]", "command is only for an ACP harness"),
        ("harness: goose\nagents: [x]", "an ACP agent cannot delegate"),
    ],
)
def test_a_harness_that_cannot_run_disables_the_definition(
    layers: tuple[Path, Path, Path], frontmatter: str, reason: str
) -> None:
    write_def(layers[0], "x.md", "name: x")
    write_def(layers[0], "odd.md", f"name: odd\n{frontmatter}")
    defn = the(load(layers), "odd")
    assert not defn.enabled and reason in (defn.disabled_reason or "")


def test_a_command_must_be_a_list_of_strings(layers: tuple[Path, Path, Path]) -> None:
    path = write_def(layers[0], "odd.md", "name: odd\nharness: acp\ncommand: my-agent --stdio")
    roster = load(layers)
    assert [(i.path, "command must be a non-empty list" in i.problem) for i in roster.issues] == [
        (path, True)
    ]


@pytest.mark.parametrize(
    ("fields", "choice"),
    [
        ("", "inherit"),
        ("skills: inherit", "inherit"),
        ("skills: none", "none"),
        ("skills: [pdf, review]", ("pdf", "review")),
        ("skills: []", ()),
        ("noSkills: true\nskills: [pdf]", "none"),  # Pi's noSkills wins
        ("inheritSkills: false", "none"),
        ("inheritSkills: false\nskills: [pdf]", ("pdf",)),
        ("inheritSkills: true", "inherit"),
    ],
)
def test_skills_say_inherit_none_or_names(
    layers: tuple[Path, Path, Path], fields: str, choice: object
) -> None:
    write_def(layers[0], "a.md", f"name: a\n{fields}")
    defn = the(load(layers), "a")
    assert defn.skill_policy.choice == choice


def test_a_claude_code_skills_list_maps_to_names(layers: tuple[Path, Path, Path], tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_def(home / ".claude" / "agents", "r.md", "name: r\ndescription: d\nskills: pdf, review")
    roster = load_roster(tmp_path, user_dir=layers[2], bundled_dir=layers[0], trust=False, home=home)
    defn = the(roster, "r")
    assert defn.format == "claude" and defn.skill_policy.choice == ("pdf", "review")
    assert defn.metadata()["skills"] == ["pdf", "review"]
