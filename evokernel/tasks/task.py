"""Tasks in KernelBench's format: a Python file defining ``Model(nn.Module)``, ``get_inputs()`` and
``get_init_inputs()``, usually with module-level size constants.

Task files are read and checked here without being executed (the reference only ever runs in a
sandboxed worker). Size constants can be overridden (``--set batch_size=16``): the assignment in
the source is rewritten, so constants derived from it follow (``a = b = 8`` and ``d, h, w = 8, 16, 16``
are constants too). Built-in suites live in ``evokernel/suites/<name>/`` and are named with dashes
(``cpu-l1``). A directory lists its files in the numeric order of their leading number (``1_``, ``2_``,
``10_``, ``100_``), then files without one, alphabetically.

Two things do run the task file, in this process and only on PyTorch's meta device (no storage is
allocated): ``Task.category`` when the file sets no ``CATEGORY`` (:mod:`evokernel.tasks.category`,
inferred from the traced op graph, lazily and cached), and ``fit="auto"`` (:mod:`evokernel.tasks.fit`:
size constants scaled down until the task fits a backend's memory and time budget; what changed is in
``Task.fit`` and ``Task.applied_overrides`` reproduces the fitted source).
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evokernel.tasks.category import infer_category

SUITES_DIR = Path(__file__).resolve().parents[1] / "suites"
REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class TaskError(ValueError):
    """A task file is missing, malformed, or an override does not apply."""


class TaskList(list):
    """The tasks of a directory; ``skipped`` holds one line per file that did not load (file: reason)."""

    skipped: list[str]


FIT_MODES = ("auto", "none")


@dataclass(frozen=True)
class Task:
    name: str
    path: Path
    source: str  # with overrides (and a fit) applied
    overrides: dict[str, Any] = field(default_factory=dict)  # the user's --set values
    constants: dict[str, Any] = field(default_factory=dict)  # module-level constants (evaluated), after overrides
    declared_category: str | None = None  # the file's CATEGORY constant, if any
    suite: str | None = None
    description: str = ""
    # what a fit did (evokernel.tasks.fit): {"mode", "changed": {NAME: [old, new]}, "bytes", "est_ms", ...};
    # None when no fit was asked for
    fit: dict[str, Any] | None = None
    # NPUKernelBench's format (evokernel.task_formats.cases): one JSON line per case; () for one set of inputs
    cases: tuple[str, ...] = ()

    @property
    def task_id(self) -> str:
        """``suite/name`` (or the name): how runs, traces and reports name the task."""
        return f"{self.suite}/{self.name}" if self.suite else self.name

    @property
    def key(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    @property
    def category(self) -> str:
        """``CATEGORY`` when the file sets it, else inferred from the traced op graph (cached per key)."""
        if self.declared_category:
            return self.declared_category

        return infer_category(self)

    @property
    def applied_overrides(self) -> dict[str, Any]:
        """Every constant this task's source rewrote: the user's overrides plus the fitted sizes.
        ``load_task(task.path, task.applied_overrides)`` gives the same source (and key)."""
        changed = (self.fit or {}).get("changed") or {}
        return {**self.overrides, **{k: _as_value(v[1]) for k, v in changed.items()}}


def _as_value(v: Any) -> Any:
    """A constant's value after a JSON round trip (tuples come back as lists)."""
    return tuple(_as_value(x) for x in v) if isinstance(v, list) else v


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


@dataclass
class _Const:
    name: str
    stmt: ast.Assign
    node: ast.expr  # the expression that gives this name its value
    value: Any  # evaluated (literals and arithmetic of literals and earlier constants), else the source text
    literal: bool  # a literal or arithmetic of literals only: a size the fit may rewrite
    chained: bool = False  # a = b = value (rewriting one name splits the statement)


class _NotConstant(Exception):
    pass


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


