"""The import contracts of pyproject.toml ([tool.importlinter]) hold, and they catch what they are for."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lint(cwd: Path, extra_path: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if extra_path is not None:  # a copy of the package, found before the installed one
        env["PYTHONPATH"] = str(extra_path)
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", "--config", str(cwd / "pyproject.toml"),
                           "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_contracts_are_kept():
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_a_cli_module_importing_its_parent_breaks_the_cli_contract(tmp_path):
    """The cycle the contract forbids (cli -> cli_run -> cli, as it was): a copy of the package with a command
    module importing the entry point fails the lint, naming the import."""
    shutil.copytree(ROOT / "evokernel", tmp_path / "evokernel", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    run = tmp_path / "evokernel" / "cli_run.py"
    run.write_text(run.read_text() + "\n\ndef _parent():\n    from evokernel.cli import app\n\n    return app\n")
    r = lint(tmp_path, tmp_path)
    assert r.returncode != 0, r.stdout[-3000:]
    assert "BROKEN" in r.stdout and "evokernel.cli_run -> evokernel.cli" in r.stdout
