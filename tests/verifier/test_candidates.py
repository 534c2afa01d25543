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
    from evokernel.tasks.load import load_task

    entry = MANIFEST[name]
    task_path = ROOT / entry["task"]
    full = load_task(task_path)
    task = load_task(task_path, {k: v for k, v in SHRINK.items() if k in full.constants})
    verdict = verifier.verify(task, (HERE / name).read_text())
    assert not verdict.feasible, f"{name} passed: {entry['why']}"
    assert verdict.failed_gate == entry["expect_gate"], (name, entry["why"], verdict.feedback)
    assert verdict.feedback.strip()


def test_an_output_far_larger_than_the_references_names_the_expected_shape(verifier):
    # a real 1.5B reply to sum over dim 1: `out = torch.empty_like(x)`, 1024x the reference's output
    from evokernel.tasks.load import load_task

    task = load_task(ROOT / "evokernel" / "suites" / "cpu_l1" / "08_sum_dim.py", {"batch_size": 4})
    src = '''
import torch
import torch.nn as nn
from evokernel.cpu import load_cpp

lib = load_cpp(r"""
#include <cstdint>
extern "C" void fill(float* y, int64_t n) { for (int64_t i = 0; i < n; ++i) y[i] = 0.0f; }
""")


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        out = torch.empty_like(x)
        lib.fill(out, out.numel())
        return out
'''
    verdict = verifier.verify(task, src)
    assert not verdict.feasible and "larger than the space reserved" in verdict.feedback
    assert "the reference returns shape (4, 1024)" in verdict.feedback
