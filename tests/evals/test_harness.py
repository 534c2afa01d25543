"""`evokernel eval` end to end, as a user runs it: real `evokernel run` processes, real verdicts.

Small tasks (``--set``) keep each attempt well under a second; process start-up (torch, sandboxes,
the embedding model) dominates, so every test runs as few units as its point needs.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evokernel.evals.metrics import load_attempts

TASKS = ["cpu-l1/01_relu", "cpu-l1/11_softmax"]
SMALL = {"batch_size": 16, "dim": 1024}


def config(tmp_path, **kw):
    lines = [f'name = "e2e"', f'out = "{tmp_path / "out"}"', f"tasks = {json.dumps(TASKS)}",
             "[set]"] + [f"{k} = {v}" for k, v in SMALL.items()]
    head = [f"{k} = {json.dumps(v)}" for k, v in kw.items()]
    p = tmp_path / "eval.toml"
    p.write_text("\n".join(head + lines) + "\n")
    return p


def evokernel(*args, env_extra=None, **kw):
    env = dict(os.environ, HF_HUB_OFFLINE="1", **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "evokernel", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=900, **kw)


def all_attempts(out: Path, arm: str):
    return [r for f in sorted((out / "arms" / arm / "runs").glob("*/attempts.jsonl")) for r in load_attempts(f)]


def test_two_methods_two_tasks_produce_every_output_file(tmp_path):
    cfg = config(tmp_path, budget=3, seeds=1, methods=["evokernel", "passk"], workers=2, epsilon_end=0.1,
                 lambda_start=3.0)
    r = evokernel("eval", cfg)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "out"
    # every unit ran with the settings file the harness gave it (not flags): its run.json records them all
    for unit in json.loads((out / "eval.json").read_text())["units"]:
        given = json.loads((out / unit["run_dir"] / "unit-settings.json").read_text())
        ran = json.loads((out / unit["run_dir"] / "run.json").read_text())["settings"]
        assert {k: ran["context"][k] for k in given if k not in ("tasks", "set")} == \
            {k: v for k, v in given.items() if k not in ("tasks", "set")}, unit["key"]
        assert (ran["context"]["epsilon_end"], ran["context"]["lambda_start"], ran["context"]["budget"],
                ran["context"]["recall"]) == (0.1, 3.0, 3, False)
        assert ran["inputs"]["overrides"] == SMALL and ran["tasks"] == unit["task_ids"]
    for name in ["eval.json", "progress.json", "summary.json", "report.md", "figures/tiers.png",
                 "figures/cumulative_success.png", "figures/trajectories.png", "figures/q_values.png",
                 "figures/comparison.png"]:
        assert (out / name).is_file(), name
    assert (out / "figures/tiers.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    progress = json.loads((out / "progress.json").read_text())
    assert {k: v["status"] for k, v in progress.items()} == {
        "evokernel/seed-0/all": "done", "passk/seed-0/shard-1of2": "done", "passk/seed-0/shard-2of2": "done"}
    for arm in ("evokernel/seed-0", "passk/seed-0"):
        recs = all_attempts(out, arm)
        assert sorted((r["task"], r["iteration"]) for r in recs) == [(t, i) for t in TASKS for i in range(3)]
    # evokernel refines after its first feasible draft; pass@k only ever drafts
    assert {r["stage"] for r in all_attempts(out, "passk/seed-0")} == {"draft"}
    assert "refine" in {r["stage"] for r in all_attempts(out, "evokernel/seed-0")}
    # the shared memory of the evokernel arm learned from both tasks; the baseline kept its own
    ledger = [json.loads(x) for x in (out / "arms/evokernel/seed-0/memory/values.jsonl").read_text().splitlines()]
    assert {e["task"] for e in ledger} == set(TASKS)
    assert not (out / "arms/passk/seed-0/memory").exists()

    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is True and set(summary["methods"]) == {"evokernel", "passk"}
    evo = summary["methods"]["evokernel"]
    for key in ["compile_rate", "correctness", "round1_correctness", "median_speedup_vs_first",
                "iqr_speedup_vs_first", "geomean_speedup_vs_eager", "fast_p", "per_category"]:
        assert key in evo, key
    recs = all_attempts(out, "evokernel/seed-0")
    assert evo["compile_rate"] == pytest.approx(sum(r["compiled"] for r in recs) / len(recs))
    report = (out / "report.md").read_text()
    assert "passk" in report and "Conditions" in report and "evokernel eval" in report

    # running it again finds nothing to do and keeps every number
    again = evokernel("eval", cfg)
    assert again.returncode == 0, again.stderr[-2000:]
    assert not [ln for ln in again.stderr.splitlines() if ln.strip().startswith(("start ", "resume "))]
    assert len(all_attempts(out, "evokernel/seed-0")) == 6
    # `evokernel report` regenerates the same summary from the files
    (out / "summary.json").unlink()
    rep = evokernel("report", out, "--json")
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout)["methods"]["evokernel"]["compile_rate"] == evo["compile_rate"]


def test_ctrl_c_keeps_partial_results_and_the_same_command_continues(tmp_path):
    cfg = config(tmp_path, budget=4, seeds=1, methods=["evokernel"])
    out = tmp_path / "out"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.Popen([sys.executable, "-m", "evokernel", "eval", str(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    log = out / "arms/evokernel/seed-0/runs/all/attempts.jsonl"
    deadline = time.monotonic() + 300
    while not (log.exists() and log.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no attempt within 300 s"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr[-3000:]
    assert "continue with: evokernel eval --out" in stderr
    partial = load_attempts(log)
    assert 2 <= len(partial) < 8
    progress = json.loads((out / "progress.json").read_text())
    assert progress["evokernel/seed-0/all"]["status"] == "interrupted"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False  # the partial report says so
    assert (out / "report.md").exists()

    # continue by the output directory alone: the plan and settings come from eval.json
    r = evokernel("eval", "--out", out)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resume evokernel/seed-0/all" in r.stderr
    done = load_attempts(log)
    assert sorted((x["task"], x["iteration"]) for x in done) == [(t, i) for t in TASKS for i in range(4)]
    assert [x["attempt_id"] for x in done[:len(partial)]] == [x["attempt_id"] for x in partial]
    assert json.loads((out / "summary.json").read_text())["complete"] is True


def test_shards_of_a_shared_stream_use_one_chroma_server(tmp_path):
    cfg = config(tmp_path, budget=2, seeds=[3], methods=["evokernel"], workers=2, memory_server=True)
    r = evokernel("eval", cfg)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "out"
    units = json.loads((out / "eval.json").read_text())["units"]
    assert [u["name"] for u in units] == ["shard-1of2", "shard-2of2"] and all(u["server"] for u in units)
    # both shards wrote into the one memory: its ledger has both tasks, its Chroma folder was the server's
    ledger = [json.loads(x) for x in (out / "arms/evokernel/seed-3/memory/values.jsonl").read_text().splitlines()]
    assert {e["task"] for e in ledger} == set(TASKS)
    assert (out / "arms/evokernel/seed-3/memory/chroma").is_dir()
    assert "Uvicorn" in (out / "logs/evokernel__seed-3__chroma.log").read_text() or \
        (out / "logs/evokernel__seed-3__chroma.log").stat().st_size > 0
    run = json.loads((out / "arms/evokernel/seed-3/runs/shard-2of2/run.json").read_text())
    assert run["settings"]["context"]["memory_url"].startswith("http://127.0.0.1:")


def test_bad_usage_exits_2(tmp_path):
    r = evokernel("eval", config(tmp_path, budget=0))
    assert r.returncode == 2 and "budget" in r.stderr
    r = evokernel("eval")
    assert r.returncode == 2 and "give a config file" in r.stderr
    r = evokernel("eval", config(tmp_path, methods=["codex"]))
    assert r.returncode == 2 and "unknown method 'codex'" in r.stderr
    r = evokernel("report", tmp_path / "nothing-here")
    assert r.returncode == 2 and "error:" in r.stderr


def test_an_llm_eval_is_one_config_change(tmp_path):
    """generators = [an LLM spec]: the same harness drives ChatOpenAI over HTTP (a scripted endpoint on
    127.0.0.1 here), and tokens reach the report."""
    from fake_openai import FakeOpenAI

    kernel = (Path(__file__).resolve().parents[2] / "evokernel/examples/cpu/01_relu.py").read_text()
    cfg = tmp_path / "llm.toml"
    cfg.write_text(f'name = "llm"\nout = "{tmp_path / "out"}"\ntasks = ["cpu-l1/01_relu"]\nbudget = 2\n'
                   'generators = ["openai:gpt-4o-mini"]\nmethods = ["evokernel", "passk"]\n'
                   '[set]\nbatch_size = 16\ndim = 1024\n')
    with FakeOpenAI(default=f"A kernel.\n\n```python\n{kernel}\n```\n") as server:
        r = evokernel("eval", cfg, env_extra={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"})
        n_requests = len(server.requests)
    assert r.returncode == 0, r.stderr[-3000:]
    # 2 attempts x 2 methods, each one chat completion, + evokernel's 2 experience summaries (the reply holds code:
    # the template sentence is stored); passk retrieves nothing, so its experiences are not written by the model
    assert n_requests == 6
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert set(summary["methods"]) == {"evokernel", "passk"}
    for m in summary["methods"].values():
        assert m["correctness"] == 1.0 and m["tokens_in"] > 0 and m["tokens_out"] > 0 and m["model"] == "openai:gpt-4o-mini"
    assert "gpt-4o-mini" in (tmp_path / "out/report.md").read_text()


def test_exported_memory_mode_imports_the_export_minus_the_evaluated_tasks(tmp_path):
    from evokernel.evals import harness
    from evokernel.evals.config import make_config
    from evokernel.memory.embeddings import HashEmbedder
    from evokernel.memory.store import MemoryStore

    export = tmp_path / "backbone.jsonl"
    items = [{"id": f"trace:other-model:{t}:0", "kind": "trace", "key": f"{t} | vectorised", "text": "CODE",
              "meta": {"backend": "cpu", "task": t, "feasible": True}, "values": None}
             for t in ("cpu-l1/01_relu", "cpu-l1/29_conv2d")]
    export.write_text("\n".join(json.dumps(x) for x in [{"format": "evokernel-memory", "version": 1, "items": 2}]
                                + items) + "\n")
    cfg = make_config({"tasks": ["cpu-l1/01_relu"], "memory": ["exported"], "memory_from": str(export),
                       "budget": 1, "out": str(tmp_path / "out")})
    ed, meta = harness.prepare(cfg, "evokernel eval x.toml")
    runner = harness.Runner(ed, meta)
    [unit] = runner.units
    runner._prepare_arm(unit)
    mem = tmp_path / "out" / unit.memory
    assert (mem / ".imported").read_text().strip() == str(export)
    with MemoryStore(mem, embedder=HashEmbedder()) as store:
        ids = set(store.ids())
    # the evaluated operator's trace is left out (no test-set leakage), the other operator's comes in
    assert "trace:other-model:cpu-l1/29_conv2d:0" in ids and "trace:other-model:cpu-l1/01_relu:0" not in ids
    export.unlink()  # imported once: a resumed eval does not import again
    runner._prepare_arm(unit)


def test_the_eval_runs_on_the_configured_backend(tmp_path):
    """backend = "ascend-sim" reaches every unit: Ascend C candidates, emulator verdicts, estimates."""
    p = tmp_path / "eval.toml"
    p.write_text(f'name = "npu"\nout = "{tmp_path / "out"}"\ntasks = ["npu-l1/01_relu"]\nbackend = "ascend-sim"\n'
                 'budget = 2\nseeds = 1\nmethods = ["evokernel"]\n[set]\nbatch_size = 8\n')
    r = evokernel("eval", p)
    assert r.returncode == 0, r.stderr[-3000:]
    records = all_attempts(tmp_path / "out", "evokernel/seed-0")
    assert len(records) == 2 and all(x["feasible"] and x["latency_kind"] == "estimate" for x in records)
    assert any(k.startswith("seed:ascend:") for x in records for k in x["knowledge"])
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Latencies are estimates" in report and "MODELLED, not measured" in report
