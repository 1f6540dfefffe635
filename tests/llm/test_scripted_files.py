"""Scripted model: where scripts are found, and how malformed ones are reported.

Every rule of the contract's "Where scripts are found" and "File format"
sections: lookup order, `..` and absolute names refused, YAML/YML/JSON, and
a one-line error naming the file, the place and the problem.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corral.llm import ModelInfo, ScriptedModel, ScriptError, find_script, list_script_names, load_script_file
from corral.trust import trust_project


def scripted(name: str, *, cwd: Path, environ: dict[str, str] | None = None) -> ScriptedModel:
    return ScriptedModel(ModelInfo("scripted", name, "scripted"), cwd=cwd, environ=environ or {})


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_lookup_order_env_then_project_then_bundled(tmp_path: Path) -> None:
    env_dir = tmp_path / "env-scripts"
    project = tmp_path / "project"
    nested = project / "a" / "b"
    nested.mkdir(parents=True)
    write(project / ".corral" / "scripts" / "hello.yaml", "steps:\n  - text: project\n")
    trust_project(project)
    bundled = find_script("hello", cwd=tmp_path, environ={})
    assert bundled.parent.name == "scripts" and bundled.parent.parent.name == "llm"
    assert (
        find_script("hello", cwd=nested, environ={})
        == (project / ".corral" / "scripts" / "hello.yaml").resolve()
    )
    write(env_dir / "hello.yml", "steps:\n  - text: env\n")
    assert find_script("hello", cwd=nested, environ={"CORRAL_SCRIPTS": str(env_dir)}) == env_dir / "hello.yml"


def test_nearest_scripts_directory_wins(tmp_path: Path) -> None:
    outer = write(tmp_path / ".corral" / "scripts" / "s.yaml", "steps: [{text: outer}]\n")
    inner_root = tmp_path / "inner"
    inner = write(inner_root / ".corral" / "scripts" / "s.json", json.dumps({"steps": [{"text": "inner"}]}))
    trust_project(tmp_path)
    trust_project(inner_root)
    assert find_script("s", cwd=inner_root, environ={}) == inner.resolve()
    assert find_script("s", cwd=tmp_path, environ={}) == outer.resolve()


def test_suffix_order_yaml_yml_json(tmp_path: Path) -> None:
    directory = tmp_path / ".corral" / "scripts"
    write(directory / "s.json", '{"steps": [{"text": "json"}]}')
    trust_project(tmp_path)
    assert find_script("s", cwd=tmp_path, environ={}).suffix == ".json"
    write(directory / "s.yml", "steps: [{text: yml}]\n")
    trust_project(tmp_path)
    assert find_script("s", cwd=tmp_path, environ={}).suffix == ".yml"
    write(directory / "s.yaml", "steps: [{text: yaml}]\n")
    trust_project(tmp_path)
    assert find_script("s", cwd=tmp_path, environ={}).suffix == ".yaml"


def test_names_may_use_subdirectories(tmp_path: Path) -> None:
    write(tmp_path / ".corral" / "scripts" / "team" / "lead.yaml", "steps: [{text: hi}]\n")
    trust_project(tmp_path)
    assert scripted("team/lead", cwd=tmp_path).load_script().steps[0].text == "hi"
    assert "team/lead" in list_script_names(tmp_path, environ={})


@pytest.mark.parametrize("name", ["../secret", "team/../../x", "/etc/passwd", "", "a\\b"])
def test_dotdot_and_absolute_names_are_refused(tmp_path: Path, name: str) -> None:
    write(tmp_path / "secret.yaml", "steps: [{text: leaked}]\n")
    with pytest.raises(ScriptError, match=r"relative path without '\.\.'"):
        scripted(name, cwd=tmp_path / "sub").load_script()


def test_an_untrusted_projects_scripts_are_never_used(tmp_path: Path) -> None:
    project = tmp_path / "project"
    script = write(project / ".corral" / "scripts" / "pwn.yaml", "steps: [{text: pwned}]\n")
    write(project / ".corral" / "scripts" / "hello.yaml", "steps: [{text: shadowed}]\n")
    with pytest.raises(ScriptError) as info:
        scripted("pwn", cwd=project).load_script()
    message = str(info.value)
    assert "is not trusted" in message and f"corral trust {project.resolve()}" in message
    assert "\n" not in message
    assert "pwn" not in list_script_names(project, environ={})
    assert scripted("hello", cwd=project).load_script().steps[0].text != "shadowed"  # the bundled one
    trust_project(project)
    assert scripted("pwn", cwd=project).load_script().steps[0].text == "pwned"
    script.write_text("steps: [{text: edited after trust}]\n")
    with pytest.raises(ScriptError, match="is not trusted"):
        scripted("pwn", cwd=project).load_script()


def test_missing_script_names_the_name_and_directories(tmp_path: Path) -> None:
    env_dir = tmp_path / "env"
    with pytest.raises(ScriptError) as info:
        scripted("nope", cwd=tmp_path, environ={"CORRAL_SCRIPTS": str(env_dir)}).load_script()
    message = str(info.value)
    assert "scripted/nope" in message and "nope.yaml" in message and str(env_dir) in message
    assert "bundled" in message and "\n" not in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("steps: []\n", "steps: List should have at least 1 item"),
        ("steps:\n  - {}\n", "steps[0]: a step needs text, thinking or tool_calls"),
        ("steps:\n  - tool_calls: []\n", "steps[0]: a step needs text, thinking or tool_calls"),
        ("steps:\n  - text: hi\n    colour: red\n", "steps[0]: unknown key 'colour'"),
        ("foo: 1\nsteps: [{text: a}]\n", "unknown key 'foo'"),
        ("on_exhausted: error\n", "steps: missing (required)"),
        ("steps:\n  - tool_calls:\n      - args: {}\n", "steps[0].tool_calls[0].name: missing"),
        ("steps:\n  - tool_calls:\n      - {name: read, args: [1]}\n", "steps[0].tool_calls[0].args"),
        (
            "steps:\n  - tool_calls:\n      - {name: read, argz: {}}\n",
            "steps[0].tool_calls[0]: unknown key 'argz'",
        ),
        ("steps:\n  - text: [1]\n", "steps[0].text: Input should be a valid string"),
        ("steps:\n  - {text: a, stop: halt}\n", "steps[0].stop"),
        ("steps:\n  - {stop: error, thinking: t}\n", "needs `text` (the error message)"),
        ("steps:\n  - {thinking: t, error_retryable: true}\n", "`error_retryable` needs `stop: error`"),
        ("steps:\n  - {text: a, delay_ms: -1}\n", "steps[0].delay_ms"),
        ("steps:\n  - {text: a, usage: {input: 1, tokens: 2}}\n", "steps[0].usage: unknown key 'tokens'"),
        ("steps:\n  - {text: a, expect: {last_user: x}}\n", "steps[0].expect: unknown key 'last_user'"),
        ("steps:\n  - text: '{{ nope.x }}'\n", "steps[0]: text: unknown template '{{ nope.x }}'"),
        ("steps:\n  - tool_calls: [{name: r, args: {p: '{{ env }}'}}]\n", "tool_calls[0].args.p: template"),
        ("steps: [{text: a}]\non_exhausted: loop\n", "on_exhausted"),
        ("steps: [{text: a}]\nagents:\n  x: []\n", "agents.x must be a non-empty list"),
        ("steps: [{text: a}]\nagents:\n  x: [{colour: red}]\n", "agents.x[0]: unknown key 'colour'"),
        ("steps: [text: [unclosed\n", "not valid YAML (line"),
        ("", "the script is empty"),
        ("- a\n- b\n", "top level must be a mapping"),
    ],
)
def test_malformed_scripts_name_file_place_and_problem(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path / ".corral" / "scripts" / "bad.yaml", text)
    trust_project(tmp_path)
    with pytest.raises(ScriptError) as info:
        scripted("bad", cwd=tmp_path).load_script()
    message = str(info.value)
    assert message.startswith(str(path.resolve()))
    assert fragment in message
    assert "\n" not in message
    assert info.value.path == path.resolve()


def test_malformed_json_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", '{"steps": [')
    with pytest.raises(ScriptError, match="not valid JSON") as info:
        load_script_file(path)
    assert str(path) in str(info.value)


def test_full_format_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path / "full.yaml",
        """
