"""Tasks in KernelBench's format: a Python file defining ``Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()``, usually with module-level size constants.

Task files are read and checked here without being executed (the reference only ever runs in a
sandboxed worker). Size constants can be overridden (``--set batch_size=16``): the assignment in
the source is rewritten, so constants derived from it follow. Built-in suites live in
``evokernel/suites/<name>/`` and are named with dashes (``cpu-l1``).
"""
from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SUITES_DIR = Path(__file__).resolve().parent / "suites"
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class TaskError(ValueError):
    """A task file is missing, malformed, or an override does not apply."""


@dataclass(frozen=True)
class Task:
    name: str
    path: Path
    source: str  # with overrides applied
    overrides: dict[str, Any] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)  # module-level literal constants, after overrides
    category: str = "uncategorized"
    suite: str | None = None
    description: str = ""

    @property
    def key(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def parse_override(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` with VALUE a Python literal (int, float, bool, string, tuple)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise TaskError(f"bad override {text!r}: expected NAME=VALUE, e.g. batch_size=16")
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        raise TaskError(f"bad override {text!r}: {value.strip()!r} is not a Python literal") from None
    return name, parsed


def _module_constants(tree: ast.Module) -> dict[str, tuple[ast.Assign, Any]]:
    consts: dict[str, tuple[ast.Assign, Any]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError):
                value = ast.unparse(node.value)
            consts[node.targets[0].id] = (node, value)
    return consts


def _apply_overrides(source: str, tree: ast.Module, overrides: dict[str, Any], path: Path) -> str:
    consts = _module_constants(tree)
    unknown = [n for n in overrides if n not in consts]
    if unknown:
        available = ", ".join(sorted(consts)) or "none"
        raise TaskError(f"{path}: no module-level constant named {', '.join(unknown)} (available: {available})")
    lines = source.splitlines(keepends=True)
    # splice from the bottom so earlier positions stay valid
    for name in sorted(overrides, key=lambda n: consts[n][0].lineno, reverse=True):
        value_node = consts[name][0].value
        start, end = value_node.lineno - 1, value_node.end_lineno - 1  # type: ignore[operator]
        first, last = lines[start], lines[end]
        new = first[: value_node.col_offset] + repr(overrides[name]) + last[value_node.end_col_offset :]
        lines[start : end + 1] = [new]
    return "".join(lines)


def load_task(path: str | Path, overrides: dict[str, Any] | None = None, suite: str | None = None) -> Task:
    p = Path(path)
    if not p.is_file():
        raise TaskError(f"task file not found: {p}")
    try:
        source = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"cannot read task file {p}: {exc}") from None
    try:
        tree = ast.parse(source, filename=str(p))
    except SyntaxError as exc:
        raise TaskError(f"{p}:{exc.lineno}: task file is not valid Python: {exc.msg}") from None
    defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    missing = [n for n in REQUIRED if n not in defined]
    if missing:
        raise TaskError(f"{p}: not a KernelBench task: missing {', '.join(missing)} "
                        "(a task defines class Model(nn.Module), get_inputs() and get_init_inputs())")
    overrides = dict(overrides or {})
    if overrides:
        source = _apply_overrides(source, tree, overrides, p)
        tree = ast.parse(source)
    consts = {k: v for k, (_, v) in _module_constants(tree).items()}
    category = consts.pop("CATEGORY", "uncategorized")
    return Task(
        name=p.stem,
        path=p.resolve(),
        source=source,
        overrides=overrides,
        constants=consts,
        category=str(category),
        suite=suite,
        description=(ast.get_docstring(tree) or "").strip().splitlines()[0] if ast.get_docstring(tree) else "",
    )


def suite_names() -> list[str]:
    if not SUITES_DIR.is_dir():
        return []
    return sorted(d.name.replace("_", "-") for d in SUITES_DIR.iterdir() if d.is_dir() and any(d.glob("*.py")))


def suite_dir(name: str) -> Path:
    d = SUITES_DIR / name.replace("-", "_")
    if not d.is_dir():
        raise TaskError(f"unknown suite {name!r} (built-in suites: {', '.join(suite_names()) or 'none'})")
    return d


def load_tasks(target: str | Path, overrides: dict[str, Any] | None = None) -> list[Task]:
    """A task file, a directory of task files, a built-in suite name, or one task of a suite by its
    id ``SUITE/NAME`` (``cpu-l1/03_gelu``: the id runs and reports use)."""
    p = Path(target)
    suite = None
    if not p.exists() and str(target) in suite_names():
        suite, p = str(target), suite_dir(str(target))
    elif not p.exists() and "/" in str(target) and str(target).split("/", 1)[0] in suite_names():
        suite, name = str(target).split("/", 1)
        f = suite_dir(suite) / (name if name.endswith(".py") else f"{name}.py")
        if not f.is_file():
            raise TaskError(f"suite {suite} has no task {name!r} (evokernel tasks list {suite})")
        consts = _module_constants(ast.parse(f.read_text()))
        return [load_task(f, {k: v for k, v in (overrides or {}).items() if k in consts}, suite)]
    if p.is_file():
        return [load_task(p, overrides, suite)]
    if p.is_dir():
        files = sorted(f for f in p.glob("*.py") if not f.name.startswith("_"))
        if not files:
            raise TaskError(f"no task files (*.py) in {p}")
        tasks = []
        for f in files:
            # an override applies to the tasks that define the constant
            tree_consts = _module_constants(ast.parse(f.read_text()))
            own = {k: v for k, v in (overrides or {}).items() if k in tree_consts}
            tasks.append(load_task(f, own, suite or (p.name.replace("_", "-") if p.parent == SUITES_DIR else None)))
        return tasks
    raise TaskError(f"no such task file, directory or suite: {target}")
