"""evokernel/runtime/code_version.py: the hash of the code that decides a verdict covers every folder the package
installs (red-team round 5: an edit of nodes/ or graph/ left the version unchanged, so a resumed run reused
verdicts judged by the old code)."""
import ast
import os
from pathlib import Path

import pytest

from evokernel.runtime import code_version as cv

ROOT = Path(__file__).resolve().parents[2]


def test_the_hashed_folders_are_the_installed_ones():
    tree = ast.parse((ROOT / "setup.py").read_text())
    top = next(node.value for node in tree.body if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "TOP" for t in node.targets))
    assert tuple(ast.literal_eval(top)) == cv.TOP_PACKAGES


@pytest.mark.parametrize("rel", ["nodes/verify.py", "graph/resources.py", "verifier/trusted/trials.py",
                                 "evokernel/cpu.py", "prompts/render.py"])
def test_an_edit_anywhere_changes_the_version(rel, monkeypatch):
    """An edit is seen as a file's new mtime (stat only); the edit is played by a stat that answers a later
    mtime for that one file, so the checkout is never touched (other tests may hash it meanwhile)."""
    target = str(ROOT / rel)
    real_stat = os.stat

    class Edited:
        def __init__(self, st):
            self.st_size, self.st_mtime_ns = st.st_size, st.st_mtime_ns + 1_000_000_000

    def stat(path, *a, **k):
        st = real_stat(path, *a, **k)
        return Edited(st) if os.path.realpath(path) == os.path.realpath(target) else st

    monkeypatch.setattr(cv, "_VERSION", None)
    before = cv.code_version()
    monkeypatch.setattr(cv, "_VERSION", None)
    monkeypatch.setattr(cv.os, "stat", stat)
    after = cv.code_version()
    monkeypatch.setattr(cv.os, "stat", real_stat)
    monkeypatch.setattr(cv, "_VERSION", None)
    assert after != before
    assert cv.code_version() == before
