"""One memory for the cluster, on a real two-node Ray cluster on this machine (`ray start --head` on 127.0.0.2,
`ray start --address` on 127.0.0.3): the value ledger's single owner under concurrent writers on both nodes
(every attempt exactly once, the exact fold, every q_before the fold's), a writer killed and retried, a lost
reply retried, the owner killed mid-writes and recreated; the arm's Chroma server reachable from the other node.
Without Ray: tests/memory/test_value_service.py."""
import json
import os
import random
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from evokernel.evals.local_cluster import LocalCluster
from evokernel.memory.value_service import (LedgerOwnerError, RemoteValueLedger, ValueLedgerOwner, connect_owner,
                                            start_owner)
from evokernel.memory.values import DRAFT, REFINE, ValueLedger
from ledger_replay import replay_check

pytestmark = [pytest.mark.slow, pytest.mark.ray]  # ray: see pyproject's markers
HEAD, SECOND = {"head_slot": 0.01}, {"second_slot": 0.01}  # pins an actor to a node (and holds no CPU)


@pytest.fixture(scope="module")
def ray_cluster():
    with LocalCluster([{"cpus": 1, "resources": {"head_slot": 1}}, {"cpus": 1, "resources": {"second_slot": 1}}]) as c:
        saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN")}
        os.environ.update({k: c.env[k] for k in saved})
        import ray

        ray.init(address=c.address, namespace="test-memory", log_to_driver=False, configure_logging=False)
        # this module's actor classes (a writer, a failing owner) travel by value: workers cannot import tests
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        try:
            nodes = {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes()}
            me = ray.get_runtime_context().get_node_id()  # the node this process attached to (either)
            yield SimpleNamespace(cluster=c, ray=ray, nodes=nodes, me=me, my_ip=nodes[me])
        finally:
            ray.shutdown()
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


@pytest.fixture
def owner(ray_cluster, tmp_path):
    h = start_owner(tmp_path)
    yield h
    h.stop()


class Writer:
    """A process of the cluster writing through its own client of the owner."""

    def __init__(self, setting: str, path: str):
        self.led = RemoteValueLedger(path, connect_owner(setting), alpha=0.3)

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def write(self, plan: list, start_at: float = 0.0, pause_s: float = 0.0) -> dict:
        """Record the plan; per attempt "applied" (by this call), "known" (already in this client's fold: not
        sent) or "refused" (sent, and the owner had it already). An attempt with a time is sent then."""
        got = {}
        for aid, stage, r, items, at in plan:
            while time.time() < start_at + (at or 0.0):
                time.sleep(0.002)
            known = self.led.applied(aid)
            applied = self.led.record(aid, stage, r, items, task="t") is not None
            got[aid] = "applied" if applied else "known" if known else "refused"
            time.sleep(pause_s)
        return got

    def state(self) -> dict:
        self.led.refresh()
        return {"values": self.led.values(), "attempts": sorted(self.led.state.attempts),
                "norm": [self.led.state.normalizer.n, self.led.state.normalizer.mean]}


def writer(ray, owner, path, where):
    w = ray.remote(Writer).options(num_cpus=0, resources=where).remote(owner.setting, str(path))
    ray.get(w.node.remote(), timeout=120)
    return w


