"""Test helper: real files of the running test that a sandboxed build must not be able to find (the build
sandbox's neutral-paths tests, cpu and ascend-sim: tests/verifier/trusted/test_build_sandbox.py,
tests/verifier/ascend_sim/test_neutral_build.py)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from evokernel.runtime.paths import default_cache_dir

CHECKOUT = Path(__file__).resolve().parents[1]


def a_file_in(root: Path, depth: int = 3) -> str:
    """Some file under ``root`` (__has_include answers 0 for a folder, so a probe names a file)."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return ""
    for e in entries:
        if e.is_file(follow_symlinks=False):
            return e.path
    for e in entries:
        if depth and e.is_dir(follow_symlinks=False) and (found := a_file_in(Path(e.path), depth - 1)):
            return found
    return ""


def host_places(cache: Path, **more: str) -> dict[str, str]:
    """The checkout, the virtualenv, the Python headers, $HOME, the caches (one file written in ``cache``),
    ``/proc/self/mountinfo`` and ``more`` (names are C identifiers): those that exist."""
    (cache / "probe.h").write_text("// a file in the build cache\n")
    places = {
        "checkout": str(CHECKOUT / "README.md"),
        "venv": str(Path(sys.prefix) / "pyvenv.cfg"),
        "python": str(Path(sys.base_prefix) / "include" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
                      / "Python.h"),
        "home": a_file_in(Path(os.path.expanduser("~")), 1),
        "cache": a_file_in(default_cache_dir()),
        "test_cache": str(cache / "probe.h"),
        **more,
        "proc": "/proc/self/mountinfo",
    }
    return {k: v for k, v in places.items() if v and Path(v).is_file()}
