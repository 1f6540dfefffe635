"""The `corral` command.

Commands stay thin: parse, build what the substrate needs, call it, render.
Every user error is one line on stderr and exit code 2 (see `main`).
"""

# No `from __future__ import annotations` here: typer reads every command's annotations at each
# start (`--help` and `run` too). Evaluated once where they are defined, they cost nothing more; as
# strings, typer compiles and evaluates ~190 of them per start (~13% of `corral --help`'s CPU).
# Names imported only under TYPE_CHECKING are quoted.

import asyncio
import os
import shutil
import signal
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from corral._version import __version__

if TYPE_CHECKING:
    from corral._cli._launch import LaunchOptions, PromptOverrides
    from corral.llm import ModelInfo

_HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="corral",
    help=(
        "Teams of coding agents that a lead controls. "
        "Bare `corral` (no command) opens the terminal app in the current directory."
    ),
    no_args_is_help=False,
    context_settings=_HELP_OPTIONS,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _command_group(name: str, help_text: str) -> typer.Typer:
    """A `corral <name> …` sub-command group, registered on `app`."""
    group = typer.Typer(
        name=name,
        help=help_text,
        no_args_is_help=True,
        context_settings=_HELP_OPTIONS,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.add_typer(group)
    return group


class Mode(StrEnum):
    text = "text"
    json = "json"
    rpc = "rpc"


class Thinking(StrEnum):
    off = "off"
    minimal = "minimal"
    low = "low"
    medium = "medium"
    high = "high"
    xhigh = "xhigh"
    max = "max"
    """Pi 1.x's top level: runs as `xhigh`, clamped to the nearest level the model has."""


def _thinking_level(thinking: Thinking | None) -> str | None:
    if thinking is None:
        return None
    return "xhigh" if thinking is Thinking.max else thinking.value


def _version(value: bool) -> None:
    if value:
        print(f"corral {__version__}")
        raise typer.Exit(0)


ModelOpt = Annotated[
    str | None, typer.Option("--model", "-m", help="Model ref provider/model[:thinking], e.g. openai/gpt-5.")
]
ThinkingOpt = Annotated[Thinking | None, typer.Option("--thinking", help="Thinking level.")]
SessionOpt = Annotated[
    str | None, typer.Option("--session", help="Open this session: a .jsonl path or an id prefix.")
]
ContinueOpt = Annotated[
    bool, typer.Option("--continue", "-c", help="Continue this directory's newest session.")
]
NoSessionOpt = Annotated[bool, typer.Option("--no-session", help="Keep the session in memory only.")]
CwdOpt = Annotated[Path | None, typer.Option("--cwd", help="Working directory (default: the current one).")]
TraceOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace",
        help="Append the run's spans (every agent's turns, model requests, tool calls) to FILE as JSON "
        "lines; read them with corral trace FILE.",
    ),
]


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    model: ModelOpt = None,
    thinking: ThinkingOpt = None,
    session: SessionOpt = None,
    continue_: ContinueOpt = False,
    surfaces: Annotated[
        str | None,
        typer.Option("--surfaces", help="Comma-separated tool surfaces for the lead (default: the setting)."),
    ] = None,
    trace: TraceOpt = None,
) -> None:
    """Teams of coding agents that a lead controls. With no command: open the terminal app here."""
    if ctx.invoked_subcommand is not None:
        return
    from corral._cli._launch import LaunchOptions, check_data_root

    check_data_root()
    try:
        from corral.tui import run_app
    except ImportError as exc:  # pragma: no cover - textual ships as a dependency
        from corral.errors import UsageError

        raise UsageError(
            f"the terminal app needs textual ({exc}): reinstall corral (README, Install)"
        ) from exc
    options = LaunchOptions(
        Path.cwd(),
        model=model,
        thinking=_thinking_level(thinking),  # type: ignore[arg-type]
        session=session,
        continue_recent=continue_,
        surfaces=None if surfaces is None else [s.strip() for s in surfaces.split(",") if s.strip()],
    )
    _check_app_options(options)
    from corral import _tracing

    traced = None
    if trace is not None or _tracing.otel_requested():
        from corral._cli._trace import start_run_trace

        traced = start_run_trace(trace, command="app")
    code: int | None = None
    try:
        code = run_app(options)
    finally:
        if traced is not None:
            traced.close(code=code)
    raise typer.Exit(code)


