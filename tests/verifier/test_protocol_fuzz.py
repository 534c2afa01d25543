"""The parent never trusts worker bytes, end to end: a real Verifier whose candidate worker's k-th reply is
replaced by junk (random bytes, truncated or deeply nested JSON, valid JSON of the wrong shape) always
returns a verdict -- never an exception -- and the graph's verify node records it (issue 13, class 7).
And every field of every reply kind mutated -- dropped, retyped, made inconsistent -- exhaustively at the codec
and on a candidate worker's real frames at the Verifier level, which keeps judging normally (issue 28).
One verifier with a single correctness trial serves the module (CI time about a minute)."""
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


@pytest.fixture(scope="module")
def fuzz_verifier(cache_dir):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, timing=False, run_timeout_s=5.0, trials=1,
                                     perturbations=())).start()
    yield v
    v.close()


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
        state["fd"] = None  # a new worker's socket may reuse the number of the last one: never fuzz its hello
        h = real_spawn(self, role, *a, **kw)
        if role == "candidate":
            state["fd"] = h.fd
            state["count"] = 0
        return h

    monkeypatch.setattr(launcher.Zygote, "spawn", spawn)
    return state


def test_no_junk_reply_escapes_verify(fuzz_verifier, suite_task, fuzzed):
    verifier = fuzz_verifier  # one correctness trial: the frames below are all a verdict has
    task = suite_task("cpu_l1/01_relu.py", batch_size=4)
    rng = random.Random(13)
    gates = set()
    # frames after the worker's hello (sent before any candidate code runs): the build request and the replies
    # to load, init and run
    for target in range(2, 6):
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


def test_the_verify_node_records_a_verdict_for_junk(tmp_path, fuzz_verifier, suite_task, fuzzed):
    verifier = fuzz_verifier
    from evokernel.graph import resources
    from evokernel.graph.context import Context
    from evokernel.graph.drafting import setup
    from evokernel.nodes.verify import run_once, submission
    from langgraph.runtime import Runtime

    resources.install(verifier=resources.VerifierService("cpu", verifier=verifier))
    try:
        path = suite_task("cpu_l1/01_relu.py").path
        st = {"task": {"path": str(path), "overrides": {"batch_size": 4}, "suite": "cpu-l1"}}
        ctx = Context(memory_dir=str(tmp_path / "m"), run_dir=str(tmp_path / "r"), run_id="t")
        st.update(setup(st, Runtime(context=ctx)))
        st["candidate"] = {"source": RELU, "code_hash": "h"}
        st["messages"] = [submission(RELU, "call-1")]
        fuzzed.update(target=2, payload=PAYLOADS[0])
        out = run_once(st, ctx)
        v = out["verdict"]
        assert v["feasible"] is False and v["failed_gate"] == "runtime" and "nested" in v["feedback"]
        json.dumps(v)
    finally:
        resources.install(verifier=None)


# =================================================================================================================
# Every field of every reply kind, mutated (issue 28): at the codec level exhaustively, at the Verifier level on
# the frames a candidate's worker really sends.
# =================================================================================================================
import copy
import time

from evokernel.verifier.backends.ascend_sim.report_schema import REPORT

META = {"dtype": "float32", "shape": [4, 4], "offset": 0, "nbytes": 64}
REPORT_EXAMPLE = {
    "schema": "evk-ascend-sim-report/1", "op_type": "AddCustom", "kernel": "add_custom", "status": "ok", "error": "",
    "hw_model": {"name": "Ascend910B", "clock_hz": 1.8e9}, "block_dim": 1, "blocks_run": 1,
    "violations": [{"rule": "missing_sync", "severity": "warning", "block": 0, "blocks": [0], "count": 1,
                    "message": "m", "file": "add_custom.cpp", "line": 12}],
    "blocks": [{"block": 0, "status": "ok", "kernel_type": "aiv",
                "queues": [{"kind": "TQue", "position": "VECIN", "num": 2, "depth": 2, "bytes": 4096, "allocs": 4,
                            "line": 3}],
                "counters": {"mte2_bytes": 64, "mte3_bytes": 32, "scalar": {"gm_get": 1},
                             "vector": [{"op": "Add", "dtype": "float", "calls": 1, "elements": 16, "repeats": 1}]},
                "timing_estimate": {"cycles": 900.0, "us": 0.5, "scalar_stall_cycles": 0.0,
                                    "busy_cycles": {"mte2": 600.0, "vector": 20.0},
                                    "gm_bytes": {"mte2": 64.0, "mte3": 32.0, "fix": 0.0},
                                    "copies": {"mte2": 1, "mte3": 1, "fix": 0}}}],
    "call": {"op": "AddCustom", "inputs": [[16]], "dtypes": ["float32"], "attrs": [1, [2, 3]]},
}
# one valid example per reply kind: every op of the codec's reply table, the hello and the failure reply
# one parameter or buffer of a model's state (worker._write_state; trusted/model_state.py)
STATE_ENTRY = {"name": "bn.running_mean", "kind": "buffer", "shape": [4, 4], "dtype": "float32", "changed": True,
               "tensor": dict(META, offset=128)}
