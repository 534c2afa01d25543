"""Built-in suites: every task runs, and trivial answers (zeros, a constant, a copy of an input)
are rejected by the verifier's comparison at the paper's tolerance. Task files are ours, so they
are executed in-process here."""
import pytest
import torch

from evokernel.tasks.load import load_tasks
from evokernel.verifier.trusted.correctness import DEFAULT_TOL, compare

SUITES = ("cpu-l1", "cpu-l2", "npu-l1", "npu-l2")
TASKS = [t for s in SUITES for t in load_tasks(s)]
CATEGORIES = {"activation", "elementwise", "reduction", "normalization", "softmax", "matmul", "pooling", "loss",
              "scan", "convolution", "fusion"}


def _build(task):
    ns: dict = {}
    exec(compile(task.source, str(task.path), "exec"), ns)
    torch.manual_seed(1)
    model = ns["Model"](*ns["get_init_inputs"]())
    torch.manual_seed(2)
    return model, ns["get_inputs"]()


@pytest.mark.parametrize("task", TASKS, ids=[f"{t.suite}/{t.name}" for t in TASKS])
def test_trivial_answers_fail(task):
    model, inputs = _build(task)
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
    assert task.category in CATEGORIES and task.description


# what the ascend-sim emulator can run in reasonable time (it checks every UB byte)
NPU_MAX_ELEMENTS = 512 * 1024


def test_npu_suites_fit_the_emulator():
    l1, l2 = load_tasks("npu-l1"), load_tasks("npu-l2")
    assert len(l1) >= 20 and len(l2) >= 8
    assert all(t.category == "fusion" for t in l2)
    assert not any(t.category in {"pooling", "scan", "fusion"} for t in l1)
    # convolutions (36-39): float32, 1-D and 2-D, dense, pointwise and depthwise
    convs = [t for t in l1 if t.category == "convolution"]
    assert len(convs) >= 4 and all(_build(t)[1][0].dtype == torch.float32 for t in convs)
    # matmul runs on the emulated cube unit: float16 or float32, with N a multiple of 16 (Fixpipe's column blocks)
    for t in l1:
        if t.category == "matmul":
            model, (a, b) = _build(t)
            with torch.no_grad():
                n = model(a, b).shape[-1]
            assert a.dtype == b.dtype and a.dtype in (torch.float16, torch.float32) and n % 16 == 0, t.name
    half, row_tails, flat_tails = [], [], []
    for task in l1 + l2:
        _, inputs = _build(task)
        for x in inputs:
            assert x.dtype in (torch.float32, torch.float16), (task.name, x.dtype)
            assert 16 * 1024 <= x.numel() <= NPU_MAX_ELEMENTS, (task.name, tuple(x.shape))
        if task in l1 and inputs[0].dtype == torch.float16:
            half.append(task.name)
        # rows, or the whole tensor, not a whole number of 32-byte blocks: DataCopy alone drops the tail
        if any(x.shape[-1] * x.element_size() % 32 for x in inputs):
            row_tails.append(task.name)
        if any(x.numel() * x.element_size() % 32 for x in inputs):
            flat_tails.append(task.name)
    assert len(half) >= 3
    assert len(row_tails) >= 4 and len(flat_tails) >= 3


def test_npu_half_tasks_stay_half():
    for task in load_tasks("npu-l1"):
        model, inputs = _build(task)
        if inputs[0].dtype != torch.float16:
            continue
        with torch.no_grad():
            assert model(*inputs).dtype == torch.float16, task.name
