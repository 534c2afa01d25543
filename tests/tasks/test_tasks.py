"""Task loading: KernelBench files, overrides, suites, malformed files."""
import pytest

from evokernel.tasks.task import TaskError, parse_override, suite_names
from evokernel.tasks.load import load_task, load_tasks

GOOD = '''"""Scale rows."""
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

batch_size = 64
dim = 4096
total = batch_size * dim

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
'''


def test_load_and_override(tmp_path):
    p = tmp_path / "t.py"
    p.write_text(GOOD)
    t = load_task(p)
    assert t.name == "t" and t.constants["batch_size"] == 64 and t.description == "Scale rows."
    t2 = load_task(p, {"batch_size": 16, "dim": 8})
    assert t2.constants["batch_size"] == 16 and t2.constants["dim"] == 8
    assert "batch_size = 16" in t2.source and "dim = 8" in t2.source
    # derived constants follow the override because the source is rewritten, not patched
    ns: dict = {}
    exec(t2.source, ns)
    assert ns["total"] == 128 and tuple(ns["get_inputs"]()[0].shape) == (16, 8)
    assert t2.key != t.key


def test_bad_override(tmp_path):
    p = tmp_path / "t.py"
    p.write_text(GOOD)
    with pytest.raises(TaskError, match="no module-level constant named nope"):
        load_task(p, {"nope": 1})
    with pytest.raises(TaskError, match="NAME=VALUE"):
        parse_override("batch_size")
    with pytest.raises(TaskError, match="not a Python literal"):
        parse_override("batch_size=abc(")
    assert parse_override("dim = 4096") == ("dim", 4096)
    assert parse_override("eps=1e-5") == ("eps", 1e-5)


@pytest.mark.parametrize("text, match", [
    ("def f(:\n", "not valid Python"),
    ("import torch\n", "missing Model, get_inputs, get_init_inputs"),
    ("class Model: pass\ndef get_inputs(): pass\n", "missing get_init_inputs"),
])
def test_malformed_task_files(tmp_path, text, match):
    p = tmp_path / "bad.py"
    p.write_text(text)
    with pytest.raises(TaskError, match=match):
        load_task(p)


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(TaskError, match="not found"):
        load_task(tmp_path / "nope.py")
    p = tmp_path / "bin.py"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TaskError):
        load_task(p)


def test_builtin_suites():
    assert {"cpu-l1", "cpu-l2"} <= set(suite_names())
    l1, l2 = load_tasks("cpu-l1"), load_tasks("cpu-l2")
    assert len(l1) >= 20 and len(l2) >= 10
    assert all(t.suite == "cpu-l1" for t in l1)
    cats = {t.category for t in l1}
    for c in ("activation", "reduction", "softmax", "normalization", "matmul", "pooling", "loss", "scan"):
        assert c in cats, c
    # an override applies to the tasks that define the constant and leaves the others alone
    small = load_tasks("cpu-l1", {"batch_size": 4})
    assert any(t.constants.get("batch_size") == 4 for t in small)


def test_directory_and_unknown(tmp_path):
    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "b.py").write_text(GOOD)
    assert [t.name for t in load_tasks(tmp_path)] == ["a", "b"]
    with pytest.raises(TaskError, match="no such task"):
        load_tasks(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TaskError, match="no task files"):
        load_tasks(empty)


def test_load_tasks_by_suite_id():
    [t] = load_tasks("cpu-l1/03_gelu", {"batch_size": 8, "not_defined_here": 3})
    assert (t.suite, t.name, t.constants["batch_size"]) == ("cpu-l1", "03_gelu", 8)
    assert load_tasks("cpu-l1/03_gelu.py")[0].path == t.path
    with pytest.raises(TaskError, match="has no task"):
        load_tasks("cpu-l1/99_nope")


def test_directory_lists_in_numeric_order(tmp_path):
    for name in ("100_d", "10_c", "2_b", "1_a", "zeta", "alpha", "03_e"):
        (tmp_path / f"{name}.py").write_text(GOOD)
    assert [t.name for t in load_tasks(tmp_path)] == ["1_a", "2_b", "03_e", "10_c", "100_d", "alpha", "zeta"]


MULTI = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x

batch_size = 8  # a comment stays
height = width = 64
depth, rows, cols = 4, 16 * 2, 48
shape = (rows, 3)

def get_inputs():
    return [torch.randn(batch_size, depth, height, width)]

def get_init_inputs():
    return []
'''


def test_chained_and_unpacked_assignments_are_constants(tmp_path):
    p = tmp_path / "t.py"
    p.write_text(MULTI)
    t = load_task(p)
    assert {k: t.constants[k] for k in ("height", "width", "depth", "rows", "cols", "shape")} == \
        {"height": 64, "width": 64, "depth": 4, "rows": 32, "cols": 48, "shape": (32, 3)}
    t2 = load_task(p, {"height": 16, "rows": 8, "batch_size": 2})
    assert "height = 16; width = 64" in t2.source and "depth, rows, cols = 4, 8, 48" in t2.source
    assert "batch_size = 2  # a comment stays" in t2.source
    assert (t2.constants["height"], t2.constants["width"], t2.constants["shape"]) == (16, 64, (8, 3))
    ns: dict = {}
    exec(t2.source, ns)
    assert tuple(ns["get_inputs"]()[0].shape) == (2, 4, 16, 64)
    # overriding both names of a chained assignment, and a tuple constant (a JSON round trip gives a list)
    t3 = load_task(p, {"height": 8, "width": 8, "shape": [4, 3]})
    assert "height = 8; width = 8" in t3.source and "shape = (4, 3)" in t3.source


def test_fit_none_records_it_and_malformed_files_fail_before_any_fit(tmp_path):
    p = tmp_path / "t.py"
    p.write_text(GOOD)
    t = load_task(p, fit="none")
    assert t.fit == {"mode": "none", "changed": {}} and t.source == load_task(p).source
    assert load_task(p).fit is None
    with pytest.raises(TaskError, match="unknown fit mode"):
        load_task(p, fit="sometimes")
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nclass Model: pass\n")
    with pytest.raises(TaskError, match="missing get_inputs"):
        load_task(bad, fit="auto")
    d = tmp_path / "dir"
    d.mkdir()
    (d / "1_ok.py").write_text(GOOD)
    (d / "2_syntax.py").write_text("def f(:\n")
    # a malformed file of a directory is skipped with one line naming it; the others load (and are fitted)
    tasks = load_tasks(d, fit="auto")
    assert [t.name for t in tasks] == ["1_ok"] and tasks[0].fit["mode"] == "auto"
    assert len(tasks.skipped) == 1 and "2_syntax.py:1: task file is not valid Python" in tasks.skipped[0]
    (d / "1_ok.py").unlink()
    with pytest.raises(TaskError, match="2_syntax.py:1: task file is not valid Python"):
        load_tasks(d, fit="auto")
