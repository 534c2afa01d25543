"""MemoryStore: add/get/query/find/knowledge, seed, values mirror, persistence, the directory lock and
server mode (two processes sharing one memory through `chroma run`)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from evokernel.memory.embeddings import HashEmbedder, get_embedder  # noqa: E402
from evokernel.memory.store import (KINDS, MemoryItem, MemoryStore, MemoryStoreError,  # noqa: E402
                                    sanitize_meta)
from evokernel.memory.values import DRAFT, REFINE  # noqa: E402



def trace(i, task, key, parent="", **meta):
    return MemoryItem(f"tr{i}", "trace", key, f"// code {i}\n", {"backend": "cpu", "task": task, "parent": parent,
                                                                  "category": "x", "feasible": True, **meta})


@pytest.fixture
def store(tmp_path):
    s = MemoryStore(tmp_path / "mem", embedder=get_embedder())
    yield s
    s.close()


def test_add_get_query_find(store):
    items = [
        trace(1, "softmax", "softmax over the last dimension with online max and sum"),
        trace(2, "softmax", "softmax: vectorised exp with a polynomial", parent="tr1"),
        trace(3, "matmul", "matrix multiplication with cache blocking and packed panels"),
        trace(4, "relu", "relu activation vectorised with omp simd", parent="tr1"),
        MemoryItem("ex1", "experience", "layer norm needs the biased variance", "Use n, not n-1.",
                   {"backend": "cpu", "task": "layer_norm"}),
        MemoryItem("ex2", "experience", "softmax overflowed without subtracting the row maximum", "Subtract max.",
                   {"backend": "ascend", "task": "softmax"}),
    ]
    store.add(items)
    assert store.count() == 6 and store.count("trace") == 4 and store.count("seed") == 0
    got = store.get(["tr3", "missing", "ex1"])
    assert [g.id for g in got] == ["tr3", "ex1"]
    assert got[0].kind == "trace" and got[0].key.startswith("matrix") and got[0].text == "// code 3\n"
    assert got[0].meta["task"] == "matmul" and "kind" not in got[0].meta and "key" not in got[0].meta

    hits = store.query("numerically stable softmax", 3)
    assert hits[0][0].meta["task"] == "softmax"
    sims = [s for _, s in hits]
    assert sims == sorted(sims, reverse=True) and all(-1.0 <= s <= 1.0 + 1e-6 for s in sims)
    assert all(it.kind == "experience" for it, _ in store.query("softmax", 5, kinds=["experience"]))
    assert {it.id for it, _ in store.query("softmax", 10, backend="ascend")} == {"ex2"}
    ex = store.query("softmax", 10, exclude_tasks=["softmax"])
    assert ex and all(it.meta["task"] != "softmax" for it, _ in ex)
    assert store.query("softmax", 0) == [] and store.query("softmax", 5, kinds=["seed"]) == []
    assert len(store.query("anything", 100)) == 6

    assert [i.id for i in store.find(parent="tr1")] == ["tr2", "tr4"]
    assert [i.id for i in store.find(task="softmax", kind="trace")] == ["tr1", "tr2"]
    assert [i.id for i in store.find(backend="cpu", limit=2)] == ["tr1", "tr2"]
    assert store.find(task="nope") == []
    ids = store.query_ids("matrix multiply", 1)
    assert ids[0][0] == "tr3" and isinstance(ids[0][1], float)


def test_upsert_is_idempotent_and_updates(store):
    store.add([trace(1, "a", "first key")])
    store.add([trace(1, "a", "first key")])
    assert store.count() == 1
    store.add([MemoryItem("tr1", "trace", "changed key about convolution", "new text", {"task": "b"})])
    assert store.count() == 1
    it = store.get(["tr1"])[0]
    assert (it.text, it.meta["task"]) == ("new text", "b")
    assert store.find(task="a") == [] and [i.id for i in store.find(task="b")] == ["tr1"]
    assert store.query_ids("convolution", 1)[0][0] == "tr1"
    with pytest.raises(ValueError):
        store.add([MemoryItem("x", "bogus", "k", "t")])
    with pytest.raises(ValueError):
        store.add([MemoryItem("", "trace", "k", "t")])


def test_metadata_is_sanitised():
    m = sanitize_meta({"none": None, "d": {"b": 1, "a": [1, 2]}, "empty": [], "t": ("x", "y"), "s": {"b", "a"},
                       "mixed": [1, "a"], "ints": [1, 2], "f": np.float32(0.5), "i": np.int64(3), "ok": True,
                       "nan": float("nan"), "obj": Path("/x"), "nested": [[1]], "nums": [1, 2.5]})
    assert "none" not in m and "empty" not in m
    assert json.loads(m["d"]) == {"a": [1, 2], "b": 1}
    assert m["t"] == ["x", "y"] and m["s"] == ["a", "b"] and m["ints"] == [1, 2] and m["nums"] == [1.0, 2.5]
    assert isinstance(m["mixed"], str) and isinstance(m["nested"], str)
    assert m["f"] == 0.5 and type(m["f"]) is float and m["i"] == 3 and m["ok"] is True
    assert m["nan"] == "nan" and m["obj"] == "/x"


def test_add_stores_sanitised_metadata(store):
    store.add([MemoryItem("e", "experience", "k", "t", {"task": "t", "schedule": {"tile": 8}, "parent": None,
                                                        "apis": []})])
    it = store.get(["e"])[0]
    assert json.loads(it.meta["schedule"]) == {"tile": 8} and "parent" not in it.meta and "apis" not in it.meta
    store._items.clear()  # the same from Chroma, not the cache
    assert store.get(["e"])[0].meta == it.meta


def test_seed_and_knowledge(store):
    n = store.ensure_seed("cpu")
    assert 10 <= n <= 16 and store.ensure_seed("cpu") == 0
    assert store.count() == n
    assert store.count("best_practice") >= 3 and store.count("seed") >= 8
    k = store.knowledge("cpu", apis=["omp simd", "expf"], category="normalization", limit=4)
    ids = [i.id for i in k]
    assert ids[0] == "seed:cpu:00_candidate_format"  # the core template always comes first
    assert "seed:cpu:03_simd_vectorisation" in ids[:3] and len(ids) == 4
    # the normalization item (two categories) outranks OpenMP (eight); items matching nothing are left out
    assert "seed:cpu:07_layer_rms_norm" in ids and "seed:cpu:01_openmp_parallel_for" not in ids
    assert all(i.kind == "seed" for i in k)
    # names as an identifier/pragma scan of code yields them
    k = store.knowledge("cpu", apis={"#pragma omp parallel", "reduction", "for", "x"}, limit=3)
    assert [i.id for i in k][1:] == ["seed:cpu:02_openmp_reductions", "seed:cpu:01_openmp_parallel_for"]
    cat = store.knowledge("cpu", category="matmul", limit=10)
    assert "seed:cpu:05_matmul_blocking" in [i.id for i in cat]
    assert store.knowledge("ascend") == []
    # a changed seed file (different content hash) is replaced, a dropped one removed
    it = store.get(["seed:cpu:09_scan"])[0]
    store.add([MemoryItem(it.id, it.kind, it.key, "old text", {**it.meta, "content_hash": "old"}),
               MemoryItem("seed:cpu:99_gone", "seed", "gone", "gone", {"backend": "cpu", "source": "seed"})])
    assert store.ensure_seed("cpu") == 1
    assert store.get(["seed:cpu:09_scan"])[0].text != "old text" and store.get(["seed:cpu:99_gone"]) == []
    assert store.count() == n


def test_sync_values_and_stats(store):
    store.add([trace(1, "a", "one"), trace(2, "b", "two")])
    store.values.record("att0", DRAFT, 1.0, ["tr1"], task="a")
    store.values.record("att1", REFINE, 0.5, ["tr1", "tr2"], task="a")
    store.sync_values(["tr1", "tr2", "missing"])
    m1, m2 = (i.meta for i in store.get(["tr1", "tr2"]))
    assert m1["q1"] == pytest.approx(0.1) and m1["n1"] == 1 and m1["n2"] == 1 and m1["last_r1"] == 1.0
    assert m2["q1"] == 0.0 and m2["n2"] == 1 and "last_r1" not in m2
    store._items.clear()
    assert store.get(["tr1"])[0].meta["q2"] == pytest.approx(store.values.q("tr1", REFINE))
    s = store.stats()
    assert s["items"] == 2 and s["by_kind"] == {"trace": 2} and s["by_task"] == {"a": 1, "b": 1}
    assert s["values"]["attempts"] == 2 and s["values"]["items_with_q2"] == 2


def test_close_reopen_persists(tmp_path):
    d = tmp_path / "mem"
    s = MemoryStore(d, embedder=HashEmbedder())
    s.add([trace(i, f"t{i % 3}", f"kernel number {i}") for i in range(30)])
    s.values.record("a", DRAFT, 1.0, ["tr3"])
    s.close()
    with pytest.raises(MemoryStoreError):
        s.count()
    s = MemoryStore(d, embedder=HashEmbedder())
    assert s.count() == 30 and s.values.q("tr3", DRAFT) == pytest.approx(0.1)
    assert s.query_ids("kernel number 7", 1)[0][0] == "tr7"
    assert [i.id for i in s.find(task="t1")][:2] == ["tr1", "tr4"]
    s.close()


LOCK_PROBE = textwrap.dedent("""
    import sys
    from evokernel.memory.embeddings import HashEmbedder
    from evokernel.memory.store import MemoryStore, MemoryLockedError
    try:
        s = MemoryStore(sys.argv[1], embedder=HashEmbedder())
    except MemoryLockedError as e:
        print("LOCKED", e)
    else:
        print("OPEN", s.count())
        s.close()
