"""Several tasks of a stream in flight at once (``concurrency`` K > 1): the fan-out graph, the K limit, a run that
is resumed redoing no attempt, and an attempt the machine could not judge (no reward, no memory)."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from graph_helpers import RELU, RELU_KERNEL, SMALL, Scripted
from evokernel.graph import build_graph, resources
from evokernel.graph.context import Context

pytestmark = pytest.mark.ray  # starts or joins Ray: its own process in make test (pyproject's markers)

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "evokernel" / "suites" / "cpu_l1"
TASKS = [str(SUITE / n) for n in ("01_relu.py", "02_leaky_relu.py", "04_sigmoid.py")]


class _Counting:
    """The template generator, holding each call a moment and counting how many run at once."""

    name = "template"

    def __init__(self):
        from evokernel.generators.llm import make_generator

        self.inner = make_generator("template")
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def generate(self, request):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(0.3)
            return self.inner.generate(request)
        finally:
            with self.lock:
                self.now -= 1


def _stream(tmp_path, memory_dir, ctx_kw, tasks):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    ctx = Context(memory_dir=str(memory_dir), run_dir=str(run_dir), run_id="c1", **ctx_kw)
    conn = sqlite3.connect(str(run_dir / "checkpoints.sqlite"), check_same_thread=False)
    app = build_graph(checkpointer=SqliteSaver(conn))
    events, final = [], None
    for ns, mode, chunk in app.stream({"tasks": tasks, "overrides": SMALL}, {"configurable": {"thread_id": "c1"}},
                                      context=ctx, stream_mode=["custom", "values"], subgraphs=True, durability="sync"):
        if mode == "custom":
            events.append(chunk)
        elif ns == ():
            final = chunk
    conn.close()
    return run_dir, final, events


def test_tasks_run_side_by_side_at_most_k_at_once_on_one_memory(tmp_path, memory_dir, wired):
    gen = _Counting()
    resources.install(generator=gen)
    run_dir, final, events = _stream(tmp_path, memory_dir, {"budget": 2, "concurrency": 2}, TASKS)
    assert gen.peak == 2  # two tasks generated at the same time, never three

    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    ids = ["01_relu", "02_leaky_relu", "04_sigmoid"]  # task files by path: their stems
    assert sorted(r["task"] for r in lines) == sorted(ids * 2)
    assert len({r["attempt_id"] for r in lines}) == 6
    # results in the stream's order whatever order the tasks finished in
    assert [r["task"] for r in final["results"]] == ids
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [t["task"] for t in summary["tasks"]] == ids and all(t["attempts"] == 2 for t in summary["tasks"])
    # one memory: every attempt's value update is in the one ledger, each once
    ledger = [json.loads(x) for x in (memory_dir / "values.jsonl").read_text().splitlines()]
    assert sorted(e["attempt_id"] for e in ledger) == sorted(r["attempt_id"] for r in lines)


class _BrokenMachine:
    """A verifier whose device keeps failing: every verdict is the pool's ``machine`` verdict."""

    def verify(self, task, source):
        from evokernel.verifier.pool import machine_verdict

        return machine_verdict(task, "cpu", ["ActorDiedError: node lost", "ActorDiedError: node lost"])


def test_an_attempt_the_machine_could_not_judge_spends_budget_but_teaches_nothing(tmp_path, memory_dir, wired):
    resources.install(verifier=_BrokenMachine(), generator=Scripted([RELU_KERNEL]))
    run_dir, final, _ = _stream(tmp_path, memory_dir, {"budget": 2}, [str(RELU)])
    lines = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert [r["failed_gate"] for r in lines] == ["machine", "machine"]
    assert all(r["reward"] is None and not r["feasible"] for r in lines)
    ledger = memory_dir / "values.jsonl"
    assert not ledger.exists() or not ledger.read_text().strip()  # no value moved
    from evokernel.memory.store import MemoryStore

    store = MemoryStore(memory_dir)
    try:
        assert store.count("trace") == 0 and store.count("experience") == 0
    finally:
        store.close()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["compile_rate"] is None  # nothing was judged: no compile rate, not 0%


ATTEMPT = re.compile(r"^\s+(cpu-l1/\S+)\s+(\d+)/\d+\s")


@pytest.mark.slow
def test_cli_concurrency_on_ray_interrupted_and_resumed_redoes_no_attempt(tmp_path):
    """Through the CLI: K = 2 verifier actors on a private Ray, each on its own core; SIGINT mid-run; --resume
    finishes the stream without judging any attempt twice and with one ledger line per attempt."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", EVOKERNEL_CPU_SLOTS=str(tmp_path / "cpu-slots"))
    exe = [sys.executable, "-m", "evokernel", "run"]
    common = ["--memory", str(tmp_path / "mem"), "--run-dir", str(tmp_path / "run")]
    proc = subprocess.Popen(exe + ["cpu-l1", "--limit", "4", "-T", "3", "--concurrency", "2", *common],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    attempts = tmp_path / "run" / "attempts.jsonl"
    deadline = time.monotonic() + 400
    while not (attempts.exists() and len(attempts.read_text().splitlines()) >= 4):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0][-3000:]
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    first = proc.communicate(timeout=300)[0]
    assert proc.returncode == 130, first[-3000:]
    cores = re.search(r"verifier actors: (.*)", first).group(1)
    assert len(set(re.findall(r"cpu (\d+)", cores))) == 2  # two members, two different cores
    before = {(r["task"], r["iteration"] + 1) for r in map(json.loads, attempts.read_text().splitlines())}
    assert 4 <= len(before) < 12

    again = subprocess.run(exe + ["--resume", "--run-dir", str(tmp_path / "run")], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    redone = {(m.group(1), int(m.group(2))) for m in map(ATTEMPT.match, again.stderr.splitlines()) if m}
    assert redone and not (redone & before), redone & before
    lines = [json.loads(x) for x in attempts.read_text().splitlines()]
    assert len(lines) == 12 and len({r["attempt_id"] for r in lines}) == 12
    ledger = [json.loads(x) for x in (tmp_path / "mem" / "values.jsonl").read_text().splitlines()]
    assert sorted(e["attempt_id"] for e in ledger) == sorted(r["attempt_id"] for r in lines)