def _check_app_options(options: "LaunchOptions") -> None:
    """Refuse a `--session` or `--model` the app could not open, before the app takes the terminal.

    Raises:
        CorralError: the session does not exist (or the prefix is ambiguous), or the model ref is
            malformed or names no known model (one line, exit code 2). A known model whose key is
            missing still opens the app, which says what to set.
    """
    from corral.errors import UsageError
    from corral.llm import ModelRegistry, parse_model_ref
    from corral.session import resolve_session_arg
    from corral.settings import load_settings

    if options.session is not None and options.continue_recent:
        raise UsageError("choose one of --session and --continue")
    if options.session is not None:
        resolve_session_arg(options.session, options.cwd)
    if options.model is not None:
        registry = ModelRegistry(load_settings(options.cwd), cwd=options.cwd)
        registry.resolve(parse_model_ref(options.model))


def _prompt_text(prompt: str | None) -> str:
    """The prompt: `-p TEXT`; `-p -` or no `-p` with a piped stdin reads standard input."""
    from corral.errors import UsageError

    if prompt is not None and prompt != "-":
        if not prompt.strip():
            raise UsageError("the prompt given with -p is empty: give some text, or pipe it on stdin")
        return prompt
    if sys.stdin is None or (prompt is None and sys.stdin.isatty()):
        raise UsageError("give a prompt with -p PROMPT (or pipe it on stdin), or use --mode rpc")
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the prompt on stdin is not UTF-8 text (byte {exc.start})") from None
    if not text.strip():
        raise UsageError("the prompt on stdin is empty: pipe some text, or give -p PROMPT")
    return text


@app.command()
def run(
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            "-p",
            help="The prompt to run; `-` reads it from stdin (as does a piped stdin without -p).",
        ),
    ] = None,
    mode: Annotated[
        Mode, typer.Option("--mode", help="text (final answer), json (event lines) or rpc.")
    ] = Mode.text,
    model: ModelOpt = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider", help="The provider of --model, as Pi spells it: --provider openai --model gpt-5."
        ),
    ] = None,
    thinking: ThinkingOpt = None,
    system_prompt: Annotated[
        str | None,
        typer.Option(
            "--system-prompt", help="Replace the system prompt: text, or a file to read (Pi's flag)."
        ),
    ] = None,
    append_system_prompt: Annotated[
        list[str] | None,
        typer.Option(
            "--append-system-prompt", help="Append to the system prompt: text, or a file to read; repeatable."
        ),
    ] = None,
    session: SessionOpt = None,
    continue_: ContinueOpt = False,
    no_session: NoSessionOpt = False,
    cwd: CwdOpt = None,
    tools: Annotated[
        str | None, typer.Option("--tools", help="Comma-separated tool names to activate.")
    ] = None,
    no_tools: Annotated[bool, typer.Option("--no-tools", help="Activate no tools.")] = False,
    surfaces: Annotated[
        str | None,
        typer.Option("--surfaces", help="Comma-separated tool surfaces for the lead (default: the setting)."),
    ] = None,
    agents: Annotated[
        bool,
        typer.Option(
            "--agents",
            help="With --mode json: add the managed and teams agents' own events, each tagged with its agent.",
        ),
    ] = False,
    trace: TraceOpt = None,
) -> None:
    """Run the agent headless: print the answer, stream events as JSON, or serve RPC on stdin."""
    from corral._cli._launch import LaunchOptions, check_data_root
    from corral.errors import UsageError

    if mode is Mode.rpc and prompt is not None:
        raise UsageError("--mode rpc takes prompts on stdin, not -p")
    if mode is not Mode.rpc:
        prompt = _prompt_text(prompt)
    if tools is not None and no_tools:
        raise UsageError("choose --tools or --no-tools, not both")
    if agents and mode is not Mode.json:
        raise UsageError("--agents adds the agents' events to --mode json; use it with --mode json")
    if provider is not None:
        model = _provider_model(provider, model)
    tool_names = [] if no_tools else ([t.strip() for t in tools.split(",") if t.strip()] if tools else None)
    options = LaunchOptions(
        cwd=cwd or Path.cwd(),
        model=model,
        thinking=_thinking_level(thinking),  # type: ignore[arg-type]
        session=session,
        continue_recent=continue_,
        no_session=no_session,
        tools=tool_names,
        surfaces=None if surfaces is None else [s.strip() for s in surfaces.split(",") if s.strip()],
        prompt=_prompt_overrides(system_prompt, append_system_prompt),
    )
    if not no_session:
        check_data_root()
    from corral import _tracing

    traced = None
    if trace is not None or _tracing.otel_requested():
        from corral._cli._trace import start_run_trace

        traced = start_run_trace(trace, command="run")
    try:
        code = _run_launched(options, mode, prompt, agents=agents, no_session=no_session)
    except BaseException:
        if traced is not None:
            traced.close(code=1)
        raise
    if traced is not None:
        traced.close(code=code)
    if mode is Mode.rpc and code in (129, 130, 143):
        # Ended by a signal: everything is closed and saved, so leave now, as Pi does (its RpcClient
        # kills a process that is still there a second after SIGTERM), even if a thread still runs.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise typer.Exit(code)