""")


def test_second_process_gets_a_clear_lock_error(tmp_path):
    d = tmp_path / "mem"
    s = MemoryStore(d, embedder=HashEmbedder())
    s.add([trace(1, "a", "k")])
    out = subprocess.run([sys.executable, "-c", LOCK_PROBE, str(d)], capture_output=True, text=True, timeout=120)
    assert out.stdout.startswith("LOCKED"), out.stderr
    assert "chroma run" in out.stdout and str(os.getpid()) in out.stdout
    # in-process, a second store on the same directory shares the lock
    s2 = MemoryStore(d, embedder=HashEmbedder())
    s2.close()
    s.close()
    out = subprocess.run([sys.executable, "-c", LOCK_PROBE, str(d)], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "OPEN 1", out.stderr


def test_bad_paths_and_urls(tmp_path, unused_port):
    with pytest.raises(MemoryStoreError):
        MemoryStore(None)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(MemoryStoreError, match="memory directory"):
        MemoryStore(f)
    with pytest.raises(MemoryStoreError, match="bad Chroma server URL"):
        MemoryStore(tmp_path / "m", url="ftp://127.0.0.1:1")
    with pytest.raises(MemoryStoreError, match="cannot reach"):
        MemoryStore(tmp_path / "m", url=f"http://127.0.0.1:{unused_port}")
    with pytest.raises(MemoryStoreError, match="collection"):
        MemoryStore(tmp_path / "m2", collection="x")  # chroma wants 3+ characters
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(MemoryStoreError, match="writable"):
            MemoryStore(ro)
    assert set(KINDS) == {"seed", "experience", "trace", "best_practice"}


SERVER_CLIENT = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from evokernel.memory.embeddings import HashEmbedder
    from evokernel.memory.store import MemoryItem, MemoryStore
    from evokernel.memory.values import DRAFT
    url, mem, name, other = sys.argv[1:5]
    s = MemoryStore(mem, url=url, embedder=HashEmbedder(), refresh_interval=0.0)
    s.add([MemoryItem(f"{name}{i}", "trace", f"{name} kernel variant {i}", f"code {name}{i}",
                      {"backend": "cpu", "task": name}) for i in range(20)])
    for i in range(10):
        s.values.record(f"{name}/{i}", DRAFT, 1.0, [f"{name}{i}", "shared0"], task=name)
    Path(mem, name + ".done").touch()
    deadline = time.time() + 60
    while not Path(mem, other + ".done").exists():
        assert time.time() < deadline, "the other client never finished"
        time.sleep(0.05)
    s.refresh()
    print(json.dumps({"count": s.count(), "other": len(s.find(task=other)),
                      "top": s.query_ids(f"{other} kernel variant 7", 1)[0][0],
                      "shared_n1": s.values.get("shared0").n1, "other_q1": s.values.q(other + "3", DRAFT)}))
    s.close()
""")


