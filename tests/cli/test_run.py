"""`evokernel run` as a user runs it: a subprocess, real compiles and verdicts, the template generator."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evokernel.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
RELU = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
SMALL = ["--set", "batch_size=16", "--set", "dim=4096"]


def evokernel(*args, **kw):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "evokernel", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=900, **kw)


def lines(path: Path):
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("args, message", [
    ([], "give task files"),
    (["cpu-l9"], "no such task file"),
    (["cpu-l1", "--generator", "llm"], "needs --model"),
    (["cpu-l1", "--generator", " "], "generator must be template or an LLM spec"),
    (["cpu-l1", "--generator", "openai:a", "--model", "openai:b"], "give the LLM spec once"),
    (["cpu-l1", "--policy", "best"], "unknown policy 'best'"),
    (["cpu-l1", "--method", "codex"], "unknown method"),
    (["--resume"], "--resume needs --run-dir"),
    (["cpu-l1", "--set", "nosuch=3"], "no task defines nosuch"),
    ([str(RELU), "--set", "nosuch=3"], "no module-level constant"),
])
def test_bad_usage_exits_2_with_a_clear_message(args, message, tmp_path):
    r = CliRunner().invoke(app, ["run", *args, "--run-dir", str(tmp_path / "r")] if args != ["--resume"] else ["run", *args])
    assert r.exit_code == 2, r.output
    assert message in r.output


def test_existing_run_dir_needs_resume(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "run.json").write_text('{"run_id": "x", "settings": {}}')
    r = CliRunner().invoke(app, ["run", str(RELU), "--run-dir", str(tmp_path / "r")])
    assert r.exit_code == 2 and "--resume" in r.output


def test_template_run_over_three_builtin_tasks_then_a_second_run_reuses_memory(tmp_path):
    mem, run1, run2 = tmp_path / "mem", tmp_path / "run1", tmp_path / "run2"
    r = evokernel("run", "cpu-l1", "--limit", "3", "--budget", "3", *SMALL, "--memory", mem, "--run-dir", run1)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "compile rate" in r.stdout and "correctness" in r.stdout
    summary = json.loads((run1 / "summary.json").read_text())
    assert [t["task"] for t in summary["tasks"]] == ["cpu-l1/01_relu", "cpu-l1/02_leaky_relu", "cpu-l1/03_gelu"]
    assert all(t["feasible"] and t["attempts"] == 3 for t in summary["tasks"])
    assert summary["correctness"] == 1.0 and 0 < summary["compile_rate"] <= 1
    attempts = lines(run1 / "attempts.jsonl")
    assert len(attempts) == 9 and {a["stage"] for a in attempts} == {"draft", "refine"}
    for key in ("attempt_id", "task", "iteration", "stage", "context", "start_point", "code_hash", "feasible",
                "failed_gate", "latency_ms", "reward"):
        assert all(key in a for a in attempts), key
    best = sorted((run1 / "best").glob("*.py"))
    assert len(best) == 3
    v = evokernel("verify", RELU, run1 / "best" / "cpu-l1__01_relu.py", *SMALL)
    assert v.returncode == 0, v.stdout + v.stderr

    # values moved and are on disk; the memory CLI sees the run's items
    ledger = lines(mem / "values.jsonl")
    assert any(u["q_after"] != u["q_before"] for e in ledger for u in e.get("updates", []))
    stats = evokernel("memory", "stats", "--memory", mem)
    assert stats.returncode == 0 and "trace" in stats.stdout

    # a second run with the same memory starts relu from the first run's fastest kernel (named by path this
    # time: the same task by its source), judged again, then refines it with the first run's items
    run1_id = json.loads((run1 / "run.json").read_text())["run_id"]
    relu1 = [a for a in attempts if a["task"] == "cpu-l1/01_relu" and a["feasible"]]
    fastest = min(relu1, key=lambda a: a["latency_ms"])["trace_id"]
    r = evokernel("run", RELU, "--budget", "3", *SMALL, "--memory", mem, "--run-dir", run2)
    assert r.returncode == 0, r.stderr[-3000:]
    again = lines(run2 / "attempts.jsonl")
    assert again[0]["model"] == "recall" and again[0]["recalled_from"] == fastest and again[0]["feasible"]
    assert again[0]["context"] == [] and again[0]["tokens_in"] == 0  # no context credited, no generator call
    assert [a["stage"] for a in again] == ["draft", "refine", "refine"] and again[1]["start_point"] == again[0]["trace_id"]
    used = [i for a in again for i in a["context"]]
    assert any(run1_id in i for i in used)
    # other sizes are another task: nothing to recall; --no-recall drafts from scratch
    for extra, run in ((["--set", "dim=2048"], tmp_path / "run3"), (["--no-recall"], tmp_path / "run4")):
        r = evokernel("run", RELU, "--budget", "1", *SMALL, *extra, "--memory", mem, "--run-dir", run)
        assert r.returncode == 0, r.stderr[-3000:]
        assert lines(run / "attempts.jsonl")[0]["model"] == "template"


def test_resume_after_kill_redoes_no_finished_attempt(tmp_path):
    mem, run = tmp_path / "mem", tmp_path / "run"
    args = [sys.executable, "-m", "evokernel", "run", str(RELU), "--budget", "6", *SMALL, "--memory", str(mem),
            "--run-dir", str(run)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=dict(os.environ, HF_HUB_OFFLINE="1"))
    log = run / "attempts.jsonl"
    deadline = time.monotonic() + 300
    while not (log.exists() and len(log.read_text().splitlines()) >= 2):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "no attempts logged"
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = lines(log)
    assert 2 <= len(done_before) < 6

    r = evokernel("run", "--resume", "--run-dir", run)
    assert r.returncode == 0, r.stderr[-3000:]
    after = lines(log)
    assert [a["iteration"] for a in after] == list(range(6))  # each attempt once, in order
    assert after[: len(done_before)] == done_before  # finished attempts were not redone
    ledger = lines(mem / "values.jsonl")
    ids = [e["attempt_id"] for e in ledger if not e["attempt_id"].startswith(("import:", "seed:"))]
    assert len(ids) == len(set(ids)) == 6  # no value update applied twice
    assert json.loads((run / "summary.json").read_text())["tasks"][0]["attempts"] == 6


def test_ctrl_c_then_resume_runs_the_remaining_tasks(tmp_path):
    """Ctrl-C lets the operator in flight finish its step; the checkpoint then holds that step's writes
    but no next node. Resume must continue with the next operator, not call the run finished."""
    mem, run = tmp_path / "mem", tmp_path / "run"
    softmax = RELU.parent / "11_softmax.py"
    args = [sys.executable, "-m", "evokernel", "run", str(RELU), str(softmax), "--budget", "3", "--set", "batch_size=16",
            "--set", "dim=1024", "--memory", str(mem), "--run-dir", str(run)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, HF_HUB_OFFLINE="1"))
    log = run / "attempts.jsonl"
    deadline = time.monotonic() + 300
    while not (log.exists() and len(log.read_text().splitlines()) >= 1):
        assert proc.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, "no attempts logged"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "resume with: evokernel run --resume" in stderr
    before = lines(log)
    assert {a["task"] for a in before} == {"01_relu"}  # interrupted before the second operator

    r = evokernel("run", "--resume", "--run-dir", run)
    assert r.returncode == 0 and "already finished" not in r.stderr, r.stderr[-3000:]
    after = lines(log)
    assert sorted((a["task"], a["iteration"]) for a in after) == [(t, i) for t in ("01_relu", "11_softmax")
                                                                   for i in range(3)]
    assert after[: len(before)] == before


def test_resume_of_a_finished_run_or_one_killed_before_its_first_checkpoint(tmp_path):
    mem, run = tmp_path / "mem", tmp_path / "run"
    r = evokernel("run", RELU, "--budget", "1", *SMALL, "--memory", mem, "--run-dir", run)
    assert r.returncode == 0, r.stderr[-2000:]
    r = evokernel("run", "--resume", "--run-dir", run)
    assert r.returncode == 0 and "already finished" in r.stderr
    assert len(lines(run / "attempts.jsonl")) == 1
    # a run whose process died before any checkpoint: resume starts it from its saved inputs
    (run / "checkpoints.sqlite").unlink()
    (run / "attempts.jsonl").unlink()
    r = evokernel("run", "--resume", "--run-dir", run)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [a["iteration"] for a in lines(run / "attempts.jsonl")] == [0]


def test_offline_ascend_sim_run_drafts_and_refines_ascend_c(tmp_path):
    """`evokernel run npu-l1 --backend ascend-sim --generator template`: Ascend C drafts and refinements,
    judged by the emulator, with latencies labelled as estimates everywhere."""
    run = tmp_path / "run"
    r = evokernel("run", "npu-l1/03_sigmoid", "npu-l1/19_softmax", "--backend", "ascend-sim", "--generator",
                  "template", "--budget", "3", "--memory", tmp_path / "mem", "--run-dir", run)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "LATENCIES ARE ESTIMATES" in r.stdout and "est. us" in r.stdout
    assert "est " in r.stderr and " us" in r.stderr  # the per-attempt progress lines
    records = lines(run / "attempts.jsonl")
    assert len(records) == 6 and all(x["feasible"] for x in records), [x["failed_gate"] for x in records]
    assert {x["stage"] for x in records} == {"draft", "refine"}
    assert all(x["latency_kind"] == "estimate" for x in records)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["latency_kind"] == "estimate" and summary["correctness"] == 1.0
    best = (run / "best").glob("*.py")
    for b in best:
        text = b.read_text()
        assert "project_json_src" in text and "--backend ascend-sim" in text


def test_fit_option_is_checked():
    r = CliRunner().invoke(app, ["run", str(RELU), "--fit", "sometimes"])
    assert r.exit_code == 2 and "unknown fit 'sometimes' (one of auto, none)" in r.output


def test_prepare_fits_the_queue_and_carries_fitted_sizes_as_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_CACHE", str(tmp_path / "cache"))
    from types import SimpleNamespace

    from evokernel.graph.main import prepare
    from evokernel.graph.resources import task as spec_task
    from evokernel.tasks.load import load_task

    big = tmp_path / "19_ReLU.py"
    big.write_text(RELU.read_text().replace("batch_size = 160", "batch_size = 4096")
                   .replace("dim = 65536", "dim = 393216"))
    runtime = SimpleNamespace(context={"backend": "cpu"})  # fit: "auto", the default
    [spec] = prepare({"tasks": [str(big)], "overrides": {"batch_size": 64}}, runtime)["queue"]
    fitted = load_task(big, {"batch_size": 64}, fit="auto")
    assert spec["overrides"] == fitted.applied_overrides and spec["overrides"]["batch_size"] == 64
    assert spec["fit"]["changed"] and "batch_size" not in spec["fit"]["changed"]
    assert spec_task(spec).key == fitted.key  # what every node of the run judges
    as_written = SimpleNamespace(context={"backend": "cpu", "fit": "none"})
    [plain] = prepare({"tasks": [str(big)], "overrides": {"batch_size": 64}}, as_written)["queue"]
    assert plain["overrides"] == {"batch_size": 64} and plain["fit"] == {"mode": "none", "changed": {}}


def test_sigint_stops_an_llm_run_between_attempts_even_when_started_in_the_background(tmp_path):
    """An eval starts its units from a script, where the shell sets SIGINT to ignored; the harness stops them
    with one SIGINT. The drafting subgraph runs on a LangGraph worker thread, so the KeyboardInterrupt of the
    main thread alone only waited for it while it went on attempt after attempt (found with a real model:
    3 minutes of further attempts). Now at most the attempt in flight finishes, and --resume completes the run
    with no attempt done twice."""
    from fake_openai import FakeOpenAI

    wrong = "```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n```\n"
    mem, run = tmp_path / "mem", tmp_path / "run"
    with FakeOpenAI(default={"content": wrong, "delay_s": 1.0}) as server:
        env = dict(os.environ, HF_HUB_OFFLINE="1", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test")
        args = [sys.executable, "-m", "evokernel", "run", str(RELU), "--budget", "8", *SMALL, "--generator", "llm",
                "--model", "openai:fake-model", "--memory", str(mem), "--run-dir", str(run),
                "--no-llm-experiences"]  # one request per attempt (the counts below)
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        log = run / "attempts.jsonl"
        deadline = time.monotonic() + 300
        while not (log.exists() and len(log.read_text().splitlines()) >= 2):
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no attempts logged"
            time.sleep(0.1)
        at_signal = len(lines(log))
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 130, stderr[-3000:]
        assert "resume with: evokernel run --resume" in stderr
        before = lines(log)
        assert at_signal <= len(before) <= at_signal + 1 < 8  # the attempt in flight, no more
        requests_before = len(server.requests)
        assert requests_before <= len(before) + 1

        r = subprocess.run([sys.executable, "-m", "evokernel", "run", "--resume", "--run-dir", str(run)],
                           capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    after = lines(log)
    assert [a["iteration"] for a in after] == list(range(8)) and after[:len(before)] == before
    assert all(a["failed_gate"] for a in after)  # the identity is not a ReLU


def test_an_llm_run_says_when_the_experience_fell_back_to_the_template_sentence(tmp_path):
    from fake_openai import FakeOpenAI

    wrong = "```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n```\n"
    with FakeOpenAI(default=wrong) as server:  # the experience call gets code too: junk, the template sentence
        env = dict(os.environ, HF_HUB_OFFLINE="1", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="test")
        r = subprocess.run([sys.executable, "-m", "evokernel", "run", str(RELU), "--budget", "1", *SMALL,
                            "--generator", "llm", "--model", "openai:fake-model", "--memory", str(tmp_path / "mem"),
                            "--run-dir", str(tmp_path / "run")], capture_output=True, text=True, env=env, timeout=600)
        n_requests = len(server.requests)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[experience: template, fallback: code, not prose]" in r.stderr
    assert n_requests == 2  # the candidate and the experience
    (rec,) = lines(tmp_path / "run" / "attempts.jsonl")
    assert rec["experience"] == {"kind": "template", "reason": "fallback: code, not prose", "model": "openai:fake-model",
                                 "tokens_in": rec["experience"]["tokens_in"], "tokens_out": rec["experience"]["tokens_out"],
                                 "seconds": rec["experience"]["seconds"]}


def test_a_run_from_before_fit_was_a_setting_resumes_with_the_fit_it_had(tmp_path):
    """Older runs kept the fit in the graph's input (run.json's inputs); their context has none."""
    from evokernel.cli.run import _resumed
    from evokernel.graph.context import Context

    ctx = Context(budget=3, run_dir=str(tmp_path), run_id="old").settings()
    del ctx["fit"]
    inputs = {"tasks": ["cpu-l1"], "overrides": {}, "fit": "none", "limit": 1}
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "old", "settings": {
        "context": ctx, "tasks": ["cpu-l1/01_relu"], "inputs": inputs}}))
    resumed, resumed_inputs, task_ids, _ = _resumed({"run_dir": str(tmp_path), "memory_url": "http://127.0.0.1:9"})
    assert (resumed.fit, resumed.budget, resumed.memory_url) == ("none", 3, "http://127.0.0.1:9")
    assert "fit" not in resumed_inputs and task_ids == ["cpu-l1/01_relu"]
    del inputs["fit"]  # a run from before the fit at all ran its sizes as written
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "old", "settings": {
        "context": ctx, "tasks": ["cpu-l1/01_relu"], "inputs": inputs}}))
    assert _resumed({"run_dir": str(tmp_path)})[0].fit == "none"


def _table_text(summary):
    from rich.console import Console

    from evokernel.cli.run import results_table

    console = Console(width=200, record=True)
    console.print(results_table(summary, "run r"))
    return console.export_text()


def test_the_run_table_shows_vs_compile_only_when_the_run_asked_for_that_baseline():
    from evokernel.runtime.run_dir import summarize

    base = [{"attempt_id": "r:a:0", "task": "a", "iteration": 0, "feasible": True, "compiled": True, "latency_ms": 1.0,
             "speedup_vs_eager": 2.0},
            {"attempt_id": "r:b:0", "task": "b", "iteration": 0, "feasible": True, "compiled": True, "latency_ms": 1.0,
             "speedup_vs_eager": 0.5}]
    plain = _table_text(summarize(base, ["a", "b"]))
    assert "vs eager" in plain and "vs compile" not in plain and "geomean" in plain and "1.00x" in plain
    with_compile = [base[0] | {"speedup_vs_compile": 1.25}, base[1] | {"compile_error": "inductor: no C++ compiler"}]
    text = _table_text(summarize(with_compile, ["a", "b"]))
    assert "vs compile" in text and "1.25x" in text and "compile failed" in text
    geomean = next(line for line in text.splitlines() if "geomean" in line)
    assert "1.00x" in geomean and "1.25x" in geomean  # sqrt(2 * 0.5) vs eager; only a has a compile number


def test_a_sigint_while_an_attempt_line_is_printed_still_ends_with_the_resume_line(monkeypatch):
    """Found by CI under load: a SIGINT raised inside rich's Console.__enter__ (after it counted one more
    buffer level) left the console buffering for good, and the run ended with code 130 and no word on how to
    resume. The progress lines are now printed with the SIGINT deferred to the line's end."""
    import io
    import os
    import signal

    from rich.console import Console

    from evokernel.cli import run as run_mod

    class App:
        def stream(self, *a, **k):
            for i in range(3):
                yield (), "custom", {"event": "attempt", "task": "t", "iteration": i, "stage": "draft",
                                     "budget": 3, "feasible": False, "failed_gate": "hack", "latency_ms": None}

    original_enter = Console._enter_buffer
    sent = []

    def enter_then_signal(self):  # the signal lands right after the buffer level was counted (once)
        original_enter(self)
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):
                pass

    buf = io.StringIO()
    console = Console(file=buf, width=200)
    monkeypatch.setattr(run_mod, "err", console)
    monkeypatch.setattr(Console, "_enter_buffer", enter_then_signal)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        status = run_mod._stream(App(), None, {}, None, 3, 0)
    finally:
        signal.signal(signal.SIGINT, previous)
        monkeypatch.setattr(Console, "_enter_buffer", original_enter)
    assert status == "interrupted"
    console.print("resume with: evokernel run --resume")
    assert "1/3" in buf.getvalue() and "resume with" in buf.getvalue()
    assert "2/3" not in buf.getvalue()  # stopped after the line in flight
