"""`evokernel memory ...` commands, mounted the way evokernel/cli/app.py mounts them."""
import json
import os

import pytest
import typer
from typer.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from evokernel.cli import memory as cli_memory  # noqa: E402
from evokernel.memory.embeddings import get_embedder  # noqa: E402
from evokernel.memory.store import MemoryItem, MemoryStore  # noqa: E402
from evokernel.memory.values import DRAFT, REFINE  # noqa: E402

root = typer.Typer()
root.add_typer(cli_memory.app, name="memory")


@root.callback()
def _main() -> None:
    """test root"""


runner = CliRunner()


def run(*args, env=None):
    # a wide terminal: rich wraps lines at 80 columns, and a long temporary path (pytest-xdist workers
    # add "popen-gwN/") then splits the text under test
    return runner.invoke(root, ["memory", *map(str, args)], env={"COLUMNS": "200", **(env or {})})


@pytest.fixture
def mem(tmp_path):
    d = tmp_path / "mem"
    s = MemoryStore(d, embedder=get_embedder())
    s.add([MemoryItem("p", "trace", "relu parent kernel", "// parent code", {"backend": "cpu", "task": "relu",
                                                                             "summary": "first draft"}),
           MemoryItem("c1", "trace", "relu child a", "// child a", {"backend": "cpu", "task": "relu", "parent": "p",
                                                                   "stage": "refine", "speedup_vs_parent": 1.4}),
           MemoryItem("c2", "trace", "relu child b", "// child b", {"backend": "cpu", "task": "relu", "parent": "p"}),
           MemoryItem("e", "experience", "softmax lesson", "subtract the max", {"backend": "cpu", "task": "softmax"})])
    s.values.record("a0", DRAFT, 1.0, ["p", "e"])
    s.values.record("a1", DRAFT, -1.0, ["c2"])
    s.values.record("a2", REFINE, 0.5, ["c1"])
    s.close()
    return d


def test_stats_list_show(mem):
    r = run("stats", "--memory", mem)
    assert r.exit_code == 0, r.output
    assert "4 items" in r.output and "trace" in r.output
    r = run("stats", "--memory", mem, "--json")
    assert json.loads(r.output)["by_kind"] == {"trace": 3, "experience": 1}

    r = run("list", "--memory", mem, "--json")
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [x["id"] for x in rows][:2] == ["p", "e"] and rows[-1]["id"] == "c2"  # q1, highest first
    r = run("list", "--memory", mem, "--kind", "trace", "--sort", "q2", "--limit", "2", "--json")
    assert [json.loads(x)["id"] for x in r.output.splitlines()] == ["c1", "p"]
    r = run("list", "--memory", mem, "--task", "softmax")
    assert r.exit_code == 0 and "softmax lesson" in r.output and "q1" in r.output

    r = run("show", "p", "--memory", mem)
    assert r.exit_code == 0, r.output
    assert "// parent code" in r.output and "children" in r.output and "c1" in r.output and "c2" in r.output
    r = run("show", "c1", "--memory", mem, "--json")
    data = json.loads(r.output)
    assert data["meta"]["parent"] == "p" and data["values"]["n2"] == 1 and data["children"] == []


def test_export_import_roundtrip(mem, tmp_path):
    out = tmp_path / "exp.jsonl"
    r = run("export", out, "--memory", mem, "--exclude-task", "softmax")
    assert r.exit_code == 0, r.output
    assert "exported 3 items" in r.output
    r = run("export", tmp_path / "t.jsonl", "--memory", mem, "--kind", "experience")
    assert "exported 1 items" in r.output
    dest = tmp_path / "dest"
    r = run("import", out, "--memory", dest, env={"EVOKERNEL_MEMORY": "ignored"})
    assert r.exit_code == 0, r.output
    assert "imported 3 new items" in r.output
    r = run("list", "--json", env={"EVOKERNEL_MEMORY": str(dest)})  # the directory from the environment
    rows = {json.loads(x)["id"]: json.loads(x) for x in r.output.splitlines()}
    assert set(rows) == {"p", "c1", "c2"} and rows["p"]["q1"] == pytest.approx(0.1)
    r = run("import", out, "--memory", dest, "--backend", "ascend")
    assert "imported 0 new items" in r.output


def test_bad_input_exits_2(mem, tmp_path):
    assert run("list", "--memory", mem, "--kind", "nope").exit_code == 2
    assert run("list", "--memory", mem, "--sort", "nope").exit_code == 2
    r = run("stats", "--memory", tmp_path / "nothing")
    assert r.exit_code == 2 and "no memory" in r.output
    assert run("show", "missing-id", "--memory", mem).exit_code == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    r = run("import", bad, "--memory", tmp_path / "new")
    assert r.exit_code == 2 and not (tmp_path / "new").exists()
    assert run("import", tmp_path / "missing.jsonl", "--memory", mem).exit_code == 2
    r = run("stats", "--memory", mem, "--server", "ftp://x")
    assert r.exit_code == 2 and "bad Chroma server URL" in r.output
    assert run("export", tmp_path / "x.jsonl", "--memory", mem, "--kind", "bogus").exit_code == 2