def _run_launched(
    options: "LaunchOptions", mode: Mode, prompt: str | None, *, agents: bool, no_session: bool
) -> int:
    """Launch the lead and run it in `mode`; the exit code."""
    from corral._cli._launch import announce_default_model, launch_session
    from corral._cli._modes import run_json_mode, run_print_mode

    launched = launch_session(options)
    announce_default_model(launched, remember=not no_session)

    aborts: set[asyncio.Future[None]] = set()
    interrupted: list[str] = []

    def terminate() -> None:
        launched.terminated = True
        task = asyncio.ensure_future(launched.agent.abort())
        aborts.add(task)
        task.add_done_callback(aborts.discard)

    async def main() -> int:
        if mode is not Mode.rpc:
            # SIGTERM aborts the run like an interrupt — during a model request or
            # a tool call alike: the partial reply is kept (stop reason `aborted`)
            # and the command exits 1, printing no answer. (RPC mode handles its
            # signals itself: it exits 143 like Pi.)
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, terminate)
        try:
            await launched.attach_host()
            if mode is Mode.rpc:
                from corral._cli._rpc import run_rpc_mode

                return await run_rpc_mode(launched, stdin_fd=_stdin_fd(), out=sys.stdout)
            assert prompt is not None
            if mode is Mode.json:
                return await run_json_mode(launched, prompt, out=sys.stdout, err=sys.stderr, agents=agents)
            return await run_print_mode(launched, prompt, out=sys.stdout, err=sys.stderr)
        except asyncio.CancelledError:
            # Ctrl-C (asyncio.run cancels this task): name the agents it ends before they are stopped.
            interrupted.extend(launched.interrupted())
            raise
        finally:
            await launched.aclose()

    # --no-session writes no file at all: the store and the managed agents' sessions live in a
    # private temporary data root for this run, removed when it ends.
    scratch = _scratch_data_root() if no_session else None
    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        # Said here: typer turns an escaping KeyboardInterrupt into a silent exit 130.
        print("corral: interrupted", file=sys.stderr)
        for line in interrupted:
            print(f"corral: {line}", file=sys.stderr)
        return 130
    finally:
        launched.session.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _scratch_data_root() -> Path:
    """A fresh 0700 temporary directory that becomes `CORRAL_HOME` for the rest of this process."""
    import os
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="corral-no-session-"))
    os.environ["CORRAL_HOME"] = str(root)
    return root


def _prompt_input(value: str, flag: str) -> str:
    """Pi's rule for `--system-prompt` and `--append-system-prompt`: a path that exists is read, else it is the text."""
    from corral.errors import UsageError

    path = Path(value)
    try:
        is_path = path.exists()
    except (OSError, ValueError):  # a name too long or with a NUL byte: text, not a path
        return value
    if not is_path:
        return value
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:  # unreadable, a directory, not UTF-8
        raise UsageError(
            f"{flag} {value}: cannot read it as a UTF-8 file ({exc}); pass the text or a readable file"
        ) from None


def _prompt_overrides(system: str | None, append: list[str] | None) -> "PromptOverrides":
    from corral._cli._launch import PromptOverrides

    texts = [_prompt_input(value, "--append-system-prompt") for value in append or []]
    return PromptOverrides(
        system=None if system is None else _prompt_input(system, "--system-prompt"),
        append="\n\n".join(texts) if texts else None,
    )


