"""Import rules of the tree, checked by parsing the source (see docs/architecture.md).

* ``sqlstore`` imports neither ``retention`` nor ``cli``; ``retention`` never imports ``cli``.
* ``retention`` imports no backend module (``sqlstore.sqlite``, ``.memory``, ``.redis``).
* No backend imports ``sqlstore.migrate`` or another backend.
* Domain modules (everything in ``sqlstore`` outside the backends, ``migrate``,
  ``conformance``, ``ui`` and the package ``__init__``) import no backend. (``ui`` is
  an application at the edge, like ``cli``: the viewer of a SQLite file, built on
  ``sqlstore.sqlite.browse`` and ``maintenance``; it still imports neither
  ``retention`` nor ``cli``.)
* No code outside a backend tests a store's concrete type or type name.
* No import cycle between modules (imports under ``if TYPE_CHECKING:`` do not run
  and do not count; imports inside functions do).
* Installed names: ``retention/`` and ``cli/`` ship as ``sqlstore.retention`` and
  ``sqlstore.cli``, so they import their own modules relatively, ``cli`` reaches
  retention only as ``sqlstore.retention`` (its top level: in a checkout that is an
  alias without submodules), and only the aliases import the top-level names.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sqlstore", "retention", "cli")
BACKENDS = ("sqlstore.sqlite", "sqlstore.memory", "sqlstore.redis")
STORE_TYPES = {"SQLiteStore", "MemoryStore", "RedisStore"}

# The one allowed exception: `from sqlstore.redis import copy_store` is documented
# public API (docs/redis.md), resolved lazily by the package's __getattr__ so that no
# backend module depends on migrate at import time.
ALLOWED = {("sqlstore.redis", "sqlstore.migrate.copy")}

# `python -m sqlstore` is a program, not part of the library: nothing imports it.
ENTRY_POINTS = {"sqlstore.__main__"}

# The checkout's stand-ins for the installed names (replaced in the wheel).
ALIASES = {"sqlstore.retention": "retention", "sqlstore.cli": "cli"}


@dataclass(frozen=True, slots=True)
class Import:
    """One import statement's target module, where it sits, and whether it runs."""

    source: str
    target: str
    line: int
    type_checking_only: bool
    relative: bool = False


def module_name(root: Path, path: Path) -> str:
    """Return the dotted module name of a file below ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Return every module of the packages, by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(root, path)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, guarded: bool) -> Iterator[tuple[ast.AST, bool]]:
    """Yield every node with whether it sits under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for item in child.body:
                yield item, True
                yield from _walk(item, True)
            for item in child.orelse:
                yield item, guarded
                yield from _walk(item, guarded)
            continue
        yield child, guarded
        yield from _walk(child, guarded)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """Return the in-tree modules ``name`` imports (``from a import b``: ``a.b`` if a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []
    for node, guarded in _walk(tree, False):
        targets: list[str] = []
        relative = isinstance(node, ast.ImportFrom) and node.level > 0
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.append(full if full in known else base)
        for target in targets:
            if target.split(".")[0] in PACKAGES and target != name:
                found.append(Import(name, target, getattr(node, "lineno", 0), guarded, relative))
    return found


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[Import]:
    """Return every in-tree import of the packages below ``root``."""
    known = modules(root, packages)
    return [imp for name, path in known.items() for imp in imports_of(name, path, known)]


def top_name(module: str) -> str:
    """``retention`` or ``cli`` for a module under ``sqlstore.retention`` or ``sqlstore.cli``."""
    return module.split(".")[1]


def within(module: str, package: str) -> bool:
    """True when ``module`` is ``package`` or inside it."""
    return module == package or module.startswith(package + ".")


def cycles(edges: list[Import]) -> list[list[str]]:
    """Return the strongly connected components (size > 1) of the runtime import graph."""
    graph: dict[str, set[str]] = {}
    for imp in edges:
        if not imp.type_checking_only:
            graph.setdefault(imp.source, set()).add(imp.target)
            graph.setdefault(imp.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Return every broken import rule of the tree below ``root``, as readable lines."""
    edges = import_graph(root, packages)
    problems: list[str] = []
    for imp in edges:
        where = f"{imp.source}:{imp.line} imports {imp.target}"
        if (imp.source, imp.target) in ALLOWED or imp.source in ENTRY_POINTS:
            continue
        if imp.source in ALIASES:
            if imp.target != ALIASES[imp.source]:
                problems.append(f"{where} (an alias imports only the package it stands for)")
            continue
        top = imp.target.split(".")[0]
        if top in ("retention", "cli") and imp.source.split(".")[0] in ("retention", "cli"):
            if top == imp.source.split(".")[0] and not imp.relative:
                problems.append(f"{where} (import your own package relatively: installed names)")
            elif top != imp.source.split(".")[0]:
                problems.append(f"{where} (reach it as sqlstore.{top}: installed names)")
        if within(imp.target, "sqlstore.retention") or within(imp.target, "sqlstore.cli"):
            if imp.target not in ALIASES:
                problems.append(
                    f"{where} (only the top of sqlstore.{top_name(imp.target)} exists "
                    "in a checkout)"
                )
            if within(imp.source, "sqlstore"):
                problems.append(f"{where} (sqlstore must not import retention or cli)")
            if within(imp.target, "sqlstore.cli"):
                problems.append(f"{where} (only the entry point imports the CLI)")
        if within(imp.source, "sqlstore") and imp.target.split(".")[0] in ("retention", "cli"):
            problems.append(f"{where} (sqlstore must not import retention or cli)")
        if within(imp.source, "retention") and within(imp.target, "cli"):
            problems.append(f"{where} (retention must not import cli)")
        if within(imp.source, "retention") and any(within(imp.target, b) for b in BACKENDS):
            problems.append(f"{where} (retention must not import a backend)")
        backend = next((b for b in BACKENDS if within(imp.source, b)), None)
        if backend is not None:
            if within(imp.target, "sqlstore.migrate"):
                problems.append(f"{where} (a backend must not import sqlstore.migrate)")
            if any(within(imp.target, b) for b in BACKENDS if b != backend):
                problems.append(f"{where} (a backend must not import another backend)")
        domain = (
            within(imp.source, "sqlstore")
            and imp.source != "sqlstore"
            and backend is None
            and not within(imp.source, "sqlstore.migrate")
            and not within(imp.source, "sqlstore.conformance")
            and not within(imp.source, "sqlstore.ui")
        )
        if domain and any(within(imp.target, b) for b in BACKENDS):
            problems.append(f"{where} (a domain module must not import a backend)")
    for component in cycles(edges):
        problems.append(f"import cycle: {' <-> '.join(component)}")
    problems.extend(type_tests(root, packages))
    return list(dict.fromkeys(problems))  # one line per rule broken per statement


