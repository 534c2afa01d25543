"""The shipped Ascend C examples are feasible on the tasks they name, with an estimated latency."""
from pathlib import Path

import pytest
from verdicts import unexplained_warnings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "evokernel" / "examples" / "ascend").glob("*.py"))


def _task_of(example: Path) -> str:
    line = next(ln for ln in example.read_text().splitlines()[:8] if ln.startswith("task:"))
    return line.split(":", 1)[1].strip()


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_ascend_example_is_feasible(ascend_verifier, suite_task, example):
    task = suite_task(_task_of(example))
    v = ascend_verifier.verify(task, example.read_text())
    assert v.feasible, v.feedback
    assert v.latency_kind == "estimate" and v.latency_ms > 0
    assert not unexplained_warnings(v), unexplained_warnings(v)
