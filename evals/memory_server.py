"""The Chroma server (`chroma run`) an arm's shards share as one memory, on a free port of 127.0.0.1.

Started by the harness for streams split into shards (``memory_server = true``); each shard's `evokernel run`
reaches it with ``--memory-url``. It lives as long as the arm has shards to run, and dies with the harness.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from evokernel.evals.engine import die_with_parent

__all__ = ["ChromaServer"]


class ChromaServer:
    """A `chroma run` serving one arm's memory to its shards, on a free port of 127.0.0.1."""

    def __init__(self, path: Path, log: Path):
        exe = Path(sys.executable).with_name("chroma")
        exe_s = str(exe) if exe.exists() else "chroma"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        path.mkdir(parents=True, exist_ok=True)
        self._log = log.open("ab")
        env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
        self.proc = subprocess.Popen([exe_s, "run", "--path", str(path / "chroma"), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Chroma server exited with {self.proc.returncode} (log: {log})")
            try:
                with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the Chroma server did not answer within 90 s (log: {log})")
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