def test_two_processes_share_one_memory_through_a_server(tmp_path, chroma_server):
    mem = tmp_path / "mem"
    mem.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", SERVER_CLIENT, chroma_server, str(mem), a, b],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a, b in (("alpha", "beta"), ("beta", "alpha"))]
    outs = []
    for p in procs:
        out, errs = p.communicate(timeout=180)
        assert p.returncode == 0, errs[-3000:]
        outs.append(json.loads(out))
    for out, other in zip(outs, ("beta", "alpha")):
        assert out["count"] == 40 and out["other"] == 20
        assert out["top"] == f"{other}7"
        assert out["other_q1"] == pytest.approx(0.1)
    assert max(o["shared_n1"] for o in outs) == 20  # the later finisher saw both writers' updates
    # a third client, in this process, sees everything; the ledger in the memory dir holds both runs
    s = MemoryStore(mem, url=chroma_server, embedder=HashEmbedder())
    assert s.count() == 40 and s.values.get("shared0").n1 == 20 and len(s.values.state.attempts) == 20
    s.close()


def test_mirror_snapshot(tmp_path):
    d = tmp_path / "mem"
    s = MemoryStore(d, embedder=HashEmbedder())
    s.add([trace(i, "t", f"kernel {i}") for i in range(10)])
    snap = d / "mirror-evokernel-memory.npz"
    assert not snap.exists()
    s.delete(["tr0"])
    s.close()
    assert snap.exists()
    s = MemoryStore(d, embedder=HashEmbedder())
    assert s._load_snapshot() and s.count() == 9 and s.query_ids("kernel 4", 1)[0][0] == "tr4"
    assert [i.id for i in s.find(task="t")][:2] == ["tr1", "tr2"]
    s.add([trace(10, "u", "kernel 10")])  # the first write drops the snapshot (a crash now leaves none)
    assert not snap.exists()
    s2 = MemoryStore(d, embedder=HashEmbedder())  # same process, same directory: sees the new row
    assert s2.count() == 10 and s2.find(task="u")[0].id == "tr10"
    s2.add([trace(11, "u", "kernel 11")])
    assert s.count() == 11
    s2.close()
    assert not snap.exists()  # another store still has the directory open
    s.close()
    assert snap.exists()
    # a snapshot that disagrees with Chroma's count is ignored
    s = MemoryStore(d, embedder=HashEmbedder())
    s._col.add(ids=["sneaky"], embeddings=[np.eye(384, dtype=np.float32)[0]], documents=["x"],
               metadatas=[{"kind": "trace", "key": "x"}])
    assert s.count() == 12
    s.close()


