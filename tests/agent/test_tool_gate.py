"""The tool gate (`ToolGate`): asked before each tool call, told after it ran; a denied call is an error
result carrying the reason and the agent goes on; `ask` needs an approver, and without one is denied."""

from __future__ import annotations

import asyncio

from corral import _tracing
from corral._tracing._builtin import MemorySink
from corral.agent import ToolCheck, ToolResult, ToolVerdict
from corral.llm import ToolResultMessage

from .helpers import EchoTool, GateTool, Harness, PlannedModel, Reply, wait


class Gate:
    """Answers `verdicts` by tool argument `text` (default allow); records what it saw."""

    def __init__(self, verdicts: dict[str, ToolVerdict] | None = None, *, after: str | None = None) -> None:
        self.verdicts = verdicts or {}
        self.after = after
        self.checks: list[ToolCheck] = []
        self.results: list[str] = []

    async def before_tool(self, check: ToolCheck) -> ToolVerdict:
        self.checks.append(check)
        return self.verdicts.get(str(check.arguments.get("text")), ToolVerdict("allow"))

    async def after_tool(self, check: ToolCheck, result: ToolResult) -> str | None:
        self.results.append(result.content[0].text)  # type: ignore[union-attr]
        return self.after


def _results(agent: object) -> list[ToolResultMessage]:
    return [m for m in agent.messages if isinstance(m, ToolResultMessage)]  # type: ignore[attr-defined]


def _text(message: ToolResultMessage) -> str:
    return message.text


async def test_a_denied_call_is_an_error_result_with_the_reason_and_the_agent_goes_on(harness: Harness) -> None:
    model = PlannedModel(
        [Reply("", calls=[("echo", {"text": "bad"}), ("echo", {"text": "good"})]), Reply("carried on")]
    )
    agent, rec = harness.agent(model, tools=[EchoTool()])
    gate = Gate({"bad": ToolVerdict("deny", "the rule `echo(bad)` denies it", "a note")})
    agent.set_tool_gate(gate)
    await wait(agent.prompt("go"))
    denied, ran = _results(agent)
    assert denied.is_error and _text(denied) == "echo was not run: the rule `echo(bad)` denies it\n\na note"
    assert not ran.is_error and _text(ran) == "good"
    assert agent.last_assistant_text() == "carried on"
    # the model saw the reason; the gate saw the call with the agent's session and cwd; only the
    # call that ran was reported after
    assert "echo was not run: the rule `echo(bad)` denies it\n\na note" in model.requests[1].texts()
    check = gate.checks[0]
    assert check.tool_name == "echo" and check.arguments == {"text": "bad"}
    assert check.session_id == agent.session.session_id and check.cwd == harness.cwd
    assert check.transcript_path == agent.session.path
    assert gate.results == ["good"]
    ends = rec.of("tool_execution_end")
    assert [e.is_error for e in ends] == [True, False]


async def test_after_tool_context_is_added_to_the_result(harness: Harness) -> None:
    model = PlannedModel([Reply("", calls=[("echo", {"text": "x"})]), Reply("done")])
    agent, _ = harness.agent(model, tools=[EchoTool()])
    agent.set_tool_gate(Gate({"x": ToolVerdict("allow", "", "before")}, after="after"))
    await wait(agent.prompt("go"))
    [result] = _results(agent)
    assert [block.text for block in result.content] == ["x", "\n\nbefore\n\nafter"]  # type: ignore[union-attr]
    assert result.details == {"echoed": "x"}


async def test_ask_without_an_approver_is_denied_at_once(harness: Harness) -> None:
    model = PlannedModel([Reply("", calls=[("echo", {"text": "push"})]), Reply("ok")])
    agent, _ = harness.agent(model, tools=[EchoTool()])
    agent.set_tool_gate(Gate({"push": ToolVerdict("ask", "the permission rule `echo(push)` asks for approval")}))
    await wait(agent.prompt("go"))
    [result] = _results(agent)
    assert result.is_error
    assert _text(result) == (
        "echo was not run: the permission rule `echo(push)` asks for approval, and no one can approve it "
        "here (no owner or person to ask), so it was denied"
    )


async def test_an_approver_answers_ask(harness: Harness) -> None:
    model = PlannedModel(
        [Reply("", calls=[("echo", {"text": "yes"}), ("echo", {"text": "no"})]), Reply("ok")]
    )
    agent, _ = harness.agent(model, tools=[EchoTool()])
    agent.set_tool_gate(Gate({"yes": ToolVerdict("ask", "asks"), "no": ToolVerdict("ask", "asks")}))
    asked: list[str] = []

    async def approve(check: ToolCheck, verdict: ToolVerdict) -> ToolVerdict:
        text = str(check.arguments["text"])
        asked.append(f"{text}: {verdict.reason}")
        return ToolVerdict("allow") if text == "yes" else ToolVerdict("deny", "the owner said no")

    agent.set_tool_approver(approve)
    await wait(agent.prompt("go"))
    yes, no = _results(agent)
    assert not yes.is_error and _text(yes) == "yes"
    assert no.is_error and _text(no) == "echo was not run: the owner said no"
    assert asked == ["yes: asks", "no: asks"]


async def test_a_gate_that_raises_denies_the_call(harness: Harness) -> None:
    class Broken:
        async def before_tool(self, check: ToolCheck) -> ToolVerdict:
            raise RuntimeError("rules unreadable")

        async def after_tool(self, check: ToolCheck, result: ToolResult) -> str | None:
            return None

    model = PlannedModel([Reply("", calls=[("echo", {"text": "x"})]), Reply("ok")])
    agent, _ = harness.agent(model, tools=[EchoTool()])
    agent.set_tool_gate(Broken())
    await wait(agent.prompt("go"))
    [result] = _results(agent)
    assert result.is_error and _text(result) == "echo was not run: the tool policy could not be checked (rules unreadable)"


async def test_abort_while_the_gate_decides_ends_the_call_as_aborted(harness: Harness) -> None:
    started = asyncio.Event()

    class Slow:
        async def before_tool(self, check: ToolCheck) -> ToolVerdict:
            started.set()
            await asyncio.Event().wait()
            return ToolVerdict("allow")

        async def after_tool(self, check: ToolCheck, result: ToolResult) -> str | None:
            return None

    gate_tool = GateTool()
    model = PlannedModel([Reply("", calls=[("gate", {})])])
    agent, _ = harness.agent(model, tools=[gate_tool])
    agent.set_tool_gate(Slow())
    run = asyncio.ensure_future(agent.prompt("go"))
    await wait(started.wait())
    await agent.abort()
    await wait(run)
    [result] = _results(agent)
    assert result.is_error and _text(result) == "Operation aborted"
    assert not gate_tool.started.is_set()


async def test_a_denied_call_s_span_records_the_decision(harness: Harness) -> None:
    sink = MemorySink()
    _tracing.setup(sinks=(sink,))
    try:
        model = PlannedModel([Reply("", calls=[("echo", {"text": "bad"})]), Reply("ok")])
        agent, _ = harness.agent(model, tools=[EchoTool()])
        agent.set_tool_gate(Gate({"bad": ToolVerdict("deny", "no")}))
        await wait(agent.prompt("go"))
    finally:
        _tracing.shutdown()
    [span] = [s for s in sink.spans if s.name == "execute_tool echo"]
    assert span.attributes["corral.tool.decision"] == "deny"
    assert span.error == "no"
