"""Ray as the eval's engine: units as actors, a lost actor's unit resumed, the interrupt reaching the unit."""
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from evokernel.evals import harness
from evokernel.evals.config import make_config
from evokernel.evals.engine import RayEngine, UnitLost, forwarded_env, unit_resources
from evokernel.evals.metrics import load_attempts

pytestmark = pytest.mark.ray  # starts or joins Ray: its own process in make test (pyproject's markers)

SMALL = {"batch_size": 16, "dim": 1024}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    # verifier actors of this module's units claim cores among themselves (other modules may run pools beside them)
    os.environ["EVOKERNEL_CPU_SLOTS"] = str(tmp_path_factory.mktemp("cpu-slots"))
    e = RayEngine("local", num_cpus=2)
    yield e
    e.shutdown()
    os.environ.pop("EVOKERNEL_CPU_SLOTS", None)


def test_a_unit_runs_on_a_node_and_an_interrupt_reaches_it(engine, tmp_path):
    script = ("import sys, time\ntry:\n    time.sleep(60)\nexcept KeyboardInterrupt:\n"
              "    print('interrupted'); sys.exit(130)\n")
    actor, ref = engine.submit([sys.executable, "-c", script], str(tmp_path), str(tmp_path / "log"), {"CPU": 1})
    deadline = time.monotonic() + 60
    while engine.ray.get(actor.where.remote())["pid"] is None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    engine.interrupt(actor)
    res = engine.result(ref)
    # Ray's worker threads block SIGINT and the mask survives exec: the unit must unblock it to hear the harness
    log = (tmp_path / "log").read_text().splitlines()
    assert res["rc"] == 130 and log == [f"# ray node {res['node']} (host {res['host']})", "interrupted"]


def test_a_dead_actor_is_a_lost_unit_not_a_failed_one(engine, tmp_path):
    actor, ref = engine.submit([sys.executable, "-c", "import time; time.sleep(60)"], str(tmp_path),
                               str(tmp_path / "log"), {"CPU": 1})
    engine.ray.get(actor.where.remote())
    engine.ray.kill(actor)
    with pytest.raises(UnitLost):
        engine.result(ref)


def test_units_carry_the_harness_settings_and_resources(monkeypatch):
    monkeypatch.setenv("EVOKERNEL_LOCAL_GRAMMAR", "0")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("UNRELATED_SECRET", "x")
    env = forwarded_env()
    assert env["EVOKERNEL_LOCAL_GRAMMAR"] == "0" and env["OPENAI_BASE_URL"].startswith("http://127.0.0.1")
    assert "UNRELATED_SECRET" not in env and env["PYTHONUNBUFFERED"] == "1"
    assert unit_resources("cpu") == {"CPU": 1.0} and unit_resources("ascend") == {"CPU": 1.0, "NPU": 1.0}
    # with K verifier actors the unit judges nothing itself: the actors hold the cores and NPUs
    assert unit_resources("cpu", 2) == {"CPU": 0.0} and unit_resources("ascend", 4) == {"CPU": 0.0}


def test_a_unit_with_concurrency_judges_on_verifier_actors_of_the_evals_ray(engine, tmp_path):
    """``concurrency = 2``: the unit joins the eval's Ray (the harness passes its address) and its two tasks run
    side by side, judged by two verifier actors on the two cores of the cluster."""
    cfg = make_config({"tasks": ["cpu-l1/01_relu", "cpu-l1/02_leaky_relu"], "budget": 2, "out": str(tmp_path / "e"),
                       "set": SMALL, "concurrency": 2})
    ed, meta = harness.prepare(cfg, "test")
    events = []
    runner = harness.Runner(ed, meta, engine=engine, on_event=lambda k, d: events.append((k, d)), poll_s=0.1)
    assert runner.run() == "finished", events
    log = (tmp_path / "e" / "logs" / "evokernel__seed-0__all.log").read_text()
    # the unit's settings file: K = 2, its verifier actors on the eval's Ray; and it ran with them
    given = json.loads((tmp_path / "e" / "arms/evokernel/seed-0/runs/all/unit-settings.json").read_text())
    ran = json.loads((tmp_path / "e" / "arms/evokernel/seed-0/runs/all/run.json").read_text())["settings"]["context"]
    assert (given["concurrency"], given["ray"]) == (ran["concurrency"], ran["ray"]) == (2, engine.unit_address())
    cores = re.search(r"verifier actors: (.*)", log).group(1)
    assert len(set(re.findall(r"cpu (\d+)", cores))) == 2, log[-2000:]
    after = load_attempts(tmp_path / "e" / "arms/evokernel/seed-0/runs/all/attempts.jsonl")
    assert sorted((a["task"], a["iteration"]) for a in after) == [
        (t, i) for t in ("cpu-l1/01_relu", "cpu-l1/02_leaky_relu") for i in range(2)]


def test_a_unit_whose_actor_dies_is_resumed_with_no_attempt_redone(engine, tmp_path):
    """A node going away takes its actors (and, by PR_SET_PDEATHSIG, their unit processes) with it; the
    harness runs the unit again with --resume: every finished attempt is kept, none is done twice."""
    cfg = make_config({"tasks": ["cpu-l1/01_relu", "cpu-l1/11_softmax"], "budget": 4, "out": str(tmp_path / "e"),
                       "set": SMALL})
    ed, meta = harness.prepare(cfg, "test")
    events = []
    runner = harness.Runner(ed, meta, engine=engine, on_event=lambda k, d: events.append((k, d)), poll_s=0.1)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("status", runner.run()))
    t.start()
    log = tmp_path / "e" / "arms/evokernel/seed-0/runs/all/attempts.jsonl"
    deadline = time.monotonic() + 300
    while not (log.exists() and len(load_attempts(log)) >= 2):
        assert t.is_alive() and time.monotonic() < deadline, events
        time.sleep(0.1)
    (running,) = list(runner.running.values())
    engine.ray.kill(running.actor)
    before = load_attempts(log)
    t.join(600)
    assert result["status"] == "finished", events
    kinds = [k for k, _ in events]
    assert "lost" in kinds and kinds.count("start") == 2 and kinds[-1] in ("done", "tick")
    after = load_attempts(log)
    assert sorted((a["task"], a["iteration"]) for a in after) == [(t, i) for t in ("cpu-l1/01_relu", "cpu-l1/11_softmax")
                                                                   for i in range(4)]
    assert [a["attempt_id"] for a in after[:len(before)]] == [a["attempt_id"] for a in before]
    progress = json.loads((tmp_path / "e" / "progress.json").read_text())
    assert progress["evokernel/seed-0/all"]["status"] == "done" and progress["evokernel/seed-0/all"]["lost"] == 1


@pytest.mark.parametrize("address, message", [("127.0.0.2:1", "no Ray cluster answers at 127.0.0.2:1"),
                                              ("somewhere", "give auto, local or a cluster address HOST:PORT")])
def test_an_unreachable_or_malformed_cluster_address_is_a_clear_error_at_once(tmp_path, address, message):
    import subprocess

    cfg = tmp_path / "eval.toml"
    cfg.write_text(f'name = "x"\nout = "{tmp_path / "out"}"\ntasks = ["cpu-l1/01_relu"]\nbudget = 1\n')
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "evokernel", "eval", str(cfg), "--ray", address], capture_output=True,
                       text=True, env=dict(os.environ, HF_HUB_OFFLINE="1"), timeout=120)
    assert r.returncode == 2 and message in r.stderr, r.stderr[-2000:]
    assert time.monotonic() - t0 < 60  # ray.init alone would retry an unreachable address for minutes
