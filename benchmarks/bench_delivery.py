"""Grouped delivery: a lead synthesizing ten reports, immediate/full next to all-settled/compact.

An offline replay, with scripted models, of the seed's "Measured delivery
replay" (`spec/teams-detail.md` §14.3): two fresh lead sessions synthesize the
same ten supplied reports. Ten `read-review` agents each answer their one model
request with `report_and_exit` and a fixed Markdown report of about 1.5–2 KB
(`_delivery_corpus.py`) holding one finding and its control, the pair `F<i>/C<i>`; F9's report
also says its assignment was interrupted (`F9_DETAIL`, only in the report body).

- **immediate/full**: the lead calls `spawn_swarm_agents` without
  `completion_group`; each report reaches it as one `corral-team-report`
  message carrying the full report, delivered as it is stored; the swarm's
  reports wake the lead once, with the last of them (docs/teams.md), so the
  lead synthesizes in the request that wake starts.
- **all-settled/compact**: the same call with `completion_group: {delivery:
  "all-settled"}`; one `corral-team-group` wake carries the compact index. The
  scripted lead then reads F9's full report with the `read` tool, by the
  Markdown path the index gives (the harness takes the path from the index the
  lead was shown and hands it to the script as `{{ env.CORRAL_BENCH_F9_REPORT }}`).

In both, the lead then calls the harness tool `submit_synthesis` (which
refuses a synthesis missing any pair, `acceptance: pending` or F9's exact
detail) and ends with one line. The synthesis step carries `expect:
context_contains` for all ten pairs and F9's detail, so a lead that was not
shown one of them fails the run. Both leads have the same tools (the teams
surface, `read`, `submit_synthesis`), prompt, settings (no retries, no
compaction) and model.

**Ordering.** The lead spawns with a real tool call. Each agent's model is
gated (a wrapper around its `stream`) until the harness releases it: none
before the lead's spawning turn has ended, then one at a time, each once the
previous agent's run was finalized (report delivered, or journaled in the
group) and the lead was idle again. Real agents finish minutes apart; released
together, zero-latency agents would report within one lead request and
share it as steering, so the request counts would depend on timing. The
synthesis phase, which the seed measured, starts at the first release;
figures are given for that phase and for the whole session (spawning turn
included).

**Counts**, per mode, from the lead's session file: wakes (`corral-team-report`
plus `corral-team-group` entries), model requests (assistant messages), input
and output tokens (the sum of each lead request's reported `usage`; the scripted
model reports an *estimate*: characters / 4 of the system prompt and the
messages, tool definitions not counted; the harness recomputes it from each
request it hands the model and checks they agree), full-report retrievals
(`read` calls on a report file and `check_teammate` calls), elapsed time (first
release → the lead's `agent_settled` after its synthesis, which includes the
ten agents' runs one after another; zero-latency models, so this is corral's
own time, not a provider's) and the lead's busy time (its runs, start to end).
When `tiktoken` is importable and an encoding is available without a download,
the requests are also counted with it (`o200k_base`); nothing is installed or
fetched.

Prints one JSON object (both modes and the ratios) and a Markdown table to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import environment
from _delivery_corpus import F9_DETAIL, PAIRS, REPORTS, pair, report_markdown, report_step
from _orch import data_root

ENV_F9 = "CORRAL_BENCH_F9_REPORT"
WAIT_S = 60.0
REPORT_TYPE = "corral-team-report"
GROUP_TYPE = "corral-team-group"
GROUP_INSTRUCTIONS = "\n\nCompletion group index ("
MODES = ("immediate", "all-settled")

# --- the lead's script --------------------------------------------------------------------------------

ASSIGNMENT = (
    "Spawn ten read-review agents r1..r10, one per area, and synthesize their reports: list every "
    "finding/control pair F1/C1..F10/C10, keep acceptance pending, and carry F9's exact "
    "interrupted-assignment reason. Submit the synthesis with submit_synthesis."
)
SYNTHESIS = (
    "Synthesis of ten read-review reports (acceptance: pending for every finding; claims, not verified).\n"
    + "\n".join(f"- {pair(i)}: {REPORTS[i - 1]['summary']}" for i in range(1, len(REPORTS) + 1))
    + f"\n- F9 caveat: {F9_DETAIL}"
)


def _swarm_call(delivery: str | None) -> dict[str, Any]:
    args: dict[str, Any] = {
        "defaults": {"model_slot": "read-review"},
        "agents": [
            {
                "name": f"r{i}",
                "prompt": (
                    f"Review {spec['area'].lower()} ({', '.join(spec['files'][:2])}). Report one finding "
                    f"with the stable id F{i}, its control C{i}, evidence and the sources you inspected."
                ),
            }
            for i, spec in enumerate(REPORTS, start=1)
        ],
    }
    if delivery is not None:
        args = {"completion_group": {"delivery": delivery}, **args}
    return {"name": "spawn_swarm_agents", "args": args}


def lead_steps(mode: str) -> list[dict[str, Any]]:
    """The lead's steps: spawn, wait, then the mode's synthesis (see the module docstring)."""
    spawn: list[dict[str, Any]] = [
        {"tool_calls": [_swarm_call(None if mode == "immediate" else mode)]},
        {"text": "Spawned ten read agents; I will synthesize once their reports are in."},
    ]
    submit: dict[str, Any] = {
        "text": "Submitting the synthesis.",
        "tool_calls": [{"name": "submit_synthesis", "args": {"synthesis": SYNTHESIS}}],
        "expect": {"context_contains": [*PAIRS, F9_DETAIL]},
    }
    final: dict[str, Any] = {
        "text": "Submitted: ten finding/control pairs, acceptance pending, F9's interruption noted."
    }
    if mode == "immediate":
        return [*spawn, submit, final]
    read: dict[str, Any] = {
        "text": "All ten settled. F9 was interrupted; reading its full report for the exact reason.",
        "tool_calls": [{"name": "read", "args": {"path": "{{ env." + ENV_F9 + " }}"}}],
        "expect": {"context_contains": PAIRS},
    }
    return [*spawn, read, submit, final]


def script(mode: str) -> dict[str, Any]:
    """The whole script: the lead's steps and one report step per agent."""
    return {
        "steps": lead_steps(mode),
        "on_exhausted": "error",
        "agents": {f"r{i}": [report_step(i)] for i in range(1, len(REPORTS) + 1)},
    }


