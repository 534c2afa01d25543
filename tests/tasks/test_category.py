"""Categories from the traced op graph: the rules on small tasks, and all 200 real KernelBench files."""
import time
from collections import Counter

import pytest

from evokernel.tasks import category as task_category
from evokernel.tasks.category import OpCall, categorize, infer_category, normalize_op, probe
from evokernel.tasks.load import load_task, load_tasks


from kernelbench_files import KB, needs_kernelbench  # noqa: E402

TEMPLATE = '''import torch
import torch.nn as nn
import torch.nn.functional as F
{extra}
class Model(nn.Module):
    def __init__(self{init_args}):
        super().__init__()
{init}
    def forward(self, {args}):
{body}

{consts}
def get_inputs():
    return [{inputs}]

def get_init_inputs():
    return [{init_inputs}]
'''


def task(tmp_path, name="t", *, body, args="x", inputs="torch.randn(8, 64)", init="        pass", init_args="",
         init_inputs="", consts="", extra=""):
    p = tmp_path / f"{name}.py"
    p.write_text(TEMPLATE.format(body="\n".join("        " + line for line in body.splitlines()), args=args,
                                 inputs=inputs, init=init, init_args=init_args, init_inputs=init_inputs,
                                 consts=consts, extra=extra))
    return load_task(p)


@pytest.mark.parametrize("body, args, inputs, init, expected", [
    ("return torch.relu(x)", "x", "torch.randn(8, 64)", "        pass", "activation"),
    ("return x * torch.sigmoid(x)", "x", "torch.randn(8, 64)", "        pass", "activation"),
    ("return x * 2.5 + 1", "x", "torch.randn(8, 64)", "        pass", "elementwise"),
    ("return torch.softmax(x, dim=1)", "x", "torch.randn(8, 64)", "        pass", "softmax"),
    ("return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)", "x", "torch.randn(8, 64)",
     "        pass", "normalization"),
    ("return x.sum(dim=1)", "x", "torch.randn(8, 64)", "        pass", "reduction"),
    ("return torch.max(x, dim=1)[0]", "x", "torch.randn(8, 64)", "        pass", "reduction"),
    ("return torch.cumsum(x.flip(1), 1).flip(1)", "x", "torch.randn(8, 64)", "        pass", "scan"),
    ("return torch.mean((a - b) ** 2)", "a, b", "torch.randn(8, 64), torch.randn(8, 64)", "        pass", "loss"),
    ("return F.cross_entropy(a, b)", "a, b", "torch.randn(8, 10), torch.randint(0, 10, (8,))", "        pass", "loss"),
    ("return a @ b", "a, b", "torch.randn(8, 64), torch.randn(64, 8)", "        pass", "matmul"),
    ("return torch.triu(a @ b)", "a, b", "torch.randn(8, 8), torch.randn(8, 8)", "        pass", "matmul"),
    ("return torch.relu(self.fc(x))", "x", "torch.randn(8, 64)", "        self.fc = nn.Linear(64, 32)", "fusion"),
    ("return self.conv(x)", "x", "torch.randn(2, 3, 16, 16)", "        self.conv = nn.Conv2d(3, 8, 3)", "convolution"),
    ("return self.pool(torch.relu(self.conv(x)))", "x", "torch.randn(2, 3, 16, 16)",
     "        self.conv = nn.Conv2d(3, 8, 3)\n        self.pool = nn.MaxPool2d(2)", "fusion"),
    ("return self.pool(x)", "x", "torch.randn(2, 3, 16, 16)", "        self.pool = nn.AvgPool2d(2)", "pooling"),
    ("return self.norm(x)", "x", "torch.randn(2, 8, 16, 16)", "        self.norm = nn.GroupNorm(2, 8)", "normalization"),
    ("return F.scaled_dot_product_attention(q, k, v)", "q, k, v",
     "torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16)", "        pass", "attention"),
    ("return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v", "q, k, v",
     "torch.randn(2, 8, 16), torch.randn(2, 8, 16), torch.randn(2, 8, 16)", "        pass", "attention"),
    ("return torch.softmax(self.norm(x), dim=1).sum(dim=1)", "x", "torch.randn(8, 64)",
     "        self.norm = nn.LayerNorm(64)", "fusion"),
])
def test_rules_on_small_tasks(tmp_path, body, args, inputs, init, expected):
    t = task(tmp_path, body=body, args=args, inputs=inputs, init=init)
    assert t.declared_category is None
    assert t.category == expected, [o.name for o in probe(t.source).ops]


def test_declared_category_wins(tmp_path):
    t = task(tmp_path, body="return torch.relu(x)", consts='CATEGORY = "my-own"')
    assert t.category == "my-own" and "CATEGORY" not in t.constants


def test_fx_failure_falls_back_to_recorded_calls(tmp_path):
    # data-dependent Python control flow: fx cannot trace it, the meta run records what ran
    t = task(tmp_path, body="if x.dim() == 2:\n    return torch.tanh(x)\nreturn x")
    p = probe(t.source)
    assert p.ok and p.traced_with == "function-mode"
    assert t.category == "activation"


