"""The thread's dispatch key sets around candidate code (verifier/sandboxed/dispatch_tls.py) and the worker's use
of the rule (rt3_blind_copy_convert: a leaked ExcludeDispatchKeyGuard blinded the operator recorder)."""
from __future__ import annotations

import types

import pytest
import torch

from evokernel.verifier.sandboxed import dispatch_tls
from evokernel.verifier.sandboxed.op_recorder import OpRecorder
from evokernel.verifier.sandboxed.worker import Worker, _CountingModule, _Fail

_C = torch._C
PYTHON_KEYS = _C.DispatchKeySet(_C.DispatchKey.Python).add(_C.DispatchKey.PythonTLSSnapshot)
LEAKED: list = []  # the guards stay alive (their destructor would undo the change), as a leaked `new` guard does


@pytest.fixture(autouse=True)
def _clean():
    before = dispatch_tls.snapshot()
    dispatch_tls.FOUND.clear()
    yield
    dispatch_tls.FOUND.clear()
    LEAKED.clear()
    assert dispatch_tls.snapshot() == before, "a test left the thread's dispatch state changed"


def _leak_exclude(keys=PYTHON_KEYS):
    guard = _C._ExcludeDispatchKeyGuard(keys)
    guard.__enter__()  # never exited: what the attack's `new KeyGuard(...)` does
    LEAKED.append(guard)
    return guard


def test_unchanged_state_passes():
    saved = dispatch_tls.snapshot()
    torch.relu(torch.randn(4))
    dispatch_tls.check_unchanged(saved, "nothing")
    assert dispatch_tls.FOUND == []


def test_a_leaked_exclude_guard_is_found_named_and_restored():
    saved = dispatch_tls.snapshot()
    _leak_exclude()
    assert dispatch_tls.snapshot() != saved
    with pytest.raises(dispatch_tls.DispatchStateChanged, match=r"added .*Python.* exclude set"):
        dispatch_tls.check_unchanged(saved, "the native function f()")
    assert dispatch_tls.snapshot() == saved and len(dispatch_tls.FOUND) == 1


def test_a_leaked_include_guard_is_found():
    saved = dispatch_tls.snapshot()
    guard = _C._IncludeDispatchKeyGuard(_C.DispatchKey.Negative)
    guard.__enter__()
    LEAKED.append(guard)
    with pytest.raises(dispatch_tls.DispatchStateChanged, match="include set"):
        dispatch_tls.check_unchanged(saved, "x")
    assert dispatch_tls.snapshot() == saved


def test_the_recorder_sees_operators_again_after_a_native_call_leaked_a_guard():
    leaky = _CountingModule(types.SimpleNamespace(blind=lambda x: (_leak_exclude(), x)[1]))
    recorder = OpRecorder()
    with torch.no_grad(), recorder:
        try:
            leaky.blind(torch.ones(3))
        except dispatch_tls.DispatchStateChanged:
            pass  # the candidate's own code may swallow it: the worker still reports FOUND
        torch.ones(3).to(torch.float16)
    assert dispatch_tls.FOUND and "native function blind()" in dispatch_tls.FOUND[0]
    assert any("_to_copy" in str(c) or "copy" in str(c) for c in recorder.calls), recorder.calls


def test_worker_fails_a_request_that_leaves_the_state_changed_as_a_hack(monkeypatch):
    w = Worker("candidate", channel=None, data_fd=-1)
    monkeypatch.setattr(w, "_handle", lambda msg: (_leak_exclude(), {"ok": True})[1])
    with pytest.raises(_Fail) as info:
        w.handle({"op": "init"})
    assert info.value.phase == "hack" and "request 'init'" in info.value.message


def test_worker_reports_a_swallowed_finding(monkeypatch):
    w = Worker("candidate", channel=None, data_fd=-1)
    leaky = _CountingModule(types.SimpleNamespace(f=lambda: _leak_exclude()))

    def forward(msg):
        try:
            leaky.f()
        except dispatch_tls.DispatchStateChanged:
            pass
        return {"ok": True}

    monkeypatch.setattr(w, "_handle", forward)
    with pytest.raises(_Fail) as info:
        w.handle({"op": "run"})
    assert info.value.phase == "hack" and "native function f()" in info.value.message


def test_reference_requests_are_not_checked(monkeypatch):
    w = Worker("reference", channel=None, data_fd=-1)
    monkeypatch.setattr(w, "_handle", lambda msg: {"ok": True})
    assert w.handle({"op": "ping"}) == {"ok": True}