# --- the harness ---------------------------------------------------------------------------------------


def _submit_tool(submitted: list[str]) -> Any:
    from corral.agent import AgentTool, ToolError, ToolResult, ToolUpdate

    class SubmitSynthesis(AgentTool):
        """Harness tool: accept a synthesis only with every pair, pending acceptance and F9's detail."""

        name = "submit_synthesis"
        label = "submit synthesis"
        description = "Submit the final synthesis of the team's reports."
        parameters: dict[str, Any] = {  # noqa: RUF012
            "type": "object",
            "properties": {"synthesis": {"type": "string"}},
            "required": ["synthesis"],
        }

        async def execute(
            self, call_id: str, params: dict[str, Any], on_update: ToolUpdate | None = None
        ) -> ToolResult:
            text = str(params.get("synthesis", ""))
            missing = [p for p in PAIRS if p not in text]
            if "acceptance: pending" not in text:
                missing.append("acceptance: pending")
            if F9_DETAIL not in text:
                missing.append("F9's interrupted-assignment detail")
            if missing:
                raise ToolError(f"The synthesis is missing: {', '.join(missing)}.")
            submitted.append(text)
            return ToolResult.text("Synthesis recorded.")

    return SubmitSynthesis()


def _request_pieces(context: Any) -> list[str]:
    """The texts of one request that the scripted model's estimate counts (system prompt, messages)."""
    from corral.llm import ImageContent, TextContent, ThinkingContent, ToolCall

    pieces = [context.system_prompt]
    for message in context.messages:
        content = getattr(message, "content", None)
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, TextContent):
                    pieces.append(block.text)
                elif isinstance(block, ThinkingContent):
                    pieces.append(block.thinking)
                elif isinstance(block, ToolCall):
                    pieces.append(block.name + json.dumps(block.arguments, ensure_ascii=False))
                elif isinstance(block, ImageContent):
                    pieces.append("x" * 4800)
        for name in ("summary", "command", "output"):
            value = getattr(message, name, None)
            if isinstance(value, str):
                pieces.append(value)
    return pieces


def tiktoken_encoder() -> tuple[Callable[[str], int] | None, str]:
    """`(count, note)`: a token counter when `tiktoken` and a cached encoding are at hand, else `None`.

    Downloads are refused (the loader's fetch is replaced for the attempt), so this never
    touches the network and installs nothing.
    """
    try:
        import tiktoken
        import tiktoken.load as loader
    except ImportError:
        return None, "tiktoken is not importable"

    def offline(blobpath: str) -> bytes:
        raise OSError(f"not cached offline: {blobpath}")

    fetch = loader.read_file
    loader.read_file = offline
    try:
        encoding = tiktoken.get_encoding("o200k_base")
    except Exception as exc:
        return (
            None,
            f"tiktoken {tiktoken.__version__} is importable, but o200k_base is not available offline ({exc})",
        )
    finally:
        loader.read_file = fetch
    return (lambda text: len(encoding.encode(text, disallowed_special=()))), "tiktoken o200k_base"


