"""`evokernel verify` and `evokernel tasks list` as a user runs them (real subprocesses)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELU_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU_EXAMPLE = ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py"
SMALL = ["--set", "batch_size=4", "--set", "dim=2048"]


def run(*args, env_extra=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "evokernel", *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.fixture(scope="module")
def cli_cache(tmp_path_factory):
    return {"EVOKERNEL_CACHE": str(tmp_path_factory.mktemp("cli-cache"))}


def test_verify_json_feasible(cli_cache):
    p = run("verify", RELU_TASK, RELU_EXAMPLE, *SMALL, "--json", env_extra=cli_cache)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    for key in ("feasible", "failed_gate", "feedback", "latency_ms", "reference_ms", "speedup"):
        assert key in out
    assert out["feasible"] is True and out["failed_gate"] is None
    assert out["latency_ms"] > 0 and out["reference_ms"] > 0 and out["speedup"] > 0
    assert out["noise"] is not None and len(out["speedup_ci"]) == 2


def test_verify_infeasible_exit_1(cli_cache, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                   "    def forward(self, x):\n        return torch.relu(x)\n")
    p = run("verify", RELU_TASK, bad, *SMALL, "--json", env_extra=cli_cache)
    assert p.returncode == 1
    out = json.loads(p.stdout)
    assert out["feasible"] is False and out["failed_gate"] == "hack"
    assert "torch.relu" in out["feedback"] and out["latency_ms"] is None and out["speedup"] is None


def test_verify_text_output(cli_cache):
    p = run("verify", RELU_TASK, RELU_EXAMPLE, *SMALL, "--no-timing", env_extra=cli_cache)
    assert p.returncode == 0 and "FEASIBLE" in p.stdout


@pytest.mark.parametrize("args", [
    ["verify", "missing_task.py", RELU_EXAMPLE],
    ["verify", RELU_TASK, "missing_candidate.py"],
    ["verify", RELU_TASK, RELU_EXAMPLE, "--set", "no_such_constant=3"],
    ["verify", RELU_TASK, RELU_EXAMPLE, "--set", "batch_size"],
    ["verify", RELU_TASK, RELU_EXAMPLE, "--backend", "tpu"],
    ["verify"],
    ["tasks", "list", "no-such-suite"],
])
def test_usage_errors_exit_2(args, cli_cache):
    p = run(*args, env_extra=cli_cache)
    assert p.returncode == 2, (p.stdout, p.stderr)


def test_malformed_task_exit_2(tmp_path, cli_cache):
    task = tmp_path / "task.py"
    task.write_text("import torch\nclass Model: pass\n")
    p = run("verify", task, RELU_EXAMPLE, env_extra=cli_cache)
    assert p.returncode == 2 and "missing get_inputs" in p.stderr


def test_task_that_crashes_exit_2(tmp_path, cli_cache):
    task = tmp_path / "task.py"
    task.write_text("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
                    "        return x\ndef get_inputs():\n    raise ValueError('broken task')\n"
                    "def get_init_inputs():\n    return []\n")
    p = run("verify", task, RELU_EXAMPLE, env_extra=cli_cache)
    assert p.returncode == 2 and "broken task" in p.stderr


def test_tasks_list():
    p = run("tasks", "list")
    assert p.returncode == 0 and "cpu-l1" in p.stdout and "cpu-l2" in p.stdout
    p = run("tasks", "list", "cpu-l1", "--json")
    tasks = json.loads(p.stdout)
    assert len(tasks) >= 20 and {"name", "category", "path"} <= set(tasks[0])
    p = run("--help")
    assert p.returncode == 0 and "verify" in p.stdout


def test_broken_sandbox_is_a_clear_error(tmp_path, cli_cache):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    env = {**cli_cache, "EVOKERNEL_SANDBOX": "bwrap", "PATH": f"{fake}:{os.environ['PATH']}"}
    p = run("verify", RELU_TASK, RELU_EXAMPLE, *SMALL, env_extra=env)
    assert p.returncode == 2, p.stderr
    assert "sandbox did not start" in p.stderr and "EVOKERNEL_SANDBOX=rlimits" in p.stderr
    assert "Traceback" not in p.stderr


BIG_RELU = RELU_TASK.read_text().replace("batch_size = 160", "batch_size = 4096").replace("dim = 65536", "dim = 393216")


def test_verify_fits_a_gpu_sized_task_and_says_what_changed(cli_cache, tmp_path):
    assert BIG_RELU != RELU_TASK.read_text()
    task = tmp_path / "19_ReLU.py"
    task.write_text(BIG_RELU)  # 4096 x 393216 floats: 6.4 GB in, 6.4 GB out
    p = run("verify", task, RELU_EXAMPLE, "--json", "--no-timing", env_extra=cli_cache)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "19_ReLU: fitted batch_size 4096->" in p.stderr and "dim 393216->" in p.stderr
    out = json.loads(p.stdout)
    fit = out["task_fit"]
    assert out["feasible"] and fit["mode"] == "auto" and fit["fits"]
    assert set(fit["changed"]) == {"batch_size", "dim"} and fit["bytes"] <= 128 << 20
    # --set wins: the fit keeps batch_size and scales dim only
    p = run("verify", task, RELU_EXAMPLE, "--json", "--no-timing", "--set", "batch_size=256", env_extra=cli_cache)
    fit = json.loads(p.stdout)["task_fit"]
    assert p.returncode == 0 and set(fit["changed"]) == {"dim"}, p.stderr[-2000:]


def test_verify_fit_none_keeps_the_sizes(cli_cache):
    p = run("verify", RELU_TASK, RELU_EXAMPLE, *SMALL, "--fit", "none", "--json", "--no-timing", env_extra=cli_cache)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout)["task_fit"] == {"mode": "none", "changed": {}} and "fitted" not in p.stderr
    p = run("verify", RELU_TASK, RELU_EXAMPLE, "--fit", "sometimes", env_extra=cli_cache)
    assert p.returncode == 2 and "--fit must be one of auto, none" in p.stderr


def test_tasks_list_a_kernelbench_style_directory_in_numeric_order_with_categories(tmp_path):
    for name in ("10_relu", "2_relu", "1_relu"):
        (tmp_path / f"{name}.py").write_text(BIG_RELU.replace('CATEGORY = "activation"\n', ""))
    p = run("tasks", "list", tmp_path, "--json")
    rows = json.loads(p.stdout)
    assert [r["name"] for r in rows] == ["1_relu", "2_relu", "10_relu"]
    assert {r["category"] for r in rows} == {"activation"}