def _stdin_fd() -> int:
    """Standard input's descriptor for `--mode rpc`."""
    from corral.errors import UsageError

    if sys.stdin is None:
        raise UsageError("--mode rpc reads commands on stdin, which is closed: connect a pipe or a terminal")
    return sys.stdin.fileno()


def _provider_model(provider: str, model: str | None) -> str:
    """`--provider P --model M` (Pi's pair of flags) as corral's model ref `P/M`."""
    from corral.errors import UsageError

    if not provider.strip() or "/" in provider:
        raise UsageError(
            f"--provider {provider!r}: give a provider name such as openai, anthropic or scripted"
        )
    if model is None:
        raise UsageError(
            f"--provider {provider} needs --model MODEL_ID (or --model {provider}/MODEL_ID alone)"
        )
    return model if model.startswith(f"{provider}/") else f"{provider}/{model}"


@app.command()
def models(
    json_: Annotated[bool, typer.Option("--json", help="Print details as JSON.")] = False,
    all_: Annotated[
        bool, typer.Option("--all", help="Include models whose credentials are missing.")
    ] = False,
    cwd: CwdOpt = None,
) -> None:
    """List the models usable with the current settings and credentials; `(default)` marks the one
    the lead gets without --model, `(deprecated, …)` and `(retired, …)` the ones their provider
    deprecated or retired, with the successor it names."""
    import json

    from corral._cli._launch import warn
    from corral.llm import ModelPrices, ModelRegistry, listed_prices, parse_model_ref
    from corral.settings import load_settings

    work_dir = (cwd or Path.cwd()).resolve()
    registry = ModelRegistry(load_settings(work_dir, on_warning=warn), cwd=work_dir)
    infos = registry.all_models() if all_ else registry.available_models()
    default_ref = registry.default_model_ref()
    default = None if default_ref is None else parse_model_ref(default_ref)
    default_key = None if default is None else (default.provider, default.model_id)
    if json_:

        def pricing(info: "ModelInfo") -> tuple[ModelPrices, str]:
            if info.prices is not None:
                return info.prices, "settings"
            listed = listed_prices(info, endpoint=registry.base_url_for(info))
            return (ModelPrices(), "unknown") if listed is None else (listed, "genai-prices")

        rows = [
            {
                "ref": info.ref,
                "default": (info.provider, info.id) == default_key,
                "provider": info.provider,
                "id": info.id,
                "api": info.api,
                "name": info.name or info.id,
                "contextWindow": info.context_window,
                "maxTokens": info.max_tokens,
                "reasoning": info.reasoning,
                "input": list(info.input),
                "cost": {
                    "input": prices.input,
                    "output": prices.output,
                    "cacheRead": prices.cache_read,
                    "cacheWrite": prices.cache_write,
                },
                "pricing": source,
                "lifecycle": None
                if lifecycle is None
                else {
                    "status": lifecycle.status(),
                    "retirement": None if lifecycle.retirement is None else lifecycle.retirement.isoformat(),
                    "replacement": lifecycle.replacement,
                },
            }
            for info in infos
            for prices, source in [pricing(info)]
            for lifecycle in [registry.lifecycle(info)]
        ]
        print(json.dumps(rows, indent=2))
        return
    for info in infos:
        marks = ["default"] if (info.provider, info.id) == default_key else []
        lifecycle = registry.lifecycle(info)
        if lifecycle is not None:
            mark: str = lifecycle.status()
            if lifecycle.retirement is not None:
                day = lifecycle.retirement.isoformat()
                mark += f" {day}" if mark == "retired" else f", retires {day}"
            if lifecycle.replacement:
                mark += f"; use {info.provider}/{lifecycle.replacement}"
            marks.append(mark)
        print(info.ref + "".join(f"  ({mark})" for mark in marks))


