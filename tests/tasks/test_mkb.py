"""`evokernel ascend mkb`: a MultiKernelBench run of Ascend C replies judged on ascend-sim against
MultiKernelBench's own references (read in place from a mirror of its repository; skipped without it),
with its result file's shape, through the CLI as a user runs it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evokernel.tasks.mkb import MKBError, default_mkb, judge_run, load_references

MKB = default_mkb() or Path("/nonexistent")
pytestmark = [pytest.mark.skipif(default_mkb() is None, reason="no MultiKernelBench here (EVOKERNEL_MKB: a checkout "
                                                                "or a bare mirror)"),
              pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is needed by the ascend-sim emulator")]


def _git_show(path: str) -> str:
    if (MKB / path).exists():  # a checkout
        return (MKB / path).read_text()
    return subprocess.run(["git", f"--git-dir={MKB}", "show", f"HEAD:{path}"], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run folder as MultiKernelBench's generate_and_write.py leaves it: <op>.txt replies (and _cot files)."""
    from evokernel.generators.base import GenerationRequest
    from evokernel.generators.template import TemplateGenerator
    from evokernel.tasks.load import load_task

    d = tmp_path_factory.mktemp("mkb-run")
    refs = d / "refs"
    refs.mkdir()
    (refs / "relu.py").write_text(_git_show("reference/activation/relu.py"))
    task = load_task(refs / "relu.py", fit="auto", backend="ascend-sim")
    g = TemplateGenerator().generate(GenerationRequest(task=task, stage="draft", backend="ascend-sim", seed=1))
    run = d / "run0"
    run.mkdir()
    (run / "relu.txt").write_text(f"Here is the optimized operator:\n```python\n{g.source}\n```\n")
    (run / "relu_cot.txt").write_text("thinking...")  # reasoning traces are not replies
    # MultiKernelBench's own one-shot example: its ModelNew's negative_slope default (0.1) is not the reference's
    (run / "leaky_relu.txt").write_text("```python\n" + _git_show("prompts/ascendc_new_model_leaky_relu.py") + "\n```\n")
    (run / "tanh.txt").write_text("I cannot write that kernel.")
    (run / "sigmoid.txt").write_text("```cpp\n__global__ void k(float* x) {}\nvoid f() { k<<<1, 1>>>(nullptr); }\n```\n")
    (run / "no_such_op.txt").write_text("```python\nprint(1)\n```\n")
    return run


@pytest.fixture(scope="module")
def results(run_dir, ascend_verifier):
    return judge_run(run_dir, MKB, ascend_verifier.verify)


def test_references_are_read_from_the_mirror_as_the_dataset_builds_them(tmp_path):
    from evokernel.tasks.mkb import _materialise

    refs = load_references(_materialise(MKB, tmp_path))
    assert refs["relu"].category == "activation" and refs["layer_norm"].category == "normalization"
    assert len(refs) > 300 and all(not r.op.startswith("_") for r in refs.values())


def test_every_reply_gets_a_result_in_multikernelbenchs_shape(results):
    assert set(results) == {"relu", "leaky_relu", "tanh", "sigmoid", "no_such_op"}
    for r in results.values():
        assert {"compiled", "correctness", "performance", "correctness_info"} <= set(r)
    ok = results["relu"]
    assert ok["compiled"] and ok["correctness"] and ok["performance"]["kind"] == "estimate"
    assert ok["performance"]["latency_us"] > 0 and ok["evokernel"]["gate"] == "passed"
    bad = results["leaky_relu"]
    assert bad["compiled"] and not bad["correctness"] and bad["evokernel"]["gate"] in ("correctness", "runtime")
    assert "no candidate" in results["tanh"]["correctness_info"]
    assert "direct-launch" in results["sigmoid"]["correctness_info"]
    assert "no reference named no_such_op" in results["no_such_op"]["correctness_info"]


def test_a_category_filter_and_a_missing_run(run_dir, ascend_verifier, tmp_path):
    only = judge_run(run_dir, MKB, ascend_verifier.verify, categories=["normalization"])
    assert only == {}
    with pytest.raises(MKBError, match="not a directory"):
        judge_run(tmp_path / "nope", MKB, ascend_verifier.verify)
    with pytest.raises(MKBError, match="neither a MultiKernelBench checkout"):
        judge_run(run_dir, tmp_path, ascend_verifier.verify)


def test_the_cli_writes_the_result_file_and_a_table(run_dir, tmp_path):
    out = tmp_path / "result_activation.json"
    r = subprocess.run([sys.executable, "-m", "evokernel", "ascend", "mkb", str(run_dir), "--mkb", str(MKB),
                        "-c", "activation", "-o", str(out)], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert set(data) == {"relu", "leaky_relu", "tanh", "sigmoid"} and data["relu"]["correctness"]
    assert "relu" in r.stdout and "1 of 4 correct" in r.stderr
