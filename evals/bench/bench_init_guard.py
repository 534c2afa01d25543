"""The construction guard (verifier/sandboxed/init_guard.py) on every honest candidate's ``__init__``, quickly.

    python -m evokernel.evals.bench.bench_init_guard [cpu|ascend-sim] [--limit N]

Each golden-corpus item (golden_corpus.py) is executed in this process with its native builds replaced by a
stand-in whose functions do nothing (``load_cpp``, ``load_inline``; for ascend-sim items the project's
``model_src`` runs with a stand-in ``custom_ops_lib``), and its ``ModelNew`` is constructed from the task's ``get_init_inputs()`` under the guard, as
the candidate worker does. Prints, per origin, items constructed and items the guard refuses, and every refusal.
No verifier, no sandbox: a measure of the rule, not a verdict (bench_false_rejections runs the real thing).
"""
from __future__ import annotations

import argparse
import sys
import types
from collections import Counter
from typing import Any


class _Stub:
    """A native library whose every function does nothing but report its call (a constructor that calls native
    code still runs)."""

    def __getattr__(self, name: str) -> Any:
        import evokernel.cpu as native

        # a call still reports its arguments, as every door to native code does (the guard counts them)
        return lambda *a, **k: native.note_native_call(a + tuple(k.values()))


def construct(task: Any, source: str, backend: str = "cpu") -> dict[str, int] | str:
    """The guard's violations constructing ``source``'s ModelNew for ``task`` ({} = allowed), or why it could not run."""
    import torch
    import torch.utils.cpp_extension as cpp_ext

    import evokernel.cpu as native
    from evokernel.verifier.sandboxed.init_guard import guarded_construction

    held = (native.load_cpp, cpp_ext.load_inline, sys.modules.get("custom_ops_lib"))
    native.load_cpp = lambda *a, **k: _Stub()
    cpp_ext.load_inline = lambda *a, **k: _Stub()
    if backend == "ascend-sim":
        from evokernel.verifier.backends.ascend_sim.project import read_strings

        source = read_strings(source)["model_src"]
        sys.modules["custom_ops_lib"] = _Stub()  # type: ignore[assignment]
        sys.modules.setdefault("torch_npu", types.ModuleType("torch_npu"))  # as ascend_ops.load does
    try:
        ref = types.ModuleType("task")
        exec(compile(task.source, "task.py", "exec"), ref.__dict__)
        init_args = list(ref.get_init_inputs())
        mod = types.ModuleType("candidate")
        try:
            exec(compile(source, "candidate.py", "exec"), mod.__dict__)
        except Exception as exc:  # noqa: BLE001 - reported, not judged
            return f"import: {type(exc).__name__}: {exc}"
        torch.manual_seed(0)
        with guarded_construction() as guard:
            model = mod.ModelNew(*init_args)
        guard.audit(model)
        return dict(guard.violations)
    finally:
        native.load_cpp, cpp_ext.load_inline = held[:2]
        if held[2] is None:
            sys.modules.pop("custom_ops_lib", None)
        else:
            sys.modules["custom_ops_lib"] = held[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("backend", nargs="?", default="cpu", choices=["cpu", "ascend-sim"])
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args(argv)
    from evokernel.evals.bench.golden_corpus import corpus

    items = list(corpus(args.backend))[: args.limit or None]
    counts: Counter[tuple[str, str]] = Counter()
    for item in items:
        found = construct(item.task, item.source, args.backend)
        kind = "skipped" if isinstance(found, str) else ("refused" if found else "allowed")
        counts[(item.origin, kind)] += 1
        if kind != "allowed":
            print(f"{kind}: {item.label}: {found}")
    for origin in sorted({o for o, _ in counts}):
        print(f"{origin:18s} " + "  ".join(f"{k} {counts[(origin, k)]}" for k in ("allowed", "refused", "skipped")))
    return 1 if any(k == "refused" for _, k in counts) else 0


if __name__ == "__main__":
    sys.exit(main())
