"""evals/bench/template_fingerprint.py: the template generator's sources for a sample of suite tasks match the reference
fingerprint (evals/bench/template_fingerprint.json: every kernel as of the layered template), and a changed kernel is
named. After a deliberate change to what the generator writes, rewrite the reference with the script's --out."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from evokernel.evals.bench import template_fingerprint as fp

REFERENCE = Path(fp.__file__).with_name("template_fingerprint.json")
SAMPLE = ["cpu_l1/11_softmax", "cpu_l2/01_gemm_bias_relu", "npu_l1/19_softmax", "npu_l1/36_conv2d_3x3",
          "npu_l2/15_linear_softmax", "npu_l2/19_linear_groupnorm"]  # each family table's busiest rows, a few seconds


def test_sample_matches_the_reference():
    ref = json.loads(REFERENCE.read_text())
    new = fp.fingerprint(depth=ref["depth"], only=SAMPLE)
    assert len(new["tasks"]) == len(SAMPLE)  # cpu suites on cpu, npu suites on ascend-sim
    assert fp.compare(new, ref) == []
    changed = copy.deepcopy(new)
    key = sorted(changed["tasks"])[0]
    changed["tasks"][key]["digest"] = "0" * 64
    assert fp.compare(changed, ref) == [key]
