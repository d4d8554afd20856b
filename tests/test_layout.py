"""The layout shows the flow (issue 21): suite/ is packages by stage, each importing only the stages
below it, and no module grows past one job's size: 400 lines, an operator module (its whole contract
in one module, issue 22) 450.

Read with ast, not by importing: a cycle that only a lazy import hides still shows up here as long
as the import sits at a module's top level (function-level imports are the documented exceptions)."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

SUITE = Path(__file__).resolve().parents[1] / "suite"
MAX_LINES = 400
MAX_OPERATOR_LINES = 450          # an operator module: its contract is one module (issue 22)


def _package(module: str) -> str:
    """suite.golden.store -> golden; suite.contract -> contract; suite -> suite."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "suite"


def _modules() -> Dict[str, Path]:
    out = {}
    for p in SUITE.rglob("*.py"):
        rel = p.relative_to(SUITE.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return out


def _top_level_imports(path: Path) -> Set[str]:
    """The suite modules `path` imports at its top level (not inside a function or TYPE_CHECKING)."""
    found: Set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("suite"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("suite"))
    return found


def package_graph(modules: Dict[str, Path]) -> Dict[str, Set[str]]:
    """Which package imports which (top-level imports, package-internal edges left out)."""
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        if name.startswith("suite.conformance"):
            continue                       # the conformance tests sit above everything
        src = _package(name)
        for target in _top_level_imports(path):
            if target not in modules:
                continue                   # `from suite.x import name`: the module is counted already
            dst = _package(target)
            if dst != src and not (src == "suite" or dst == "suite"):
                graph.setdefault(src, set()).add(dst)
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One cycle of the graph as a path [a, b, ..., a], or [] when it has none."""
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(n: str) -> List[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return []

    for n in sorted(graph):
        if n not in state:
            cyc = visit(n)
            if cyc:
                return cyc
    return []


def test_no_import_cycle_between_packages() -> None:
    cycle = find_cycle(package_graph(_modules()))
    assert cycle == [], "import cycle between packages: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a graph with a cycle is named, one without is not."""
    assert find_cycle({"cases": {"golden"}, "golden": {"judge"}, "judge": {"cases"}}) == \
        ["cases", "golden", "judge", "cases"]
    assert find_cycle({"cases": {"common"}, "golden": {"cases", "common"}}) == []


@pytest.mark.parametrize("name", ["golden", "cases", "judge", "run", "report", "plugin", "cli", "common",
                                  "values"])
def test_each_package_says_its_job_and_what_it_may_import(name: str) -> None:
    doc = ast.get_docstring(ast.parse((SUITE / name / "__init__.py").read_text())) or ""
    assert "May import" in doc, f"suite/{name}/__init__.py names no layering rule"


def _is_operator_module(path: Path) -> bool:
    """A module of suite/ops/ that exports OP (the registry's rule, read with ast)."""
    return path.parent == SUITE / "ops" and any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "OP" for t in node.targets)
        for node in ast.parse(path.read_text()).body)


def test_no_module_is_over_the_limit() -> None:
    too_long = {str(p.relative_to(SUITE.parent)): n for p in SUITE.rglob("*.py")
                if (n := len(p.read_text().splitlines()))
                > (MAX_OPERATOR_LINES if _is_operator_module(p) else MAX_LINES)}
    assert too_long == {}


def test_the_operator_allowance_is_for_operator_modules_only() -> None:
    """The higher limit cannot reach the shared modules of suite/ops/: an operator module is one that
    exports OP, so base.py and class_index.py are held to MAX_LINES."""
    assert _is_operator_module(SUITE / "ops" / "nll_loss.py")
    assert not _is_operator_module(SUITE / "ops" / "base.py")
    assert not _is_operator_module(SUITE / "ops" / "class_index.py")
