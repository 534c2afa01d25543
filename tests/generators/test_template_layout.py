"""The template generator's architecture, enforced: the import-linter contracts of pyproject.toml (layers: generator >
cpu | ascend > front; inside each back end the family table above independent families above what they share; no
cycle between siblings), no module-level import cycle at all, no module importing a package ``__init__`` of the
template (the sub-packages' are docstrings; the top one is the public entry for code outside), function-level
imports only with a reason, and the family tables complete. Each contract is also shown to catch the import that
would break it."""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import grimp
import pytest
from importlinter import api as importlinter_api
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract

T = "evokernel.generators.template"
ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "evokernel" / "generators" / "template"


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("evokernel", cache_dir=None, exclude_type_checking_imports=True)


@pytest.fixture(scope="module")
def contracts():
    config = importlinter_api.read_configuration(str(ROOT / "pyproject.toml"))
    types = {c.type_name: c for c in (LayersContract, AcyclicSiblingsContract, IndependenceContract, ForbiddenContract)}
    out = {}
    for options in config["contracts_options"]:
        cls = types[options["type"]]
        out[options["id"]] = cls(name=options["name"], session_options=config["session_options"],
                                 contract_options=options)
    return out


def _kept(contract, graph) -> bool:
    return contract.check(copy.deepcopy(graph), verbose=False).kept


def test_every_contract_is_kept(contracts, graph):
    """Each template contract on this test's graph (the package's own folder, where the template lives); the whole
    lint, over the installed layout with its mapped subpackages, is tests/test_import_contracts.py's."""
    assert set(contracts) >= {"template-layers", "template-front", "template-cpu", "template-ascend", "template-acyclic"}
    broken = [cid for cid, c in contracts.items() if cid.startswith("template-") and not _kept(c, graph)]
    assert broken == [], f"broken import contracts: {broken} (run `python scripts/lint_imports.py` for the chains)"


@pytest.mark.parametrize("cid, importer, imported", [
    ("template-layers", "front.lower", "cpu.stage"),  # the front end reaching into a back end
    ("template-layers", "cpu.stage", "ascend.names"),  # one back end into the other
    ("template-layers", "ascend.rowop", "generator"),  # upward to the policy
    ("template-front", "front.graph", "front.lower"),  # the IR above the lowering
    ("template-cpu", "cpu.conv", "cpu.gemm"),  # a family into another (the packed gemm is cpu.matmul's)
    ("template-cpu", "cpu.stage", "cpu.families"),  # a shared module up to the table
    ("template-ascend", "ascend.conv.implicit_gemm", "ascend.cube.kernel"),  # conv into cube (the GEMM is ascend.gemm)
    ("template-ascend", "ascend.cube.rows", "ascend.row"),  # cube into the row family (the row program is shared)
    ("template-ascend", "ascend.gemm.op", "ascend.cube.family"),  # shared engine up to a family
    ("template-acyclic", "ascend.gemm.op", "ascend.cube.family"),  # cube.family -> gemm.op -> back: a cycle
    ("template-acyclic", "front.graph", "front.trace"),
])
def test_each_contract_catches_the_import_that_breaks_it(contracts, graph, cid, importer, imported):
    broken = copy.deepcopy(graph)
    broken.add_import(importer=f"{T}.{importer}", imported=f"{T}.{imported}", line_number=1, line_contents="x")
    assert _kept(contracts[cid], graph)
    assert not _kept(contracts[cid], broken)


def _template_modules(graph) -> list[str]:
    return sorted(m for m in graph.modules if m == T or m.startswith(T + "."))


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (or a self-import) among the template's modules."""
    mods = _template_modules(graph)
    known = set(mods)
    adj = {m: sorted(x for x in graph.find_modules_directly_imported_by(m) if x in known) for m in mods}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in adj[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in adj[v]:
                out.append(sorted(comp))

    for m in mods:
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_at_module_level(graph):
    assert _cycles(graph) == []
    looped = copy.deepcopy(graph)  # the check sees one: the package entry imported back from inside
    looped.add_import(importer=f"{T}.front.search", imported=T, line_number=1, line_contents="x")
    assert _cycles(looped)


def _package_inits(graph) -> set[str]:
    return {m for m in _template_modules(graph) if graph.find_children(m)}


def test_no_module_imports_a_package_init_of_the_template(graph):
    inits = _package_inits(graph)
    assert {T, f"{T}.front", f"{T}.cpu", f"{T}.ascend", f"{T}.ascend.cube", f"{T}.ascend.conv",
            f"{T}.ascend.gemm"} <= inits
    hub_users = sorted((m, i) for m in _template_modules(graph) for i in graph.find_modules_directly_imported_by(m)
                       if i in inits)
    assert hub_users == []
    for init in sorted(inits - {T}):  # the sub-packages' __init__ files are a docstring only: nothing to re-export
        path = PACKAGE.joinpath(*init.split(".")[3:], "__init__.py")
        body = ast.parse(path.read_text()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr), f"{path} holds more than its docstring"


def function_level_imports(source: str) -> list[tuple[int, str]]:
    """(line, import) of each import inside a function whose line has no ``# lazy: <reason>`` comment."""
    lines = source.splitlines()
    out = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and "# lazy:" not in lines[node.lineno - 1]:
                    out.append((node.lineno, ast.unparse(node)))
    return out


def test_function_level_imports_say_why():
    assert function_level_imports("def f():\n    import json\n")  # the check sees one without a reason
    assert not function_level_imports("def f():\n    import torch  # lazy: start-up time of the CLI\n")
    found = {str(p.relative_to(ROOT)): function_level_imports(p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}
    assert {k: v for k, v in found.items() if v} == {}


def test_family_tables_are_complete():
    """Every row of both tables provides what its table documents; every stage family the front end plans has a
    cpu writer; knob defaults lie in their spaces; the transforms of both targets have unique names."""
    from evokernel.generators.template.ascend import schedules as ascend_schedules
    from evokernel.generators.template.ascend.families import BY_STAGE
    from evokernel.generators.template.ascend.families import FAMILIES as ASCEND
    from evokernel.generators.template.cpu import schedules as cpu_schedules
    from evokernel.generators.template.cpu.families import FAMILIES as CPU
    from evokernel.generators.template.cpu.stage import StageWriter
    from evokernel.generators.template.front.lower import FAMILY_RANK

    assert set(CPU) == set(FAMILY_RANK)
    for name, fam in CPU.items():
        assert fam.NAME == name and issubclass(fam.Writer, StageWriter)
        assert set(fam.DEFAULTS) == set(fam.KNOBS) and all(v in fam.KNOBS[k] for k, v in fam.DEFAULTS.items())
    for name, fam in ASCEND.items():
        assert fam.NAME == name
        for attr in ("STAGE", "SEVERAL_STAGES", "KNOBS", "DEFAULTS", "TRANSFORMS", "priors", "render_project"):
            assert hasattr(fam, attr), f"{name} lacks {attr}"
        assert fam.STAGE is None or callable(fam.prepare)  # a family with a stage of its own is its entry
        assert set(fam.DEFAULTS) == set(fam.KNOBS) and all(v in fam.KNOBS[k] for k, v in fam.DEFAULTS.items())
    assert set(BY_STAGE) == {"row", "midreduce", "gemm", "conv"}
    for space in (cpu_schedules, ascend_schedules):
        assert len(space.TRANSFORM_NAMES) == len(set(space.TRANSFORM_NAMES))
        knobs = set(space.CONSERVATIVE)
        assert all(set(changes) <= knobs for _, changes in space.TRANSFORMS)
