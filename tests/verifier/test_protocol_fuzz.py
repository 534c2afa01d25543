"""The parent never trusts worker bytes, end to end: a real Verifier whose candidate worker's k-th reply is
replaced by junk (random bytes, truncated or deeply nested JSON, valid JSON of the wrong shape) always
returns a verdict -- never an exception -- and the graph's verify node records it. (issue 13, class 7)"""
from __future__ import annotations

import json
import random

import pytest

from evokernel.verifier import message_codec as codec
from evokernel.verifier.trusted import launcher

RELU = (__import__("pathlib").Path(__file__).resolve().parents[2] / "evokernel" / "examples" / "cpu"
        / "01_relu.py").read_text()

PAYLOADS = [
    b"[" * 50_000 + b"]" * 50_000,
    b'{"ok": true, "outputs": ' + b"[" * 3000 + b"]" * 3000 + b', "native_calls": 1}',
    b'{"ok": true}',
    b'{"ok": true, "outputs": [{"dtype": "float32", "shape": [1], "offset": 0, "nbytes": 999999999}], '
    b'"native_calls": 1}',
    b'{"ok": true, "outputs": [], "native_calls": 1, "inputs": 7, "init_args": "x"}',
    b'{"ok": false, "error": {"nested": [1, 2, 3]}}',
    b'{"ok": true, "need": -5}',
    b'{"ok": true, "outputs": "zzz", "native_calls": "many"}',
    b"\xff\xfe\x00garbage",
    b'{"ok": true, "n": ' + b"7" * 6000 + b"}",
    b"{}",
]


@pytest.fixture
def fuzzed(monkeypatch):
    """Replace the reply that arrives on a candidate worker's channel at a given position."""
    state = {"target": None, "count": 0, "payload": b""}
    real = codec.recv

    def recv(fd, deadline=None, max_message=codec.MAX_MESSAGE):
        msg_bytes = None
        if fd == state.get("fd"):
            state["count"] += 1
            if state["count"] == state["target"]:
                real(fd, deadline, max_message)  # consume the real frame, answer with the junk instead
                msg_bytes = state["payload"]
        if msg_bytes is not None:
            return codec.decode(msg_bytes, max_message)
        return real(fd, deadline, max_message)

    monkeypatch.setattr(codec, "recv", recv)
    real_spawn = launcher.Zygote.spawn

    def spawn(self, role, *a, **kw):
        h = real_spawn(self, role, *a, **kw)
        if role == "candidate":
            state["fd"] = h.rfd
            state["count"] = 0
        return h

    monkeypatch.setattr(launcher.Zygote, "spawn", spawn)
    return state


def test_no_junk_reply_escapes_verify(verifier, suite_task, fuzzed):
    task = suite_task("cpu_l1/01_relu.py", batch_size=4)
    rng = random.Random(13)
    gates = set()
    # frames after the worker's hello (sent before any candidate code runs): the build request and the replies
    # to load, init, then set_inputs/run per trial
    for target in range(2, 10):
        for payload in rng.sample(PAYLOADS, 4):
            fuzzed.update(target=target, payload=payload)
            verdict = verifier.verify(task, RELU)  # must not raise
            gates.add(verdict.failed_gate)
            # a junk reply that happens to be a plausible one ({"ok": true} where that is the answer) may leave
            # the verdict feasible: every output was still checked by the parent
            assert verdict.feedback and (verdict.feasible or verdict.failed_gate in ("runtime", "compile",
                                                                                      "timeout", "hack",
                                                                                      "correctness"))
    assert "runtime" in gates
    fuzzed.update(target=None)
    assert verifier.verify(task, RELU).feasible  # the verifier keeps working afterwards


def test_the_verify_node_records_a_verdict_for_junk(tmp_path, verifier, suite_task, fuzzed):
    from evokernel.graph import resources
    from evokernel.graph.context import Context
    from evokernel.graph.drafting import setup
    from evokernel.nodes.verify import run_once, submission

    resources.install(verifier=resources.VerifierService("cpu", verifier=verifier))
    try:
        path = suite_task("cpu_l1/01_relu.py").path
        st = {"task": {"path": str(path), "overrides": {"batch_size": 4}, "suite": "cpu-l1"}}
        st.update(setup(st))
        st["candidate"] = {"source": RELU, "code_hash": "h"}
        st["messages"] = [submission(RELU, "call-1")]
        fuzzed.update(target=2, payload=PAYLOADS[0])
        out = run_once(st, Context(memory_dir=str(tmp_path / "m"), run_dir=str(tmp_path / "r"), run_id="t"))
        v = out["verdict"]
        assert v["feasible"] is False and v["failed_gate"] == "runtime" and "nested" in v["feedback"]
        json.dumps(v)
    finally:
        resources.install(verifier=None)
