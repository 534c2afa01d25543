"""Run import-linter on the installed layout of the evokernel package (the contracts of pyproject.toml).

setup.py installs the repository's top-level folders (graph/, nodes/, memory/, prompts/, verifier/, evals/) as
subpackages of evokernel; grimp, which builds import-linter's graph, walks the package's own folder only and
would not see them. So the installed layout (each subpackage where the import system finds it) is staged as
one tree of copies of its .py files, and import-linter runs on that tree: every contract covers the whole
namespace, e.g. verifier.sandboxed never importing verifier.trusted.

    python scripts/lint_imports.py [--root DIR]   # DIR: a checkout to lint instead of the installed one
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MAPPED = ("graph", "nodes", "memory", "prompts", "verifier", "evals")  # setup.py's TOP


def layout(root: Path | None = None) -> dict[str, Path]:
    """Package -> its folder: the installed one's, or a checkout's (``root``, mapped as setup.py maps it)."""
    if root is not None:
        return {"evokernel": root / "evokernel", **{f"evokernel.{t}": root / t for t in MAPPED}}
    out = {}
    for name in ("evokernel", *(f"evokernel.{t}" for t in MAPPED)):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations, name
        out[name] = Path(list(spec.submodule_search_locations)[0])
    return out


def stage(dest: Path, root: Path | None = None) -> Path:
    """Copies of the package's .py files at ``dest``/evokernel/..., laid out as they import; returns ``dest``."""
    def not_code(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or (Path(folder, n).is_file() and not n.endswith(".py"))]

    for name, folder in layout(root).items():
        shutil.copytree(folder, dest.joinpath(*name.split(".")), ignore=not_code, dirs_exist_ok=True)
    return dest


def lint(config: Path, root: Path | None = None) -> subprocess.CompletedProcess:
    """import-linter's exit code and report for ``config`` over the staged layout."""
    with tempfile.TemporaryDirectory(prefix="evokernel-lint-") as tmp:
        stage(Path(tmp), root)
        env = dict(os.environ, PYTHONPATH=tmp)  # the staged copy is found before the installed package
        return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                               "sys.exit(lint_imports_command())", str(config), "--no-cache"],
                              cwd=tmp, env=env, capture_output=True, text=True, timeout=600)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="lint this checkout (default: the installed evokernel)")
    args = ap.parse_args()
    config = (args.root or Path(__file__).resolve().parent.parent) / "pyproject.toml"
    r = lint(config, args.root)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
