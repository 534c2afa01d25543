"""Which code decides a verdict: a cheap hash that changes with any upgrade or edit of the package or torch.

The background verifier refuses a client of another code version (evokernel/cli/verify_daemon.py), and a resumed
run reuses a recorded verdict only when it was judged by the same code (evokernel/nodes/verdict_cache.py).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["code_version"]

_VERSION: str | None = None
# every folder setup.py installs as evokernel.<name> (a test keeps the two lists equal): the nodes and the graph decide
# a run's verdict as well (the LLM judge, what is reused, strict mode), not the verifier alone (red-team round 5)
TOP_PACKAGES = ("graph", "nodes", "memory", "verifier", "prompts", "evals")


def code_version() -> str:
    """A hash of the code that decides a verdict: the package version, torch's version file, and the size and
    mtime of every file of the package and of each top-level folder it installs (stat only, a few ms; a reinstall
    or an edit anywhere changes it)."""
    global _VERSION
    if _VERSION is not None:
        return _VERSION
    import importlib.util  # lazy: only when the code version is first asked for

    import evokernel  # lazy: as above

    h = hashlib.sha256(evokernel.__version__.encode())
    roots = list(evokernel.__path__)
    for top in TOP_PACKAGES:  # the repository's top-level folders, installed under the namespace (setup.py)
        spec = importlib.util.find_spec(f"evokernel.{top}")
        roots += list(spec.submodule_search_locations or []) if spec else []
    torch = importlib.util.find_spec("torch")  # found, not imported: its version file names the build
    if torch is not None and torch.origin:
        try:
            h.update(Path(torch.origin).with_name("version.py").read_bytes())
        except OSError:
            h.update(str(torch.origin).encode())
    for root in sorted(set(roots)):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith((".pyc", ".pyo")):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                h.update(f"{os.path.relpath(os.path.join(dirpath, name), root)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    _VERSION = h.hexdigest()[:20]
    return _VERSION
