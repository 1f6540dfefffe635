"""`corral doctor`: check the installation and say what to fix.

Each check gives one line: `ok`, `warn` (corral works, with less) or `fail`
(corral cannot work until it is fixed), what that means and what to do. The
checks only read: the data root's mode, the orchestration store (opened
read-only, never migrated), the read-only sandbox (`ReadOnlySandbox.probe`,
one tiny `bwrap` command), tmux and its version, the private tmux server's
orphaned worker panes (the same `find_orphans` that `corral agents reap`
uses, without killing anything), this data root's Ray workers when agents ran
on Ray (a warm idle one is `ok`), the worker sizing against the Ray cluster's
nodes with `runtime = "ray"`, assigned checks left `claimed` by a process
that died (`corral checks list`), loading the settings (and `favorite_models`' tiers), each custom provider's endpoint
(`GET /models`, and an empty `POST` to each OpenAI wire API to see which exist), and loading the agent
definitions (each definition file that cannot be used is a `warn` naming its
path and the problem), and each preset harness's program (found on `PATH` or as
`[harnesses.<name>]` sets it: its version, or the install command when it is
missing; `ok` either way, since an agent nobody uses is not a problem). No prompt is
sent, so it stays fast; the subprocess checks run concurrently.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from corral.orchestration import Repositories
    from corral.runtime._ray import RayRuntime
    from corral.settings import Settings

__all__ = ["Check", "CheckStatus", "doctor", "run_checks"]

CheckStatus = Literal["ok", "warn", "fail"]
"""`ok`; `warn`: corral works, with less; `fail`: corral cannot work until it is fixed."""

_VERSION_TIMEOUT_S = 10.0
"""How long `--version` (tmux: `-V`) of a program the doctor checks may take."""


@dataclass(frozen=True, slots=True)
class Check:
    """The outcome of one check."""

    name: str
    """Which check: `data_root`, `store`, `checks`, `worktrees`, `sandbox`, `tmux`, `tmux_workers`, `ray_workers`,
    `ray`, `settings`, `mcp_servers`, `endpoint`, `definitions` or `harness`."""
    status: CheckStatus
    """`ok`, `warn` or `fail`."""
    message: str
    """One line: what was found, what it means and what to do."""

    def to_json(self) -> dict[str, str]:
        """The check as `{"name", "status", "message"}`."""
        return {"name": self.name, "status": self.status, "message": self.message}


def _check_data_root(root: Path) -> Check:
    if not root.exists():
        return Check(
            "data_root",
            "warn",
            f"data root {root} does not exist yet; corral creates it (mode 0700) on first use, "
            f"or run `mkdir -p -m 700 {root}`",
        )
    if not root.is_dir():
        return Check(
            "data_root",
            "fail",
            f"data root {root} is not a directory; move it away or set CORRAL_HOME to a directory",
        )
    mode = stat.S_IMODE(root.stat().st_mode)
    if mode != 0o700:
        return Check(
            "data_root",
            "warn",
            f"data root {root} has mode {mode:04o}, so other users may read sessions and the store; "
            f"run `chmod 700 {root}`",
        )
    return Check("data_root", "ok", f"data root {root} exists with mode 0700 (private to you)")


def _open_store(path: Path) -> tuple[Check, Repositories | None]:
    from corral.orchestration import SCHEMA_VERSION, Repositories, StoreError, StoreVersionError

    if not path.exists():
        return (
            Check(
                "store",
                "ok",
                f"no orchestration store at {path} yet; corral creates it "
                f"(schema version {SCHEMA_VERSION}) when it first runs agents",
            ),
            None,
        )
    try:
        store = Repositories.open(path, readonly=True)
    except StoreVersionError as exc:
        found = re.search(r"schema version (\d+)", str(exc))
        if found is not None and int(found.group(1)) < SCHEMA_VERSION:
            return (
                Check(
                    "store",
                    "warn",
                    f"orchestration store {path} has schema version {found.group(1)}; corral migrates it "
                    f"to version {SCHEMA_VERSION} the next time it opens it (e.g. `corral run`)",
                ),
                None,
            )
        return Check("store", "fail", " ".join(str(exc).split())), None
    except StoreError as exc:
        message = " ".join(str(exc).split())
        return (
            Check("store", "fail", f"{message}; move the file away to start a fresh store"),
            None,
        )
    return (
        Check("store", "ok", f"orchestration store {path} opens (schema version {SCHEMA_VERSION})"),
        store,
    )


async def _check_sandbox() -> Check:
    from corral.agent.tools import ReadOnlySandbox

    status = await ReadOnlySandbox().probe()
    if status.ok:
        return Check(
            "sandbox",
            "ok",
            f"read agents' bash runs confined ({status.reason})",
        )
    hint = ""
    if "namespaces" in status.reason:
        hint = (
            "; allow unprivileged user namespaces (e.g. `sysctl kernel.unprivileged_userns_clone=1` "
            "or `sysctl kernel.apparmor_restrict_unprivileged_userns=0`), or run outside a "
            "container that forbids them"
        )
    return Check(
        "sandbox",
        "warn",
        f"read-only sandbox unavailable: {status.reason}{hint}. Read agents fall back to a "
        "read-only instruction only (their bash could still write files, reach the network and read "
        'your secrets); set teams.read_sandbox = "required" to refuse them instead',
    )


async def _check_tmux() -> tuple[Check, bool]:
    tmux = shutil.which("tmux")
    if tmux is None:
        return (
            Check(
                "tmux",
                "warn",
                "tmux not found on PATH: the tmux runtime is unavailable (agents run in-process); "
                "install tmux (e.g. `apt-get install tmux`) to use it",
            ),
            False,
        )
    version = await _program_version(tmux, "-V")
    if version is None:
        return (
            Check(
                "tmux",
                "warn",
                f"{tmux} did not report its version (`tmux -V` failed): the tmux runtime may not work; "
                "reinstall tmux",
            ),
            False,
        )
    return Check("tmux", "ok", f"{version} ({tmux}): the tmux runtime is available"), True


def _check_unresolved_checks(store: Repositories) -> Check:
    from corral.orchestration.teams.checks._admin import unresolved_checks

    found = unresolved_checks(store.teams)
    orphaned = [item for item in found if not item.process_alive]
    if not orphaned:
        running = f" ({len(found)} running now)" if found else ""
        return Check("checks", "ok", f"no assigned check is left claimed by a process that died{running}")
    names = ", ".join(f"{item.check.name} of {item.agent or item.check.run_id}" for item in orphaned)
    return Check(
        "checks",
        "warn",
        f"{len(orphaned)} assigned check(s) were left claimed by a corral process that died ({names}); "
        "their agents stay fenced: read the logs (`corral checks list`), then `corral checks resolve <id>`",
    )


async def _check_orphans(root: Path, store: Repositories | None) -> Check:
    from corral._tmux.orphans import find_orphans
    from corral.runtime import TmuxRuntime

    # The private server's socket (`corral.runtime.default_socket()`, which would create its folder).
    socket = root / "tmux" / "default"
    if not socket.exists():
        return Check("tmux_workers", "ok", "no private tmux server is running, so no orphaned workers")
    if store is None:
        return Check(
            "tmux_workers",
            "warn",
            f"a private tmux server runs at {socket}, but without a readable store its panes cannot be "
            "matched to agents; fix the store, then run `corral agents reap --dry-run`",
        )
    orphans = await find_orphans(store.kernel, TmuxRuntime(socket=socket))
    if orphans is None:
        return Check(
            "tmux_workers",
            "warn",
            f"cannot list the panes of the private tmux server at {socket}; "
            f"if it is stale, run `tmux -S {socket} kill-server`",
        )
    if not orphans:
        return Check("tmux_workers", "ok", "no orphaned tmux workers")
    panes = ", ".join(f"{o.pane.pane_id} ({o.reason})" for o in orphans)
    return Check(
        "tmux_workers",
        "warn",
        f"{len(orphans)} orphaned tmux worker pane(s) no live agent accounts for: {panes}; "
        "run `corral agents reap` to kill them (`--dry-run` lists them)",
    )


def _check_held(root: Path) -> Check:
    """The agent process groups (ACP agents) recorded by a host that died with them still running."""
    from corral._held import HeldProcesses

    orphans = HeldProcesses(root / "held").running_orphans(dry_run=True)
    if not orphans:
        return Check("agent_processes", "ok", "no agent process is left running by a host that died")
    listed = ", ".join(f"{o.what} (process group {o.pgid}, host process {o.host_pid})" for o in orphans)
    return Check(
        "agent_processes",
        "warn",
        f"{len(orphans)} agent process group(s) left running by a host that died: {listed}; "
        "run `corral agents reap` to end them (`--dry-run` lists them)",
    )


async def _check_ray_workers(store: Repositories, settings: Settings | None, ray: RayRuntime) -> Check:
    """This data root's Ray workers that hold no live agent (only when agents ran on Ray).

    A warm worker (idle, or holding only ended runs, which take no slot) is `ok`: it starts the next
    Ray agent faster. One that Ray never placed is a `warn`. An unreachable cluster is a `warn` only while it matters:
    `runtime = "ray"`, or agents of the store still live on Ray.
    """
    from corral.orchestration.host._ray_orphans import find_ray_orphans
    from corral.runtime import RuntimeError_

    if settings is None:
        return Check("ray_workers", "warn", "the settings do not load, so the Ray cluster is unknown")
    try:
        orphans = await find_ray_orphans(store.kernel, ray)
    except RuntimeError_ as exc:
        live = any(g.runtime_kind == "ray" for g in store.kernel.generations())
        if settings.runtime == "ray" or live:
            return Check("ray_workers", "warn", f"agents ran on Ray, but {exc}")
        return Check(
            "ray_workers",
            "ok",
            f"agents ran on Ray before; the Ray cluster at {settings.ray.address!r} is not reachable now "
            "and runtime is not ray, so there is nothing to check",
        )
    if not orphans:
        return Check("ray_workers", "ok", "no orphaned Ray workers")
    warm = [o for o in orphans if o.reason in ("idle", "finalized")]  # finished agents take no slot
    stale = [o for o in orphans if o not in warm]
    if not stale:
        names = ", ".join(f"{o.name} on {o.where}" for o in warm)
        return Check(
            "ray_workers",
            "ok",
            f"{len(warm)} warm Ray worker(s) hold no working agent and wait for the next one (it starts "
            f"faster): {names}; `corral agents reap` kills them to free their resources",
        )
    names = ", ".join(f"{o.name} ({o.reason})" for o in stale)
    also = f" ({len(warm)} more warm and idle)" if warm else ""
    return Check(
        "ray_workers",
        "warn",
        f"{len(stale)} Ray worker(s) hold no live agent: {names}{also}; "
        "run `corral agents reap` to kill them (`--dry-run` lists them)",
    )


async def _check_ray(settings: Settings, ray: RayRuntime) -> Check:
    """With `runtime = "ray"`: the cluster answers, and a worker fits on its nodes (`WorkerSizing`)."""
    from corral.runtime import RuntimeError_
    from corral.runtime._ray import RayInfeasible

    try:
        sizing = await ray.sizing()
    except RayInfeasible as exc:
        return Check("ray", "fail", f"{exc}; no agent can start on Ray until then")
    except RuntimeError_ as exc:
        return Check(
            "ray", "warn", f"runtime is ray, but {exc}; delegates fail with pane_not_ready until it is up"
        )
    return Check("ray", "ok", f"Ray cluster at {settings.ray.address!r}: {sizing.describe()}")


def _check_favorites(settings: Settings) -> Check | None:
    """`favorite_models`: every table names a tier (or a legacy alias) and holds a usable model."""
    import typing

    from pydantic import ValidationError

    from corral.orchestration.teams._tiers import TIER_ALIASES, TierFavorites, TierName

    raw = settings.favorite_models
    if not raw:
        return None
    tiers = typing.get_args(TierName)
    unknown = [key for key in raw if key not in tiers and key not in TIER_ALIASES]
    if unknown:
        return Check(
            "settings",
            "warn",
            f"favorite_models: {', '.join(repr(k) for k in unknown)} is not a tier, so spawns ignore it; "
            f"rename the table in your user settings file to one of: {', '.join(tiers)}",
        )
    try:
        TierFavorites.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return Check(
            "settings",
            "warn",
            f"favorite_models.{where}: {first['msg']}; spawns of that tier fail until you fix it in your "
            "user settings file",
        )
    return Check("settings", "ok", f"favorite_models: {len(raw)} tier favorite(s) valid")


def _check_worktrees(store: Repositories, cwd: Path) -> Check:
    """Isolated writers' worktrees: disk use, pending and interrupted merges, orphans."""
    from corral._cli._worktrees import worktree_summary
    from corral.orchestration import OrchestrationError

    try:
        status, message = worktree_summary(store, cwd)
    except OrchestrationError as exc:
        return Check(
            "worktrees", "warn", f"agent worktrees could not be inspected: {' '.join(str(exc).split())}"
        )
    return Check("worktrees", "ok" if status == "ok" else "warn", message)


