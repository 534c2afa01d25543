"""The `cpu` backend: C++ kernels through `evokernel.cpu.load_cpp` (or torch load_inline), built
by the trusted parent in a throw-away sandbox, cached by content, run in the candidate worker."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from evokernel.cpu import CompileError
from evokernel.verifier.backends.base import Backend, BuildLog
from evokernel.verifier.trusted import binary_judge, native_build, native_rules, resource_limits
from evokernel.verifier.trusted.ast_allowlist import check_glue
from evokernel.verifier.trusted.findings import Finding
from evokernel.verifier.trusted.build_sandbox import BuildSandbox
from evokernel.verifier.trusted.launcher import Limits


def build_limits(timeout: float) -> Limits:
    """The limits of one build command (resource_limits.py)."""
    return Limits(cpu_s=int(timeout) * 2 + 10, fsize_mb=resource_limits.BUILD_FILE_MB,
                  address_space_mb=resource_limits.BUILD_AS_MB, tasks=resource_limits.BUILD_TASKS,
                  tmp_mb=resource_limits.BUILD_TMP_MB)


class CpuBackend(Backend):
    name = "cpu"

    def __init__(self, cache_dir: Path, build_timeout_s: float = 600.0):
        self.cache_dir = cache_dir
        self.build_timeout_s = build_timeout_s
        # the build sees its own folder (at /build), the toolchain and torch's headers and libraries at neutral
        # paths only (no cache of other candidates' builds, no host path), under the build seccomp filter and
        # resource limits (build_sandbox.py, resource_limits.py)
        self._runner = BuildSandbox(build_limits)

    def static_check(self, source: str) -> list[Finding]:
        return check_glue(source)

    def handle_build(self, request: dict[str, Any], log: BuildLog, rules: bool = True) -> dict[str, Any]:
        kind = request.get("kind")
        log.requests += 1
        if log.requests > log.MAX_REQUESTS:
            message = f"too many native builds requested (more than {log.MAX_REQUESTS}); build once at import"
            log.errors.append(message)
            return {"ok": False, "error": message}
        try:
            if kind == "cpp":
                source = str(request.get("source", ""))
                findings = native_rules.check_native(source, "cpp") if rules else []
                if findings:
                    log.hack += [f"native source {f}" for f in findings]
                    return {"ok": False, "error": "rejected by the verifier's native-code rules"}
                flags = tuple(str(f) for f in request.get("flags") or ())
                result = native_build.build_cpp(source, flags, self.cache_dir, self._runner,
                                                log.timeout(self.build_timeout_s),
                                                judge=rules, budget=log.budget)
            elif kind == "inline":
                spec = dict(request.get("spec") or {})
                findings = ([f for s in spec.get("cpp_sources") or [] for f in native_rules.check_native(str(s), "inline")]
                            if rules else [])
                if findings:
                    log.hack += [f"native source {f}" for f in findings]
                    return {"ok": False, "error": "rejected by the verifier's native-code rules"}
                result = native_build.build_inline(spec, self.cache_dir, self._runner,
                                                   log.timeout(self.build_timeout_s),
                                                   judge=rules, budget=log.budget)
            else:
                return {"ok": False, "error": f"unknown build kind {kind!r}"}
            if result.facts is not None:
                # the binary judge: what the build is (its preprocessed code, the symbols it reaches)
                judged = binary_judge.judge(result.facts, kind, binary_judge.policy(kind))
                if judged:
                    log.hack += [f"built library {f}" for f in judged]
                    return {"ok": False, "error": "rejected by the verifier's binary judge"}
        except CompileError as exc:
            log.errors.append(exc.diagnostics)
            return {"ok": False, "error": exc.diagnostics}
        log.builds += 1
        log.cached += int(result.cached)
        log.seconds += result.seconds
        return {"ok": True, "path": str(result.path)}

