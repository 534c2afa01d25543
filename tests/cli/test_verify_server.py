"""`evokernel verify --serve` and the CLI that reuses it: same verdicts, exit codes and output as in-process;
malformed requests, incompatible settings and stale sockets handled; the client never imports torch."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RELU_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU = ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py"
FALLBACK = ROOT / "tests" / "verifier" / "candidates" / "torch_relu_fallback.py"
SMALL = ["--set", "batch_size=4", "--set", "dim=1024", "--no-timing"]


def cli(*args, env):
    return subprocess.run([sys.executable, "-m", "evokernel", "verify", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    cache = tmp_path_factory.mktemp("evk-serve")
    sock = cache / "v.sock"
    env = {**os.environ, "EVOKERNEL_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    p = subprocess.Popen([sys.executable, "-m", "evokernel", "verify", "--serve", "--socket", str(sock),
                          "--idle-timeout", "600"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert "listening on" in line, line + p.stderr.read()
    yield env, sock
    cli("--stop-server", "--socket", sock, env=env)
    p.wait(timeout=60)
    assert not sock.exists()


def test_the_cli_uses_the_server_and_prints_the_same_verdict(server):
    env, sock = server
    p = cli(RELU_TASK, RELU, *SMALL, "--socket", sock, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("FEASIBLE  01_relu") and "note:" not in p.stderr
    p = cli(RELU_TASK, RELU, *SMALL, "--socket", sock, "--json", env=env)
    v = json.loads(p.stdout)
    assert p.returncode == 0 and v["feasible"] and v["details"]["sandbox"]


def test_exit_codes_through_the_server(server, tmp_path):
    env, sock = server
    p = cli(RELU_TASK, FALLBACK, *SMALL, "--socket", sock, env=env)
    assert p.returncode == 1 and "FAILED [hack]" in p.stdout
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
                      "        return x\ndef get_inputs():\n    raise ValueError('broken task')\n"
                      "def get_init_inputs():\n    return []\n")
    p = cli(broken, RELU, "--socket", sock, env=env)
    assert p.returncode == 2 and "broken task" in p.stderr and "Traceback" not in p.stderr


def test_malformed_requests_get_an_answer_and_the_server_survives(server):
    env, sock = server
    for junk in (b"\x00\x00\x00\x05junk!", b"\x00\x00\x00\x02[]", (4 * 10**8).to_bytes(4, "big"),
                 b'\x00\x00\x00\x10{"op": "verify"}'):
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(sock))
        s.sendall(junk)
        s.shutdown(socket.SHUT_WR)
        reply = s.recv(4096)
        s.close()
        assert b'"ok":false' in reply, reply
    assert cli(RELU_TASK, RELU, *SMALL, "--socket", sock, env=env).returncode == 0


def test_other_threads_fall_back_in_process(server):
    env, sock = server
    p = cli(RELU_TASK, RELU, *SMALL, "--threads", "2", "--socket", sock, env=env)
    assert p.returncode == 0 and "verifying in this process" in p.stderr


def test_a_stale_socket_is_removed_and_the_cli_verifies_in_process(tmp_path):
    env = {**os.environ, "EVOKERNEL_CACHE": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    stale = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))
    s.close()  # bound, never listening: connect() is refused
    p = cli(RELU_TASK, RELU, *SMALL, "--socket", stale, env=env)
    assert p.returncode == 0 and "does not answer" in p.stderr and not stale.exists()


def test_the_client_path_does_not_import_torch():
    code = ("import sys, evokernel.cli.app, evokernel.cli.verify_server\n"
            "assert 'torch' not in sys.modules, 'torch imported'\nprint('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "ok", p.stderr


def test_stop_without_a_server_says_so(tmp_path):
    env = {**os.environ, "EVOKERNEL_CACHE": str(tmp_path)}
    p = cli("--stop-server", "--socket", tmp_path / "none.sock", env=env)
    assert p.returncode == 1 and "no warm verifier" in p.stderr