@app.command()
def sessions(
    all_: Annotated[
        bool, typer.Option("--all", help="Every directory's sessions, not only this one's.")
    ] = False,
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    agents: Annotated[
        bool,
        typer.Option("--agents", help="Also the managed agents' sessions (`agent <label> (<definition>)`)."),
    ] = False,
    cwd: CwdOpt = None,
) -> None:
    """List saved lead sessions, newest first: id, last activity, size, name (or first prompt);
    `--agents` adds the managed agents' sessions."""
    from corral._cli._launch import check_data_root
    from corral._cli._sessions import sessions_list

    check_data_root()
    raise typer.Exit(
        sessions_list(cwd=cwd or Path.cwd(), all_dirs=all_, as_json=json_, out=sys.stdout, agents=agents)
    )


@app.command()
def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Keep the temporary project directory.")] = False,
) -> None:
    """Run an offline scripted agent that fixes a bug in a sample project with real tools."""
    from corral._cli._demo import run_demo

    raise typer.Exit(asyncio.run(run_demo(out=sys.stdout, keep=keep)))


agents_app = _command_group(
    "agents",
    "List and show a session's agents (managed and teams); close managed ones (the lead's view); "
    "list the agent definitions.",
)

AgentsSessionOpt = Annotated[
    str | None,
    typer.Option(
        "--session", help="The lead session: a .jsonl path or an id prefix (default: the newest here)."
    ),
]
AgentsJsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@agents_app.command("list")
def agents_list(
    session: AgentsSessionOpt = None,
    json_: AgentsJsonOpt = False,
    teams: Annotated[
        bool,
        typer.Option(
            "--teams", help="Only the teams agents (with --json: their get_agent_status snapshots)."
        ),
    ] = False,
    cwd: CwdOpt = None,
) -> None:
    """List the session's managed agents, then its teams agents (`--json`: the agent tool's `list` records)."""
    from corral._cli._agents import agents_list as run_list
    from corral._cli._launch import check_data_root

    check_data_root()

    raise typer.Exit(
        asyncio.run(
            run_list(cwd=cwd or Path.cwd(), session=session, as_json=json_, out=sys.stdout, teams=teams)
        )
    )


@agents_app.command("definitions")
def agents_definitions(json_: AgentsJsonOpt = False, cwd: CwdOpt = None) -> None:
    """List the agent definitions here (bundled, project, user; Claude Code and Pi files too), each
    file that could not be loaded marked INVALID with its path and the problem."""
    from corral._cli._agents import agents_definitions as run_definitions

    raise typer.Exit(run_definitions(cwd=cwd or Path.cwd(), as_json=json_, out=sys.stdout))


@agents_app.command("show")
def agents_show(
    label: Annotated[str, typer.Argument(help="The agent's label.")],
    session: AgentsSessionOpt = None,
    json_: AgentsJsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Show one agent: a managed agent's record, or a teams agent's status and report."""
    from corral._cli._agents import agents_show as run_show
    from corral._cli._launch import check_data_root

    check_data_root()

    raise typer.Exit(
        asyncio.run(run_show(label, cwd=cwd or Path.cwd(), session=session, as_json=json_, out=sys.stdout))
    )


@agents_app.command("close")
def agents_close(
    label: Annotated[str, typer.Argument(help="The agent's label.")],
    session: AgentsSessionOpt = None,
    json_: AgentsJsonOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Close a managed agent the session owns directly (and the agents it started); not teams agents."""
    from corral._cli._agents import agents_close as run_close
    from corral._cli._launch import check_data_root

    check_data_root()

    raise typer.Exit(
        asyncio.run(run_close(label, cwd=cwd or Path.cwd(), session=session, as_json=json_, out=sys.stdout))
    )


@agents_app.command("reap")
def agents_reap(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only report the orphans.")] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Also remove orphaned worktrees and branches holding unmerged work."),
    ] = False,
) -> None:
    """Kill tmux panes whose agent is finalized or unknown to the store, and remove orphaned agent
    worktrees and `corral/*` branches (never live agents; never unmerged work without --force)."""
    from corral._cli._reap import reap

    raise typer.Exit(asyncio.run(reap(out=sys.stdout, dry_run=dry_run, force=force, cwd=Path.cwd())))


skills_app = _command_group(
    "skills", "List the skills (SKILL.md folders) agents here get, and any that could not be used."
)


