"""A `chroma run` server on loopback for the tests of served memory."""
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMA = Path(sys.executable).parent / "chroma"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on."""
    return _free_port()


@pytest.fixture
def chroma_server(tmp_path):
    if not CHROMA.exists():
        pytest.skip("the chroma server binary is not installed")
    port = _free_port()
    log = open(tmp_path / "chroma.log", "w")
    proc = subprocess.Popen([str(CHROMA), "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail(f"chroma run did not start: {(tmp_path / 'chroma.log').read_text()[-2000:]}")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
