"""NPUKernelBench's task format: ``get_input_groups()`` over a JSON-lines file of cases.

MultiKernelBench's ``reference/npukernelbench_level*/NN_op.py`` define ``Model``, ``get_init_inputs()`` and
``get_input_groups()``, which opens ``NN_op.json`` beside the file (one JSON object per line: ``{"inputs":
[{"name", "type": "tensor"|"attr", "dtype", "shape" | "value"}, ...]}``) and returns one list of forward
arguments per case: tensors of several shapes and dtypes (float16/bfloat16 included) and non-tensor arguments
(``normalized_shape``, flags, a ``torch.dtype``) in forward's order.

On load (:func:`to_kernelbench`) the cases are read in this process and the file becomes a KernelBench task:
the task's own source, unchanged, followed by a short block that holds the cases as data
(``EVOKERNEL_CASES``, one JSON line per case), the case being drawn (``EVOKERNEL_CASE``), an ``open`` that
serves the task's JSON file as a file of that one case, and ``get_inputs()`` = the single group
``get_input_groups()`` then returns. So the task's own generator code decides dtypes, values and argument
order; the reference worker needs no file system access; a case costs one case's tensors; and everything that
reads a KernelBench task (categories, fits, the template generator, the verifier) reads this one (case 0 where
one case is enough). The verifier judges every case (``evokernel.verifier.trusted.trials``): it sets
``EVOKERNEL_CASE`` through the ``case`` of its ``make_inputs`` requests.

Fitting (:func:`fit_cases`) scales the dimensions of a case that does not fit the backend's budget: every
dimension of 32 or more is halved at once (ratios between dimensions kept; an attribute holding one of those
values, ``normalized_shape = [4096]``, follows), until the case's tensors fit. The cases that fit are kept as
written.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

CASES = "EVOKERNEL_CASES"
CASE = "EVOKERNEL_CASE"
CASES_FILE = "EVOKERNEL_CASES_FILE"
VIRTUAL_DIR = "/evokernel-task"
MARKER = "# --- evokernel: task cases"

_SHIM = '''

{marker} ({json_name}, {n} cases): get_input_groups() reads its JSON file; each case is served as a
# file of one line, so get_inputs() gives the inputs of case EVOKERNEL_CASE (evokernel/task_formats/cases.py)
EVOKERNEL_CASES = {cases}
EVOKERNEL_CASE = 0
EVOKERNEL_CASES_FILE = {json_name!r}
globals()["__file__"] = {virtual_file!r}


def open(file, mode="r", *args, **kwargs):
    import builtins as _builtins
    import io as _io
    import os as _os

    if _os.fspath(file) == _os.path.join(_os.path.dirname(__file__), EVOKERNEL_CASES_FILE) and "r" in mode:
        text = EVOKERNEL_CASES[EVOKERNEL_CASE] + "\\n"
        return _io.BytesIO(text.encode()) if "b" in mode else _io.StringIO(text)
    return _builtins.open(file, mode, *args, **kwargs)


def get_inputs():
    groups = list(get_input_groups())
    if len(groups) != 1:
        raise RuntimeError(f"get_input_groups() made {{len(groups)}} groups from one case (EVOKERNEL_CASE="
                           f"{{EVOKERNEL_CASE}}): expected one group per line of its JSON file")
    return list(groups[0])
'''


class CasesError(ValueError):
    """The cases file of a task is missing or malformed (the message names the file and the line)."""


def is_cases_format(defined: set[str]) -> bool:
    """A task that defines ``get_input_groups`` instead of ``get_inputs``."""
    return "get_input_groups" in defined and "get_inputs" not in defined


def cases_path(path: Path, tree: ast.Module) -> Path:
    """The JSON file the task reads: a ``"*.json"`` literal of its source that exists beside it, else
    ``<stem>.json`` (NPUKernelBench builds the name from ``__file__`` either way)."""
    names = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.endswith(".json") and "/" not in n.value]
    for name in names:
        if (path.parent / name).is_file():
            return path.parent / name
    return path.with_suffix(".json")


def read_cases(json_path: Path) -> list[str]:
    """One compact JSON line per case; ``CasesError`` naming the file and line of anything else."""
    if not json_path.is_file():
        raise CasesError(f"{json_path}: the cases file of this task (get_input_groups() reads it) is missing")
    try:
        text = json_path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CasesError(f"{json_path}: cannot read the cases file: {exc}") from None
    cases = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CasesError(f"{json_path}:{lineno}: malformed JSON case: {exc.msg} (column {exc.colno})") from None
        if not isinstance(case, dict) or not isinstance(case.get("inputs"), list) \
                or not all(isinstance(i, dict) for i in case["inputs"]):
            raise CasesError(f"{json_path}:{lineno}: a case is an object with an \"inputs\" list of objects")
        cases.append(json.dumps(case, separators=(",", ":")))
    if not cases:
        raise CasesError(f"{json_path}: no cases (one JSON object per line)")
    return cases


def to_kernelbench(path: Path, source: str, tree: ast.Module) -> str:
    """The task's source with its cases appended (see the module docstring)."""
    json_path = cases_path(path, tree)
    cases = read_cases(json_path)
    return source.rstrip("\n") + "\n" + shim(cases, json_path.name, path.stem)


