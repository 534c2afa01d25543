"""The message codec refuses junk instead of trusting it: bounded decoding, a schema per reply and per
build request, and a property-based fuzzer showing that only ProtocolError ever escapes, in bounded time."""
import os

import pytest

from evokernel.verifier import message_codec as protocol
from evokernel.verifier.message_codec import ProtocolError, TensorMeta


def test_roundtrip_and_junk():
    r, w = os.pipe()
    protocol.send(w, {"op": "run", "x": [1, 2]})
    assert protocol.recv(r) == {"op": "run", "x": [1, 2]}
    os.write(w, b"\x00\x00\x00\x05junk!")
    with pytest.raises(ProtocolError, match="malformed"):
        protocol.recv(r)
    os.write(w, b"\xff\xff\xff\xff")
    with pytest.raises(ProtocolError, match="exceeds"):
        protocol.recv(r)
    os.write(w, b"\x00\x00\x00\x02[]")
    with pytest.raises(ProtocolError, match="not a JSON object"):
        protocol.recv(r)
    os.close(w)
    with pytest.raises(protocol.PeerClosed):
        protocol.recv(r)


def test_deadline():
    r, w = os.pipe()
    import time

    with pytest.raises(protocol.Timeout):
        protocol.recv(r, time.monotonic() + 0.05)


