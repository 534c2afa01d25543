"""device_runner.py as a real subprocess, with a FAKE torch_npu on PYTHONPATH (tests/verifier/ascend/
fake_torch_npu: the API on CPU, device "cpu") and a Python stand-in for the built custom_ops_lib.
Not run on an NPU or with the real torch_npu."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evokernel.tasks import load_task
from evokernel.verifier.backends.ascend import device_runner
from evokernel.verifier.backends.ascend_sim.project import read_strings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FAKE = HERE / "fake_torch_npu"
FAKE_NOCANN = HERE / "fake_torch_npu_nocann"
TASK = load_task(ROOT / "evokernel" / "suites" / "npu_l1" / "11_elementwise_add.py", {"batch_size": 4, "dim": 64})
MODEL_SRC = read_strings((ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text())["model_src"]

LIB_CORRECT = "import torch\n\ndef add_custom(x, y):\n    return torch.add(x, y)\n"
LIB_WRONG = "import torch\n\ndef add_custom(x, y):\n    return x + y + 0.5\n"
LIB_MUTATES = "def add_custom(x, y):\n    x.add_(y)\n    return x.clone()\n"
LIB_RAISES = "def add_custom(x, y):\n    raise RuntimeError('aclnnAddCustom failed: EZ9999 stand-in')\n"


def run_runner(tmp_path, lib=LIB_CORRECT, model_src=MODEL_SRC, fake=FAKE, **over):
    libfile = tmp_path / "custom_ops_lib.py"
    libfile.write_text(lib)
    req = {"task_source": TASK.source, "task_path": str(TASK.path), "model_src": model_src,
           "custom_ops_lib": str(libfile), "device": "cpu", "device_id": 0, "init_seed": 7,
           "trials": [{"seed": 11, "perturb": "none"}, {"seed": 12, "perturb": "scale"},
                      {"seed": 13, "perturb": "negate"}, {"seed": 14, "perturb": "shift"}],
           "tol": 1e-4, "warmup": 2, "timed_calls": 5, "timing": "events"}
    req.update(over)
    (tmp_path / "req.json").write_text(json.dumps(req))
    log = tmp_path / "npu.log"
    env = {**os.environ, "PYTHONPATH": str(fake), "FAKE_TORCH_NPU_LOG": str(log), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "evokernel.verifier.backends.ascend.device_runner",
                           str(tmp_path / "req.json"), str(tmp_path / "res.json")],
                          env=env, capture_output=True, text=True, timeout=120)
    res = json.loads((tmp_path / "res.json").read_text())
    calls = log.read_text().split() if log.exists() else []
    return proc, res, calls


def test_runner_module_imports_without_torch_npu():
    # with the sys.exit()-ing fake first on the path: importing the module must not touch torch_npu
    env = {**os.environ, "PYTHONPATH": str(FAKE_NOCANN)}
    proc = subprocess.run([sys.executable, "-c", "import sys, evokernel.verifier.backends.ascend.device_runner as d; "
                           "assert 'torch_npu' not in sys.modules; print('fine')"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "fine", proc.stdout + proc.stderr


def test_correct_candidate_is_ok_with_timings(tmp_path):
    proc, res, calls = run_runner(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert res["ok"] and res["stage"] == "done"
    assert [t["perturb"] for t in res["trials"]] == ["none", "scale", "negate", "shift"]
    assert all(t["ok"] for t in res["trials"]) and res["max_abs_err"] == 0.0
    tm = res["timing"]
    assert tm["mode"] == "events" and tm["calls"] == 5 and tm["warmup"] == 2
    for key in ("candidate_ms", "reference_ms"):
        assert tm[key]["n"] == 5 and 0 <= tm[key]["min"] <= tm[key]["median"] <= tm[key]["max"]
    assert res["torch_npu_version"] == "0.0.fake"
    assert calls[:2] == ["set_device", "0"]
    assert calls.count("event_record") == 2 * 2 * 5  # two events per call, candidate and reference


def test_no_timing_when_asked(tmp_path):
    proc, res, calls = run_runner(tmp_path, timing="none")
    assert res["ok"] and "timing" not in res and "event_record" not in calls


def test_wrong_result_is_a_correctness_failure(tmp_path):
    proc, res, _ = run_runner(tmp_path, lib=LIB_WRONG)
    assert proc.returncode == 2
    assert not res["ok"] and res["stage"] == "correctness"
    assert res["max_abs_err"] == pytest.approx(0.5, abs=1e-6)
    assert len(res["trials"]) == 1 and "mismatch" in res["error"] and "timing" not in res


def test_input_mutation_fails(tmp_path):
    proc, res, _ = run_runner(tmp_path, lib=LIB_MUTATES)
    assert res["stage"] == "correctness" and "modified its input 0" in res["error"]


def test_exception_in_forward_is_stage_run(tmp_path):
    proc, res, _ = run_runner(tmp_path, lib=LIB_RAISES)
    assert res["stage"] == "run" and "EZ9999 stand-in" in res["error"]
    assert "add_custom" in res["traceback"]
    assert "EZ9999 stand-in" in proc.stderr  # echoed for the parent's runtime classification


def test_import_failure_is_stage_import(tmp_path):
    proc, res, _ = run_runner(tmp_path, fake=FAKE_NOCANN)
    assert proc.returncode == 2
    assert res["stage"] == "import" and "libhccl.so" in res["error"] and "SystemExit" in res["error"]
    assert res["diagnosis"]["kind"] == "cann_not_loaded"
    assert "libhccl.so" in proc.stderr


def test_different_constructor_is_stage_init(tmp_path):
    src = MODEL_SRC.replace("def __init__(self) -> None:", "def __init__(self, scale) -> None:")
    assert src != MODEL_SRC
    proc, res, _ = run_runner(tmp_path, model_src=src)
    assert res["stage"] == "init" and "scale" in res["error"]


def test_missing_binding_is_stage_load(tmp_path):
    proc, res, _ = run_runner(tmp_path, lib="raise ImportError('undefined symbol: aclnnAddCustom')\n")
    assert res["stage"] == "load" and "custom_ops_lib did not load" in res["error"]


def test_bad_request(tmp_path):
    proc, res, _ = run_runner(tmp_path, trials=[{"seed": 1, "perturb": "sideways"}])
    assert res["stage"] == "request" and "sideways" in res["error"]


def test_compare_shapes_and_sequences():
    import torch
    a = torch.ones(2, 3)
    assert device_runner.compare(a, torch.ones(3, 2), 1e-4, 1e-4)[1].startswith("output: shape mismatch")
    ok, msg, ma, _ = device_runner.compare((a, a), (a, a + 1), 1e-4, 1e-4)
    assert not ok and msg.startswith("output[1]") and ma == 1.0
    nan = torch.tensor([float("nan"), 1.0])
    assert device_runner.compare(nan, nan.clone(), 1e-4, 1e-4)[0]
    assert device_runner.compare(torch.tensor([True]), torch.tensor([False]), 1e-4, 1e-4)[0] is False
