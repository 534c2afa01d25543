"""`evokernel eval` on a real two-node Ray cluster on this machine (`ray start --head` and `ray start --address`,
on 127.0.0.2 and 127.0.0.3, with different custom resources): units spread over both nodes, and a node killed while its
unit runs has that unit rescheduled on the other node and resumed, no attempt redone, the memory consistent."""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evokernel.evals.metrics import load_attempts

TASKS = ["cpu-l1/01_relu", "cpu-l1/11_softmax"]
RAY = str(Path(sys.executable).with_name("ray"))
NODE_RE = re.compile(r"^# ray node (\w+)", re.M)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        return s.getsockname()[1]


def _node(ip, args, env):
    return subprocess.Popen([RAY, "start", "--block", "--node-ip-address", ip, "--disable-usage-stats", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.fixture
def cluster():
    # two "hosts" on loopback: 127.0.0.2 and 127.0.0.3 (Ray replaces 127.0.0.1 by the machine's routable
    # address, not other loopback addresses); token authentication with one token for every node and client,
    # as on a real cluster; a short temp dir (Ray's socket paths have a length limit)
    env = dict(os.environ, HF_HUB_OFFLINE="1", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    env.pop("RAY_ADDRESS", None)
    tmp = tempfile.mkdtemp(prefix="rk", dir="/tmp")
    port = _free_port()
    address = f"127.0.0.2:{port}"
    nodes = []

    def status() -> str:
        r = subprocess.run([RAY, "status", "--address", address], env=env, capture_output=True, text=True)
        return r.stdout if r.returncode == 0 else ""

    try:
        nodes.append(_node("127.0.0.2", ["--head", "--port", str(port), "--num-cpus", "1", "--resources", '{"head_slot": 1}',
                            "--include-dashboard", "false", "--temp-dir", tmp], env))
        deadline = time.monotonic() + 180
        while "head_slot" not in status():
            assert nodes[0].poll() is None and time.monotonic() < deadline, "the head node did not start"
            time.sleep(1)
        nodes.append(_node("127.0.0.3", ["--address", address, "--num-cpus", "1", "--resources", '{"NPU": 1}'], env))
        while "NPU" not in status():
            assert nodes[1].poll() is None and time.monotonic() < deadline, "the second node did not join"
            time.sleep(1)
        yield {"address": address, "env": env, "head": nodes[0], "worker": nodes[1]}
    finally:
        for node in reversed(nodes):
            _kill(node)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
def test_units_spread_over_two_nodes_and_a_killed_nodes_unit_resumes_on_the_other(cluster, tmp_path):
    cfg = tmp_path / "eval.toml"
    out = tmp_path / "out"
    cfg.write_text(f'name = "cluster"\nout = "{out}"\ntasks = {json.dumps(TASKS)}\nbudget = 4\nseeds = 2\n'
                   'methods = ["evokernel"]\nworkers = 2\n[set]\nbatch_size = 16\ndim = 1024\n')
    proc = subprocess.Popen([sys.executable, "-m", "evokernel", "eval", str(cfg), "--ray", cluster["address"]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster["env"])
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
    _kill(cluster["worker"])  # the second node dies, and with it the unit it runs
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
