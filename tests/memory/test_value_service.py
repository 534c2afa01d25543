"""The value ledger's single owner and its clients, without Ray: the owner's rules (paths it serves, a retried
request answered with its entry, never applied twice), clients folding exactly the owner's file, finding the
owner from the environment. The same on a real Ray cluster: tests/evals/test_cluster_memory.py."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from evokernel.memory.value_service import (LedgerOwnerError, RemoteValueLedger, ValueLedgerOwner,
                                            parse_setting)
from evokernel.memory.values import DRAFT, REFINE, ValueLedger
from ledger_replay import replay_check


class DirectClient(RemoteValueLedger):
    """The client with its calls made in-process (the owner's methods, as the actor runs them)."""

    def _call(self, method, *args):
        return getattr(self._owner, method)(str(self.path), self.generation, self.fold.offset, *args)


@pytest.fixture
def owner(tmp_path):
    return ValueLedgerOwner(str(tmp_path))


def test_setting_names_a_namespace_and_an_actor():
    assert parse_setting("ray://evokernel/value-ledger-1") == ("evokernel", "value-ledger-1")
    for bad in ("", "evokernel/x", "ray://evokernel", "ray:///x", "ray://ns/", "ray://ns/a/b", "http://ns/x"):
        with pytest.raises(LedgerOwnerError, match="ray://<namespace>/<actor name>"):
            parse_setting(bad)


def test_the_owner_serves_ledgers_under_its_root_only(owner, tmp_path):
    ok = str(tmp_path / "arm" / "memory" / "values.jsonl")
    assert owner.pull(ok, None, 0) == {"generation": None, "start": 0, "data": b""}
    (tmp_path.parent / "elsewhere").mkdir(exist_ok=True)
    for bad in ("values.jsonl", str(tmp_path.parent / "elsewhere" / "values.jsonl"),
                str(tmp_path / ".." / "elsewhere" / "values.jsonl"), str(tmp_path / "arm" / "notes.txt")):
        with pytest.raises(ValueError):
            owner.pull(bad, None, 0)
    with pytest.raises(ValueError, match="request id"):
        owner.record(ok, None, 0, "", "a0", DRAFT, 1.0, ["m"], "", 0, 0.1)
    # the same file spelled two ways is one ledger
    owner.record(ok, None, 0, "r1", "a0", DRAFT, 1.0, ["m"], "", 0, 0.1)
    again = str(tmp_path / "arm" / "." / "memory" / "values.jsonl")
    assert owner.record(again, None, 0, "r2", "a0", DRAFT, 1.0, ["m"], "", 0, 0.1)["entry"] is None
    assert len(owner._ledgers) == 1


def test_a_retried_request_gets_its_entry_and_applies_once(owner, tmp_path):
    path = str(tmp_path / "values.jsonl")
    first = owner.record(path, None, 0, "req-1", "a0", DRAFT, 1.0, ["m"], "t", 0, 0.5)
    assert first["entry"]["updates"] == [{"item": "m", "q_before": 0.0, "q_after": 0.5}]
    # the reply was lost; the client sends the same request again: same entry, nothing applied again
    retry = owner.record(path, None, 0, "req-1", "a0", DRAFT, 1.0, ["m"], "t", 0, 0.5)
    assert retry["entry"] == first["entry"] and retry["data"] == first["data"]
    # another client with the same attempt: already applied, not by it
    assert owner.record(path, None, 0, "req-2", "a0", DRAFT, 1.0, ["m"], "t", 0, 0.5)["entry"] is None
    imp = owner.set_values(path, None, 0, "req-3", "f1", {"x": {"q1": 0.25}}, "")
    assert imp["entry"]["attempt_id"] == "import:f1"
    assert owner.set_values(path, None, 0, "req-3", "import:f1", {"x": {"q1": 0.25}}, "")["entry"] == imp["entry"]
    lines = [json.loads(x) for x in open(path).read().splitlines()]
    assert [e["attempt_id"] for e in lines] == ["a0", "import:f1"]
    # a restarted owner remembers no request: a retry then gets None (as for a resumed run), still applied once
    restarted = ValueLedgerOwner(str(tmp_path))
    assert restarted.record(path, None, 0, "req-1", "a0", DRAFT, 1.0, ["m"], "t", 0, 0.5)["entry"] is None
    assert len(open(path).read().splitlines()) == 2


def test_clients_fold_exactly_the_owners_file(owner, tmp_path):
    path = tmp_path / "values.jsonl"
    a, b = DirectClient(path, owner, alpha=0.3), DirectClient(path, owner, alpha=0.3)
    for k in range(30):
        c = (a, b)[k % 2]
        if k % 3:
            e = c.record(f"x{k}", REFINE, (k % 7) / 7 - 0.4, [f"m{k % 4}", "shared"], task="t", iteration=k)
        else:
            e = c.record(f"x{k}", DRAFT, 1.0 if k % 2 else -1.0, ["shared"])
        assert e is not None and e["attempt_id"] == f"x{k}"
    assert a.record("x1", DRAFT, 1.0, ["m"]) is None  # b's: a already folded it, no call needed
    assert a.refresh() == 1 and b.refresh() == 0  # b wrote the last one
    # every q_before is the sequential fold's value at its line, whichever client asked for the update
    replay_check(path)
    fresh = ValueLedger(path)
    assert a.values() == b.values() == fresh.values()
    assert a.state.attempts == b.state.attempts == fresh.state.attempts
    assert a.fold.offset == b.fold.offset == path.stat().st_size
    # alpha is the client's own (the store sets it from the run's settings)
    a.alpha = 0.9
    assert a.record("y", DRAFT, 1.0, ["fresh"])["updates"][0]["q_after"] == pytest.approx(0.9)


def test_a_client_refolds_when_the_file_is_rewritten_and_continues_after_an_owner_restart(owner, tmp_path):
    path = tmp_path / "values.jsonl"
    a = DirectClient(path, owner, alpha=0.5)
    for k in range(4):
        a.record(f"a{k}", DRAFT, 1.0, ["m"])
    # a line that is not an entry in the middle (an older writer's torn line): the owner rewrites the file
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + b'{"attempt_id": "torn", "st\n' + b"".join(lines[2:]))
    b = DirectClient(path, ValueLedgerOwner(str(tmp_path)), alpha=0.5)  # a new owner on the same files
    assert b.torn_lines == 0 and len(b.state.attempts) == 4  # the owner cut the torn line before sending
    gen = a.generation
    a._owner = b._owner  # the owner restarted: a keeps its fold and offset
    assert a.record("a4", DRAFT, -1.0, ["m"]) is not None
    assert a.generation != gen  # the file was replaced: a folded it from the start
    b.refresh()
    assert a.values() == b.values() == ValueLedger(path).values() and len(a.state.attempts) == 5
    assert a.q("m", DRAFT) == pytest.approx(1 - 2 ** -4 + 0.5 * (-1 - (1 - 2 ** -4)))