steps:
  - text: "Looking at the README first."
    thinking: "hmm"
    tool_calls:
      - name: read
        args: {path: README.md}
        id: call-1
    delay_ms: 200
    usage: {input: 1200, output: 40, cache_read: 0, cache_write: 0}
    expect:
      last_user_contains: "README"
      context_contains: ["Agent result", "agent=reviewer"]
      context_excludes: ["secret"]
      tools_include: [agent, read]
      tools_exclude: [write]
  - {text: "boom", stop: error, error_retryable: true}
on_exhausted: repeat_last
agents:
  reviewer-1:
    - text: "Reviewed."
  "*":
    - text: "Done."
""",
    )
    script = load_script_file(path)
    assert script.path == path
    assert script.on_exhausted == "repeat_last"
    first = script.steps[0]
    assert first.tool_calls is not None and first.tool_calls[0].id == "call-1"
    assert first.expect is not None and first.expect.tools_include == ["agent", "read"]
    assert script.select("reviewer-1")[0] == "agents.reviewer-1"
    assert script.select("someone")[0] == "agents.*"
    assert script.select(None)[0] == "steps"


def test_bundled_scripts_are_valid_and_packaged() -> None:
    names = list_script_names(None, environ={})
    assert {"hello", "demo"} <= set(names)
    for name in names:
        load_script_file(find_script(name, cwd=None, environ={}))


def test_a_script_file_is_parsed_once_per_text_each_caller_gets_its_own_copy_and_edits_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    parsed: list[str] = []
    real_safe_load = yaml.safe_load

    def counting(text: str) -> object:
        parsed.append(text)
        return real_safe_load(text)

    monkeypatch.setattr(yaml, "safe_load", counting)
    path = write(tmp_path / "swarm-cache.yaml", "steps:\n  - text: first\n")
    first, second = load_script_file(path), load_script_file(path)
    assert len(parsed) == 1  # the second agent's load did not parse again
    assert first is not second and first.steps[0] is not second.steps[0]
    assert first.steps[0].text == second.steps[0].text == "first"
    write(path, "steps:\n  - text: edited\n")
    assert load_script_file(path).steps[0].text == "edited" and len(parsed) == 2
