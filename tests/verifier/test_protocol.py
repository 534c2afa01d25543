"""The wire format refuses junk instead of trusting it."""
import os

import pytest

from evokernel.verifier import protocol
from evokernel.verifier.protocol import ProtocolError, TensorMeta


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
    ("nope", "not an object"),
])
def test_tensor_meta_validation(meta, match):
    with pytest.raises(ProtocolError, match=match):
        TensorMeta.from_json(meta, 64)
    assert TensorMeta.from_json({"dtype": "float32", "shape": [4], "offset": 0, "nbytes": 16}, 64).nbytes == 16