def _check_settings(cwd: Path) -> tuple[Settings | None, list[Check]]:
    """The settings (`None` when they do not load; the other checks read them) and their checks."""
    from corral.errors import CorralError
    from corral.settings import find_project_settings, load_settings, user_settings_path

    warnings: list[str] = []
    try:
        settings = load_settings(cwd, on_warning=warnings.append)
    except CorralError as exc:
        message = " ".join(str(exc).split())
        return None, [Check("settings", "fail", f"settings do not load: {message}")]
    files = [p for p in (user_settings_path(), find_project_settings(cwd)) if p is not None and p.is_file()]
    loaded = (
        "settings load from " + " and ".join(str(p) for p in files)
        if files
        else f"no settings files; the defaults apply (user settings go in {user_settings_path()})"
    )
    checks = [Check("settings", "warn" if warnings else "ok", loaded)]
    checks += [Check("settings", "warn", " ".join(w.split())) for w in warnings]
    favorites = _check_favorites(settings)
    if favorites is not None:
        checks.append(favorites)
    if settings.tool_policy:
        checks.append(_check_policy(settings))
    return settings, checks


def _check_policy(settings: Settings) -> Check:
    """What binds every agent's tool calls: the `[permissions]` rules and the `[hooks]` commands."""
    rules = settings.permissions
    parts = [
        f"permissions: {len(rules.allow)} allow, {len(rules.ask)} ask, {len(rules.deny)} deny rule(s), "
        f"default {rules.default}"
    ]
    for event, groups in (
        ("PreToolUse", settings.hooks.pre_tool_use),
        ("PostToolUse", settings.hooks.post_tool_use),
    ):
        hooks = [
            f"{group.matcher or '*'} → `{' '.join(hook.command.split())}`"
            for group in groups
            for hook in group.hooks
        ]
        if hooks:
            parts.append(f"{event} hooks: {'; '.join(hooks)}")
    text = "; ".join(parts)
    return Check("policy", "ok", f"{text} (they bind every agent: the lead, its agents and their helpers)")