EXAMPLES = {
    "hello": {"op": "hello", "pid": 42},
    "load": {"ok": True}, "ping": {"ok": True}, "compile": {"ok": True}, "reload": {"ok": True},
    "init": {"ok": True, "init_args": [3, 0.5, "mean", True, None, [1, [2, 3]]], "widen_buffers": False,
             "state_bytes": 4096},
    "state": {"ok": True, "state": [STATE_ENTRY], "need": 4096},
    "make_inputs": {"ok": True, "inputs": [META], "need": 4096},
    "run": {"ok": True, "outputs": [META], "native_calls": 1, "inner_s": 0.01, "native_reports": [REPORT_EXAMPLE],
            "ops": {"empty_like": 1}, "violations": {}, "inputs_after": [dict(META, offset=64)],
            "state": [STATE_ENTRY]},
    "record_ops": {"ok": True, "ops": [{"op": "aten.relu.default", "inputs": [{"shape": [4, 4], "dtype": "float32"}],
                                        "outputs": [{"shape": [4, 4], "dtype": "float32"}]}]},
    "bandwidth": {"ok": True, "seconds": [0.001, 0.002]},
    "truth": {"ok": True, "outputs": [dict(META, dtype="float64", nbytes=128)], "scale": 1.0},
    "failure": {"ok": False, "phase": "run", "error": "e", "detail": "d", "native_reports": [REPORT_EXAMPLE],
                "reason": "output_too_large"},
}


def _nested(depth: int):
    v: object = 0
    for _ in range(depth):
        v = [v]
    return v


# the mutations of one field: dropped, retyped (number, string, list, object, null, bool, huge, deeply nested)
DROP = object()
RETYPES = {"drop": DROP, "int": -7, "float": 2.5, "string": "x", "list": [1, "a"], "object": {"k": [1]},
           "null": None, "bool": True, "huge_int": 2**80, "huge_string": "s" * 30_000, "huge_list": [0] * 20_000,
           "nested": _nested(40)}