@pytest.mark.parametrize("body, init", [
    ("return torch.relu(x)", "        raise ValueError('the model cannot be built')"),
    ("raise RuntimeError('no')", "        pass"),  # forward raises
    ("return x.item()", "        pass"),  # no meta kernel for .item()
])
def test_tasks_that_cannot_be_built_are_uncategorized_without_raising(tmp_path, body, init):
    t = task(tmp_path, body=body, init=init)
    assert t.category == "uncategorized"


def test_a_task_whose_inputs_fail_is_still_categorized_from_its_graph(tmp_path):
    t = task(tmp_path, body="return torch.relu(x)", inputs="torch.randn(8, undefined_name)")
    p = probe(t.source)
    assert not p.ok and p.stage == "inputs" and "undefined_name" in p.error
    assert t.category == "activation"


def test_huge_sizes_cost_nothing_and_explicit_devices_stay_on_meta(tmp_path):
    # 4096 x 393216 floats twice over (12.9 GB) and an explicit device: all on the meta device
    t = task(tmp_path, body="return torch.relu(x) + torch.zeros(x.shape, device='cpu')",
             inputs="torch.randn(batch_size, dim, device='cpu').to('cpu')", consts="batch_size = 4096\ndim = 393216")
    p = probe(t.source, count=True)
    assert p.ok and p.input_bytes == 4096 * 393216 * 4 and p.output_bytes == p.input_bytes
    assert t.category == "activation"


def test_inference_is_cached_per_task_key(tmp_path, monkeypatch):
    t = task(tmp_path, body="return torch.tanh(x)")
    assert infer_category(t) == "activation"
    monkeypatch.setattr(task_category, "probe", lambda *a, **k: (_ for _ in ()).throw(AssertionError("probed")))
    assert infer_category(t) == "activation"


def test_normalized_names_and_pure_rules():
    assert [normalize_op(n, m) for n, m in [("Conv2d", True), ("ConvTranspose3d", True), ("BatchNorm1d", True),
                                            ("CrossEntropyLoss", True), ("LeakyReLU", True), ("__add__", False),
                                            ("max_pool2d_with_indices", False), ("relu_", False)]] == \
        ["conv", "conv_transpose", "batch_norm", "cross_entropy", "leaky_relu", "add", "max_pool_with_indices", "relu"]
    assert categorize([]) == "uncategorized"
    assert categorize([OpCall("view"), OpCall("getitem")]) == "uncategorized"
    assert categorize([OpCall("max", 2)]) == "elementwise"  # torch.max(a, b)
    assert categorize([OpCall("linear"), OpCall("conv")]) == "fusion"


# exact categories of a representative sample (file number -> category)
LEVEL1 = {1: "matmul", 3: "matmul", 4: "matmul", 11: "matmul", 14: "matmul", 18: "matmul", 5: "elementwise",
          12: "elementwise", 19: "activation", 23: "softmax", 24: "softmax", 25: "activation", 30: "activation",
          32: "activation", 33: "normalization", 35: "normalization", 36: "normalization", 37: "normalization",
          38: "normalization", 40: "normalization", 41: "pooling", 43: "pooling", 46: "pooling", 47: "reduction",
          49: "reduction", 51: "reduction", 53: "reduction", 50: "convolution", 54: "convolution",
          57: "convolution", 74: "convolution", 82: "convolution", 86: "convolution", 87: "convolution",
          88: "activation", 89: "scan", 90: "scan", 91: "scan", 92: "scan", 93: "scan", 94: "loss", 95: "loss",
          96: "loss", 97: "attention", 98: "loss", 99: "loss", 100: "loss"}


def number(t) -> int:
    return int(t.name.split("_")[0])


@needs_kernelbench
def test_categories_of_all_200_kernelbench_files():
    task_category._cache.clear()
    t0 = time.perf_counter()
    l1, l2 = load_tasks(KB / "level1"), load_tasks(KB / "level2")
    cats1 = {number(t): t.category for t in l1}
    cats2 = {number(t): t.category for t in l2}
    elapsed = time.perf_counter() - t0
    assert [number(t) for t in l1] == list(range(1, 101)) and [number(t) for t in l2] == list(range(1, 101))
    assert {n: cats1[n] for n in LEVEL1} == LEVEL1
    # the ranges of level 1
    assert all(cats1[n] in ("matmul", "elementwise") for n in range(1, 19))
    assert all(cats1[n] in ("activation", "softmax") for n in range(19, 33))
    assert all(cats1[n] == "normalization" for n in range(33, 41))
    assert all(cats1[n] == "pooling" for n in range(41, 47))
    assert all(cats1[n] == "reduction" for n in (47, 48, 49, 51, 52, 53))
    assert all(cats1[n] == "convolution" for n in [50, *range(54, 88)])
    assert all(cats1[n] == "loss" for n in (94, 95, 96, 98, 99, 100))
    assert Counter(cats2.values()) == {"fusion": 100}
    assert "uncategorized" not in cats1.values()
    assert elapsed < 60, f"categories of 200 files took {elapsed:.0f} s"