def test_two_stage_search_matches_exact(tmp_path, monkeypatch):
    import evokernel.memory.store as store_mod

    monkeypatch.setattr(store_mod, "COARSE_MIN", 100)
    monkeypatch.setattr(store_mod, "COARSE_POOL", 64)
    monkeypatch.setattr(store_mod, "PCA_DIM", 64)
    s = MemoryStore(tmp_path / "mem", embedder=HashEmbedder())
    words = ["relu", "softmax", "matmul", "conv", "pool", "norm", "scan", "loss", "gelu", "tile", "simd", "omp"]
    rng = np.random.default_rng(0)
    s.add([MemoryItem(f"i{i}", "trace" if i % 4 else "experience", " ".join(rng.choice(words, 4)), "t",
                      {"backend": "cpu", "task": f"t{i % 7}"}) for i in range(400)])
    for key in ("softmax tile", "relu conv pool", "omp simd norm"):
        for kw in ({}, {"kinds": ["trace"]}, {"exclude_tasks": ["t1", "t2"]}):
            s.search_mode = "auto"
            fast = s.query_ids(key, 5, **kw)
            assert s._proj is not None
            s.search_mode = "exact"
            exact = s.query_ids(key, 5, **kw)
            assert [x for _, x in fast] == pytest.approx([x for _, x in exact])  # same similarities
    # rows added or overwritten after the basis was fitted are projected too
    s.search_mode = "auto"
    s.add([MemoryItem("new", "trace", "zebra quokka", "t", {"backend": "cpu"}),
           MemoryItem("i3", "trace", "yak narwhal", "t", {"backend": "cpu"})])
    assert s.query_ids("zebra quokka", 1)[0][0] == "new" and s.query_ids("yak narwhal", 1)[0][0] == "i3"
    with pytest.raises(ValueError):
        MemoryStore(tmp_path / "m2", search="fuzzy")
    s.close()