def _check_definitions(cwd: Path) -> list[Check]:
    """`ok` with the roster's size, or one `warn` per definition file that could not be loaded."""
    from corral._cli._agents import roster_here
    from corral.errors import CorralError

    try:
        roster = roster_here(cwd)
    except CorralError:
        return []  # the settings check already says why
    if not roster.issues:
        disabled = len(roster.definitions) - len(roster.enabled())
        extra = f" ({disabled} disabled; `corral agents definitions` says why)" if disabled else ""
        return [Check("definitions", "ok", f"{len(roster.definitions)} agent definitions load{extra}")]
    return [
        Check("definitions", "warn", f"INVALID {issue.path}: {' '.join(issue.problem.split())}")
        for issue in roster.issues
    ]


def _check_skills(cwd: Path) -> list[Check]:
    """`ok` with how many skills agents here get, or one `warn` per skill that could not be used
    (and for a project's skills not used until it is trusted)."""
    from corral._cli.skills import skills_problems
    from corral.skills import discover_skills

    catalog = discover_skills(cwd)
    problems = skills_problems(catalog)
    project = sum(1 for skill in catalog.skills if skill.layer == "project")
    where = f" ({project} from the project)" if project else ""
    checks = [
        Check("skills", "ok", f"{len(catalog.skills)} skills found{where}; `corral skills list` lists them")
    ]
    return [*checks, *(Check("skills", "warn", line) for line in problems)] if problems else checks