def plan_of(name: str, n: int, contested: int = 0, seed: int = 0) -> list:
    """n attempts of writer ``name`` over six shared items, and every 4th position an attempt that every
    writer records (the same id and update: "c<k>"), all writers at the same moment (0.15 s apart)."""
    rng = random.Random(f"{name}{seed}")
    out = []
    for k in range(n):
        items = [f"m{rng.randrange(6)}" for _ in range(3)]
        stage = (DRAFT, REFINE)[k % 2]
        out.append((f"{name}/{k}", stage, rng.choice([1.0, -1.0]) if stage == DRAFT else rng.uniform(-1, 1), items,
                    None))
        if k % 4 == 0 and k // 4 < contested:
            c = random.Random(k)
            out.append((f"c{k}", REFINE, c.uniform(-1, 1), [f"m{c.randrange(6)}", "m0"], 0.15 * (k // 4 + 1)))
    return out


def ids_in(path: Path) -> Counter:
    return Counter(json.loads(x)["attempt_id"] for x in path.read_text().splitlines())


def fresh_fold(path: Path) -> dict:
    led = ValueLedger(path)
    return {"values": led.values(), "attempts": sorted(led.state.attempts),
            "norm": [led.state.normalizer.n, led.state.normalizer.mean]}


STORE_WRITER = textwrap.dedent("""
    import json, sys
    from evokernel.memory.embeddings import HashEmbedder
    from evokernel.memory.store import MemoryStore
    store = MemoryStore(sys.argv[1], embedder=HashEmbedder(), alpha=0.3)
    assert type(store.values).__name__ == "RemoteValueLedger", type(store.values)
    got = {}
    for aid, stage, r, items, _ in json.loads(sys.argv[2]):
        known = store.values.applied(aid)
        applied = store.values.record(aid, stage, r, items, task="t") is not None
        got[aid] = "applied" if applied else "known" if known else "refused"
    store.close()
    print(json.dumps(got))
""")


def test_concurrent_writers_on_both_nodes_fold_exactly(ray_cluster, owner, tmp_path):
    ray = ray_cluster.ray
    path = tmp_path / "mem" / "values.jsonl"
    assert owner.where()["node"] == ray_cluster.me  # on the node of the process that started it
    writers = [writer(ray, owner, path, where) for where in (HEAD, HEAD, SECOND, SECOND)]
    assert {ray.get(w.node.remote()) for w in writers} == set(ray_cluster.nodes)  # both nodes write
    plans = [plan_of(f"w{i}", 40, contested=10) for i in range(4)]
    # a unit's process: not a Ray worker, it finds the owner from its environment and joins the cluster
    sub_plan = plan_of("store", 30, contested=10)
    start = time.time() + 2.0
    refs = [w.write.remote(p, start) for w, p in zip(writers, plans)]
    env = dict(ray_cluster.cluster.env, HF_HUB_OFFLINE="1", **owner.env())
    sub = subprocess.Popen([sys.executable, "-c", STORE_WRITER, str(path.parent), json.dumps(sub_plan)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    got = ray.get(refs, timeout=300)
    out, err = sub.communicate(timeout=300)
    assert sub.returncode == 0, err[-3000:]
    got.append(json.loads(out))

    counts = ids_in(path)
    expected = {aid for p in plans + [sub_plan] for aid, *_ in p}
    assert set(counts) == expected and set(counts.values()) == {1}  # every attempt, each exactly once
    contested = sorted(a for a in expected if a.startswith("c"))
    assert len(contested) == 10
    for aid in contested:  # several writers recorded it at once: one of them applied it, the others got None
        assert [g.get(aid) for g in got].count("applied") == 1, aid
    # the adversarial case happened: writers sent an attempt another writer's call had just applied
    assert sum([g.get(a) for g in got].count("refused") for a in contested) >= 5
    assert all(v == "applied" for g in got for a, v in g.items() if not a.startswith("c"))
    replay_check(path)
    final = fresh_fold(path)
    for w in writers:  # every client holds exactly the sequential fold of the file
        assert ray.get(w.state.remote()) == final
    # bad settings and paths: clear errors
    with pytest.raises(ValueError, match="is not a value ledger"):
        RemoteValueLedger(tmp_path.parent / "elsewhere" / "values.jsonl", connect_owner(owner.setting))
    with pytest.raises(LedgerOwnerError, match="no value-ledger owner ray://evokernel/gone"):
        connect_owner("ray://evokernel/gone")


class LosesFirstReply(ValueLedgerOwner):
    """Dies right after applying an attempt named lost*, the first time: its reply is never sent."""

    def record(self, path, generation, offset, request, attempt_id, *rest):
        out = super().record(path, generation, offset, request, attempt_id, *rest)
        marker = Path(path).with_name(f"{attempt_id}.died") if attempt_id.startswith("lost") else None
        if marker and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)
        return out


def test_a_killed_writer_retried_and_a_lost_reply_are_applied_once(ray_cluster, tmp_path):
    ray = ray_cluster.ray
    path = tmp_path / "values.jsonl"
    owner = start_owner(tmp_path, owner_class=LosesFirstReply)
    try:
        # a writer killed mid-way; its attempts retried with the same ids by another writer on the other node
        w1 = writer(ray, owner, path, SECOND)
        plan = plan_of("unit", 30)
        ref = w1.write.remote(plan, 0.0, 0.08)
        deadline = time.monotonic() + 120
        while not (path.exists() and len(path.read_text().splitlines()) >= 8):
            assert time.monotonic() < deadline and not ray.wait([ref], timeout=0)[0], ray.get(ref)
            time.sleep(0.02)
        ray.kill(w1)
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(ref, timeout=60)
        done_by_first = set(ids_in(path))
        assert 8 <= len(done_by_first) < 30
        w2 = writer(ray, owner, path, HEAD)
        got = ray.get(w2.write.remote(plan), timeout=120)
        # what the killed writer applied is not applied again (nor its call in flight, if the owner ran it); the
        # rest is
        skipped = {a for a, how in got.items() if how != "applied"}
        assert done_by_first <= skipped and len(skipped) <= len(done_by_first) + 1
        assert ids_in(path) == Counter({aid: 1 for aid, *_ in plan})

        # the owner dies after appending, before replying: the call is retried (same request) and not reapplied
        pid = owner.where()["pid"]
        got = ray.get(w2.write.remote([("lost-0", DRAFT, 1.0, ["m0", "m9"], None)]), timeout=120)
        assert (tmp_path / "lost-0.died").read_text() == str(pid) and owner.where()["pid"] != pid  # it did die
        assert got == {"lost-0": "refused"}  # the restarted owner does not remember the request (module docstring)
        assert ids_in(path)["lost-0"] == 1
        replay_check(path)
        assert ray.get(w2.state.remote()) == fresh_fold(path)
    finally:
        owner.stop()


def test_the_owner_killed_mid_writes_and_recreated_rebuilds_from_the_file(ray_cluster, owner, tmp_path):
    ray = ray_cluster.ray
    path = tmp_path / "values.jsonl"
    writers = [writer(ray, owner, path, where) for where in (HEAD, SECOND)]
    plans = [plan_of(f"w{i}", 60, contested=6, seed=1) for i in range(2)]
    refs = [w.write.remote(p, 0.0, 0.04) for w, p in zip(writers, plans)]
    pids = [owner.where()["pid"]]
    for _ in range(2):  # killed twice while both write: calls in flight are retried on the restarted owner
        n = len(path.read_text().splitlines()) if path.exists() else 0
        deadline = time.monotonic() + 120
        while not (path.exists() and len(path.read_text().splitlines()) >= n + 10):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert not ray.wait(refs, num_returns=len(refs), timeout=0)[0], "the writers finished before the kill"
        ray.kill(owner.actor, no_restart=False)
        while owner.where()["pid"] == pids[-1]:  # ray.kill is asynchronous
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pids.append(owner.where()["pid"])
    got = ray.get(refs, timeout=300)
    expected = {aid for p in plans for aid, *_ in p}
    assert ids_in(path) == Counter({aid: 1 for aid in expected})
    assert all([g.get(aid) for g in got].count("applied") <= 1 for aid in expected)
    replay_check(path)
    final = fresh_fold(path)
    assert [ray.get(w.state.remote()) for w in writers] == [final, final]

    # the owner stopped for good (a torn line at the end: it died mid-write) and a new one started on the files
    with path.open("ab") as f:
        f.write(b'{"attempt_id": "torn", "stage": "dra')
    owner.stop()
    again = start_owner(tmp_path)
    try:
        w = writer(ray, again, path, SECOND)
        assert ray.get(w.state.remote()) == final  # rebuilt from the file: nothing lost, the torn line not folded
        assert ray.get(w.write.remote([("torn", DRAFT, 1.0, ["m1"], None)])) == {"torn": "applied"}  # redone, once
        assert ids_in(path)["torn"] == 1 and len(ids_in(path)) == len(expected) + 1
        replay_check(path)
        assert ray.get(w.state.remote()) == fresh_fold(path)
    finally:
        again.stop()


def test_the_memory_server_listens_on_the_node_address_the_other_node_reaches(ray_cluster, tmp_path):
    import urllib.error
    import urllib.request

    from evokernel.evals.memory_server import ChromaServer, server_host

    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray = ray_cluster.ray
    # the harness's engine joined the cluster: the server listens on this process's node address
    host = server_host(SimpleNamespace(started_here=False, ray=ray))
    assert host == ray_cluster.my_ip and host in ("127.0.0.2", "127.0.0.3")
    other = next(n for n in ray_cluster.nodes if n != ray_cluster.me)
    assert server_host(SimpleNamespace(started_here=True, ray=ray)) == "127.0.0.1"  # a private local Ray
    server = ChromaServer(tmp_path / "mem", tmp_path / "chroma.log", host=host)
    try:
        assert server.url == f"http://{host}:{server.port}"

        @ray.remote(num_cpus=0)
        def heartbeat(url):
            import ray as r
            import urllib.request as u

            opener = u.build_opener(u.ProxyHandler({}))
            with opener.open(f"{url}/api/v2/heartbeat", timeout=10) as resp:
                return r.get_runtime_context().get_node_id(), resp.status

        where = NodeAffinitySchedulingStrategy(node_id=other, soft=False)
        node, status = ray.get(heartbeat.options(scheduling_strategy=where).remote(server.url), timeout=120)
        assert node == other and status == 200  # from the other node
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.URLError):  # and on that address only
            direct.open(f"http://127.0.0.1:{server.port}/api/v2/heartbeat", timeout=5)
    finally:
        server.stop()
    with pytest.raises(ValueError, match="IP address"):
        ChromaServer(tmp_path / "mem", tmp_path / "chroma.log", host="localhost")