def type_tests(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Return the places outside a backend that test a store's concrete type or type name."""
    found: list[str] = []
    for name, path in modules(root, packages).items():
        if any(within(name, b) for b in BACKENDS) or within(name, "sqlstore.conformance"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2
                and STORE_TYPES & _names(node.args[1])
            ):
                found.append(f"{name}:{node.lineno} tests a store's concrete type")
            if isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Constant) and side.value in STORE_TYPES
                for side in (node.left, *node.comparators)
            ):
                found.append(f"{name}:{node.lineno} compares a store's type name")
    return found


def _names(node: ast.AST) -> set[str]:
    """Every plain or dotted name used in an expression (``a.B`` gives ``a`` and ``B``)."""
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def test_the_tree_keeps_its_import_rules() -> None:
    """Every import in sqlstore, retention and cli points the allowed way, with no cycle."""
    assert violations(ROOT) == []


def test_memory_is_a_package_shaped_like_the_other_backends() -> None:
    """The three backends are packages with a store, sessions, events, audit, imports, history."""
    for backend in ("memory", "sqlite", "redis"):
        folder = ROOT / "sqlstore" / backend
        names = {p.stem for p in folder.glob("*.py")}
        assert {"__init__", "store", "sessions", "events", "audit", "imports", "history"} <= names
    assert not (ROOT / "sqlstore" / "memory.py").exists()


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "sqlstore/migrate/target.py": "from sqlstore.sqlite import imports\n",
                "sqlstore/sqlite/imports.py": "from sqlstore.migrate.target import X\n",
            },
            "import cycle: sqlstore.migrate.target <-> sqlstore.sqlite.imports",
        ),
        (
            {"retention/sweep.py": "def f():\n    from sqlstore.sqlite import SQLiteStore\n"},
            "retention.sweep:2 imports sqlstore.sqlite (retention must not import a backend)",
        ),
        (
            {"sqlstore/redis/imports.py": "from sqlstore.migrate import report\n"},
            "sqlstore.redis.imports:1 imports sqlstore.migrate "
            "(a backend must not import sqlstore.migrate)",
        ),
        (
            {"sqlstore/sqlite/audit.py": "from sqlstore.memory import ttl_ns\n"},
            "sqlstore.sqlite.audit:1 imports sqlstore.memory "
            "(a backend must not import another backend)",
        ),
        (
            {"retention/history.py": "def f(s):\n    return type(s).__name__ == 'RedisStore'\n"},
            "retention.history:2 compares a store's type name",
        ),
        (
            {
                "cli/x.py": "import sqlstore\ndef f(s):\n"
                "    return isinstance(s, sqlstore.MemoryStore)\n"
            },
            "cli.x:3 tests a store's concrete type",
        ),
        (
            {"sqlstore/x.py": "from sqlstore.sqlite import SQLiteStore\n"},
            "sqlstore.x:1 imports sqlstore.sqlite (a domain module must not import a backend)",
        ),
        (
            {"cli/x.py": "from retention.policy import parse_duration\n"},
            "cli.x:1 imports retention.policy (reach it as sqlstore.retention: installed names)",
        ),
        (
            {"retention/x.py": "from retention.sweep import sweep\n"},
            "retention.x:1 imports retention.sweep "
            "(import your own package relatively: installed names)",
        ),
        (
            {"cli/x.py": "from sqlstore.retention.daemon import RoundResult\n"},
            "cli.x:1 imports sqlstore.retention.daemon "
            "(only the top of sqlstore.retention exists in a checkout)",
        ),
    ],
)
def test_each_rule_catches_its_regression(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    """A tree that breaks a rule is reported with the offending module and line."""
    for package in PACKAGES:
        _write(tmp_path, {f"{package}/__init__.py": ""})
    _write(tmp_path, files)
    assert expected in violations(tmp_path)


def test_type_checking_imports_do_not_make_a_cycle(tmp_path: Path) -> None:
    """An import needed only for annotations (under ``if TYPE_CHECKING:``) is no cycle."""
    _write(
        tmp_path,
        {
            "sqlstore/__init__.py": "",
            "retention/__init__.py": "",
            "cli/__init__.py": "",
            "sqlstore/a.py": "from sqlstore import b\n",
            "sqlstore/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from sqlstore import a\n",
        },
    )
    assert violations(tmp_path) == []
