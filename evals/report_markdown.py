"""The report's markdown (``report.md``): tables of the summary :func:`.report.summarize` builds, with the
conditions, the paired differences and the figures linked.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .report_data import MODELLED_BACKENDS, NOT_RECORDED


def _esc(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def pct(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{100 * v:.{digits}f}%"


def times(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def _with_sd(sp: Mapping[str, Any] | None, kind: str, n_seeds: int) -> str:
    """``mean ± sd`` (percentage points for shares) when >= 2 seeds have a value, with ``(n=k)``
    when fewer seeds than the group has define the metric."""
    if not sp or sp.get("mean") is None:
        return "—"
    mu, sd, n = sp["mean"], sp.get("std"), sp.get("n", 0)
    s = pct(mu) if kind == "pct" else times(mu)
    if sd is not None:
        s += f" ± {100 * sd:.1f}" if kind == "pct" else f" ± {sd:.2f}"
    if n_seeds > 1 and n < n_seeds:
        s += f" (n={n})"
    return s


def count(v: float | None) -> str:
    if v is None:
        return "—"
    v = float(v)
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.1f}k"
    return f"{v:,.0f}"


def money(v: float | None) -> str:
    return "—" if v is None else f"${v:,.2f}"


def duration(v: float | None) -> str:
    if v is None:
        return "—"
    if v < 120:
        return f"{v:.0f} s"
    if v < 7200:
        return f"{v / 60:.1f} min"
    return f"{v / 3600:.1f} h"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _condition_lines(conditions: Mapping[str, Any]) -> list[str]:
    if not conditions:
        return ["*No conditions recorded.*", ""]
    lines = []
    for k, v in conditions.items():
        if isinstance(v, Mapping):
            lines.append(f"- **{k}**:" + ("" if v else " —"))
            lines += [f"  - {sk}: {sv if isinstance(sv, str) else json.dumps(sv)}" for sk, sv in v.items()]
        else:
            lines.append(f"- **{k}**: {v if isinstance(v, str) else json.dumps(v)}")
    return lines + [""]


def _diff(metric: str, d: float | None) -> str:
    if d is None:
        return "—"
    if metric == "solved":
        return f"{100 * d:+.1f} pp"
    if metric.startswith("log_"):
        return f"{d:+.3f} (×{math.exp(d):.2f})"
    return f"{d:+.2f}"


_PAIRED_LABELS = {
    "solved": "solved within T (1/0)",
    "log_speedup_vs_eager": "ln speedup vs eager (best kernel)",
    "log_speedup_vs_first": "ln speedup vs first (within operator)",
    "first_feasible_attempt": "first feasible attempt (1-based)",
}


def _sizes_lines(sizes: Mapping[str, Any] | None) -> list[str]:
    """The "Task sizes" section: which operators ran at sizes other than their files' (``--fit auto``)."""
    if not sizes:
        return []
    modes = {str((f or {}).get("mode") or "?") for f in sizes.values()}
    changed = {t: f for t, f in sizes.items() if (f or {}).get("changed")}
    L = ["## Task sizes", ""]
    if modes == {"none"}:
        return L + ["Every operator ran at the sizes its file sets (`--fit none`).", ""]
    L += [(f"`--fit auto`: {len(changed)} of {len(sizes)} operators ran with size constants scaled down to fit "
           "the backend's memory and time budget (the rest fit as written); latencies and speedups are at these "
           "sizes."), ""]
    unfit = [t for t, f in sizes.items() if f and f.get("mode") == "auto" and not f.get("fits", True)]
    if unfit:
        L += [f"Operators still over the budget: {', '.join(unfit)}.", ""]
    if changed:
        def fmt(v: Any) -> str:
            return "(" + ", ".join(map(str, v)) + ")" if isinstance(v, (list, tuple)) else str(v)

        L += _table(["operator", "changed", "MiB", "est. ms"],
                    ([t, ", ".join(f"{k} {fmt(v[0])}→{fmt(v[1])}" for k, v in f["changed"].items()),
                      f"{(f.get('bytes') or 0) / (1 << 20):.1f}",
                      f"{f['est_ms']:.1f}" if isinstance(f.get("est_ms"), (int, float)) else "—"]
                     for t, f in changed.items()))
    return L