class _Run:
    """One mode's lead, host and probes."""

    def __init__(self, root: Path, mode: str) -> None:
        self.root = root
        self.mode = mode
        self.gate = asyncio.Event()  # set at the first release: the synthesis phase begins
        self.release = {f"r{i}": asyncio.Event() for i in range(1, len(REPORTS) + 1)}
        self.done = asyncio.Event()
        self.submitted: list[str] = []
        self.requests: list[tuple[bool, list[str]]] = []  # (after the gate?, pieces)
        self.errors: list[BaseException] = []
        self.f9_path: str | None = None
        self.busy_s = 0.0
        self._run_began: float | None = None

    async def start(self) -> None:
        from corral.agent import AgentSession
        from corral.agent.tools import ReadTool
        from corral.lead._host import ComposedHost
        from corral.llm import ModelRegistry
        from corral.orchestration import Repositories, load_roster
        from corral.session import SessionManager
        from corral.settings import CompactionSettings, RetrySettings, Settings

        root = self.root
        work = root / "work"
        settings = Settings(compaction=CompactionSettings(enabled=False), retry=RetrySettings(enabled=False))
        registry = ModelRegistry(settings, cwd=work)
        model = registry.create_model(registry.resolve("scripted/bench"), cwd=work)
        self._record_requests(model)
        session = SessionManager.create(work, sessions_root=root / "sessions")
        self.lead = AgentSession(
            session=session,
            model=model,
            thinking_level="off",
            tools=[ReadTool(work), _submit_tool(self.submitted)],
            cwd=work,
            settings=settings,
        )
        self.host = ComposedHost(
            repositories=Repositories.open(root / "home" / "corral.db"),
            registry=registry,
            settings=settings,
            sessions_root=root / "sessions",
            roster_loader=lambda cwd: load_roster(cwd, user_dir=root / "none", trust=False),
        )
        self.host.on_background_error = self.errors.append
        self.caller = await self.host.attach_lead(self.lead, surfaces=("teams",))
        self._gate_children(registry)
        self.lead.subscribe(self._on_event)

    def _record_requests(self, model: Any) -> None:
        stream = model.stream

        def recorded(context: Any, options: Any) -> Any:
            self.requests.append((self.gate.is_set(), _request_pieces(context)))
            return stream(context, options)

        model.stream = recorded

    def _gate_children(self, registry: Any) -> None:
        """Every model created from now on (the agents') answers only once its agent was released."""
        create = registry.create_model
        release = self.release

        def create_model(info: Any, **kwargs: Any) -> Any:
            child = create(info, **kwargs)
            stream = child.stream

            async def gated(context: Any, options: Any) -> AsyncIterator[Any]:
                await release[options.agent_name].wait()
                async for event in stream(context, options):
                    yield event

            child.stream = gated
            return child

        registry.create_model = create_model

    def _on_event(self, event: object) -> None:
        from corral.agent import AgentEndEvent, AgentSettledEvent, AgentStartEvent, MessageEndEvent
        from corral.llm import AssistantMessage, CustomMessage

        if isinstance(event, MessageEndEvent):
            message = event.message
            if isinstance(message, CustomMessage) and message.custom_type == GROUP_TYPE:
                index = json.loads(str(message.content).split(GROUP_INSTRUCTIONS)[0])
                for member in index["members"]:
                    if any(f.get("id") == "F9" for f in member.get("findings", ())):
                        self.f9_path = member["report"]["path"]
                        os.environ[ENV_F9] = self.f9_path
            if isinstance(message, AssistantMessage) and message.stop_reason == "error":
                self.done.set()
        elif isinstance(event, AgentStartEvent) and self.gate.is_set():
            self._run_began = time.perf_counter()
        elif isinstance(event, AgentEndEvent) and self._run_began is not None:
            self.busy_s += time.perf_counter() - self._run_began
            self._run_began = None
        elif isinstance(event, AgentSettledEvent) and self.submitted:
            self.done.set()

    async def run(self) -> dict[str, Any]:
        await asyncio.wait_for(self.lead.prompt(ASSIGNMENT), WAIT_S)
        launched = len(self.host.kernel.generations(include_finalized=True))
        if launched != len(REPORTS):
            raise RuntimeError(f"{self.mode}: the swarm launched {launched} agents, not {len(REPORTS)}")
        before = len(self.requests)
        begin = time.perf_counter()
        self.gate.set()
        for name, event in self.release.items():
            event.set()
            await asyncio.wait_for(self._absorbed(name), WAIT_S)
        await asyncio.wait_for(self.done.wait(), WAIT_S)
        elapsed = time.perf_counter() - begin
        await asyncio.wait_for(self.host.wait_until_quiet(self.caller.session_id), WAIT_S)
        quiet = time.perf_counter() - begin
        return self._figures(before, elapsed, quiet)

    async def _absorbed(self, name: str) -> None:
        """Until agent `name`'s run is finalized (its report delivered or journaled) and the lead is idle."""
        store = self.host.repositories

        def finalized() -> bool:
            return any(
                g.label == name and g.phase == "finalized"
                for g in store.kernel.generations(include_finalized=True)
            )

        while not self.done.is_set():
            if not finalized():
                await self.host.wait_for_change()
            elif not self.lead.is_idle:
                await self.lead.wait_for_idle()
            else:
                return

    def _figures(self, spawn_requests: int, elapsed: float, quiet: float) -> dict[str, Any]:
        from corral.orchestration.teams.reports._reports import team_name

        path = self.lead.session.path
        assert path is not None
        entries = [json.loads(line) for line in Path(path).read_text().splitlines()]
        messages = [e["message"] for e in entries if e.get("type") == "message"]
        assistant = [m for m in messages if m["role"] == "assistant"]
        failed = [m.get("errorMessage") for m in assistant if m.get("stopReason") == "error"]
        if failed or self.errors or len(self.submitted) != 1:
            raise RuntimeError(f"{self.mode}: the lead did not submit one synthesis: {failed or self.errors}")
        wakes = [
            e
            for e in entries
            if e.get("type") == "custom_message" and e["customType"] in (REPORT_TYPE, GROUP_TYPE)
        ]
        reports_dir = self.host.kernel.db.path.parent / "reports" / team_name(self.caller.session_id)
        calls = [c for m in assistant for c in m["content"] if c.get("type") == "toolCall"]
        retrievals = [
            c
            for c in calls
            if c["name"] == "check_teammate"
            or (c["name"] == "read" and Path(c["arguments"]["path"]).parent == reports_dir)
        ]
        estimates = [math.ceil(sum(len(p) for p in pieces) / 4) for _after, pieces in self.requests]
        reported = [m["usage"]["input"] for m in assistant]
        if estimates != reported:
            raise RuntimeError(f"{self.mode}: recomputed estimates {estimates} differ from usage {reported}")
        synthesis = assistant[spawn_requests:]
        finalized = all(g.phase == "finalized" for g in self.host.kernel.generations(include_finalized=True))
        text = self.submitted[0]
        return {
            "delivery": "immediate/full" if self.mode == "immediate" else "all-settled/compact",
            "wakes": len(wakes),
            "wake_types": sorted({e["customType"] for e in wakes}),
            "wake_chars": sum(len(e["content"]) for e in wakes),
            "synthesis": {
                "requests": len(synthesis),
                "input_tokens": sum(m["usage"]["input"] for m in synthesis),
                "output_tokens": sum(m["usage"]["output"] for m in synthesis),
            },
            "session": {
                "requests": len(assistant),
                "input_tokens": sum(reported),
                "output_tokens": sum(m["usage"]["output"] for m in assistant),
            },
            "input_tokens_per_request": reported,
            "full_report_retrievals": len(retrievals),
            "f9_read_by_index_path": (
                self.f9_path == str(reports_dir / "r9.md")
                and [c["arguments"]["path"] for c in calls if c["name"] == "read"] == [self.f9_path]
            )
            if self.mode != "immediate"
            else None,
            "elapsed_s": round(elapsed, 3),
            "elapsed_to_quiet_s": round(quiet, 3),
            "lead_busy_s": round(self.busy_s, 3),
            "pairs_preserved": all(p in text for p in PAIRS),
            "f9_detail_preserved": F9_DETAIL in text,
            "acceptance_pending": "acceptance: pending" in text,
            "all_finalized": finalized,
            "_requests": self.requests,
        }

    async def close(self) -> None:
        os.environ.pop(ENV_F9, None)
        await self.host.aclose()
        self.lead.session.close()


