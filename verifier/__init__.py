"""The verifier (paper §3.5): the environment whose verdict every reward and report rests on.

    from evokernel.verifier import Verifier, VerifyConfig
    with Verifier("cpu", VerifyConfig()) as v:
        verdict = v.verify(task, candidate_source)

`trusted/` runs in the caller's process, `sandboxed/` inside the sandbox; see docs/verifier.md. `pool.py`:
warm verifiers as Ray actors, one per device, for tasks judged side by side (docs/scale-out.md).
Names are resolved lazily so that the sandboxed side never imports the trusted machinery.
"""
from typing import Any

__all__ = ["Verifier", "VerifyConfig", "Verdict", "verify"]


def verify(task: Any, source: str, backend: str = "cpu", **config: Any) -> Any:
    """One-shot convenience: start a verifier, judge one candidate, stop it (~3 s of start-up)."""
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    with Verifier(backend, VerifyConfig(**config)) as verifier:
        return verifier.verify(task, source)


def __getattr__(name: str) -> Any:
    if name in ("Verifier", "VerifyConfig"):
        from evokernel.verifier.trusted import verifier

        return getattr(verifier, name)
    if name == "Verdict":
        from evokernel.verifier.verdict import Verdict

        return Verdict
    raise AttributeError(f"module 'evokernel.verifier' has no attribute {name!r}")
