"""The backend interface: what differs between targets (cpu, ascend-sim, ascend) sits behind it,
so the gates in `verifier.trusted.verifier` never special-case a target."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from evokernel.runtime import build_cache
from evokernel.verifier.trusted.findings import Finding


class Backend(ABC):
    name: str
    # "wall": the parent times candidate and reference (cpu); "model": the backend estimates both
    # from what a checked run recorded (ascend-sim), see `estimate`
    timing_mode: str = "wall"

    def start(self, sandbox: str | None = None) -> None:
        """Called when the verifier starts (e.g. ascend: locate CANN, claim an NPU); raises SandboxError
        subclasses for an environment that cannot run this backend."""

    def close(self) -> None:
        """Called when the verifier stops (release what start() took)."""

    def load_message(self) -> dict[str, Any]:
        """Extra fields of the worker's load request (how to load this backend's candidates)."""
        return {}

    def estimate(self, reports: list[dict[str, Any]], eager_ops: list[dict[str, Any]]) -> dict[str, Any]:
        """timing_mode "model": kernel_us, eager_us, profile, ... for one forward."""
        raise NotImplementedError(f"backend {self.name} measures latency; it does not model it")

    def audit(self, log: "BuildLog", trials: list[list[dict[str, Any]]], io_bytes: tuple[int, int] | None) -> list[str]:
        """timing_mode "model": what is wrong with the reports the latency would be modelled from (each a hack);
        ``trials`` holds the reports of each correctness trial, ``io_bytes`` the task's input and output bytes."""
        return []

    def judge_report(self, report: dict[str, Any]) -> str:
        """Feedback for a native run report the worker sent with a forward ('' = clean). A backend that runs no
        emulator gets none from an honest worker, so any report is refused."""
        return f"the {self.name} worker sent a native run report; this backend runs no emulator"

    def receive_reports(self, reports: list[Any]) -> list[Any]:
        """The native run reports of one reply as the consumers read them (ValueError: malformed). The reports
        arrive as the worker sent them, already checked against the codec's schema."""
        return reports

    def report_warnings(self, trials: list[list[dict[str, Any]]]) -> list[str]:
        """Distinct warning-level findings in the reports of the correctness trials (formatted for feedback)."""
        return []

    @abstractmethod
    def static_check(self, source: str) -> list[Finding]:
        """Static anti-hack rules over the candidate source (raises SyntaxError if it does not parse)."""

    @abstractmethod
    def handle_build(self, request: dict[str, Any], log: "BuildLog", rules: bool = True) -> dict[str, Any]:
        """Serve a build request from a sandboxed candidate; returns the reply sent back to it.
        ``rules=False`` skips the native-source rules (testing the deeper layers only)."""


class BuildLog:
    """What happened to the native builds of one candidate (the compile gate reads it)."""

    MAX_REQUESTS = 16  # build time does not count against a candidate's deadlines, so it is capped here

    def __init__(self) -> None:
        self.wall = 0.0  # seconds the verdict's builds took so far, failed and timed-out ones included
        self.requests = 0
        self.hack: list[str] = []
        self.errors: list[str] = []
        self.seconds = 0.0
        self.builds = 0
        self.cached = 0
        # what the builds may leave in the build cache (and their entries pinned until the verdict ends)
        self.budget = build_cache.CandidateBudget()

    def timeout(self, budget_s: float) -> float:
        """Seconds the next build may run: what is left of the verdict's build budget (``budget_s`` for all its
        builds together; one build could take all of it). Without one budget a candidate asking for 16 builds of
        600 s each held the verifier for hours (red-team rt4_sixteen_slow_builds)."""
        return max(0.0, budget_s - self.wall)