_ENDPOINT_TIMEOUT_S = 5.0


_PROBES = {
    "openai-chat": ("/chat/completions", b'{"messages": "probe"}'),
    "openai-responses": ("/responses", b'{"input": 0}'),
}
"""Each OpenAI wire API's path and a body no server takes for a prompt (an empty `{}` is one:
llama-cpp-python answers it with a generated reply)."""


def _http(url: str, headers: dict[str, str], data: bytes | None = None) -> tuple[int | None, bytes, str]:
    """`(status, body, "")` for a GET (or a POST of `data`), or `(None, b"", reason)` when no HTTP answer came."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url, data=data, method="GET" if data is None else "POST", headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=_ENDPOINT_TIMEOUT_S) as response:
            return int(response.status), response.read(1_000_000), ""
    except urllib.error.HTTPError as exc:
        return exc.code, b"", ""
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        return None, b"", " ".join(str(reason).split())


def _listed_models(body: bytes) -> list[str] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    return [str(item["id"]) for item in items if isinstance(item, dict) and "id" in item]


async def _check_endpoint(
    name: str, base_url: str, api: str, model_ids: list[str], key: str | None
) -> list[Check]:
    """Reachable, models listed, which wire API answers — without sending a prompt.

    The wire APIs are probed with an empty JSON object: a server that has the endpoint rejects
    it (400 or 422), one that lacks it answers 404.
    """
    base = base_url.rstrip("/")
    table = f"[providers.{name}]"
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    status, body, reason = await asyncio.to_thread(_http, f"{base}/models", headers)
    if status is None:
        return [
            Check(
                "endpoint",
                "fail",
                f"{name}: cannot reach {base}/models ({reason}); is the server running? check base_url under {table}",
            )
        ]
    checks: list[Check] = []
    listed = _listed_models(body) if status == 200 else None
    if listed is None:
        checks.append(
            Check("endpoint", "warn", f"{name}: {base}/models answered HTTP {status} without a model list")
        )
    else:
        missing = [m for m in model_ids if m not in listed]
        shown = ", ".join(listed[:8]) + (" …" if len(listed) > 8 else "")
        if missing:
            checks.append(
                Check(
                    "endpoint",
                    "warn",
                    f"{name}: {base} answers but does not list {', '.join(missing)} (it lists: {shown or 'nothing'}); "
                    "check the model ids (some servers serve any name)",
                )
            )
        else:
            checks.append(Check("endpoint", "ok", f"{name}: {base} answers and lists {shown or 'no models'}"))
    if api == "anthropic":
        return checks
    answers: dict[str, tuple[int | None, str]] = {}
    for wire, (path, probe) in _PROBES.items():
        code, _, why = await asyncio.to_thread(_http, f"{base}{path}", headers, probe)
        answers[wire] = (code, why)
    speaks = [wire for wire, (code, _) in answers.items() if code is not None and code != 404]
    configured, why = answers.get(api, (None, "not probed"))
    path = _PROBES[api][0] if api in _PROBES else ""
    if configured is None:
        checks.append(Check("endpoint", "warn", f"{name}: {base}{path} did not answer ({why})"))
    elif configured == 404:
        other = next((wire for wire in speaks if wire != api), None)
        fix = f'set api = "{other}" under {table}' if other else f"check base_url under {table}"
        checks.append(Check("endpoint", "fail", f"{name}: {base}{path} does not exist ({api}); {fix}"))
    else:
        checks.append(
            Check(
                "endpoint",
                "ok",
                f"{name}: speaks {', '.join(speaks)} (configured: {api}); no prompt was sent",
            )
        )
    return checks


async def _check_endpoints(settings: Settings | None) -> list[Check]:
    """One `endpoint` group per custom provider in the settings (none when they do not load)."""
    import os

    from corral.settings import BUILTIN_PROVIDER_NAMES

    if settings is None:
        return []
    checks: list[Check] = []
    for name, provider in settings.providers.items():
        if name in BUILTIN_PROVIDER_NAMES or provider.base_url is None:
            continue
        key = os.environ.get(provider.api_key_env) if provider.api_key_env else None
        checks += await _check_endpoint(
            name, provider.base_url, provider.api or "openai-chat", [m.id for m in provider.models], key
        )
    return checks


def _package_version(program: Path, package: str) -> str | None:
    """The version in the `package.json` of npm package `package` that holds `program` (an npm
    install's `.bin` link resolves into it), or `None`."""
    for folder in program.resolve().parents:
        manifest = folder / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError):
                return None
            if isinstance(data, dict) and data.get("name") == package:
                version = data.get("version")
                return version if isinstance(version, str) else None
            if isinstance(data, dict) and "name" in data:
                return None  # another package's folder: not an npm install of this one
    return None