def paths(value, prefix=()):
    """Every place in a JSON value: (path, value) for dict keys and list items, depth first."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield prefix + (k,), v
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:2]):
            yield prefix + (i,), v
            yield from paths(v, prefix + (i,))


def mutate(value, path, new):
    out = copy.deepcopy(value)
    node = out
    for key in path[:-1]:
        node = node[key]
    if new is DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = new  # shared, never modified
    return out


def _check(op: str, frame: dict) -> dict:
    return codec.check_reply("run" if op == "failure" else op, codec.decode(json.dumps(frame).encode()))


def test_examples_are_valid_and_cover_the_reply_table():
    assert set(EXAMPLES) == set(codec.REPLY_OPS) | {"hello", "failure"}
    for op, frame in EXAMPLES.items():
        assert _check(op, frame) == frame, op  # nothing dropped: the examples use every field
    assert REPORT.check(REPORT_EXAMPLE, "report") == REPORT_EXAMPLE


def test_every_field_of_every_reply_mutated_at_the_codec():
    """Exhaustive: each field (nested ones included) of each reply kind dropped or retyped. The codec returns a
    reply that re-validates to itself and whose tensor descriptions validate against the region or raise
    ProtocolError -- or raises ProtocolError. Nothing else, and in bounded time."""
    t0 = time.perf_counter()
    checked = refused = 0
    for op, example in EXAMPLES.items():
        for path, _ in list(paths(example)):
            for kind, new in RETYPES.items():
                frame = mutate(example, path, new)
                checked += 1
                try:
                    reply = _check(op, frame)
                except codec.ProtocolError:
                    refused += 1
                    continue
                assert _check(op, reply) == reply, (op, path, kind)
                for key in ("outputs", "inputs", "inputs_after"):
                    for m in reply.get(key) or []:
                        try:
                            codec.TensorMeta.from_json(m, 1 << 20)
                        except codec.ProtocolError:
                            pass
    assert refused > checked // 2 and time.perf_counter() - t0 < 30, (checked, refused)


@pytest.mark.parametrize("meta", [dict(META, offset=1 << 40), dict(META, nbytes=65), dict(META, shape=[4, 5]),
                                  dict(META, dtype="float64"), dict(META, offset=(1 << 20) - 32)])
def test_inconsistent_tensor_descriptions_are_refused(meta):
    reply = _check("run", mutate(EXAMPLES["run"], ("outputs", 0), meta))
    with pytest.raises(codec.ProtocolError, match="outside|does not match"):
        codec.TensorMeta.from_json(reply["outputs"][0], 1 << 20)


@pytest.mark.parametrize("nonce", [DROP, None, "1", 1.0, True, 2**80, -1, 43])
def test_a_frame_without_its_nonce_is_forged(nonce):
    frame = dict(EXAMPLES["run"], nonce=42)
    codec.check_nonce(frame, 42)
    with pytest.raises(codec.ForgedFrame):
        codec.check_nonce(mutate(frame, ("nonce",), nonce), 42)


# --- the same at the Verifier level: a candidate worker's real frames, one field mutated ------------------------
# The hello is not mutated here: it is sent before any candidate code runs, so a bad hello is a machine that
# cannot start workers (SandboxError, by design); the codec-level test above covers its schema.
TARGETS = [("build", 1), ("load", 1), ("init", 1), ("run", 1)]


@pytest.fixture
def mutated(monkeypatch):
    """Mutate the n-th frame of a given kind ("build" = a build request, else the reply to that request) that a
    candidate worker sends: state["mutation"] = (kind, n, path, new value)."""
    state: dict = {"mutation": None, "handle": None, "seen": {}, "hit": False}
    real = codec.recv

    def recv(fd, deadline=None, max_message=codec.MAX_MESSAGE):
        msg = real(fd, deadline, max_message)
        h = state["handle"]
        if state["mutation"] is None or h is None or fd != h.fd:
            return msg
        kind = "build" if msg.get("op") == "build" else h.pending
        state["seen"][kind] = state["seen"].get(kind, 0) + 1
        want, n, path, new = state["mutation"]
        if kind == want and state["seen"][kind] == n:
            state["hit"] = True
            try:
                frame = mutate(msg, path, new)
            except (KeyError, IndexError, TypeError):
                return msg
            return codec.decode(json.dumps(frame).encode(), max_message)  # the parent's bounded decoder
        return msg

    monkeypatch.setattr(codec, "recv", recv)
    real_spawn = launcher.Zygote.spawn

    def spawn(self, role, *a, **kw):
        state["handle"] = None  # (the hello is never mutated: see above)
        h = real_spawn(self, role, *a, **kw)
        if role == "candidate":
            state.update(handle=h, seen={})
        return h

    monkeypatch.setattr(launcher.Zygote, "spawn", spawn)
    return state


# the fields of the real frames (a relu candidate built with load_cpp), and the inconsistent metas
FRAME_FIELDS = {
    "build": [("op",), ("kind",), ("source",), ("flags",), ("nonce",)],
    "load": [("ok",), ("nonce",)], "init": [("ok",), ("nonce",)],
    "run": [("ok",), ("outputs",), ("native_calls",), ("inner_s",), ("ops",), ("violations",), ("inputs_after",),
            ("nonce",), ("outputs", 0, "dtype"), ("outputs", 0, "shape"), ("outputs", 0, "offset"),
            ("outputs", 0, "nbytes"), ("inputs_after", 0, "shape"), ("inputs_after", 0, "nbytes")],
}
KINDS = list(RETYPES)


def _cases():
    """Each (frame kind, field) with `drop` and two retypes, rotating through all retypes so every kind of
    mutation reaches every frame kind; plus tensor descriptions made inconsistent (outside the region, wrong
    nbytes) and a native_reports field the CPU worker never sends."""
    cases, r = [], 0
    for kind, fields in FRAME_FIELDS.items():
        for path in fields:
            picks = ["drop", KINDS[1 + r % (len(KINDS) - 1)], KINDS[1 + (r + 5) % (len(KINDS) - 1)]]
            r += 1
            cases += [(kind, path, k, RETYPES[k]) for k in picks]
    cases += [("run", ("outputs", 0, "offset"), "outside the region", 1 << 45),
              ("run", ("outputs", 0, "nbytes"), "wrong nbytes", 12),
              ("run", ("inputs_after", 0, "offset"), "outside the region", (1 << 45) + 64),
              ("run", ("native_reports",), "bad report", [{"violations": [7]}]),
              ("run", ("native_reports",), "bad report", [{"blocks": [{"block": 0, "timing_estimate": {}}]}])]
    return cases


def test_every_field_of_the_candidates_frames_mutated(fuzz_verifier, suite_task, mutated):
    """A real Verifier; for every frame kind a candidate's worker sends and every field of it, the frame arrives
    with that field dropped or retyped (or a tensor description inconsistent): a verdict comes back, no exception
    escapes, and the next candidate is judged normally. (~100 verdicts; the codec test above is exhaustive.)"""
    task = suite_task("cpu_l1/01_relu.py", batch_size=4, dim=256)
    t0 = time.perf_counter()
    gates: dict[str, int] = {}
    for i, (kind, path, label, new) in enumerate(_cases()):
        mutated.update(mutation=(kind, 1, path, new), hit=False)
        verdict = fuzz_verifier.verify(task, RELU)  # must not raise
        assert mutated["hit"], (kind, path)  # the frame existed and was mutated
        gate = verdict.failed_gate or "feasible"
        gates[gate] = gates.get(gate, 0) + 1
        assert verdict.feedback, (kind, path, label)
        if path == ("nonce",):  # a frame that decodes but lacks its nonce is forged (one nested too deep: junk)
            assert gate == ("runtime" if label == "nested" else "hack"), (kind, label, verdict.feedback)
        if i % 10 == 9:  # the verifier keeps judging normally
            mutated.update(mutation=None)
            assert fuzz_verifier.verify(task, RELU).feasible
    mutated.update(mutation=None)
    assert fuzz_verifier.verify(task, RELU).feasible
    assert {"runtime", "hack"} <= set(gates), gates
    print(f"{sum(gates.values())} mutated verdicts in {time.perf_counter() - t0:.1f} s: {gates}")
