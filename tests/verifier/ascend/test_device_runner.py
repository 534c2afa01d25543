"""device_runner.py as a real subprocess, with a FAKE torch_npu on PYTHONPATH (tests/verifier/ascend/
fake_torch_npu: the API on CPU, device "cpu") and a Python stand-in for the built custom_ops_lib. The runner
decides nothing: these tests check what it records (outputs, inputs after the call, custom-op calls, ATen
operators, timings) and how it reports failures. Not run on an NPU or with the real torch_npu."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evokernel.tasks.load import load_task
from evokernel.verifier.sandboxed import device_runner
from evokernel.verifier.backends.ascend_sim.project import read_strings

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FAKE = HERE / "fake_torch_npu"
FAKE_NOCANN = HERE / "fake_torch_npu_nocann"
TASK = load_task(ROOT / "evokernel" / "suites" / "npu_l1" / "11_elementwise_add.py", {"batch_size": 4, "dim": 64})
MODEL_SRC = read_strings((ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text())["model_src"]

# computes with numpy into an allocated output, as a real custom op does outside the ATen dispatcher
LIB_CORRECT = ("import torch\n\ndef add_custom(x, y):\n    out = torch.empty_like(x)\n"
               "    out.numpy()[...] = x.numpy() + y.numpy()\n    return out\n")
LIB_WRONG = "import torch\n\ndef add_custom(x, y):\n    return x + y + 0.5\n"
LIB_MUTATES = "def add_custom(x, y):\n    x.add_(y)\n    return x.clone()\n"
LIB_RAISES = "def add_custom(x, y):\n    raise RuntimeError('aclnnAddCustom failed: EZ9999 stand-in')\n"



def run_runner(tmp_path, lib=LIB_CORRECT, model_src=MODEL_SRC, fake=FAKE, trials=2, **over):
    import torch

    libfile = tmp_path / "custom_ops_lib.py"
    libfile.write_text(lib)
    ns: dict = {}
    exec(compile(TASK.source, str(TASK.path), "exec"), ns)
    inputs = []
    for seed in range(trials):
        torch.manual_seed(seed)
        inputs.append(list(ns["get_inputs"]()))
    torch.save(inputs, tmp_path / "inputs.pt")
    req = {"role": "candidate", "model_src": model_src, "custom_ops_lib": str(libfile), "device": "cpu",
           "device_id": 0, "init_seed": 7, "init_args": [], "inputs": str(tmp_path / "inputs.pt"),
           "outputs": str(tmp_path / "outputs.pt"), "warmup": 2, "calls": 5, "timing": "events"}
    req.update(over)
    (tmp_path / "req.json").write_text(json.dumps(req))
    log = tmp_path / "npu.log"
    env = {**os.environ, "PYTHONPATH": str(fake), "FAKE_TORCH_NPU_LOG": str(log), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "evokernel.verifier.sandboxed.device_runner",
                           str(tmp_path / "req.json"), str(tmp_path / "res.json")],
                          env=env, capture_output=True, text=True, timeout=120)
    res = json.loads((tmp_path / "res.json").read_text())
    calls = log.read_text().split() if log.exists() else []
    out = torch.load(tmp_path / "outputs.pt", weights_only=True) if (tmp_path / "outputs.pt").exists() else None
    return proc, res, calls, inputs, out


def test_runner_module_imports_without_torch_npu():
    # with the sys.exit()-ing fake first on the path: importing the module must not touch torch_npu
    env = {**os.environ, "PYTHONPATH": str(FAKE_NOCANN)}
    proc = subprocess.run([sys.executable, "-c", "import sys, evokernel.verifier.sandboxed.device_runner as d; "
                           "assert 'torch_npu' not in sys.modules; print('fine')"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "fine", proc.stdout + proc.stderr


def test_candidate_outputs_inputs_after_calls_and_timings(tmp_path):
    proc, res, calls, inputs, out = run_runner(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert res["ok"] and res["stage"] == "done" and res["role"] == "candidate"
    assert res["trials_run"] == 2 and res["native_calls"] == [1, 1]
    assert res["violations"] == [{}, {}]  # allocation only
    for (x, y), (o,), after in zip(inputs, out["outputs"], out["inputs_after"]):
        assert o.equal(x + y) and after[0].equal(x) and after[1].equal(y)
    tm = res["timing"]
    assert tm["mode"] == "events" and tm["calls"] == 5 and tm["warmup"] == 2
    assert tm["ms"]["n"] == 5 and len(tm["samples"]) == 5 and all(v > 0 for v in tm["samples"])
    assert res["torch_npu_version"] == "0.0.fake"
    assert calls[:2] == ["set_device", "0"]
    assert calls.count("event_record") == 2 * 5  # two events per timed call, the candidate only
    assert not proc.stdout  # stdout stays clean


def test_loop_timing_runs_calls_without_events(tmp_path):
    proc, res, calls, _, _ = run_runner(tmp_path, timing="loop", check=False, outputs=None)
    assert res["ok"] and res["timing"] == {"mode": "loop", "warmup": 2, "calls": 5, "sets": 1}
    assert "event_record" not in calls


def test_timed_calls_run_on_fresh_sets_and_every_timed_output_is_kept(tmp_path):
    import torch

    sets = [[torch.full((4, 64), float(k)), torch.full((4, 64), 0.5)] for k in range(5)]
    torch.save(sets, tmp_path / "timed.pt")
    proc, res, calls, _, _ = run_runner(tmp_path, timed_inputs=str(tmp_path / "timed.pt"),
                                        timed_outputs=str(tmp_path / "timed_out.pt"))
    assert res["ok"], proc.stderr
    assert res["timing"]["sets"] == 5 and res["timing"]["calls"] == 5 and len(res["timing"]["samples"]) == 5
    outs = torch.load(tmp_path / "timed_out.pt", weights_only=True)
    # call i ran on set i: its output is that set's sum, nothing was replayed from another call
    assert [float(o[0][0, 0]) for o in outs] == [k + 0.5 for k in range(5)]


def test_aten_compute_in_forward_is_recorded(tmp_path):
    src = MODEL_SRC.replace("return custom_ops_lib.add_custom(x, y)", "return custom_ops_lib.add_custom(x, y) * 1.0")
    assert src != MODEL_SRC
    proc, res, _, _, _ = run_runner(tmp_path, model_src=src, timing="none")
    assert res["ok"] and res["violations"][0] == {"mul": 1}


def test_data_movement_in_forward_is_recorded(tmp_path):
    """The data-movement rule (sandboxed/data_movement.py) runs in the device runner's checked trials too."""
    src = MODEL_SRC.replace("return custom_ops_lib.add_custom(x, y)", "return custom_ops_lib.add_custom(x, y).t()")
    assert src != MODEL_SRC
    proc, res, _, _, _ = run_runner(tmp_path, model_src=src, timing="none")
    assert res["ok"] and all(any(k.startswith("data movement: forward returned a non-contiguous view") for k in v)
                             for v in res["violations"]), res["violations"]