def render_markdown(summary: Mapping[str, Any], figures: Mapping[str, Any] | None = None) -> str:
    """``report.md`` from a :func:`summarize` result and the :func:`make_figures` result."""
    s = summary
    methods: Mapping[str, Any] = s["methods"]
    T, n_tasks = s["budget"], s["n_tasks"]
    L: list[str] = [f"# Evaluation report: {s['name']}", ""]
    kind = "evaluation directory" if s.get("kind") == "eval" else "single run directory"
    L += [f"- **name**: {s['name']} ({kind})", f"- **created**: {s.get('created') or NOT_RECORDED}",
          (f"- **budget**: T = {T} attempts per operator; **operators**: {n_tasks}; "
          f"**seeds**: {', '.join(map(str, s['seeds'])) or 'none'}; **stages**: {' → '.join(s['stages']) or '—'}"),
          f"- **reference group** (paired differences): {s.get('reference') or '—'}", ""]
    backend = str((s.get("conditions") or {}).get("backend") or "")
    if backend in MODELLED_BACKENDS:
        L += [f"**Latencies are estimates.** The {backend} backend runs Ascend C on a CPU emulator; every latency "
              "and speedup below comes from its latency model (the kernel's emulated pipe schedule vs one NPU "
              "kernel per eager PyTorch operator, on the same Ascend 910B constants), not from a clock.", ""]

    # status
    prog = s["progress"]
    done = sum(p["attempts"] for p in prog.values())
    want = sum(p["expected"] for p in prog.values())
    if s["complete"]:
        L += [f"**Status: complete** — every arm has all {n_tasks} × {T} attempts on record ({done} in all).", ""]
    else:
        L += [(f"**Status: PARTIAL** — {done} of {want} expected attempts on record across {len(prog)} arm(s). "
              "Metrics are computed over what exists; operators without records count as failures, and arms "
              "with no record at all are left out of the means."), ""]
        if s["missing_arms"]:
            L += [f"Missing arms (no attempt on record): {', '.join(s['missing_arms'])}.", ""]
    if not done:
        L += ["**No attempts on record**: every metric below is undefined (—).", ""]
    L += _table(["arm", "attempts", "expected", "done"],
                ([k, p["attempts"], p["expected"], pct(p["attempts"] / p["expected"], 0) if p["expected"] else "—"]
                 for k, p in prog.items()))

    L += ["## Reproduce", "", "```", s.get("command") or NOT_RECORDED, "```", ""]
    if s.get("kind") == "run":
        L += ["(Reconstructed from `run.json`.)", ""]
    L += ["## Conditions", ""] + _condition_lines(s.get("conditions") or {})
    L += _sizes_lines(s.get("task_sizes"))

    # main table
    L += ["## Results", "",
          ("Mean over the seeds on record (± sample standard deviation when ≥ 2 seeds; shares in percentage "
          "points); `seeds` is how many seeds each mean is over. Tokens, cost and wall time are sums over seeds. "
          "*geomean vs eager* is each operator's best kernel; *first kernel vs eager* its first feasible kernel "
          "(what drafting produced): a method with fast first drafts has less left for *speedup vs first*."), ""]
    head = ["group", "seeds", "CR", "Acc", "round-1 Acc", "median speedup vs first [IQR]", "geomean vs eager",
            "first kernel vs eager", "fast_1", "tokens in / out", "cost", "wall time"]
    rows = []
    for g, m in methods.items():
        n, sp = m["n_seeds"], m["spread"]
        q1, q3 = m["iqr_speedup_vs_first"]
        iqr = f" [{q1:.2f}–{q3:.2f}×]" if q1 is not None and q3 is not None else ""
        med = _with_sd(sp["median_speedup_vs_first"], "x", n)
        rows.append([g, n, _with_sd(sp["compile_rate"], "pct", n), _with_sd(sp["correctness"], "pct", n),
                     _with_sd(sp["round1_correctness"], "pct", n), med + (iqr if med != "—" else ""),
                     _with_sd(sp["geomean_speedup_vs_eager"], "x", n),
                     _with_sd(sp.get("geomean_first_speedup_vs_eager"), "x", n), _with_sd(sp.get("fast_p@1"), "pct", n),
                     f"{count(m['tokens_in'])} / {count(m['tokens_out'])}", money(m["cost_usd"]),
                     duration(m["wall_s"])])
    L += _table(head, rows)
    if any(m["spread"].get("geomean_speedup_vs_compile", {}).get("n") for m in methods.values()):
        L += ["", "Speedup vs torch.compile (the reference compiled by `torch.compile`, timed in the same rounds; "
              "geometric mean over solved operators of each best kernel's ratio):", ""]
        L += _table(["group", "geomean vs torch.compile"],
                    [[g, _with_sd(m["spread"].get("geomean_speedup_vs_compile"), "x", m["n_seeds"])]
                     for g, m in methods.items()])
    failed = {t: why for m in methods.values() for t, why in (m.get("compile_baseline_failed") or {}).items()}
    if failed:
        L += ["", f"torch.compile of the reference failed on {len(failed)} operator(s) (timed against eager only, "
              "no speedup vs torch.compile):", ""]
        L += [f"* `{_esc(t)}`: {_esc(why.splitlines()[0][:200])}" for t, why in sorted(failed.items())]

    # outcomes of the attempts
    if any(sum((m.get("outcomes") or {}).values()) for m in methods.values()):
        keys = list(dict.fromkeys(k for m in methods.values() for k, v in (m.get("outcomes") or {}).items()
                                  if v or k in ("feasible", "generate")))
        L += ["### Attempts by outcome", "", ("Every attempt on record (all seeds), feasible or the gate that "
              "rejected it; `generate` means the reply held no usable candidate (nothing was verified)."), ""]
        rows = []
        for g, m in methods.items():
            oc = m.get("outcomes") or {}
            total = sum(oc.values())
            rows.append([g, total, *[f"{oc.get(k, 0)} ({oc.get(k, 0) / total:.0%})" if total else "—" for k in keys]])
        L += _table(["group", "attempts", *keys], rows)

    # fast_p
    pkeys = list(dict.fromkeys(p for m in methods.values() for p in m["fast_p"]))
    L += ["### fast_p", "", ("Share of all operators whose best kernel is correct and faster than PyTorch eager "
          "by more than p× (fast_0 = Acc)."), ""]
    L += _table(["group", *[f"fast_{p}" for p in pkeys]],
                ([g, *[_with_sd(m["spread"].get(f"fast_p@{p}"), "pct", m["n_seeds"]) for p in pkeys]]
                 for g, m in methods.items()))

    # per category
    cats = list(dict.fromkeys(c for m in methods.values() for c in m["per_category"]))
    L += ["### By category", ""]
    if cats:
        head = ["category", "operators"]
        for g in methods:
            head += [f"{g} Acc", f"{g} geomean vs eager"]
        rows = []
        for c in cats:
            n = next((m["per_category"][c]["n_tasks"] for m in methods.values() if c in m["per_category"]), "—")
            row: list[Any] = [c, n]
            for m in methods.values():
                pc = m["per_category"].get(c) or {}
                row += [pct(pc.get("correctness")), times(pc.get("geomean_speedup_vs_eager"))]
            rows.append(row)
        L += _table(head, rows)
    else:
        L += ["*No data.*", ""]

    # per stage
    if len(s["stages"]) > 1:
        L += ["### By stage (transfer)", "",
              (f"Stages in stream order ({' → '.join(s['stages'])}): each row is over that stage's operators only. "
              "With a memory shared along the stream, later stages run with what earlier stages stored."), ""]
        rows = []
        for g, m in methods.items():
            for st in s["stages"]:
                r = m["per_stage"].get(st) or {}
                sp = r.get("spread") or {}
                rows.append([g, st, r.get("n_tasks", "—"), _with_sd(sp.get("compile_rate"), "pct", m["n_seeds"]),
                             _with_sd(sp.get("correctness"), "pct", m["n_seeds"]),
                             _with_sd(sp.get("round1_correctness"), "pct", m["n_seeds"]),
                             _with_sd(sp.get("median_speedup_vs_first"), "x", m["n_seeds"]),
                             _with_sd(sp.get("geomean_speedup_vs_eager"), "x", m["n_seeds"]),
                             _with_sd(sp.get("geomean_first_speedup_vs_eager"), "x", m["n_seeds"]),
                             pct((r.get("fast_p") or {}).get("1"))])
        L += _table(["group", "stage", "operators", "CR", "Acc", "round-1 Acc", "median speedup vs first",
                     "geomean vs eager", "first kernel vs eager", "fast_1"], rows)

    # paired differences
    ref = s.get("reference")
    L += ["## Paired differences", ""]
    if not s["paired"]:
        L += [f"Only one group ({ref}): nothing to compare.", ""]
    else:
        L += [(f"Per (seed, operator) pair over the seeds both groups have: difference = group − {ref} (the "
              "reference). A positive difference means the group did better for *solved* (percentage points of "
              "operators) and for the log speedups (the × figure is the ratio of speedups, exp of the mean log "
              "difference); for *first feasible attempt* a positive difference means the group needed MORE "
              "attempts, i.e. did worse. Wins / losses / ties count pairs where the group's value is above / below "
              "/ equal to the reference's; `only` counts pairs where one side has no value (e.g. unsolved)."), ""]
        for pair, row in s["paired"].items():
            g = pair.split(" vs ")[0]
            L += [f"### {pair}", "", f"Seeds compared: {', '.join(map(str, row.get('seeds') or [])) or 'none'}.", ""]
            L += _table(["metric", "n pairs", "mean diff", "median diff", "wins", "losses", "ties",
                         f"only {g}", f"only {ref}"],
                        ([_PAIRED_LABELS.get(mk, mk), d["n"], _diff(mk, d["mean_diff"]), _diff(mk, d["median_diff"]),
                          d["wins"], d["losses"], d["ties"], d["only_a"], d["only_b"]]
                         for mk, d in row.items() if isinstance(d, Mapping)))

    # figures
    L += ["## Figures", ""]
    captions = {
        "tiers": "Correctness and speedup vs eager, by category (seeds pooled)",
        "cumulative_success": "Cumulative success vs attempts (mean over seeds"
                              + ("; one line per group × stage)" if len(s["stages"]) > 1 else ")"),
        "trajectories": "Best-so-far latency of selected operators",
        "baselines": "Best kernel vs PyTorch eager and vs torch.compile, per operator",
        "q_values": "Memory item values (Q1 draft, Q2 refine) over the value ledger",
        "comparison": "Groups compared (mean ± sd over seeds)",
    }
    if not figures:
        L += ["*Figures were not generated.*", ""]
    else:
        for name, f in figures["files"].items():
            note = figures["notes"].get(name)
            if f:
                L += [f"![{captions.get(name, name)}]({f})", ""]
                L += [f"*{captions.get(name, name)}*" + (f" — {note}." if note else ""), ""]
            else:
                L += [f"*{captions.get(name, name)}: {note or 'skipped'}.*", ""]

    L += ["## Definitions", "",
          ("Every number comes from `evals/metrics.py` (`evokernel.evals.metrics`); `docs/metrics.md` in the "
          "EvoKernel repository states each definition and the choices behind it. **CR**: share of generated kernels (attempts) that compile, generation "
          "failures counted as not compiled. **Acc**: share of the listed operators with a feasible kernel within "
          f"the first T = {T} attempts (unattempted operators count as failures). **Round 1**: CR and Acc over each "
          "operator's first attempt. **Within-operator speedup**: first timed feasible latency / best latency, over "
          "operators with ≥ 2 timed feasible kernels; median and IQR (linear quartiles) across operators. "
          "**Speedup vs eager**: the best kernel's own speedup over PyTorch eager; geometric mean over operators "
          "that have one. **fast_p**: share of all operators whose best kernel is correct with speedup vs eager "
          "strictly greater than p."), ""]
    return "\n".join(L)
