"""Export/import of a memory: filters, values carried over, idempotence, malformed files."""
import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from evokernel.memory.embeddings import get_embedder  # noqa: E402
from evokernel.memory.store import MemoryItem, MemoryStore  # noqa: E402
from evokernel.memory.transfer import FORMAT, TransferError, export_memory, import_memory, read_export  # noqa: E402
from evokernel.memory.values import DRAFT, REFINE  # noqa: E402


@pytest.fixture
def source(tmp_path):
    s = MemoryStore(tmp_path / "src", embedder=get_embedder())
    s.ensure_seed("cpu")
    s.add([MemoryItem(f"tr-{t}-{i}", "trace", f"{t} kernel attempt {i}", f"// {t} {i}",
                      {"backend": "cpu", "task": t, "parent": f"tr-{t}-0" if i else "", "feasible": i % 2 == 0})
           for t in ("relu", "softmax", "matmul") for i in range(3)]
          + [MemoryItem("ex-softmax", "experience", "subtract the max before exp", "lesson",
                        {"backend": "cpu", "task": "softmax"})])
    s.values.record("a0", DRAFT, 1.0, ["tr-relu-0", "seed:cpu:03_simd_vectorisation"], task="relu")
    s.values.record("a1", REFINE, 0.4, ["tr-relu-1", "tr-matmul-2"], task="relu")
    s.values.record("a2", DRAFT, -1.0, ["tr-softmax-0"], task="softmax")
    s.sync_values(["tr-relu-0"])
    yield s
    s.close()


def test_export_import_with_exclusions_and_values(source, tmp_path):
    path = tmp_path / "mem.jsonl"
    n = export_memory(source, path, exclude_tasks=["softmax"])
    header, records = read_export(path)
    assert header["format"] == FORMAT and header["items"] == n == len(records)
    assert n == source.count() - 4  # three softmax traces and one experience left out
    assert header["counts"]["trace"] == 6 and header["filters"]["exclude_tasks"] == ["softmax"]
    rec = next(r for r in records if r["id"] == "tr-relu-0")
    assert rec["values"]["q1"] == pytest.approx(0.1) and "q1" not in rec["meta"]

    dest = MemoryStore(tmp_path / "dst", embedder=get_embedder())
    assert import_memory(dest, path, exclude_tasks=["matmul"]) == n - 3
    assert dest.find(task="softmax") == [] and dest.find(task="matmul") == []
    assert dest.values.q("tr-relu-0", DRAFT) == pytest.approx(source.values.q("tr-relu-0", DRAFT))
    assert dest.values.get("tr-relu-1").n2 == 1
    assert dest.values.q("seed:cpu:03_simd_vectorisation", DRAFT) == pytest.approx(0.1)
    assert dest.get(["tr-relu-0"])[0].meta["q1"] == pytest.approx(0.1)  # mirrored into metadata
    assert dest.query_ids("relu kernel attempt 2", 1)[0][0] == "tr-relu-2"  # re-embedded
    assert [i.id for i in dest.find(parent="tr-relu-0")] == ["tr-relu-1", "tr-relu-2"]
    # idempotent: nothing new, values not applied twice
    attempts = len(dest.values.state.attempts)
    assert import_memory(dest, path) == 3  # only the matmul items excluded before
    assert import_memory(dest, path) == 0
    assert dest.values.get("tr-relu-0").n1 == 1
    assert len(dest.values.state.attempts) == attempts + 1  # one import entry for the matmul values
    # the seed already there is not duplicated or replaced
    assert dest.ensure_seed("cpu") == 0
    dest.close()


def test_export_filters_kinds_and_backend_retag(source, tmp_path):
    path = tmp_path / "traces.jsonl"
    assert export_memory(source, path, kinds=["trace", "seed"]) == 9 + source.count("seed")
    with pytest.raises(TransferError):
        export_memory(source, path, kinds=["nope"])
    dest = MemoryStore(tmp_path / "dst", embedder=get_embedder())
    added = import_memory(dest, path, backend="ascend", keep_values=False)
    assert added == 9  # seed items (API templates) do not move to another backend
    it = dest.get(["tr-relu-0"])[0]
    assert it.meta["backend"] == "ascend" and it.meta["imported_from_backend"] == "cpu"
    assert dest.values.get("tr-relu-0") is None
    dest.close()


def test_malformed_files_change_nothing(source, tmp_path):
    path = tmp_path / "mem.jsonl"
    export_memory(source, path)
    lines = path.read_text().splitlines()
    dest = MemoryStore(tmp_path / "dst", embedder=get_embedder())
    dest.add([MemoryItem("keep", "experience", "k", "t", {"task": "x"})])
    bad = {
        "torn.jsonl": "\n".join(lines[:3]) + "\n" + lines[3][:20],
        "truncated.jsonl": "\n".join(lines[:-2]) + "\n",
        "noheader.jsonl": "\n".join(lines[1:]) + "\n",
        "badkind.jsonl": "\n".join([lines[0], json.dumps({**json.loads(lines[1]), "kind": "weird"})] + lines[2:]),
        "badvalues.jsonl": "\n".join([lines[0], json.dumps({**json.loads(lines[1]), "values": {"q1": "high"}})]
                                     + lines[2:]),
        "empty.jsonl": "",
        "version.jsonl": json.dumps({**json.loads(lines[0]), "version": 99}) + "\n",
    }
    for name, text in bad.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(TransferError):
            import_memory(dest, p)
    with pytest.raises(TransferError):
        import_memory(dest, tmp_path / "missing.jsonl")
    assert dest.count() == 1 and dest.get(["keep"])[0].text == "t"
    assert len(dest.values.state.attempts) == 0
    dest.close()


def test_learned_practices_distilled_from_an_excluded_task_are_left_out(source, tmp_path):
    source.add([MemoryItem("bp:learned:a", "best_practice", "rows over threads", "Share rows over threads.",
                           {"backend": "cpu", "task": "", "learned": True, "tasks": ["softmax", "relu"]}),
                MemoryItem("bp:learned:b", "best_practice", "block the k loop", "Block the k loop.",
                           {"backend": "cpu", "task": "", "learned": True, "tasks": ["matmul"]})])
    path = tmp_path / "bp.jsonl"
    export_memory(source, path, exclude_tasks=["softmax"], kinds=["best_practice"])
    ids = [r["id"] for r in read_export(path)[1]]
    assert "bp:learned:b" in ids and "bp:learned:a" not in ids
    export_memory(source, path, kinds=["best_practice"])  # no exclusion: both; import drops the other one
    dest = MemoryStore(tmp_path / "dst", embedder=get_embedder())
    import_memory(dest, path, exclude_tasks=["matmul"])
    assert [it.id for it in dest.find(kind="best_practice") if it.id.startswith("bp:learned")] == ["bp:learned:a"]
    dest.close()