@skills_app.command("list")
def skills_list(
    json_: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False, cwd: CwdOpt = None
) -> None:
    """List the skills agents here get: name, where it comes from (user or project directory) and its
    description; shadowed skills, malformed ones (INVALID, with the problem) and a project's skills
    not used until it is trusted are named after them."""
    from corral._cli.skills import skills_list as run_list

    raise typer.Exit(run_list(cwd=cwd or Path.cwd(), as_json=json_, out=sys.stdout))


@app.command()
def merge(
    agent: Annotated[
        str, typer.Argument(help="The isolated agent's label or team name, or its corral/... branch.")
    ],
    discard: Annotated[
        bool, typer.Option("--discard", help="Remove the branch and its worktree instead of merging.")
    ] = False,
) -> None:
    """Merge an isolated writer's branch into your working tree (exit 0 merged, 1 conflicts or
    uncommitted changes in the way, paths named; 2 bad input). Never overwrites uncommitted changes."""
    from corral._cli._worktrees import merge as run_merge

    raise typer.Exit(run_merge(agent, discard=discard, out=sys.stdout, err=sys.stderr))


checkpoints_app = _command_group(
    "checkpoints", "List or delete the saved specialist checkpoints (continue_from ids)."
)


@checkpoints_app.command("list")
def checkpoints_list() -> None:
    """List every checkpoint: id | agent | tier | ready|expired | expires <ISO>, or id | deleted|expired."""
    from corral._cli._checkpoints import checkpoints_list as run_list

    raise typer.Exit(run_list(out=sys.stdout, err=sys.stderr))


@checkpoints_app.command("delete")
def checkpoints_delete(
    checkpoint_id: Annotated[str, typer.Argument(help="The exact checkpoint:<64 hex> id.")],
) -> None:
    """Delete a checkpoint for good: future continuations cannot load it (reports stay)."""
    from corral._cli._checkpoints import checkpoints_delete as run_delete

    raise typer.Exit(run_delete(checkpoint_id, out=sys.stdout))


checks_app = _command_group(
    "checks", "List or resolve assigned checks left claimed by a corral process that died."
)


@checks_app.command("list")
def checks_list() -> None:
    """List unresolved checks: id | agent | check (attempt) | claimed <ISO> | process alive|gone | log."""
    from corral._cli._checks import checks_list as run_list

    raise typer.Exit(run_list(out=sys.stdout))


@checks_app.command("resolve")
def checks_resolve(
    check_id: Annotated[str, typer.Argument(help="The exact check:<64 hex> id from `corral checks list`.")],
    reason: Annotated[str | None, typer.Option("--reason", help="A note kept in the check's record.")] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Resolve although the agent's process id still exists (reused pid)."),
    ] = False,
) -> None:
    """Settle a check whose process died as `error` (never rerun), so its agent can be stopped."""
    from corral._cli._checks import checks_resolve as run_resolve

    raise typer.Exit(run_resolve(check_id, reason=reason, force=force, out=sys.stdout))


permissions_app = _command_group(
    "permissions", "Check what the [permissions] rules and [hooks] of this directory's settings do."
)


@permissions_app.command("check")
def permissions_check(
    tool: Annotated[
        str, typer.Argument(help="The tool: corral's name (bash, read, …) or Claude Code's (Bash, …).")
    ],
    tool_input: Annotated[
        str,
        typer.Argument(
            metavar="INPUT-JSON", help='The call\'s input as a JSON object, e.g. \'{"command": "git push"}\'.'
        ),
    ],
    run_hooks: Annotated[
        bool,
        typer.Option("--run-hooks", help="Also run the PreToolUse hooks that match (they may have effects)."),
    ] = False,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            metavar="DEFINITION",
            help="Check it for an agent of this definition or teams tier (its permissions: narrow the settings').",
        ),
    ] = None,
) -> None:
    """Say whether a tool call would be allowed, denied or asked about, and why."""
    from corral._cli.permissions import permissions_check as run_check

    raise typer.Exit(
        run_check(
            tool,
            tool_input,
            cwd=Path.cwd(),
            run_hooks=run_hooks,
            out=sys.stdout,
            warn=sys.stderr,
            agent=agent,
        )
    )


mcp_servers_app = _command_group(
    "mcp-servers",
    "The MCP servers whose tools the agents get ([mcp_servers] in settings; docs/mcp-servers.md).",
)


