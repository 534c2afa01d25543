"""The packages a task file imports, checked before anything runs it: a package this environment lacks is a
one-line error naming it and the command that installs it (not a traceback from inside a worker later).

Only imports that are not inside a ``try`` (a guarded import is the file's own fallback) are checked, by
``importlib.util.find_spec`` on the top-level name: nothing is imported here.
"""
from __future__ import annotations

import ast
import importlib.util
import sys

# import name -> the distribution that provides it, where they differ
PIP_NAMES = {"cv2": "opencv-python", "sklearn": "scikit-learn", "yaml": "pyyaml", "PIL": "pillow",
             "skimage": "scikit-image", "mamba_ssm": "mamba-ssm", "causal_conv1d": "causal-conv1d",
             "flash_attn": "flash-attn", "torch_npu": "torch-npu"}


def imported_packages(tree: ast.Module) -> list[tuple[str, int]]:
    """(top-level package, line) of every import outside a ``try`` block, in order, without repeats."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for inner in node.body:
                guarded.update(id(n) for n in ast.walk(inner))
    seen: dict[str, int] = {}
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            seen.setdefault(name.split(".")[0], node.lineno)
    return sorted(seen.items(), key=lambda kv: kv[1])


def missing_packages(tree: ast.Module) -> list[tuple[str, int]]:
    """The imported top-level packages that cannot be found in this environment."""
    out = []
    for name, line in imported_packages(tree):
        if name in sys.builtin_module_names or name in sys.modules:
            continue
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append((name, line))
    return out


def install_hint(name: str) -> str:
    return f"pip install {PIP_NAMES.get(name, name)}"
