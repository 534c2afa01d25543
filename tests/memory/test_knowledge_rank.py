"""Seed knowledge ranked by how specifically it matches the task (issue 32 item 2): real suite tasks, their traced
ops, names and categories, against the shipped cpu seed items; and seed code that cannot be pasted as an answer."""
import re
from pathlib import Path

import pytest

from evokernel.cpu import parse_extern_c
from evokernel.memory.knowledge import name_words, rank_knowledge, score, task_ops
from evokernel.memory.seed import load_seed
from evokernel.tasks.load import load_task

SUITES = Path(__file__).resolve().parents[2] / "evokernel" / "suites"


def _ranked(path: str, limit: int = 3) -> list[str]:
    task = load_task(SUITES / path)
    items = [it for it in load_seed("cpu") if it.kind == "seed" and "*" not in it.meta["categories"]]
    got = rank_knowledge(items, ops=task_ops(task), category=task.category, name=task.name, limit=limit)
    return [it.id.split(":")[-1] for it in got]


@pytest.mark.parametrize("path,first", [
    ("cpu_l1/11_softmax.py", "06_stable_softmax"),  # round 2 showed this prompt format, OpenMP and SIMD instead
    ("cpu_l1/12_log_softmax.py", "06_stable_softmax"),
    ("cpu_l1/28_logsumexp.py", "06_stable_softmax"),
    ("cpu_l1/27_cross_entropy.py", "06_stable_softmax"),
    ("cpu_l1/14_rms_norm.py", "07_layer_rms_norm"),  # traced as mean/rsqrt: its name says what it is
    ("cpu_l1/13_layer_norm.py", "07_layer_rms_norm"),
    ("cpu_l1/15_matmul.py", "05_matmul_blocking"),
    ("cpu_l1/19_max_pool2d.py", "08_pooling_conv"),
    ("cpu_l1/22_cumsum.py", "09_scan"),
    ("cpu_l1/03_gelu.py", "04_transcendentals"),
    ("cpu_l2/01_gemm_bias_relu.py", "05_matmul_blocking"),
])
def test_the_most_specific_item_comes_first(path, first):
    assert _ranked(path)[0] == first


def test_generic_items_fill_in_after_the_specific_ones_and_unrelated_ones_stay_out():
    softmax = _ranked("cpu_l1/11_softmax.py", limit=10)
    assert softmax.index("06_stable_softmax") < softmax.index("03_simd_vectorisation") < softmax.index(
        "01_openmp_parallel_for")
    assert "05_matmul_blocking" not in softmax and "09_scan" not in softmax and "08_pooling_conv" not in softmax


def test_task_ops_keep_the_meaningful_ops_only():
    assert task_ops(load_task(SUITES / "cpu_l1/14_rms_norm.py")) == {"mean", "sqrt"}  # not add/mul/div
    assert task_ops(load_task(SUITES / "cpu_l2/11_bmm_softmax.py")) == {"bmm", "softmax"}


def test_name_words_split_kernelbench_names():
    assert name_words("23_Softmax") == {"softmax"}
    assert name_words("36_RMSNorm_") == {"rms", "norm"}
    assert name_words("97_CosineSimilarityLoss") == {"cosine", "similarity", "loss"}


def test_a_category_shared_by_fewer_items_scores_higher():
    narrow = score({"categories": ["softmax"]}, "", category="softmax")
    wide = score({"categories": ["softmax", "elementwise", "activation", "fusion"]}, "", category="softmax")
    assert narrow > wide > 0 == score({"categories": ["matmul"]}, "", category="softmax")


def test_no_seed_snippet_is_an_entry_point_to_paste():
    """A weak model pasted the seed's `relu_rows` into 5 of 6 replies, softmax included: seed C++ shows idioms as
    static helpers (to adapt inside one's own kernel), never an extern "C" function another operator's glue could
    call. The candidate-format items (core) are the exception: they show the file's format."""
    for it in load_seed("cpu"):
        if "*" in it.meta["categories"]:
            continue
        for code in re.findall(r"```cpp\n(.*?)```", it.text, re.S):
            assert parse_extern_c(code) == [], it.id
            assert "relu" not in code.lower(), it.id  # no other operator's whole kernel