@pytest.mark.parametrize("meta, match", [
    ({"dtype": "object", "shape": [1], "offset": 0, "nbytes": 8}, "dtype"),
    ({"dtype": "float32", "shape": [-1], "offset": 0, "nbytes": 4}, "shape"),
    ({"dtype": "float32", "shape": [4], "offset": 0, "nbytes": 8}, "does not match"),
    ({"dtype": "float32", "shape": [4], "offset": 100, "nbytes": 16}, "outside"),
    ("nope", "expected an object"),
    # strides: the bytes are the view's span from its first element to its last
    ({"dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24, "strides": [1, 3]}, "does not match"),
    ({"dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24, "strides": [3]}, "do not fit"),
    ({"dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24, "strides": [3, -1]}, "strides"),
    ({"dtype": "float32", "shape": [0, 3], "offset": 0, "nbytes": 0, "strides": [3, 1]}, "do not fit"),
    ({"dtype": "float32", "shape": [4, 4], "offset": 0, "nbytes": 76, "strides": [5, 1]}, "outside"),
])
def test_tensor_meta_validation(meta, match):
    with pytest.raises(ProtocolError, match=match):
        TensorMeta.from_json(meta, 64)
    assert TensorMeta.from_json({"dtype": "float32", "shape": [4], "offset": 0, "nbytes": 16}, 64).nbytes == 16
    m = TensorMeta.from_json({"dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 28, "strides": [4, 1]}, 64)
    assert m.strides == (4, 1) and TensorMeta.from_json(m.to_json(), 64) == m  # a padded row pitch: span 7


# --- bounded decoding ------------------------------------------------------------------------------
import json
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evokernel.verifier.message_codec import check_build_request, check_reply, decode

OPS = ["hello", "load", "init", "make_inputs", "run", "record_ops", "bandwidth", "ping", "compile", "reload"]


@pytest.mark.parametrize("raw, match", [
    (b"[" * 100_000 + b"]" * 100_000, "nested"),
    (b'{"a":' * 30 + b"1" + b"}" * 30, "nested deeper"),
    (b'{"n": ' + b"9" * 5000 + b"}", "malformed"),
    (b'{"x": NaN}', "malformed"),
    (b'{"x": Infinity}', "malformed"),
    (b'{"s": "\xff\xfe"}', "malformed"),  # invalid UTF-8 inside a string
    (b"\xff\xfe\xfd", "malformed"),
    (b"", "malformed"),
    (b"x" * (5 * 1024 * 1024), "exceeds"),
])
def test_decode_refuses_what_would_hurt_the_parent(raw, match):
    t0 = time.perf_counter()
    with pytest.raises(ProtocolError, match=match):
        decode(raw)
    assert time.perf_counter() - t0 < 2.0


def test_deep_nesting_through_a_pipe_is_a_protocol_error():
    r, w = os.pipe()
    import threading

    body = b"[" * 200_000 + b"]" * 200_000
    t = threading.Thread(target=lambda: (os.write(w, len(body).to_bytes(4, "big")), os.write(w, body)))
    t.start()
    with pytest.raises(ProtocolError, match="nested"):
        protocol.recv(r)
    t.join()


@pytest.mark.parametrize("op, msg, match", [
    ("run", {"ok": True, "outputs": "x", "native_calls": 1}, "outputs"),
    ("run", {"ok": True, "outputs": [], "native_calls": -1}, "native_calls"),
    ("run", {"ok": True, "outputs": [], "native_calls": True}, "native_calls"),
    ("run", {"ok": True, "native_calls": 1}, "missing outputs"),
    ("run", {"ok": True, "outputs": [{"dtype": "float32"}], "native_calls": 1}, "missing"),
    ("run", {"ok": True, "outputs": [], "native_calls": 1, "violations": {"relu": "many"}}, "violations"),
    ("run", {"ok": "yes"}, "ok"),
    ("make_inputs", {"ok": True}, "neither"),
    ("bandwidth", {"ok": True, "seconds": [1e400]}, "malformed|finite"),
    ("truth", {"ok": True, "outputs": [], "scale": "large"}, "scale"),
    ("init", {"ok": True, "init_args": {"a": 1}}, "init_args"),
    ("hello", {"op": "hi", "pid": 3}, "op"),
    ("mystery", {"ok": True}, "unknown request"),
])
def test_replies_are_checked_against_their_request(op, msg, match):
    with pytest.raises(ProtocolError, match=match):
        check_reply(op, decode(json.dumps(msg).encode()))


def test_failure_replies_are_truncated_not_refused():
    reply = check_reply("run", {"ok": False, "error": "e" * 100_000, "detail": "d", "phase": "run"})
    assert not reply["ok"] and len(reply["error"]) < 21_000


@pytest.mark.parametrize("msg, match", [
    ({"op": "build"}, "kind"),
    ({"op": "build", "kind": "shell"}, "kind"),
    ({"op": "build", "kind": "cpp"}, "missing source"),
    ({"op": "build", "kind": "cpp", "source": 3}, "source"),
    ({"op": "build", "kind": "cpp", "source": "x", "flags": "-O3"}, "flags"),
    ({"op": "build", "kind": "inline", "spec": [[["x"]]]}, "spec"),
    ({"op": "build", "kind": "inline", "spec": {"name": "n", "cpp_sources": [{"x": 1}], "functions": [],
                                                 "extra_cflags": []}}, "cpp_sources"),
    ({"op": "build", "kind": "ascend", "source": "s", "combo": 10**9}, "combo"),
])
def test_build_requests_are_checked(msg, match):
    with pytest.raises(ProtocolError, match=match):
        check_build_request(msg)


# CI machines are shared and loaded: generation speed is not what these tests judge
SLOW_MACHINE = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_subnormal=False) | st.text(),
                           lambda children: st.lists(children, max_size=5) |
                           st.dictionaries(st.text(max_size=8), children, max_size=5), max_leaves=30)


@settings(max_examples=400, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(raw=st.binary(max_size=2048))
def test_fuzz_random_bytes_only_raise_protocol_error(raw):
    try:
        decode(raw)
    except ProtocolError:
        pass


@settings(max_examples=400, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(op=st.sampled_from(OPS), msg=st.dictionaries(
    st.sampled_from(["ok", "op", "pid", "outputs", "native_calls", "inputs", "need", "init_args", "ops",
                     "violations", "native_reports", "inputs_after", "seconds", "error", "detail", "phase",
                     "inner_s", "other"]), json_values, max_size=8))
def test_fuzz_replies_only_raise_protocol_error(op, msg):
    try:
        out = check_reply(op, decode(json.dumps(msg).encode()))
    except ProtocolError:
        return
    assert isinstance(out, dict) and isinstance(out.get("ok", True), bool)


@settings(max_examples=300, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(msg=st.dictionaries(st.sampled_from(["kind", "source", "flags", "spec", "combo", "op"]), json_values,
                           max_size=5), kind=st.sampled_from(["cpp", "inline", "ascend", "x"]))
def test_fuzz_build_requests_only_raise_protocol_error(msg, kind):
    msg = {**msg, "kind": kind}
    try:
        check_build_request(msg)
    except ProtocolError:
        pass


@settings(max_examples=200, deadline=None, suppress_health_check=SLOW_MACHINE)
@given(frame=st.binary(max_size=64), cut=st.integers(0, 64))
def test_fuzz_truncated_frames_end_in_protocol_errors(frame, cut):
    r, w = os.pipe()
    data = protocol.encode({"ok": True, "blob": frame.hex()})
    os.write(w, data[: cut % (len(data) + 1)] + frame)
    os.close(w)
    try:
        while True:
            protocol.recv(r, time.monotonic() + 1)
    except ProtocolError:
        pass
    finally:
        os.close(r)
