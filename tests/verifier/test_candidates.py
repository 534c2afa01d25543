"""The adversarial candidate set (tests/verifier/candidates/manifest.toml): every file must be
rejected, by the gate the manifest names. Sizes are shrunk to keep the suite quick; none of the
hacks depends on the size."""
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "candidates"
MANIFEST = tomllib.loads((HERE / "manifest.toml").read_text())
SHRINK = {"batch_size": 4}


def test_manifest_covers_every_file():
    files = {p.name for p in HERE.glob("*.py")}
    assert files == set(MANIFEST), files ^ set(MANIFEST)
    assert sum(1 for e in MANIFEST.values() if e["expect_gate"] == "hack") >= 15


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_candidate_is_rejected(verifier, name):
    from evokernel.tasks import load_task

    entry = MANIFEST[name]
    task_path = ROOT / entry["task"]
    full = load_task(task_path)
    task = load_task(task_path, {k: v for k, v in SHRINK.items() if k in full.constants})
    verdict = verifier.verify(task, (HERE / name).read_text())
    assert not verdict.feasible, f"{name} passed: {entry['why']}"
    assert verdict.failed_gate == entry["expect_gate"], (name, entry["why"], verdict.feedback)
    assert verdict.feedback.strip()
