"""Built-in suites: every task runs, and trivial answers (zeros, a constant, a copy of an input)
are rejected by the verifier's comparison at the paper's tolerance. Task files are ours, so they
are executed in-process here."""
import pytest
import torch

from evokernel.tasks import load_tasks
from evokernel.verifier.trusted.correctness import DEFAULT_TOL, compare

TASKS = load_tasks("cpu-l1") + load_tasks("cpu-l2")


@pytest.mark.parametrize("task", TASKS, ids=[f"{t.suite}/{t.name}" for t in TASKS])
def test_trivial_answers_fail(task):
    ns: dict = {}
    exec(compile(task.source, str(task.path), "exec"), ns)
    torch.manual_seed(1)
    model = ns["Model"](*ns["get_init_inputs"]())
    torch.manual_seed(2)
    inputs = ns["get_inputs"]()
    with torch.no_grad():
        ref = model(*[x.clone() for x in inputs])
    assert type(ref) is torch.Tensor and torch.isfinite(ref).all()
    floats = [x for x in inputs if x.is_floating_point()]
    assert not compare(torch.zeros_like(ref), ref, floats, DEFAULT_TOL).ok
    if ref.numel() > 1:
        assert not compare(torch.full_like(ref, float(ref.mean())), ref, floats, DEFAULT_TOL).ok
    for x in floats:
        if x.shape == ref.shape:
            assert not compare(x.clone(), ref, floats, DEFAULT_TOL).ok
    assert task.category != "uncategorized" and task.description