@mcp_servers_app.command("list")
def mcp_servers_list(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """List each configured MCP server: transport, command or URL, enabled, and the settings file it is from."""
    from corral._cli.mcp_servers import list_servers

    raise typer.Exit(list_servers(Path.cwd(), as_json=json_, out=sys.stdout))


@mcp_servers_app.command("check")
def mcp_servers_check(
    names: Annotated[
        list[str] | None, typer.Argument(help="Servers to check (default: every enabled one).")
    ] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Start each server, list its tools (read-only ones marked) and stop it; exit 1 when one does not start."""
    from corral._cli.mcp_servers import check_servers

    raise typer.Exit(asyncio.run(check_servers(Path.cwd(), names or [], as_json=json_, out=sys.stdout)))


@app.command()
def trust(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Project directory (default: the nearest one holding .corral/, else the current one)."
        ),
    ] = None,
    show: Annotated[
        bool, typer.Option("--show", help="Only show what trusting would let take effect; change nothing.")
    ] = False,
) -> None:
    """Trust a project: show what its `.corral/` unlocks and let it take effect until a pinned file changes."""
    from corral._cli._trust import trust as run_trust

    raise typer.Exit(run_trust(path, show=show, out=sys.stdout))


@app.command()
def untrust(
    path: Annotated[
        Path | None,
        typer.Argument(
            help="Project directory (default: the nearest one holding .corral/, else the current one)."
        ),
    ] = None,
) -> None:
    """Stop trusting a project."""
    from corral._cli._trust import untrust as run_untrust

    raise typer.Exit(run_untrust(path, out=sys.stdout))


@app.command()
def doctor(
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Check the data root, store, read-only sandbox, tmux and settings; say what to fix."""
    from corral._cli._doctor import doctor as run_doctor

    raise typer.Exit(asyncio.run(run_doctor(cwd=Path.cwd(), as_json=json_, out=sys.stdout)))


@app.command()
def mcp(
    session: SessionOpt = None,
    continue_: ContinueOpt = False,
    cwd: CwdOpt = None,
    surfaces: Annotated[
        str, typer.Option("--surfaces", help="Comma-separated tool surfaces: agent and/or teams.")
    ] = "agent",
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The lead session's model (agents inherit it).")
    ] = None,
    http: Annotated[
        str | None, typer.Option("--http", help="Serve streamable HTTP on HOST:PORT instead of stdio.")
    ] = None,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow a non-loopback --http bind (needs a token).")
    ] = False,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="CORRAL_MCP_TOKEN",
            help="Bearer token HTTP clients must send (default: one is generated and printed).",
        ),
    ] = None,
    no_token: Annotated[
        bool, typer.Option("--no-token", help="Serve --http on loopback without a token (any local process).")
    ] = False,
    elicit: Annotated[
        bool, typer.Option("--elicit", help="Ask the user agents' questions through MCP elicitation.")
    ] = False,
    isolation: Annotated[
        str | None,
        typer.Option(
            "--isolation", help="shared or worktree: where write agents work (default: the setting)."
        ),
    ] = None,
    budget: Annotated[
        list[str] | None,
        typer.Option(
            "--budget",
            help="KEY=NUMBER, repeatable: a [budget] limit for this lead, e.g. --budget tree_tokens=2000000.",
        ),
    ] = None,
    trace: TraceOpt = None,
) -> None:
    """Serve a lead session over MCP (stdio by default): `claude mcp add corral -- corral mcp`."""
    from corral.errors import UsageError

    if isolation not in (None, "shared", "worktree"):
        raise UsageError(f"--isolation {isolation!r}: use shared or worktree")
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    from corral._mcp import McpOptions, parse_budget
    from corral._mcp import main as run_mcp

    try:
        limits = parse_budget(budget or [])
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    options = McpOptions(
        cwd or Path.cwd(),
        session=session,
        continue_recent=continue_,
        model=model,
        surfaces=[s.strip() for s in surfaces.split(",") if s.strip()],
        http=http,
        allow_remote=allow_remote,
        token=token,
        no_token=no_token,
        elicit=elicit,
        isolation="worktree" if isolation == "worktree" else "shared" if isolation == "shared" else None,
        budget=limits or None,
        trace=trace,
    )
    raise typer.Exit(run_mcp(options))


