"""Meta-tests for conventions a reviewer would otherwise police: layering and public exports.

Layers, lowest first: base (`errors`, `_paths`, `_units`, `_process`, `_version`, `_tracing`) ← `permissions` (rules) ←
`llm` and `settings` ← `session` ← `agent` (the substrate) ← `skills`, `hooks` (every agent's tool gate) ← `harness` (other agents driven as an `AgentSession`) ← `mcp_servers` (MCP servers'
tools as agent tools) ← `runtime` and the core, itself ranked by subpackage (`orchestration.errors` ← `definitions` ←
`store` ← `kernel` ← `host` ← `agents`, `teams` ← `surfaces` ← the package's re-exports and `Repositories`) ← `tui`, `cli`, `_cli`,
`lead` (the Python API and the composition root), `_mcp` (front ends) ← the package's `__init__` (a façade that loads
the Python API on first use). A module may import only from its own rank or below; no module takes part in an import
cycle, counting imports under `TYPE_CHECKING` and inside functions; `sqlite3` belongs to the store
(`orchestration/store/`) and the features' repositories alone. There is no allow-list: the store imports nothing
above it.

A private module (`_name.py`, or a module inside a `_name/` package) belongs to the package that holds it: only modules
inside that package import it. The imports of private modules from elsewhere that existed when the rule came are
listed in `PRIVATE_IMPORTS_FILE`; the list may only shrink.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "corral"

RANK = {
    "errors": 0,
    "_paths": 0,
    "_units": 0,
    "_process": 0,
    "_version": 0,
    "_startup": 0,
    "_install": 0,
    "_jsonlines": 0,
    "_frontmatter": 0,
    "_tracing": 0,
    # Permission rules: a leaf library the settings validate with (stdlib only).
    "permissions": 0.5,
    "settings": 1,
    "llm": 1,
    "session": 2,
    "agent": 3,
    # Skills: the `skill` tool is an `AgentTool`; harnesses and the core build agents with it.
    "skills": 3.2,
    # Hooks and every agent's tool gate (rules + hooks): above the agent loop whose port they fill.
    "hooks": 3.2,
    "harness": 3.5,
    # corral as an MCP client: the user's MCP servers as agent tools, above the agent loop, below the core.
    "mcp_servers": 3.7,
    "runtime": 4,
    # The core, bottom up: the database, the agent-API kernel, the host, the two features that ride on
    # it, the tool surfaces that adapt them to the wire, and the package's re-exports.
    "orchestration.errors": 4,
    "orchestration.definitions": 4.05,
    "orchestration.store": 4.1,
    "orchestration.kernel": 4.2,
    "orchestration.host": 4.3,
    "orchestration.ratelimits": 4.35,
    "orchestration.agents": 4.4,
    "orchestration.teams": 4.4,
    "orchestration.worktrees": 4.4,
    "orchestration.budgets": 4.4,
    "orchestration.workspaces": 4.4,
    "orchestration.surfaces": 4.5,
    "orchestration": 4.6,
    # One composition for every process that runs agents: above the core (it imports the features),
    # below the lead and the workers it composes.
    "_compose": 4.8,
    "tui": 5,
    "cli": 5,
    "_cli": 5,
    "_demo": 5,
    "lead": 5,
    "_ray_worker": 5,
    "_tmux": 5,
    "_mcp": 5,
    "acp": 5,
    "__init__": 6,
}


def _layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    if parts[1] == "orchestration" and len(parts) > 2 and f"orchestration.{parts[2]}" in RANK:
        return f"orchestration.{parts[2]}"
    return parts[1]


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("corral", *parts))


@functools.cache
def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports — at the top, under `TYPE_CHECKING` and inside functions alike.

    `from package import name` counts as importing `package.name` when that is a module of corral,
    and as importing `package` otherwise (`from package import module, Name` counts as both).
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            submodules = [
                f"{name}.{alias.name}" for alias in node.names if f"{name}.{alias.name}" in _MODULES
            ]
            found.extend((node.lineno, module) for module in submodules)
            if len(submodules) < len(node.names):
                found.append((node.lineno, name))
    return found


def _source_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


_MODULES = frozenset(_module_name(path) for path in _source_files())


def _resolve(name: str) -> str | None:
    """The corral module an import name lands in (`corral.x.Name` → `corral.x`), or None outside corral."""
    while name and name not in _MODULES:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in _source_files():
        me = _module_name(path)
        targets = {_resolve(name) for _, name in _imports(path) if name.startswith("corral")}
        graph[me] = {target for target in targets if target and target != me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


@functools.cache
def _upward_imports() -> frozenset[tuple[str, str]]:
    """(importer, imported) pairs, without the `corral.` prefix, where the imported module ranks higher."""
    found: set[tuple[str, str]] = set()
    for path in _source_files():
        me = _module_name(path)
        own = RANK.get(_layer_of(me), 0)
        for _, name in _imports(path):
            target = _resolve(name) if name.startswith("corral") else None
            if target and RANK.get(_layer_of(target), 0) > own:
                found.add((me.removeprefix("corral."), target.removeprefix("corral.")))
    return frozenset(found)


def test_no_module_imports_a_higher_layer() -> None:
    unexpected = sorted(_upward_imports())
    assert unexpected == [], "imports of a higher layer:\n" + "\n".join(f"{a} -> {b}" for a, b in unexpected)


@pytest.mark.parametrize("path", _source_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_only_front_ends_import_typer_or_textual(path: Path) -> None:
    if RANK.get(_layer_of(_module_name(path)), 0) >= 5:
        return
    for lineno, name in _imports(path):
        assert name.split(".")[0] not in ("typer", "textual"), f"{path.name}:{lineno} imports {name}"


def test_no_import_cycles() -> None:
    """No two modules under src/corral import each other, directly or round a loop, in any form.

    Imports under `TYPE_CHECKING` and inside functions count: a cycle hidden there is still a cycle in
    the design. The message names each cycle's modules.
    """
    cycles = [sorted(m.removeprefix("corral.") for m in component) for component in _cycles(_graph())]
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_detector_finds_a_cycle_hidden_under_type_checking(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _may_use_sqlite(path: Path) -> bool:
    """The database package and each feature's repository (its own SQL over the shared database)."""
    rel = path.relative_to(SRC)
    return rel.parts[:2] == ("orchestration", "store") or path.name == "_repository.py"


