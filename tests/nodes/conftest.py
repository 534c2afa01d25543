"""Fixtures for node tests: a fresh store (hash embeddings, no model), a run dir, a runtime."""
import pytest
from langgraph.runtime import Runtime

from evokernel.graph import resources
from evokernel.graph.context import Context


class FakeVerifier:
    """Returns scripted verdicts and records what it was asked."""

    backend = "cpu"

    def __init__(self):
        self.calls = []
        self.next = []

    def verify(self, task, source):
        from evokernel.verifier.verdict import Verdict

        self.calls.append(source)
        if self.next:
            return self.next.pop(0)
        return Verdict(feasible=True, failed_gate=None, feedback="", task=task.name, latency_ms=1.0, reference_ms=2.0,
                       speedup=2.0, gates={"hack": True, "compile": True, "correctness": True},
                       details={"big": "x" * 10})


class Env:
    def __init__(self, tmp_path, **ctx_kw):
        from evokernel.memory.embeddings import HashEmbedder
        from evokernel.memory.store import MemoryStore

        self.ctx = Context(memory_dir=str(tmp_path / "mem"), run_dir=str(tmp_path / "run"), run_id="t", **ctx_kw)
        self.store = MemoryStore(tmp_path / "mem", embedder=HashEmbedder())
        self.verifier = FakeVerifier()
        resources.install(store=self.store, verifier=resources.VerifierService("cpu", verifier=self.verifier))
        self.events = []

    def runtime(self, **ctx_kw):
        import dataclasses

        ctx = dataclasses.replace(self.ctx, **ctx_kw) if ctx_kw else self.ctx
        return Runtime(context=ctx, stream_writer=self.events.append)

    def state(self, task_path, **kw):
        from evokernel.graph.drafting import setup

        st = {"task": {"path": str(task_path), "overrides": {}, "suite": "cpu-l1"}}
        st.update(setup(st, self.runtime()))
        st.update(kw)
        return st

    def trace(self, item_id, task="cpu-l1/01_relu", **meta):
        from evokernel.memory.store import MemoryItem

        kind = meta.pop("kind", "trace")
        base = {"backend": "cpu", "task": task, "category": "activation", "feasible": True, "latency_ms": 1.0,
                "parent": "", "stage": "draft"}
        base.update(meta)
        return MemoryItem(id=item_id, kind=kind, key=f"relu activation {item_id}",
                          text=f"// code of {item_id}", meta=base)


@pytest.fixture
def env(tmp_path):
    e = Env(tmp_path)
    yield e
    resources.install(store=None, verifier=None, generator=None)
    resources.close_all()
    e.store.close()