def shim(cases: list[str] | tuple[str, ...], json_name: str, stem: str) -> str:
    body = "(\n" + "".join(f"    {c!r},\n" for c in cases) + ")"
    return _SHIM.format(marker=MARKER, json_name=json_name, n=len(cases), cases=body,
                        virtual_file=f"{VIRTUAL_DIR}/{stem}.py")


# --- fitting ------------------------------------------------------------------------------------------------
DTYPE_BYTES = {"float64": 8, "double": 8, "int64": 8, "float32": 4, "float": 4, "int32": 4, "int": 4,
               "float16": 2, "half": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
MIN_DIM = 32  # dimensions below this are structure (heads, groups, a batch of 1, an axis): never scaled


def case_bytes(case: dict[str, Any]) -> int:
    """Bytes of a case's tensor inputs, from their JSON shapes and dtypes (4 bytes when unknown)."""
    total = 0
    for inp in case.get("inputs") or []:
        shape = inp.get("shape")
        if inp.get("type") == "tensor" and isinstance(shape, list) and all(isinstance(d, int) for d in shape):
            n = 1
            for d in shape:
                n *= max(int(d), 0)
            total += n * DTYPE_BYTES.get(str(inp.get("dtype")), 4)
    return total


def _halve(case: dict[str, Any]) -> dict[str, Any] | None:
    """Every dimension >= MIN_DIM halved, and attribute integers equal to one of them; None if none is."""
    big = {d for inp in case["inputs"] if inp.get("type") == "tensor" and isinstance(inp.get("shape"), list)
           for d in inp["shape"] if isinstance(d, int) and d >= MIN_DIM}
    if not big:
        return None
    m = {d: max(MIN_DIM // 2, d // 2) for d in big}

    def sub(v: Any) -> Any:
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return m.get(v, v)
        if isinstance(v, list):
            return [sub(x) for x in v]
        return v

    out = []
    for inp in case["inputs"]:
        inp = dict(inp)
        if inp.get("type") == "tensor" and isinstance(inp.get("shape"), list):
            inp["shape"] = sub(inp["shape"])
        elif "value" in inp:
            inp["value"] = sub(inp["value"])
        out.append(inp)
    return {**case, "inputs": out}


def fit_case(text: str, max_bytes: int) -> tuple[str, int]:
    """A case (JSON line) scaled until inputs + an output as large as the largest input fit ``max_bytes``;
    (the case, its bytes)."""
    case = json.loads(text)

    def need(c: dict[str, Any]) -> int:
        ins = case_bytes(c)
        largest = max((case_bytes({"inputs": [i]}) for i in c["inputs"]), default=0)
        return ins + largest

    size = need(case)
    changed = False
    while size > max_bytes:
        smaller = _halve(case)
        if smaller is None:
            break
        case, size, changed = smaller, need(smaller), True
    return (json.dumps(case, separators=(",", ":")) if changed else text), size


def describe_cases(record: dict[str, Any]) -> str:
    """What a cases fit changed, for a one-line summary."""
    return f"{record.get('cases_scaled', 0)}/{record.get('cases', 0)} cases scaled"
