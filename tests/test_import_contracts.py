"""The import contracts of pyproject.toml ([tool.importlinter]) hold over the whole installed layout (the mapped
subpackages included: scripts/lint_imports.py), and they catch what they are for."""
import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("lint_imports", ROOT / "scripts" / "lint_imports.py")
lint_imports = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lint_imports)


def copy_checkout(tmp: Path) -> Path:
    """The package's folders and pyproject.toml, to break a contract in."""
    for folder in ("evokernel", *lint_imports.MAPPED):
        shutil.copytree(ROOT / folder, tmp / folder, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def lint_with_import(tmp: Path, module: str, function: str, imported: str):
    """Lint a copy of the checkout in which ``module`` (a path under it) gains a function-level import of
    ``imported``; the contracts must fail (the result is returned for the test's own assertions)."""
    root = copy_checkout(tmp)
    mod = root / module
    mod.write_text(mod.read_text() + f"\n\ndef {function}():\n    {imported}\n\n    return None\n")
    r = lint_imports.lint(root / "pyproject.toml", root)
    assert r.returncode != 0, r.stdout[-3000:]
    return r


def test_the_contracts_are_kept():
    r = lint_imports.lint(ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout
    # the mapped subpackages are in the graph (a contract on evokernel.verifier would otherwise pass vacuously)
    assert "verifier: the sandboxed side never imports the trusted side KEPT" in r.stdout


def test_the_staged_layout_holds_the_mapped_subpackages(tmp_path):
    lint_imports.stage(tmp_path)
    for top in lint_imports.MAPPED:
        assert (tmp_path / "evokernel" / top / "__init__.py").is_file(), top
    assert (tmp_path / "evokernel" / "verifier" / "sandboxed" / "worker.py").is_file()


def test_a_cli_module_importing_its_parent_breaks_the_cli_contract(tmp_path):
    """The cycle the contract forbids (cli -> cli_run -> cli, as it was): a copy of the package with a command
    module importing the entry point fails the lint, naming the import."""
    r = lint_with_import(tmp_path, "evokernel/cli/run.py", "_parent", "from evokernel.cli.app import app")
    assert "BROKEN" in r.stdout and "evokernel.cli.run -> evokernel.cli.app" in r.stdout


def test_a_sandboxed_module_importing_the_trusted_side_breaks_the_verifier_contract(tmp_path):
    """The trust boundary: code that runs in the sandbox reaching the parent's machinery (here the trials judge,
    through a function-level import) fails the lint."""
    r = lint_with_import(tmp_path, "verifier/sandboxed/trial_inputs.py", "_judge",
                         "from evokernel.verifier.trusted import trials")
    assert "sandboxed side never imports the trusted side BROKEN" in r.stdout
    assert "evokernel.verifier.sandboxed.trial_inputs -> evokernel.verifier.trusted.trials" in r.stdout


def test_a_trusted_gate_importing_a_backend_breaks_the_neutral_contract(tmp_path):
    """The gates reach a target only through the Backend interface: the emulator's report formatting imported
    into the trials judge again (as it was, function-level) fails the lint."""
    r = lint_with_import(tmp_path, "verifier/trusted/trials.py", "_warnings",
                         "from evokernel.verifier.backends.ascend_sim.report import report_warnings")
    assert "never special-case a target (what differs reaches them through the Backend interface) BROKEN" in \
        " ".join(r.stdout.split())


_lazy_spec = importlib.util.spec_from_file_location("lazy_imports", ROOT / "scripts" / "lazy_imports.py")
lazy_imports = importlib.util.module_from_spec(_lazy_spec)
_lazy_spec.loader.exec_module(lazy_imports)
# the homes the catch-all was dissolved into: every function-level import there says why it is not at the top
HOMES = ["evokernel/cli", "evokernel/tasks", "evokernel/runtime", "evokernel/generators/local"]


def test_every_function_level_import_of_the_homes_has_its_reason():
    files = [p for home in HOMES for p in sorted((ROOT / home).rglob("*.py"))]
    files += [ROOT / "evokernel" / "cpu.py", ROOT / "evokernel" / "settings.py"]
    missing = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in files for line, text in lazy_imports.unexplained(p)]
    assert missing == []


def test_an_import_without_a_reason_is_reported(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def a():\n    # lazy: torch, only when probing\n    import torch\n    import torch.fx\n\n    return torch\n\n\n"
                 "def b():\n    import json\n\n    return json\n")
    assert lazy_imports.unexplained(f) == [(10, "import json")]


def test_a_lower_room_importing_a_higher_one_breaks_the_top_layers(tmp_path):
    """The rooms' order (docs/architecture.md): the tasks reaching up into the graph fail the lint; so does the
    backend registry importing anything of the project."""
    root = copy_checkout(tmp_path)
    fit = root / "evokernel" / "tasks" / "fit.py"
    fit.write_text(fit.read_text() + "\n\ndef _up():\n    from evokernel.graph import context\n\n    return context\n")
    registry = root / "verifier" / "backends" / "registry.py"
    registry.write_text(registry.read_text() + "\nfrom evokernel.tasks import task as _task  # noqa: E402\n")
    r = lint_imports.lint(root / "pyproject.toml", root)
    assert r.returncode != 0, r.stdout[-3000:]
    assert "evokernel.tasks.fit -> evokernel.graph.context" in r.stdout
    assert "registry imports nothing of the project (every room may read it) BROKEN" in r.stdout
