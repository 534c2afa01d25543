"""`evokernel eval` on a real two-node Ray cluster on this machine (`ray start --head` and `ray start --address`,
on 127.0.0.2 and 127.0.0.3, with different custom resources): units spread over both nodes, and a node killed while its
unit runs has that unit rescheduled on the other node and resumed, no attempt redone, the memory consistent."""
import json
import re
import subprocess
import sys
import time

import pytest

from evokernel.evals.local_cluster import LocalCluster
from evokernel.evals.metrics import load_attempts

pytestmark = pytest.mark.ray  # starts or joins Ray: its own process in make test (pyproject's markers)

TASKS = ["cpu-l1/01_relu", "cpu-l1/11_softmax"]
NODE_RE = re.compile(r"^# ray node (\w+)", re.M)


@pytest.fixture
def cluster():
    with LocalCluster([{"cpus": 1, "resources": {"head_slot": 1}}, {"cpus": 1, "resources": {"NPU": 1}}]) as c:
        yield c


@pytest.mark.slow
def test_units_spread_over_two_nodes_and_a_killed_nodes_unit_resumes_on_the_other(cluster, tmp_path):
    cfg = tmp_path / "eval.toml"
    out = tmp_path / "out"
    cfg.write_text(f'name = "cluster"\nout = "{out}"\ntasks = {json.dumps(TASKS)}\nbudget = 4\nseeds = 2\n'
                   'methods = ["evokernel"]\nworkers = 2\n[set]\nbatch_size = 16\ndim = 1024\n')
    proc = subprocess.Popen([sys.executable, "-m", "evokernel", "eval", str(cfg), "--ray", cluster.address],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(cluster.env, HF_HUB_OFFLINE="1"))
    units = ["evokernel/seed-0/all", "evokernel/seed-1/all"]
    attempts = {u: out / "arms" / u.rsplit("/", 1)[0] / "runs/all/attempts.jsonl" for u in units}

    def nodes_of(unit):
        f = out / "logs" / f"{unit.replace('/', '__')}.log"
        return NODE_RE.findall(f.read_text()) if f.exists() else []

    # both units (one CPU each; one CPU per node) run an attempt: one on each node
    deadline = time.monotonic() + 400
    while not all(nodes_of(u) and attempts[u].exists() and load_attempts(attempts[u]) for u in units):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the units did not both start"
        time.sleep(0.2)
    first = {u: nodes_of(u)[0] for u in units}
    assert len(set(first.values())) == 2  # spread over both nodes
    before = {u: load_attempts(attempts[u]) for u in units}
    assert all(len(b) < 8 for b in before.values()), "a unit finished before the node could be killed"
    cluster.kill(1)  # the second node dies, and with it the unit it runs
    _, stderr = proc.communicate(timeout=900)
    assert proc.returncode == 0, stderr[-3000:]
    assert "lost" in stderr

    progress = json.loads((out / "progress.json").read_text())
    assert all(progress[u]["status"] == "done" for u in units)
    (moved,) = [u for u in units if progress[u].get("lost")]
    assert len(set(nodes_of(moved))) == 2  # it ran again, on the node that was left
    for u in units:
        after = load_attempts(attempts[u])
        # nothing finished was redone; every (task, attempt) once
        assert [a["attempt_id"] for a in after[:len(before[u])]] == [a["attempt_id"] for a in before[u]]
        assert sorted((a["task"], a["iteration"]) for a in after) == [(t, i) for t in TASKS for i in range(4)]
        # the arm's value ledger: one update line per logged attempt, none applied twice
        ledger = [json.loads(x) for x in (out / "arms" / u.rsplit("/", 1)[0] / "memory/values.jsonl").read_text().splitlines()]
        ids = [e["attempt_id"] for e in ledger if not e["attempt_id"].startswith(("import:", "seed:"))]
        assert sorted(ids) == sorted(a["attempt_id"] for a in after)
        # written through the eval's ledger owner (units on both nodes): every q_before is the fold's at its line
        q = {}
        for e in ledger:
            for upd in e.get("updates", []):
                key = (upd["item"], e["stage"])
                assert upd["q_before"] == q.get(key, 0.0), (e["attempt_id"], upd)
                q[key] = upd["q_after"]