def test_input_mutation_is_visible_to_the_parent(tmp_path):
    proc, res, _, inputs, out = run_runner(tmp_path, lib=LIB_MUTATES, timing="none")
    assert res["ok"]  # the runner reports; the parent decides
    x, y = inputs[0]
    assert out["inputs_after"][0][0].equal(x + y) and not out["inputs_after"][0][0].equal(x)


def test_exception_in_forward_is_stage_run_and_keeps_earlier_trials(tmp_path):
    proc, res, _, _, out = run_runner(tmp_path, lib=LIB_RAISES)
    assert proc.returncode == 2
    assert res["stage"] == "run" and "EZ9999 stand-in" in res["error"] and res["error"].startswith("trial 1")
    assert "add_custom" in res["traceback"]
    assert "EZ9999 stand-in" in proc.stderr  # echoed for the parent's runtime classification
    assert out == {"outputs": [], "inputs_after": []}


def test_import_failure_is_stage_import(tmp_path):
    proc, res, _, _, _ = run_runner(tmp_path, fake=FAKE_NOCANN)
    assert proc.returncode == 2
    assert res["stage"] == "import" and "libhccl.so" in res["error"] and "SystemExit" in res["error"]
    assert res["diagnosis"]["kind"] == "cann_not_loaded"
    assert "libhccl.so" in proc.stderr


def test_different_constructor_is_stage_init(tmp_path):
    src = MODEL_SRC.replace("def __init__(self) -> None:", "def __init__(self, scale) -> None:")
    assert src != MODEL_SRC
    proc, res, _, _, _ = run_runner(tmp_path, model_src=src)
    assert res["stage"] == "init" and "scale" in res["error"]


def test_missing_binding_is_stage_load(tmp_path):
    proc, res, _, _, _ = run_runner(tmp_path, lib="raise ImportError('undefined symbol: aclnnAddCustom')\n")
    assert res["stage"] == "load" and "custom_ops_lib did not load" in res["error"]


def test_model_src_sees_a_counting_facade_not_the_extension(tmp_path):
    lib = LIB_CORRECT + "SECRET = 1\n\ndef _private():\n    return 0\n"
    src = MODEL_SRC.replace("return custom_ops_lib.add_custom(x, y)",
                            "assert not hasattr(custom_ops_lib, 'SECRET') and not hasattr(custom_ops_lib, '_private')\n"
                            "        return custom_ops_lib.add_custom(x, y)")
    proc, res, _, _, _ = run_runner(tmp_path, lib=lib, model_src=src, timing="none")
    assert res["ok"], res


def test_reference_role_times_the_task_model(tmp_path):
    proc, res, calls, _, _ = run_runner(tmp_path, role="reference", task_source=TASK.source, check=False,
                                        outputs=None)
    assert res["ok"] and res["role"] == "reference" and res["timing"]["ms"]["n"] == 5
    assert "trials_run" not in res


def test_health_role(tmp_path):
    proc, res, calls, _, _ = run_runner(tmp_path, role="health", check=False, outputs=None)
    assert res["ok"] and res["device_count"] == 1


@pytest.mark.parametrize("over,needle", [
    ({"role": "sideways"}, "unknown role"), ({"timing": "stopwatch"}, "unknown timing"),
    ({"inputs": None}, "inputs file"), ({"role": "reference", "check": False}, "task_source"),
])
def test_bad_request(tmp_path, over, needle):
    proc, res, _, _, _ = run_runner(tmp_path, **over)
    assert res["stage"] == "request" and needle in res["error"]