async def _mode(root: Path, mode: str) -> dict[str, Any]:
    run = _Run(root, mode)
    await run.start()
    try:
        return await run.run()
    finally:
        await run.close()


def _tiktoken_counts(figures: dict[str, Any], count: Callable[[str], int] | None) -> None:
    requests = figures.pop("_requests")
    if count is None:
        return
    per_request = [(after, sum(count(p) for p in pieces)) for after, pieces in requests]
    figures["tiktoken_input"] = {
        "synthesis": sum(n for after, n in per_request if after),
        "session": sum(n for _after, n in per_request),
    }


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _table(immediate: dict[str, Any], compact: dict[str, Any]) -> str:
    def row(label: str, a: Any, b: Any) -> str:
        def fmt(value: Any) -> str:
            return f"{value:,}" if isinstance(value, int) else str(value)

        return f"| {label} | {fmt(a)} | {fmt(b)} |"

    i, c = immediate, compact
    rows = [
        "| Observation | Immediate/full | All-settled/compact |",
        "| --- | ---: | ---: |",
        row("Report or index messages delivered to the lead", i["wakes"], c["wakes"]),
        row("Model requests / assistant responses", i["synthesis"]["requests"], c["synthesis"]["requests"]),
        row(
            "Provider input tokens (scripted estimate, chars/4)",
            i["synthesis"]["input_tokens"],
            c["synthesis"]["input_tokens"],
        ),
    ]
    if "tiktoken_input" in i:
        rows.append(
            row(
                "Input tokens (tiktoken o200k_base)",
                i["tiktoken_input"]["synthesis"],
                c["tiktoken_input"]["synthesis"],
            )
        )
    rows += [
        row("Output tokens (estimate)", i["synthesis"]["output_tokens"], c["synthesis"]["output_tokens"]),
        row("Full-report retrievals", i["full_report_retrievals"], c["full_report_retrievals"]),
        row("Elapsed time (zero-latency model)", f"{i['elapsed_s']:.3f}s", f"{c['elapsed_s']:.3f}s"),
        row("Lead busy time (its runs)", f"{i['lead_busy_s']:.3f}s", f"{c['lead_busy_s']:.3f}s"),
        row(
            "Whole session incl. spawning turn: requests / input tokens",
            f"{i['session']['requests']} / {i['session']['input_tokens']:,}",
            f"{c['session']['requests']} / {c['session']['input_tokens']:,}",
        ),
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Run both modes, print one JSON object, and the Markdown table to stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    count, tiktoken_note = tiktoken_encoder()
    results: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        with data_root(script(mode), f"corral-bench-delivery-{mode}-") as root:
            results[mode] = asyncio.run(_mode(root, mode))
        _tiktoken_counts(results[mode], count)
    immediate, compact = results["immediate"], results["all-settled"]
    ratios = {
        "wakes": _ratio(compact["wakes"], immediate["wakes"]),
        "requests": _ratio(compact["synthesis"]["requests"], immediate["synthesis"]["requests"]),
        "input_tokens": _ratio(compact["synthesis"]["input_tokens"], immediate["synthesis"]["input_tokens"]),
        "input_tokens_session": _ratio(
            compact["session"]["input_tokens"], immediate["session"]["input_tokens"]
        ),
        "output_tokens": _ratio(
            compact["synthesis"]["output_tokens"], immediate["synthesis"]["output_tokens"]
        ),
        "elapsed": _ratio(compact["elapsed_s"], immediate["elapsed_s"]),
        "lead_busy": _ratio(compact["lead_busy_s"], immediate["lead_busy_s"]),
    }
    if "tiktoken_input" in immediate:
        ratios["input_tokens_tiktoken"] = _ratio(
            compact["tiktoken_input"]["synthesis"], immediate["tiktoken_input"]["synthesis"]
        )
    sizes = [len(report_markdown(i).encode()) for i in range(1, len(REPORTS) + 1)]
    output = {
        "benchmark": "delivery",
        "reports": {"count": len(sizes), "min_bytes": min(sizes), "max_bytes": max(sizes)},
        "token_counts": (
            "scripted-model usage: an estimate, characters / 4 of the system prompt and messages of each "
            "request (tool definitions not counted); not a provider tokenizer"
        ),
        "tiktoken": tiktoken_note,
        "immediate_full": immediate,
        "all_settled_compact": compact,
        "ratios_compact_over_immediate": ratios,
        "targets": {
            "one_wake_instead_of_ten": immediate["wakes"] == len(REPORTS) and compact["wakes"] == 1,
            "compact_input_at_most_30_percent": (ratios["input_tokens"] or 1.0) <= 0.30,
        },
        **environment("bench_delivery.py"),
    }
    print(json.dumps(output))
    print(_table(immediate, compact), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
