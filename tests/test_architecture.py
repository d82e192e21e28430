"""The package's shape: arrows point one way between kbctl's parts, and only the command
line and the output layer speak typer or rich."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "kbctl"

# Where typer and rich may be imported: the command line and the output layer.
TERMINAL_PARTS = {"cli", "render", "render_eval", "render_memory"}
TERMINAL_LIBRARIES = {"typer", "rich"}


def module_name(path: Path) -> str:
    """``kbctl/store/ranking.py`` -> ``kbctl.store.ranking``; a package is its ``__init__``."""
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str | None:
    """The part of kbctl a module belongs to: its sub-package, or its own name for a
    top-level module (``kbctl.config`` -> ``config``); None for ``kbctl`` itself."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 and pieces[0] == "kbctl" else None


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """Every module a file imports, absolute, with its line (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, node.lineno))
            # `from . import x` / `from kbctl import store` name modules too
            found.extend((f"{target}.{alias.name}", node.lineno) for alias in node.names)
    return found


def package_files() -> list[Path]:
    return sorted(PACKAGE_ROOT.rglob("*.py"))


def part_graph() -> dict[str, dict[str, str]]:
    """part -> {imported part: "file:line" of one import that makes the arrow}."""
    graph: dict[str, dict[str, str]] = {}
    for path in package_files():
        source = part_of(module_name(path))
        if source is None:
            continue
        edges = graph.setdefault(source, {})
        for target, line in imported_modules(path):
            destination = part_of(target)
            if destination is None or destination == source:
                continue
            if not _exists(target):
                continue
            edges.setdefault(destination, f"{path.relative_to(PACKAGE_ROOT.parent)}:{line}")
    return graph


def _exists(module: str) -> bool:
    """Whether ``kbctl.a.b`` is a module or package in the tree (``from .x import Name``
    lists ``Name`` as a candidate module; only real modules count as arrows)."""
    relative = Path(*module.split(".")[1:]) if "." in module else Path()
    base = PACKAGE_ROOT / relative
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def find_cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """One cycle in the graph as a closed list of nodes, or None."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if state.get(nxt) is None:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_graph_sees_relative_and_absolute_imports() -> None:
    graph = part_graph()
    # relative: wiring.py does `from .store.db import connect`
    assert "store" in graph["wiring"]
    # absolute: evals/model.py does `from kbctl.results import ...`
    assert "results" in graph["evals"]
    # the command line sits on top of the library surface
    assert "pipeline" in graph["cli"]


def test_find_cycle_reports_a_cycle() -> None:
    assert find_cycle({"a": {"b": ""}, "b": {"c": ""}, "c": {"a": ""}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": ""}, "b": {"c": ""}, "c": {}}) is None


def test_no_cycles_between_parts_of_the_package() -> None:
    graph = part_graph()
    cycle = find_cycle(graph)
    if cycle:
        arrows = [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False)]
        pytest.fail("package cycle:\n  " + "\n  ".join(arrows))


def test_typer_and_rich_stay_in_the_command_line_and_output_layer() -> None:
    offenders = []
    for path in package_files():
        if part_of(module_name(path)) in TERMINAL_PARTS:
            continue
        for target, line in imported_modules(path):
            if target.split(".")[0] in TERMINAL_LIBRARIES:
                offenders.append(f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {target}")
    assert not offenders, "\n".join(offenders)


def test_the_map_names_every_part_of_the_package() -> None:
    """ARCHITECTURE.md is the map a newcomer opens first: a part it does not name is a
    room nobody can find."""
    text = (PACKAGE_ROOT.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    parts = {path.name if path.is_dir() else path.stem for path in PACKAGE_ROOT.iterdir()
             if (path.is_dir() and (path / "__init__.py").is_file())
             or (path.suffix == ".py" and path.stem != "__init__")}
    named = {part for part in parts
             if f"`{part}/`" in text or f"`{part}.py`" in text}
    assert parts - named == set(), f"ARCHITECTURE.md does not name {sorted(parts - named)}"


def file_graph() -> dict[str, dict[str, str]]:
    """module -> {module it imports: "file:line"}, over every file of the package. A late
    import or one for type checking is an arrow all the same. ``from . import x`` imports
    the module ``x`` (the package around a module is imported with it, and is no arrow)."""
    modules = {module_name(path): path for path in package_files()}
    graph: dict[str, dict[str, str]] = {}
    for source, path in modules.items():
        edges = graph.setdefault(source, {})
        for target in _file_imports(path, modules):
            if target != source:
                edges.setdefault(target[0], f"{path.relative_to(PACKAGE_ROOT.parent)}:"
                                            f"{target[1]}")
    return graph


def _file_imports(path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """The package's modules a file imports, each resolved to the module itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (".".join(package[: len(package) - (node.level - 1)]
                             + ([node.module] if node.module else []))
                    if node.level else node.module or "")
            submodules = [f"{base}.{alias.name}" for alias in node.names
                          if f"{base}.{alias.name}" in modules]
            names = submodules if len(submodules) == len(node.names) else [base, *submodules]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != "kbctl":
                found.append((name, node.lineno))
    return found


def declared_layers() -> list[tuple[str, set[str]]]:
    """The layers ARCHITECTURE.md lists, bottom first: (name, parts)."""
    text = (PACKAGE_ROOT.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    layers = []
    for line in block.strip().splitlines():
        name, _, parts = line.partition(":")
        layers.append((name.strip(), set(parts.split())))
    return layers


def test_the_file_graph_sees_late_and_relative_imports() -> None:
    graph = file_graph()
    assert "kbctl.sources.base" in graph["kbctl.sources.registry"]
    # config.py imports the source registry inside a function: an arrow all the same
    assert "kbctl.sources.registry" in graph["kbctl.config"]
    # `from . import registry` in cli/common.py is an arrow to the module, not the package
    assert "kbctl.cli.registry" in graph["kbctl.cli.common"]
    assert "kbctl.cli" not in graph["kbctl.cli.common"]


def test_no_import_cycle_between_two_files_of_the_package() -> None:
    graph = file_graph()
    cycle = find_cycle(graph)
    if cycle:
        arrows = [f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:], strict=False)]
        pytest.fail("import cycle:\n  " + "\n  ".join(arrows))


def test_every_part_sits_in_one_layer() -> None:
    parts = {part_of(module_name(path)) for path in package_files()} - {None}
    placed = [part for _, members in declared_layers() for part in members]
    assert sorted(placed) == sorted(set(placed)), "a part is listed in two layers"
    assert parts - set(placed) == set(), "ARCHITECTURE.md's layers do not place these"
    assert set(placed) - parts == set(), "ARCHITECTURE.md's layers name parts that are gone"


def test_no_part_imports_a_layer_above_its_own() -> None:
    rank = {part: level for level, (_, members) in enumerate(declared_layers())
            for part in members}
    names = [name for name, _ in declared_layers()]
    climbs = [f"{source} ({names[rank[source]]}) -> {target} ({names[rank[target]]}): {where}"
              for source, edges in part_graph().items() for target, where in edges.items()
              if rank.get(target, -1) > rank.get(source, -1)]
    assert not climbs, "imports that climb a layer:\n  " + "\n  ".join(sorted(climbs))