def test_sqlite_only_in_the_store() -> None:
    offenders = [
        f"{path.relative_to(SRC)}:{lineno}"
        for path in _source_files()
        for lineno, name in _imports(path)
        if name == "sqlite3" and not _may_use_sqlite(path)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "package",
    [
        "corral.llm",
        "corral.session",
        "corral.agent",
        "corral.agent.tools",
        "corral.harness.acp",
        "corral.hooks",
        "corral.lead",
        "corral.mcp_servers",
        "corral.orchestration.kernel",
        "corral.orchestration.store",
        "corral.orchestration.teams.roster",
        "corral.skills",
        "corral.permissions",
    ],
)
def test_all_matches_public_names(package: str) -> None:
    module = importlib.import_module(package)
    exported = list(module.__all__)  # ruff's RUF022 keeps it sorted
    for name in exported:
        assert hasattr(module, name), f"{package}.__all__ names missing {name}"
    public = {
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith(package + ".")
    }
    assert public <= set(exported), f"{package} exposes {sorted(public - set(exported))} without __all__"


# --- loose dicts in the centre's signatures -------------------------------------------------------

_LOOSE = re.compile(r"\b(?:dict|Mapping|MutableMapping)\[str, (Any|object)\]")

LOOSE_DICT_PARAMETERS = frozenset(
    {
        # The fields a feature adds to a delivered result's details (`HostExtension.result_details`);
        # they go once the result hooks take one typed input (issue 29, item 5).
        "orchestration/kernel/_delivery.py::result_message::extra",
        "orchestration/kernel/_delivery.py::deliver_result::extra",
    }
)
"""The `dict[str, Any]`-like parameters that remain in `host/` and `kernel/`. It may only shrink."""


