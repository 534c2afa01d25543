"""Reading an emulator report (pure text; used by the sandboxed worker to decide whether a run broke
the hardware rules, and by the trusted parent to format warnings and failures for feedback)."""
from __future__ import annotations

from typing import Any

SEVERITY = {"warning": 0, "error": 1, "fatal": 2}


def judge_report(report: dict[str, Any]) -> str:
    """LLM-facing feedback for a report with error/fatal violations or an abnormal status ('' = clean)."""
    bad = [v for v in report.get("violations") or [] if SEVERITY.get(v.get("severity"), 0) >= 1]
    status = report.get("status", "ok")
    if not bad and status == "ok":
        return ""
    lines = []
    if status != "ok":
        lines.append(f"The emulated run of {report.get('op_type')} stopped: {status}"
                     + (f" ({report['error']})" if report.get("error") else ""))
    if bad:
        lines.append(f"The Ascend C emulator found {len(bad)} hardware-rule violation(s); on an Ascend NPU this "
                     "kernel would fault, hang or give wrong results:")
        bad.sort(key=lambda v: -SEVERITY.get(v.get("severity"), 0))
        for v in bad[:10]:
            lines.append(format_violation(v))
        if len(bad) > 10:
            lines.append(f"... and {len(bad) - 10} more")
    return "\n".join(lines)


def format_violation(v: dict[str, Any]) -> str:
    where = f" at {v['file']}:{v['line']}" if v.get("file") else ""
    blocks = v.get("blocks") or []
    block = f" (block {v.get('block')}" + (f", {len(blocks)} blocks" if len(blocks) > 1 else "") + \
            (f", {v['count']} hits)" if v.get("count", 1) > 1 else ")") if v.get("block", -1) >= 0 else ""
    return f"[{v.get('severity')}] {v.get('rule')}{where}{block}: {v.get('message')}"


def report_warnings(trials: list[list[dict[str, Any]]]) -> list[str]:
    """Distinct warning-level emulator findings of the correctness trials (formatted for feedback)."""
    seen: dict[tuple[str, str, int], str] = {}
    for reports in trials:
        for r in reports:
            for v in r.get("violations") or []:
                key = (str(v.get("rule")), str(v.get("file")), int(v.get("line") or 0))
                if v.get("severity") == "warning" and key not in seen:
                    seen[key] = format_violation(v)
    return list(seen.values())