def _evaluate(node: ast.expr, env: dict[str, Any], names: list[str]) -> Any:
    """Literals, tuples/lists and + - * / // % ** of them and of earlier constants (names are collected)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, complex, type(None))):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_evaluate(e, env, names) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _evaluate(node.operand, env, names)
        if not isinstance(v, (int, float)):
            raise _NotConstant
        return -v if isinstance(node.op, ast.USub) else +v
    if isinstance(node, ast.BinOp):
        a, b = _evaluate(node.left, env, names), _evaluate(node.right, env, names)
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float))) or isinstance(a, bool) or isinstance(b, bool):
            raise _NotConstant
        if isinstance(node.op, ast.Pow):
            if abs(b) > 64 or abs(a) > 2 ** 32:
                raise _NotConstant
            return a ** b
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _NotConstant
        try:
            return op(a, b)
        except ArithmeticError:
            raise _NotConstant from None
    if isinstance(node, ast.Name) and node.id in env:
        names.append(node.id)
        return env[node.id]
    raise _NotConstant


def _constants(tree: ast.Module) -> dict[str, _Const]:
    """Module-level ``NAME = value``, ``A = B = value`` and ``A, B = va, vb`` assignments."""
    consts: dict[str, _Const] = {}
    env: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        pairs: list[tuple[str, ast.expr, bool]] = []
        if all(isinstance(t, ast.Name) for t in node.targets):
            pairs = [(t.id, node.value, len(node.targets) > 1) for t in node.targets]  # type: ignore[attr-defined]
        elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple) \
                and len(node.targets[0].elts) == len(node.value.elts) \
                and all(isinstance(t, ast.Name) for t in node.targets[0].elts):
            pairs = [(t.id, v, False) for t, v in zip(node.targets[0].elts, node.value.elts)]  # type: ignore[attr-defined]
        for name, expr, chained in pairs:
            names: list[str] = []
            try:
                value, ok = _evaluate(expr, env, names), True
            except (_NotConstant, RecursionError):
                value, ok = ast.unparse(expr), False
            if ok:
                env[name] = value
            else:
                env.pop(name, None)
            consts[name] = _Const(name, node, expr, value, ok and not names, chained)
    return consts


def _module_constants(tree: ast.Module) -> dict[str, tuple[ast.Assign, Any]]:
    return {k: (c.stmt, c.value) for k, c in _constants(tree).items()}


def _apply_overrides(source: str, tree: ast.Module, overrides: dict[str, Any], path: Path) -> str:
    consts = _constants(tree)
    unknown = [n for n in overrides if n not in consts]
    if unknown:
        available = ", ".join(sorted(consts)) or "none"
        raise TaskError(f"{path}: no module-level constant named {', '.join(unknown)} (available: {available})")
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:  # ast columns are UTF-8 byte offsets
        return starts[lineno - 1] + col

    edits: dict[int, tuple[int, int, str]] = {}  # start -> (start, end, new text)
    for name in overrides:
        c = consts[name]
        if c.chained:  # a = b = value: one assignment per name, the others keep their expression
            stmt = c.stmt
            value_text = ast.get_source_segment(source, stmt.value) or ast.unparse(stmt.value)
            parts = [f"{t.id} = {repr(_as_value(overrides[t.id])) if t.id in overrides else value_text}"  # type: ignore[attr-defined]
                     for t in stmt.targets]
            start = offset(stmt.lineno, stmt.col_offset)
            edits[start] = (start, offset(stmt.end_lineno, stmt.end_col_offset), "; ".join(parts))  # type: ignore[arg-type]
        else:
            node = c.node
            start = offset(node.lineno, node.col_offset)
            edits[start] = (start, offset(node.end_lineno, node.end_col_offset), repr(_as_value(overrides[name])))  # type: ignore[arg-type]
    for start, end, text in sorted(edits.values(), reverse=True):  # from the end: earlier offsets stay valid
        data = data[:start] + text.encode() + data[end:]
    return data.decode()


# factories whose integer arguments are shapes (``torch.rand(batch_size, 3, 224, 224)``)
_SHAPE_FACTORIES = {"rand", "randn", "zeros", "ones", "empty"}
INPUT_LITERAL_PREFIX = "input_size_"


def hoist_input_literals(source: str) -> tuple[str, list[str]]:
    """``source`` with the integer literals of at least 16 that ``get_inputs`` passes to a tensor factory as a
    dimension (an image size written in the call: ``torch.rand(batch_size, 3, 224, 224)``) made module-level
    constants ``input_size_224 = 224`` (one per value, defined just before ``get_inputs``), so a fit can scale them
    like any size constant; and their names. Unchanged (and no names) when there are none."""
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if fn is None:
        return source, []
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(_constants(tree))
    spots: list[ast.Constant] = []
    for call in ast.walk(fn):
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "torch"
                and call.func.attr in _SHAPE_FACTORIES):
            continue
        one = len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List))
        dims = call.args[0].elts if one else call.args  # type: ignore[attr-defined]
        spots += [d for d in dims if isinstance(d, ast.Constant) and type(d.value) is int and d.value >= 16]
    if not spots:
        return source, []
    names = {v: f"{INPUT_LITERAL_PREFIX}{v}" for v in sorted({d.value for d in spots})}
    if any(n in taken for n in names.values()):
        return source, []
    lines = source.splitlines(keepends=True)
    for d in sorted(spots, key=lambda d: (d.lineno, d.col_offset), reverse=True):  # from the end: offsets stay valid
        line = lines[d.lineno - 1].encode()
        line = line[:d.col_offset] + names[d.value].encode() + line[d.end_col_offset:]
        lines[d.lineno - 1] = line.decode()
    at = fn.lineno - 1 - len(fn.decorator_list)
    defs = "".join(f"{n} = {v}  # written in get_inputs; a constant for the fit\n" for v, n in names.items())
    return "".join(lines[:at]) + defs + "".join(lines[at:]), list(names.values())


def read_task(path: str | Path, overrides: dict[str, Any] | None = None, suite: str | None = None) -> Task:
    """A task file, checked without running it, with ``overrides`` applied (no fit: see evokernel.tasks.load)."""
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
    from evokernel.task_formats import cases  # lazy: task_formats reads this module's Task back

    if cases.is_cases_format(defined):  # get_input_groups() over a JSON file: cases appended, get_inputs() added
        try:
            source = cases.to_kernelbench(p, source, tree)
        except cases.CasesError as exc:
            raise TaskError(str(exc)) from None
        tree = ast.parse(source, filename=str(p))
        defined.add("get_inputs")
    missing = [n for n in REQUIRED if n not in defined]
    if missing:
        raise TaskError(f"{p}: not a KernelBench task: missing {', '.join(missing)} "
                        "(a task defines class Model(nn.Module), get_inputs() and get_init_inputs())")
    from evokernel.task_formats.imports import install_hint, missing_packages  # lazy: read once a file parses

    absent = missing_packages(tree)
    if absent:
        name, line = absent[0]
        raise TaskError(f"{p}:{line}: imports {name}, which is not installed here ({install_hint(name)})")
    overrides = {k: _as_value(v) for k, v in (overrides or {}).items()}
    if any(k.startswith(INPUT_LITERAL_PREFIX) and k not in _constants(tree) for k in overrides):
        # a fit scaled the size literals of get_inputs (Task.applied_overrides): made constants as the fit made them
        source, _ = hoist_input_literals(source)
        tree = ast.parse(source)
    if overrides:
        source = _apply_overrides(source, tree, overrides, p)
        tree = ast.parse(source)
    return _make_task(p, source, tree, overrides, suite)


def _make_task(p: Path, source: str, tree: ast.Module, overrides: dict[str, Any], suite: str | None,
               fit: dict[str, Any] | None = None) -> Task:
    consts = {k: v for k, (_, v) in _module_constants(tree).items()}
    category = consts.pop("CATEGORY", None)
    cases = consts.pop("EVOKERNEL_CASES", None)
    for name in ("EVOKERNEL_CASE", "EVOKERNEL_CASES_FILE"):
        consts.pop(name, None)
    doc = ast.get_docstring(tree)
    return Task(
        name=p.stem,
        path=p.resolve(),
        source=source,
        overrides=overrides,
        constants=consts,
        declared_category=str(category) if category else None,
        suite=suite,
        description=doc.strip().splitlines()[0] if doc and doc.strip() else "",
        fit=fit,
        cases=tuple(cases) if isinstance(cases, (tuple, list)) else (),
    )


def with_sizes(task: Task, sizes: dict[str, Any], fit: dict[str, Any]) -> Task:
    """``task`` with more constants rewritten (``sizes``, on top of its overrides) and ``fit`` recorded;
    ``task.overrides`` stays the user's."""
    tree = ast.parse(task.source)
    source = _apply_overrides(task.source, tree, sizes, task.path) if sizes else task.source
    return _make_task(task.path, source, ast.parse(source) if sizes else tree, dict(task.overrides), task.suite, fit)


def suite_names() -> list[str]:
    if not SUITES_DIR.is_dir():
        return []
    return sorted(d.name.replace("_", "-") for d in SUITES_DIR.iterdir() if d.is_dir() and any(d.glob("*.py")))


def suite_dir(name: str) -> Path:
    d = SUITES_DIR / name.replace("-", "_")
    if not d.is_dir():
        raise TaskError(f"unknown suite {name!r} (built-in suites: {', '.join(suite_names()) or 'none'})")
    return d


_LEADING_NUMBER = re.compile(r"^(\d+)")


def task_order(path: Path) -> tuple[int, int, str]:
    """Sort key of a task file in a directory: leading number first (``2_`` before ``10_``), then the rest
    alphabetically."""
    m = _LEADING_NUMBER.match(path.name)
    return (0, int(m.group(1)), path.name) if m else (1, 0, path.name)