def _loose_parameters(path: Path, root: Path = SRC) -> list[str]:
    """`path::function::parameter` of each parameter typed as a loose dict (`dict[str, Any]`,
    `Mapping[str, object]`, …) in `path`.

    A JSON parser's input is a JSON object by nature: a parameter named `data` typed
    `Mapping[str, object]` (never `Any`: the parser must check every value it takes) is allowed.
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        for argument in every:
            if argument.annotation is None:
                continue
            loose = _LOOSE.search(ast.unparse(argument.annotation))
            if loose is None or (argument.arg == "data" and loose.group(1) == "object"):
                continue
            found.append(f"{path.relative_to(root)}::{node.name}::{argument.arg}")
    return found


def test_the_host_and_the_kernel_take_no_loose_dicts() -> None:
    """What crosses into the host and the kernel is typed (a launch is a `WorkerLaunch`, not a dict
    with a `"team"` key); the few loose parameters left are listed, and the list may only shrink."""
    found = {
        entry
        for folder in ("host", "kernel")
        for path in sorted((SRC / "orchestration" / folder).rglob("*.py"))
        for entry in _loose_parameters(path)
    }
    assert sorted(found - LOOSE_DICT_PARAMETERS) == [], "type these parameters (or they cross loosely)"
    assert sorted(LOOSE_DICT_PARAMETERS - found) == [], "typed now: remove them from LOOSE_DICT_PARAMETERS"


def test_the_loose_dict_check_finds_one(tmp_path: Path) -> None:
    source = tmp_path / "_probe.py"
    source.write_text(
        "from typing import Any\n"
        "def launch(parts: dict[str, Any], *, data: 'Mapping[str, object]') -> None: ...\n"
        "async def parse(data: dict[str, Any], **more: Mapping[str, object]) -> None: ...\n"
    )
    assert _loose_parameters(source, tmp_path) == [
        "_probe.py::launch::parts",
        "_probe.py::parse::data",
        "_probe.py::parse::more",
    ]


# --- private modules stay inside their package ----------------------------------------------------

PRIVATE_IMPORTS_FILE = Path(__file__).with_name("layering_private_imports.txt")
"""`importer -> imported` (module names without `corral.`), one a line, sorted: the imports of a private
module from outside the package that owns it that existed when the rule came. It may only shrink."""


def _owner_of_private(module: str) -> str | None:
    """The package that owns `module` if it is private, else None.

    A module is private when its own name or a package's on its path starts with `_`
    (`kernel._child`, `llm._providers.openai`); the owner is the package holding the innermost such part
    (`corral.orchestration.kernel`, `corral.llm`; `llm._providers._http` is owned by `corral.llm._providers`).
    `__init__` is not a part of a module's name.
    """
    parts = module.split(".")
    private = [i for i, part in enumerate(parts) if part.startswith("_")]
    return ".".join(parts[: private[-1]]) if private else None


def _is_cross_package_private(importer: str, imported: str) -> bool:
    """Whether `importer` reaches into a private module of a package it is not inside.

    Inside means the owning package itself (its `__init__`) or any module below it: a sibling of the
    private module, or a descendant of one of its siblings. A module in a parent or a cousin package is
    outside.
    """
    owner = _owner_of_private(imported)
    if owner is None:
        return False
    return importer != owner and not importer.startswith(owner + ".")


@functools.cache
def _cross_package_private_imports() -> dict[str, list[str]]:
    """`importer -> imported` (without `corral.`) → the `path:line` sites, for each cross-package private import."""
    found: dict[str, list[str]] = {}
    for path in _source_files():
        me = _module_name(path)
        for lineno, name in _imports(path):
            target = _resolve(name) if name.startswith("corral") else None
            if target and target != me and _is_cross_package_private(me, target):
                entry = f"{me.removeprefix('corral.')} -> {target.removeprefix('corral.')}"
                found.setdefault(entry, []).append(f"{path.relative_to(SRC.parents[1])}:{lineno}")
    return found


def _allowed_private_imports() -> list[str]:
    lines = PRIVATE_IMPORTS_FILE.read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def test_the_private_imports_allow_list_is_sorted_and_unique() -> None:
    allowed = _allowed_private_imports()
    assert allowed == sorted(set(allowed)), (
        f"keep {PRIVATE_IMPORTS_FILE.name} sorted, one entry a line, no duplicates"
    )


def test_no_new_cross_package_import_of_a_private_module() -> None:
    """A module imports another package's private module (`_name.py`) only if the allow-list has it."""
    found = _cross_package_private_imports()
    new = sorted(set(found) - set(_allowed_private_imports()))
    assert new == [], (
        "these modules import a private module of a package they are not inside:\n"
        + "\n".join(f"  {entry}  ({', '.join(found[entry])})" for entry in new)
        + "\nImport a public name instead: re-export it from a public module of the owning package (its"
        " `__init__.py` or a module without a leading `_`, with a checked `__all__`), or move the importer"
        f" into that package. Do not add the entry to tests/{PRIVATE_IMPORTS_FILE.name}: it may only shrink."
    )


def test_every_allowed_private_import_still_occurs() -> None:
    """The allow-list only shrinks: an entry no import matches any more must go."""
    stale = sorted(set(_allowed_private_imports()) - set(_cross_package_private_imports()))
    assert stale == [], (
        f"these imports no longer occur; delete their lines from tests/{PRIVATE_IMPORTS_FILE.name}:\n"
        + "\n".join(f"  {entry}" for entry in stale)
    )


@pytest.mark.parametrize(
    ("importer", "imported", "cross"),
    [
        ("corral.orchestration.kernel._host", "corral.orchestration.kernel._child", False),  # sibling
        ("corral.orchestration.kernel", "corral.orchestration.kernel._child", False),  # its __init__
        ("corral.orchestration.teams.checks._rows", "corral.orchestration.teams._teams", False),  # below
        ("corral.orchestration.teams._teams", "corral.orchestration.teams.checks._rows", True),  # above
        ("corral.orchestration.host._host", "corral.orchestration.kernel._child", True),  # a cousin
        ("corral.orchestration.kernelx", "corral.orchestration.kernel._child", True),  # a name's prefix
        ("corral.lead._api", "corral._tracing", False),  # owned by corral itself
        ("corral.llm._deferred", "corral.llm._providers.openai", False),  # a private package's module
        ("corral.session.store", "corral.llm._providers.openai", True),
        ("corral.llm._deferred", "corral.llm._providers._http", True),  # private inside a private package
        ("corral.llm._providers.openai", "corral.llm._providers._http", False),
        ("corral.cli", "corral.orchestration.kernel.ports", False),  # public
    ],
)
def test_the_private_import_check(importer: str, imported: str, cross: bool) -> None:
    assert _is_cross_package_private(importer, imported) is cross