def test_a_bad_update_is_refused_by_the_client_and_by_the_owner(owner, tmp_path):
    path = tmp_path / "values.jsonl"
    a = DirectClient(path, owner)
    for args in (("a", "other", 1.0, ["m"]), ("a", DRAFT, float("inf"), ["m"]), ("a", DRAFT, 1.0, "m"),
                 ("", DRAFT, 1.0, ["m"])):
        with pytest.raises(ValueError):
            a.record(*args)
        with pytest.raises(ValueError):
            owner.record(str(path), None, 0, "r", *args, "", 0, 0.1)
    with pytest.raises(ValueError):
        a.set_values("f", {"x": {"q9": 1.0}})
    with pytest.raises(ValueError):
        owner.set_values(str(path), None, 0, "r", "f", {"x": {"q1": float("nan")}}, "")
    assert not path.exists()


def test_open_ledger_uses_the_file_without_the_setting_and_never_imports_ray(tmp_path):
    code = textwrap.dedent("""
        import os, sys
        from evokernel.memory.value_service import LedgerOwnerError, open_ledger
        from evokernel.memory.values import ValueLedger
        os.environ.pop("EVOKERNEL_VALUE_LEDGER", None)
        led = open_ledger(sys.argv[1] + "/values.jsonl")
        assert type(led) is ValueLedger and "ray" not in sys.modules, sys.modules.get("ray")
        os.environ["EVOKERNEL_VALUE_LEDGER"] = "ray://evokernel/owner"
        for k in ("EVOKERNEL_RAY_ADDRESS", "RAY_ADDRESS"):
            os.environ.pop(k, None)
        try:
            open_ledger(sys.argv[1] + "/values.jsonl")
        except LedgerOwnerError as e:
            print(e)
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOKERNEL_", "RAY_"))}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "no cluster address is set (EVOKERNEL_RAY_ADDRESS or RAY_ADDRESS" in r.stdout
