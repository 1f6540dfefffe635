"""RPC fuzz: no input line ends `corral run --mode rpc`, and every output line stays strict JSON.

One process serves the whole run (as a client's would). Hypothesis sends
random bytes, random text, deep nesting, huge integers and JSON commands of
every type with random fields and ids; after each example a `get_state`
probe must be answered, and every line read on the way must be UTF-8 JSON
without `NaN`/`Infinity` (checked by `RpcProcess`). `bash` and `cycle_model`
are left out: one would run random shell text, the other could pick a bundled
demo script that edits files; their shapes are tested in `test_rpc.py`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e._rpc_client import RpcProcess
from tests.e2e.conftest import Env

COMMANDS = [
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "get_state",
    "get_messages",
    "get_entries",
    "get_tree",
    "get_session_stats",
    "get_last_assistant_text",
    "get_commands",
    "set_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "abort_bash",
    "new_session",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "set_session_name",
    "export_html",
    "extension_ui_response",
    "no_such_command",
]
FIELDS = [
    "message",
    "images",
    "streamingBehavior",
    "provider",
    "modelId",
    "level",
    "mode",
    "enabled",
    "customInstructions",
    "entryId",
    "sessionPath",
    "parentSession",
    "name",
    "since",
    "outputPath",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        ["off", "high", "xhigh", "all", "one-at-a-time", "steer", "followUp", "scripted", "fuzz"]
    ),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
ids = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def commands(draw: st.DrawFn) -> bytes:
    command: dict[str, object] = {"type": draw(st.sampled_from(COMMANDS))}
    if draw(st.booleans()):
        command["id"] = draw(ids)
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=4, unique=True)):
        command[field] = draw(values)
    if command["type"] == "prompt" and draw(st.booleans()):
        command["message"] = draw(st.text(min_size=1, max_size=30))
    text = json.dumps(command, ensure_ascii=draw(st.booleans()))  # NaN/Infinity included on purpose
    return text.encode("utf-8", "surrogatepass")


def _deep(n: int) -> bytes:
    return b'{"type": "get_state", "x": ' + b"[" * n + b"]" * n + b"}"


lines = st.one_of(
    commands(),
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.integers(min_value=1, max_value=200_000).map(lambda n: b"[" * n),
    st.integers(min_value=500, max_value=5000).map(_deep),
    st.integers(min_value=4000, max_value=6000).map(
        lambda n: b'{"type": "get_state", "id": ' + b"9" * n + b"}"
    ),
    st.sampled_from([b"NaN", b"-Infinity", b'{"type": "get_state", "id": 1e999}', b"\r", b"\x00", b"{}"]),
)


@pytest.fixture(scope="module")
def fuzz_rpc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RpcProcess]:
    root = tmp_path_factory.mktemp("rpc-fuzz")
    project, scripts = root / "project", root / "scripts"
    project.mkdir()
    scripts.mkdir()
    (scripts / "fuzz.yaml").write_text("steps:\n  - text: fuzzed\non_exhausted: repeat_last\n")
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CORRAL_", "XDG_"))
    }
    base.update(
        CORRAL_HOME=str(root / "home"),
        CORRAL_SCRIPTS=str(scripts),
        XDG_CONFIG_HOME=str(root / "config"),
        XDG_DATA_HOME=str(root / "data"),
        HOME=str(root / "userhome"),
    )
    env = Env(root, project, scripts, root / "home", root / "config", base)
    process = RpcProcess(env, "--model", "scripted/fuzz", "--surfaces", "")
    try:
        yield process
        assert process.close(timeout=60) == 0, process.stderr()
        assert "Traceback" not in process.stderr(), process.stderr()
    finally:
        process.kill()


_probes = iter(range(10**9))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(line=lines)
def test_no_line_ends_the_rpc_process(fuzz_rpc: RpcProcess, line: bytes) -> None:
    fuzz_rpc.send_raw(line + b"\n")
    probe = f"probe-{next(_probes)}"
    fuzz_rpc.send({"type": "get_state", "id": probe})
    state = fuzz_rpc.read_until(lambda o: o.get("type") == "response" and o.get("id") == probe)
    assert state["success"] is True, state
    assert fuzz_rpc.proc.poll() is None


def test_the_fuzzed_session_file_still_parses(fuzz_rpc: RpcProcess) -> None:
    state = fuzz_rpc.ok({"type": "get_state"})
    path = state["sessionFile"]
    if path is not None and Path(path).exists():
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            json.loads(line)
