"""NPUKernelBench's format (get_input_groups() over a JSON-lines file of cases) as a task with N cases."""
from __future__ import annotations

import json
import shutil
import types
from pathlib import Path

import pytest
import torch

from evokernel.task_formats import cases
from evokernel.tasks.task import TaskError
from evokernel.tasks.load import load_task, load_tasks
from evokernel.verifier.sandboxed.trial_inputs import decode_args, encode_args

DATA = Path(__file__).resolve().parent / "data"
TASK = DATA / "cases" / "01_layer_norm.py"


def _module(task, case: int) -> types.ModuleType:
    m = types.ModuleType("task")
    m.__file__ = "/somewhere/else/task.py"  # the worker's name for the module: the cases do not depend on it
    exec(compile(task.source, "task.py", "exec"), m.__dict__)
    m.EVOKERNEL_CASE = case
    return m


def test_loads_as_one_task_with_its_cases():
    task = load_task(TASK)
    assert len(task.cases) == 3 and not [k for k in task.constants if k.startswith("EVOKERNEL")]
    assert json.loads(task.cases[1])["inputs"][0]["shape"] == [2, 33, 128]
    for k, (dtype, shape, n) in enumerate([(torch.float32, (4, 64, 256), 256), (torch.float16, (2, 33, 128), 128),
                                           (torch.bfloat16, (8, 512), 512)]):
        x, normalized_shape, w, b = _module(task, k).get_inputs()
        assert (x.dtype, tuple(x.shape), normalized_shape, tuple(w.shape)) == (dtype, shape, [n], (n,))
    assert task.category == "normalization"


def test_a_case_costs_one_case(tmp_path):
    """get_inputs() reads one line: get_input_groups() never sees the other cases."""
    task = load_task(TASK)
    m = _module(task, 2)
    assert len(m.get_input_groups()) == 1


def test_bad_cases_files_name_the_file_and_line(tmp_path):
    shutil.copy(TASK, tmp_path / "t.py")
    with pytest.raises(TaskError, match=r"t\.json: the cases file .* is missing"):
        load_task(tmp_path / "t.py")
    lines = (DATA / "cases" / "01_layer_norm.json").read_text().splitlines()
    (tmp_path / "t.json").write_text(lines[0] + "\n" + lines[1][:40] + "\n")
    with pytest.raises(TaskError, match=r"t\.json:2: malformed JSON case"):
        load_task(tmp_path / "t.py")
    (tmp_path / "t.json").write_text('{"outputs": []}\n')
    with pytest.raises(TaskError, match=r"t\.json:1: a case is an object with an \"inputs\" list"):
        load_task(tmp_path / "t.py")


def test_fit_scales_the_cases_that_do_not_fit():
    big = {"inputs": [{"name": "x", "type": "tensor", "dtype": "float32", "shape": [1, 4096, 4096]},
                      {"name": "normalized_shape", "type": "attr", "value": [4096]},
                      {"name": "weight", "type": "tensor", "dtype": "float32", "shape": [4096]}]}
    text, size = cases.fit_case(json.dumps(big), 8 << 20)
    fitted = json.loads(text)["inputs"]
    assert size <= 8 << 20
    n = fitted[0]["shape"][-1]
    assert fitted[0]["shape"][0] == 1 and fitted[1]["value"] == [n] and fitted[2]["shape"] == [n] and n < 4096
    small = json.dumps({"inputs": [{"name": "x", "type": "tensor", "dtype": "float16", "shape": [8, 64]}]})
    assert cases.fit_case(small, 8 << 20)[0] == small  # a case that fits is kept as written


def test_fitted_task_reproduces_from_its_overrides():
    task = load_task(TASK, fit="auto", backend="ascend-sim")
    assert task.fit["cases"] == 3 and task.fit["fits"]
    again = load_task(TASK, task.applied_overrides)
    assert again.key == task.key


def test_call_template_round_trip_and_refusals():
    x, w = torch.ones(2), torch.zeros(3)
    args = [x, [4096], None, w, 1e-5, True, "left", (2, 3), torch.bfloat16]
    template = encode_args(args)
    json.dumps(template)  # plain JSON
    back = decode_args(json.loads(json.dumps(template)), [x, w])
    assert back[0] is x and back[3] is w and back[1:3] == [[4096], None] and back[4:] == [1e-5, True, "left", (2, 3),
                                                                                      torch.bfloat16]
    assert encode_args([x, w]) is None  # KernelBench's tasks: nothing new on the wire
    with pytest.raises(TypeError, match="get_inputs\\(\\)\\[1\\] is a object"):
        encode_args([x, object()])
    for bad in ({"t": 0}, [["t", 5]], [["t", True]], [["v", ["dtype", "os"]]], [["v", ["eval", "1"]]], [["x", 1]]):
        with pytest.raises(ValueError):
            decode_args(bad, [x])


def test_npukernelbench_levels_load_in_full(mkb_reference):
    """Every file loads with all its cases, but those whose reference calls torch_npu (NPU-only operators): each
    of those is named with the package and how to install it."""
    from evokernel.tasks.load import skipped_files

    for level in ("npukernelbench_level0", "npukernelbench_level1", "npukernelbench_level2"):
        files = sorted((mkb_reference / level).glob("*.py"))
        needs_npu = {f.name for f in files if "import torch_npu" in f.read_text()}
        tasks = load_tasks(mkb_reference / level)
        assert all(t.cases for t in tasks) and len(tasks) + len(needs_npu) == len(files)
        assert sum(len(t.cases) for t in tasks) >= 10 * len(tasks)
        skipped = skipped_files(tasks)
        assert sorted(Path(s.split(":", 1)[0]).name for s in skipped) == sorted(needs_npu)
        assert all("imports torch_npu, which is not installed here (pip install torch-npu)" in s for s in skipped)


def test_npukernelbench_cases_draw_on_meta(mkb_reference):
    """Every case of a level-1 file draws its inputs (on the meta device: no memory), non-tensors included."""
    task = load_task(mkb_reference / "npukernelbench_level1" / "10_layer_norm.py")
    m = _module(task, 0)
    with torch.device("meta"):
        for k in range(len(task.cases)):
            m.EVOKERNEL_CASE = k
            x, normalized_shape, *_ = m.get_inputs()
            assert list(x.shape[-len(normalized_shape):]) == normalized_shape


@pytest.mark.slow
def test_every_case_is_judged(cache_dir):
    """Correct on every case and timed per case (geomean), or refused naming the first case it fails."""
    import math

    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    task = load_task(TASK, fit="auto")
    with Verifier("cpu", VerifyConfig(cache_dir=cache_dir, min_rounds=3, max_rounds=4, warmup=1)) as v:
        good = v.verify(task, (DATA / "layer_norm_cases_kernel.py").read_text())
        bad = v.verify(task, (DATA / "layer_norm_first_case_kernel.py").read_text())
    assert good.feasible, good.feedback
    cases_ = good.details["cases"]
    assert [c["case"] for c in cases_] == [0, 1, 2] and "float16[2, 33, 128]" in cases_[1]["inputs"]
    assert good.details["trials"]["passed"] >= 3 * 2
    geo = math.exp(sum(math.log(c["speedup"]) for c in cases_) / 3)
    assert good.speedup == pytest.approx(geo)
    assert not bad.feasible and bad.failed_gate in ("correctness", "runtime")
    assert "case 2/3" in bad.feedback
