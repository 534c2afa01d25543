"""A directory with bad files: each gets one line naming the file and the reason; the others load and run."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evokernel.tasks.task import TaskError
from evokernel.tasks.load import load_tasks, skipped_files

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
CASES = Path(__file__).resolve().parent / "data" / "cases"


@pytest.fixture
def bad_dir(tmp_path):
    shutil.copy(GOOD, tmp_path / "01_relu.py")
    shutil.copy(CASES / "01_layer_norm.py", tmp_path / "02_layer_norm.py")
    shutil.copy(CASES / "01_layer_norm.json", tmp_path / "02_layer_norm.json")
    (tmp_path / "03_syntax.py").write_text(GOOD.read_text().replace("def get_inputs():", "def get_inputs(:"))
    (tmp_path / "04_missing_import.py").write_text("import einops_not_here_xyz\n" + GOOD.read_text())
    (tmp_path / "05_no_model.py").write_text(GOOD.read_text().replace("class Model(", "class Other("))
    shutil.copy(CASES / "01_layer_norm.py", tmp_path / "06_bad_json.py")
    (tmp_path / "06_bad_json.json").write_text('{"inputs": [{"name": "x", "type": "tensor"\n')
    return tmp_path


def test_each_bad_file_gets_one_line_and_the_rest_load(bad_dir):
    tasks = load_tasks(bad_dir)
    assert [t.name for t in tasks] == ["01_relu", "02_layer_norm"]
    lines = skipped_files(tasks)
    assert len(lines) == 4 and all("\n" not in s for s in lines)
    by_file = {Path(s.split(":", 1)[0]).name: s for s in lines}
    assert "not valid Python" in by_file["03_syntax.py"]
    assert "imports einops_not_here_xyz, which is not installed here (pip install einops_not_here_xyz)" \
        in by_file["04_missing_import.py"]
    assert "missing Model" in by_file["05_no_model.py"]
    assert "06_bad_json.json:1: malformed JSON case" in lines[3]


def test_a_guarded_import_is_the_files_own_business(tmp_path):
    src = "try:\n    import einops_not_here_xyz\nexcept ImportError:\n    pass\n" + GOOD.read_text()
    (tmp_path / "a.py").write_text(src)
    assert [t.name for t in load_tasks(tmp_path)] == ["a"]


def test_a_directory_where_nothing_loads_is_an_error(tmp_path):
    (tmp_path / "x.py").write_text("def f(:\n")
    with pytest.raises(TaskError, match=r"no task in .* loads:\n.*x\.py:1: task file is not valid Python"):
        load_tasks(tmp_path)


def test_tasks_list_names_the_bad_files_and_lists_the_rest(bad_dir):
    r = subprocess.run([sys.executable, "-m", "evokernel", "tasks", "list", str(bad_dir), "--json"],
                       capture_output=True, text=True, timeout=300, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    assert [t["name"] for t in listed] == ["01_relu", "02_layer_norm"] and listed[1]["cases"] == 3
    skipped = [s for s in r.stderr.splitlines() if s.startswith("skipped ")]
    assert len(skipped) == 4