async def _program_version(program: str, flag: str = "--version") -> str | None:
    """What `program --version` (or its own `flag`, like tmux's `-V`) prints (first line), or `None`."""
    try:
        process = await asyncio.create_subprocess_exec(
            program,
            flag,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(process.communicate(), _VERSION_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None
    lines = out.decode(errors="replace").strip().splitlines()
    return lines[0].strip() if process.returncode == 0 and lines else None


async def _check_harness(name: str, settings: Settings | None) -> Check:
    from corral.harness import ACP_PRESETS
    from corral.harness.acp import preset_command

    preset = ACP_PRESETS[name]
    launch = preset_command(name, (), None if settings is None else settings.harnesses.get(name))
    program = launch.argv[0]
    found = shutil.which(program, path=launch.environment().get("PATH"))
    if found is None:
        return Check(
            "harness",
            "ok",
            f"{name}: {program} not found, so `harness: {name}` agents cannot start; "
            f"install it with `{preset.install_command}` (or set [harnesses.{name}] command)",
        )
    version = _package_version(Path(found), preset.package) or await _program_version(found)
    tested = f"tested with {preset.package}@{preset.version}"
    if version is None:
        return Check("harness", "ok", f"{name}: {found} (version unknown; {tested})")
    return Check("harness", "ok", f"{name}: {found}, version {version} ({tested})")


async def _check_harnesses(settings: Settings | None) -> list[Check]:
    from corral.harness import ACP_PRESETS

    return list(await asyncio.gather(*(_check_harness(name, settings) for name in ACP_PRESETS)))


def _check_mcp_servers(settings: Settings | None) -> list[Check]:
    """One `mcp_servers` line when servers are configured: the SDK is there and each stdio server's
    program is found (nothing is started; `corral mcp-servers check` starts them); one `warn` line
    for an untrusted project's ignored servers, a file that could not be used, and an ignored entry."""

    if settings is None:
        return []
    catalog = settings.mcp_catalog
    notes = [Check("mcp_servers", "warn", catalog.untrusted)] if catalog.untrusted else []
    notes += [Check("mcp_servers", "warn", f"not used: {problem}") for problem in catalog.problems]
    notes += [
        Check("mcp_servers", "warn", f"{entry.name} ({entry.source}, {entry.file}) ignored: {entry.reason}")
        for entry in catalog.entries
        if entry.state == "ignored"
    ]
    return notes + _check_mcp_programs(settings)


def _check_mcp_programs(settings: Settings) -> list[Check]:
    import importlib.util

    if not settings.mcp_servers:
        return []
    enabled = sorted(name for name, server in settings.mcp_servers.items() if server.enabled)
    if importlib.util.find_spec("mcp") is None:
        from corral.mcp_servers import INSTALL_HINT

        return [
            Check("mcp_servers", "warn", f"{len(enabled)} enabled, but no agent gets them: {INSTALL_HINT}")
        ]
    missing = []
    for name in enabled:
        server = settings.mcp_servers[name]
        if server.command is not None and shutil.which(server.command, path=None) is None:
            missing.append(f"{name} ({server.command!r} not found on PATH)")
    if missing:
        return [
            Check(
                "mcp_servers",
                "warn",
                f"{len(missing)} of {len(enabled)} enabled servers cannot start: {', '.join(missing)}; "
                "agents are told which failed",
            )
        ]
    names = ", ".join(enabled) or "none enabled"
    return [
        Check(
            "mcp_servers",
            "ok",
            f"{names}: configured; `corral mcp-servers check` starts them and lists their tools",
        )
    ]


async def run_checks(cwd: Path) -> list[Check]:
    """Run every check for the current data root and `cwd` (for the project settings).

    Args:
        cwd: The directory whose `.corral/settings.toml` (or a parent's) is loaded.

    Returns:
        The checks in a fixed order: data root, store, checks, sandbox, tmux, tmux workers, settings,
        MCP servers (when configured), endpoint (per custom provider), definitions, harness (per preset).
    """
    from corral._paths import corral_home
    from corral.orchestration import default_store_path

    root = corral_home()
    checks = [_check_data_root(root)]
    store_path = default_store_path()
    store_check, store = _open_store(store_path)
    settings, settings_checks = _check_settings(cwd)
    rays: list[RayRuntime] = []

    def _ray(settings: Settings | None, path: Path) -> RayRuntime:
        from corral.runtime._ray import RayRuntime, ray_config

        if not rays:
            rays.append(
                RayRuntime(ray_config(None if settings is None else settings.ray), data_root=path.parent)
            )
        return rays[0]

    checks.append(store_check)
    try:
        if store is not None:
            checks.append(_check_unresolved_checks(store))
            if store.worktrees.has_worktrees():
                checks.append(_check_worktrees(store, cwd))
            from corral.orchestration.host._ray_orphans import has_ray_generations

            if has_ray_generations(store.kernel):
                checks.append(await _check_ray_workers(store, settings, _ray(settings, store_path)))
        if settings is not None and settings.runtime == "ray":
            checks.append(await _check_ray(settings, _ray(settings, store_path)))
        sandbox, (tmux, has_tmux) = await asyncio.gather(_check_sandbox(), _check_tmux())
        checks += [sandbox, tmux]
        if has_tmux:
            checks.append(await _check_orphans(root, store))
        checks.append(_check_held(root))
    finally:
        if store is not None:
            store.close()
    checks += settings_checks
    checks += _check_mcp_servers(settings)
    checks += await _check_endpoints(settings)
    checks += _check_definitions(cwd)
    checks += _check_skills(cwd)
    checks += await _check_harnesses(settings)
    return checks


async def doctor(*, cwd: Path, as_json: bool, out: IO[str]) -> int:
    """`corral doctor`: print one line per check (or one JSON object); 1 when a check failed, else 0."""
    checks = await run_checks(cwd.expanduser().resolve())
    ok = all(check.status != "fail" for check in checks)
    if as_json:
        out.write(json.dumps({"checks": [c.to_json() for c in checks], "ok": ok}, indent=2) + "\n")
    else:
        for check in checks:
            out.write(f"{check.status:<4}  {check.name}: {check.message}\n")
        counts = {status: sum(c.status == status for c in checks) for status in ("ok", "warn", "fail")}
        out.write(f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail\n")
    return 0 if ok else 1
