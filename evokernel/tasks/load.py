"""Loading tasks: a file, a directory, a built-in suite or ``SUITE/NAME``, optionally fitted to a backend.

    load_task(path, overrides, suite, fit, backend)   # one file (evokernel.tasks.task.read_task) + the fit
    load_tasks(target, overrides, fit, backend)       # a file, directory, suite or suite task
    fit_tasks(tasks, fit, backend)                    # fit="auto" | "none" | None (evokernel.tasks.fit)

The task itself (parsing, overrides, suites) is evokernel.tasks.task; fitting is evokernel.tasks.fit. This
module sits above both, so neither imports the other back.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path
from typing import Any

from evokernel.tasks.fit import BUDGETS, check_size, fit_task
from evokernel.tasks.task import (
    FIT_MODES,
    SUITES_DIR,
    Task,
    TaskError,
    TaskList,
    _module_constants,
    read_task,
    suite_dir,
    suite_names,
    task_order,
)

__all__ = ["fit_tasks", "load_task", "load_tasks", "skipped_files"]


def _one_line(exc: Exception, path: Path) -> str:
    """``file: reason`` on one line (the file named once)."""
    text = " ".join(str(exc).split())
    return text if text.startswith(str(path)) or text.startswith(path.name) else f"{path}: {text}"


def skipped_files(tasks: list[Task]) -> list[str]:
    """The one-line errors of the files a directory's loading skipped (none for a file or a suite)."""
    return list(getattr(tasks, "skipped", []))


def load_task(path: str | Path, overrides: dict[str, Any] | None = None, suite: str | None = None,
              fit: str | None = None, backend: str = "cpu") -> Task:
    """A task file with ``overrides`` applied. ``fit="auto"`` then scales the other size constants down
    to the budget of ``backend`` (:func:`evokernel.tasks.fit.fit_task`); ``fit="none"`` keeps the sizes and
    records that; None (the default) records nothing."""
    if fit is not None and fit not in FIT_MODES:
        raise TaskError(f"unknown fit mode {fit!r} (one of {', '.join(FIT_MODES)})")
    return fit_tasks([read_task(path, overrides, suite)], fit, backend)[0]


def fit_tasks(tasks: list[Task], fit: str | None, backend: str = "cpu") -> list[Task]:
    """``fit="auto"``: every task fitted to ``backend``'s budget (:func:`evokernel.tasks.fit.fit_task`; needs
    torch unless the fit is cached); ``"none"``: sizes kept, recorded as such; None: unchanged. With either
    mode, a task too large for a verifier worker is a ``TaskError`` naming its size (``fit.check_size``)."""
    if fit is None:
        return list(tasks)
    if fit not in FIT_MODES:
        raise TaskError(f"unknown fit mode {fit!r} (one of {', '.join(FIT_MODES)})")
    if fit == "none":
        return [check_size(replace(t, fit={"mode": "none", "changed": {}}), backend) for t in tasks]
    if backend not in BUDGETS:
        raise TaskError(f"unknown backend {backend!r} (one of {', '.join(BUDGETS)})")
    # lazy: task_formats imports this package's modules (fit, task) back
    from evokernel.task_formats.fit_cases import fit_cases

    return [check_size(fit_cases(t, backend) if t.cases else fit_task(t, backend), backend) for t in tasks]


def load_tasks(target: str | Path, overrides: dict[str, Any] | None = None, fit: str | None = None,
               backend: str = "cpu") -> list[Task]:
    """A task file, a directory of task files, a built-in suite name, or one task of a suite by its
    id ``SUITE/NAME`` (``cpu-l1/03_gelu``: the id runs and reports use). ``fit``/``backend``: as
    :func:`load_task`, for every task."""
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
        return [load_task(f, {k: v for k, v in (overrides or {}).items() if k in consts}, suite, fit, backend)]
    if p.is_file():
        return [load_task(p, overrides, suite, fit, backend)]
    if p.is_dir():
        files = sorted((f for f in p.glob("*.py") if not f.name.startswith("_")), key=task_order)
        if not files:
            raise TaskError(f"no task files (*.py) in {p}")
        # a file that does not load is skipped with one line naming it and the reason (TaskList.skipped);
        # the others load and run. Only a directory where no file loads is an error.
        tasks, skipped = [], []
        for f in files:
            # an override applies to the tasks that define the constant
            try:
                tree_consts = _module_constants(ast.parse(f.read_text()))
            except (SyntaxError, ValueError, OSError, UnicodeDecodeError):
                tree_consts = {}  # load_task says what is wrong with the file
            own = {k: v for k, v in (overrides or {}).items() if k in tree_consts}
            try:
                tasks.append(load_task(f, own, suite or (p.name.replace("_", "-") if p.parent == SUITES_DIR else None)))
            except TaskError as exc:
                skipped.append(_one_line(exc, f))
        if not tasks:
            raise TaskError(f"no task in {p} loads:\n" + "\n".join(skipped))
        out = TaskList()
        for t in tasks:  # every file parsed and checked before any is fitted; a fit that fails skips its task
            try:
                out.extend(fit_tasks([t], fit, backend))
            except TaskError as exc:
                skipped.append(_one_line(exc, t.path))
        out.skipped = skipped
        if not out:
            raise TaskError(f"no task in {p} loads:\n" + "\n".join(skipped))
        return out
    raise TaskError(f"no such task file, directory or suite: {target}")