@app.command()
def acp(
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="The lead's model (default: as for corral run).")
    ] = None,
    surfaces: Annotated[
        str | None,
        typer.Option("--surfaces", help="Comma-separated tool surfaces for the lead (default: the setting)."),
    ] = None,
    session: SessionOpt = None,
    continue_: ContinueOpt = False,
    cwd: CwdOpt = None,
) -> None:
    """Serve the lead to an editor over the Agent Client Protocol on stdio (Zed, JetBrains, Neovim, Emacs)."""
    from corral.errors import UsageError

    if session is not None and continue_:
        raise UsageError("choose --session or --continue, not both")
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    from corral.acp import AcpOptions, serve

    # No data-root check here: it loads the lead, and `initialize` is answered before that. A data root
    # corral cannot use fails `session/new` with the check's message.
    options = AcpOptions(
        cwd or Path.cwd(),
        model=model,
        surfaces=None if surfaces is None else [s.strip() for s in surfaces.split(",") if s.strip()],
        session=session,
        continue_recent=continue_,
    )
    raise typer.Exit(serve(options))


@app.command()
def trace(
    file: Annotated[Path, typer.Argument(help="A trace file written by corral run --trace FILE.")],
) -> None:
    """Print a trace file's spans as a tree: agent, duration, tokens, cost."""
    from corral._cli._trace import render_trace

    render_trace(file, sys.stdout)


@app.command(hidden=True)
def worker(
    run_id: Annotated[str, typer.Option("--run-id", help="The generation to run.")],
    store: Annotated[Path, typer.Option("--store", help="The orchestration store (SQLite file).")],
    launch: Annotated[Path, typer.Option("--launch", help="The launch file the host wrote.")],
) -> None:
    """Run one managed agent in this terminal (what a tmux pane runs; started by the host)."""
    from corral._tmux.worker import main as run_worker

    raise typer.Exit(run_worker(["--run-id", run_id, "--store", str(store), "--launch", str(launch)]))


_SHELL_WORDS = (
    ("refresh with `list`", "`corral agents list` shows the agents"),
    ("refresh with get_agent_status", "`corral agents list --teams` shows the teams agents"),
)
"""The core's hints name the lead's tools; a shell user gets the command that does the same."""


def _whole_short_help(command: "typer._click.Command") -> None:
    """Give each sub-command its whole first paragraph as the line `--help` lists, so it is wrapped
    rather than cut with `...` at click's width."""
    for sub in getattr(command, "commands", {}).values():
        if not sub.short_help and sub.help:
            sub.short_help = " ".join(sub.help.split("\n\n")[0].split())
        _whole_short_help(sub)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, turning user errors into one line on stderr and exit code 2."""
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
    from typer.exceptions import Abort, Exit

    from corral._startup import started
    from corral.errors import CorralError

    command = typer.main.get_command(app)
    _whole_short_help(command)
    args = sys.argv[1:] if argv is None else argv
    try:
        result = command.main(args=args, prog_name="corral", standalone_mode=False)
    except Exit as exc:
        return exc.exit_code
    except NoArgsIsHelpError as exc:
        print(exc.format_message(), file=sys.stderr)
        return 2
    except ClickException as exc:
        message = " ".join(exc.format_message().split())
        for wording in ("Value error, ", "Assertion failed, "):  # pydantic's, under typer's conversion
            message = message.replace(f": {wording}", ": ")
        print(f"corral: error: {message}", file=sys.stderr)
        return 2
    except CorralError as exc:
        message = " ".join(str(exc).split())
        for tool_words, shell_words in _SHELL_WORDS:
            message = message.replace(tool_words, shell_words)
        print(f"corral: error: {message}", file=sys.stderr)
        return 2
    except (Abort, KeyboardInterrupt):
        print("corral: interrupted", file=sys.stderr)
        return 130
    finally:
        started()  # the collector is back for whatever runs after the command (see corral._startup)
    return result if isinstance(result, int) else 0


def console_main() -> None:
    """The `corral` console script: run the command, then leave without the interpreter's teardown.

    The garbage collector is paused while the command starts (see `corral._startup`).
    """
    from corral._startup import pause_for_startup

    pause_for_startup()
    code = main()
    from corral._cli._exit import exit_now

    exit_now(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    console_main()
