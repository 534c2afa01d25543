"""update: reward, value update, memory write, run log (paper §3.3, Eq. 4-6; memory growth M_{t+1}).

1. Reward: r1 = ±1 when drafting; r2 = -1 if infeasible else tanh(log b_t - log latency) when
   refining (normalised in the value ledger).
2. Q ← Q + α(r - Q) for every item of the context c_t, and the start point p_t when refining. Seed
   API knowledge is not updated: it has no learned value.
3. The attempt becomes a **trace** (code + verifier outcome, parent link to p_t; no code when the
   reply did not parse, did not build or was refused as a hack) and an **experience** (a
   one-paragraph summary of what was tried and what happened: written by the model with an LLM
   generator, else, or when that call fails, the template sentence; memory/learn.py) in memory; a
   feasible kernel joins P(x) and may become b_t. Every ``distil_every`` successful refinements the model
   distils best practices from them (memory/learn.py, ``maybe_distil``).
4. One line in the run's attempts.jsonl; the best kernel file is rewritten when b_t improves.

An attempt whose verdict is ``machine`` (the verifier pool lost its device twice: verifier/pool.py) spends
its budget and is logged, but judged nothing: no reward, no value update, no memory item.

Every write is idempotent by attempt id (ledger, Chroma upsert, run log), so re-running this node
after a crash changes nothing twice.
"""
from __future__ import annotations

import json
import logging
import time
from typing import Any

from langgraph.runtime import Runtime

from evokernel.graph import resources
from evokernel.graph.context import Context
from evokernel.memory.store import MemoryItem
from evokernel.memory.values import DRAFT, drafting_reward, refining_reward
from evokernel.nodes.retrieve import stage_of, task_key
from evokernel.verifier.pool import MACHINE

log = logging.getLogger("evokernel.learn")
FEEDBACK_CHARS = 2000
# failed gates whose candidate is not a kernel worth showing again: no code parsed, no build, a cheat
CODE_NOT_KEPT = ("generate", "compile", "hack")


def attempt_id(run_id: str, task_id: str, iteration: int) -> str:
    return f"{run_id}:{task_id}:{iteration}"


def _first_lines(text: str, n: int = 3, width: int = 300) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return " / ".join(ln[:width] for ln in lines[:n])


def profile_text(verdict: dict[str, Any]) -> str:
    """The start point's profile as the refining stage reads it (CPU: the verifier's timing;
    ascend-sim: the latency model's pipe breakdown)."""
    if not verdict.get("feasible") or verdict.get("latency_ms") is None:
        return ""
    modelled = (verdict.get("details") or {}).get("profile")
    if modelled:
        return str(modelled)
    parts = [f"latency {verdict['latency_ms']:.4f} ms"]
    if verdict.get("reference_ms"):
        parts.append(f"eager {verdict['reference_ms']:.4f} ms, speedup {verdict.get('speedup') or 0:.2f}x")
    if verdict.get("noise") is not None:
        parts.append(f"timing noise {verdict['noise']:.2f}")
    return "; ".join(parts)


def bottleneck(verdict: dict[str, Any]) -> str:
    """The start point's bottleneck as a backend's profiler or latency model names it (mte2, mte3,
    vector, scalar, hbm, latency, launch); '' when the backend gives none (cpu)."""
    if not verdict.get("feasible"):
        return ""
    details = verdict.get("details") or {}
    for k in (details.get("estimate") or {}).get("kernels") or []:
        if isinstance(k, dict) and k.get("bound"):
            return str(k["bound"])
    diag = details.get("diagnosis") or {}
    return str(diag.get("bound") or "")


def _asker(ctx: Context, cand: dict[str, Any]) -> Any:
    """The chat model that writes experiences and distils practices: the LLM generator's (a hybrid's LLM),
    or None for the template generator, a recalled kernel, ``llm_experiences`` off, or a baseline (Pass@k and
    Refinement retrieve nothing: their experiences are never read)."""
    from evokernel.graph.methods import shares_memory

    if not ctx.llm_experiences or cand.get("model") == "recall" or not shares_memory(ctx.method):
        return None
    gen = resources.generator(ctx)  # built by generate already (the template generator: cheap, and no `ask`)
    if not getattr(gen, "writes_experiences", True):  # a local model: kept for generation (issue 32)
        return None
    return gen if callable(getattr(gen, "ask", None)) else None


def _experience(ctx: Context, store: Any, asker: Any, exp_id: str, template_text: str, cand: dict[str, Any],
                verdict: dict[str, Any], parent: str, task: Any, tid: str, stage: str, outcome: str) -> Any:
    """The experience of this attempt (memory/learn.py): written by the model, or the template sentence with
    the reason why. A re-run of this node (resume, retry) reuses a model-written one instead of asking again."""
    from evokernel.memory.learn import Written, change_text, experience_messages, write_experience

    if asker is None:
        from evokernel.graph.methods import shares_memory

        gen = resources.generator(ctx) if ctx.llm_experiences else None
        why = ("off" if not ctx.llm_experiences else "recall" if cand.get("model") == "recall"
               else f"baseline {ctx.method}" if not shares_memory(ctx.method)
               else "local model (off the critical path: EVOKERNEL_LOCAL_EXPERIENCES=1 turns it on)"
               if not getattr(gen, "writes_experiences", True) else "template generator")
        return Written(template_text, "template", why)
    earlier = store.get([exp_id])
    if earlier and earlier[0].meta.get("experience_kind") == "model":
        m = earlier[0].meta
        return Written(earlier[0].text, "model", "", str(m.get("experience_model") or ""))
    parent_item = store.get([parent]) if parent else []
    start = ""
    if parent_item:
        pm = parent_item[0].meta
        start = f"{pm.get('summary') or 'the start point'} ({float(pm.get('latency_ms') or 0):.4g} ms)"
    change = change_text(parent_item[0].text if parent_item else None, cand.get("source"))
    if cand.get("summary") and stage == DRAFT:
        change = f"(the generator's own summary: {cand['summary']})\n{change}"
    messages = experience_messages(backend=ctx.backend, task=tid, category=task.category, stage=stage, change=change,
                                   outcome=outcome, feedback="" if verdict.get("feasible") else
                                   str(verdict.get("feedback") or cand.get("error") or ""), start=start)
    written = write_experience(asker, messages, template_text, model=getattr(asker, "name", ""),
                               timeout_s=ctx.learn_timeout, feasible=bool(verdict.get("feasible")))
    if written.kind == "model":
        log.info("%s: model-written experience (%d tokens in, %d out)", exp_id, written.tokens_in, written.tokens_out)
    else:
        log.info("%s: template experience stored (%s)", exp_id, written.reason)  # `evokernel run` prints it too
    return written


def update(state: dict[str, Any], runtime: Runtime[Context]) -> dict[str, Any]:
    if state.get("stop"):
        return {}
    ctx = Context.coerce(runtime.context)
    store = resources.store(ctx)
    run = resources.run_dir(ctx)
    task = resources.task(state["task"])
    tid = state.get("task_id") or resources.task_id(task)
    stage = stage_of(state, ctx)
    iteration = state.get("iteration", 0)
    cand = state.get("candidate") or {}
    verdict = state.get("verdict") or {}
    feasible = bool(verdict.get("feasible"))
    latency = verdict.get("latency_ms") if feasible else None
    best = state.get("best_latency_ms")
    aid = attempt_id(run.run_id, tid, iteration)

    gate = verdict.get("failed_gate") or ""
    judged = gate != MACHINE

    # 1-2: reward and values
    if stage == DRAFT:
        reward = drafting_reward(feasible)
        used = list(state.get("context") or [])
    else:
        reward = refining_reward(feasible, latency, best)
        used = list(state.get("context") or []) + ([state["start_point"]] if state.get("start_point") else [])
    if judged:
        entry = store.values.record(aid, stage, reward, used, task=tid, iteration=iteration)
        r_hat = entry["r_hat"] if entry else None
    else:
        reward, r_hat = None, None

    # 3: memory
    parent = state.get("start_point") if stage != DRAFT else ""
    parent_latency = None
    if parent:
        for p in state.get("start_points") or []:
            if p["id"] == parent:
                parent_latency = p["latency_ms"]
    eager = verdict.get("reference_ms")
    # the verifier's own figure: median of per-round ratios, candidate and eager timed in the same rounds
    vs_eager = (verdict.get("speedup") or (eager / latency if eager else None)) if feasible and latency else None
    summary = cand.get("summary") or ("no candidate" if cand.get("error") else "")
    key = task_key(task)
    estimated = verdict.get("latency_kind") == "estimate"
    if feasible:
        outcome = (f"feasible, {'estimated ' if estimated else ''}{latency:.4f} ms"
                   + (f", {vs_eager:.2f}x eager" if vs_eager else ""))
        if parent_latency:
            outcome += f", {parent_latency / latency:.2f}x its start point"
    else:
        outcome = f"failed at the {gate} gate: {_first_lines(verdict.get('feedback', ''))}"
    meta_common = {"backend": ctx.backend, "task": tid, "task_key": task.key, "category": task.category,
                   "source": cand.get("model", ""),
                   "run": run.run_id, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "iteration": iteration,
                   "stage": stage, "attempt_id": aid, "feasible": feasible, "failed_gate": gate}
    trace_id, exp_id = f"trace:{aid}", f"exp:{aid}"
    # the code is kept only when it is a kernel: a reply the extraction could not parse, code that did
    # not build, or code the hack gate refused is never shown to a later prompt as an example (weak
    # models copy what they see); its trace keeps the lineage and the outcome, its experience says what
    # went wrong
    keep_code = bool(cand.get("source")) and gate not in CODE_NOT_KEPT
    trace_meta = dict(meta_common, latency_ms=float(latency) if latency else -1.0,
                      speedup_vs_eager=float(vs_eager) if vs_eager else -1.0,
                      speedup_vs_parent=float(parent_latency / latency) if feasible and parent_latency else -1.0,
                      parent=parent or "", code_hash=cand.get("code_hash", ""),
                      schedule=json.dumps(cand["schedule"]) if cand.get("schedule") else "",
                      summary=summary, feedback=(verdict.get("feedback") or "")[:FEEDBACK_CHARS],
                      profile=profile_text(verdict), bound=bottleneck(verdict), experience=exp_id,
                      code_kept=keep_code, recalled_from=cand.get("recalled_from") or "")
    what = "drafting" if stage == DRAFT else "refining"
    template_text = f"{what} {tid} ({task.category}): {summary or 'candidate'} -> {outcome}"
    asker = _asker(ctx, cand)
    written = _experience(ctx, store, asker, exp_id, template_text, cand, verdict, parent, task, tid, stage, outcome) \
        if judged else None
    exp_text = written.text if written else template_text
    exp_meta = dict(meta_common, outcome="success" if feasible else "failure", trace=trace_id,
                    schedule=trace_meta["schedule"], summary=summary, latency_ms=trace_meta["latency_ms"],
                    speedup_vs_parent=trace_meta["speedup_vs_parent"],
                    experience_kind=written.kind if written else "template",
                    experience_reason=written.reason if written else "", experience_model=written.model if written else "")
    if written and written.kind == "model":
        exp_meta["template_text"] = template_text  # the verdict's own sentence stays with the item
    elif written and written.reply:
        exp_meta["rejected_reply"] = written.reply[:500]  # what the model said, for inspection
    items = [
        MemoryItem(trace_id, "trace", f"{key} | {summary} | {outcome[:200]}",
                   cand["source"] if keep_code else "", trace_meta),
        MemoryItem(exp_id, "experience", f"{key} | {exp_text[:400]}", exp_text, exp_meta),
    ]
    distilled = None
    if judged:
        store.add(items)
        store.sync_values(used)
        if (asker is not None and ctx.distil_every > 0 and stage != DRAFT and feasible
                and trace_meta["speedup_vs_parent"] >= ctx.distil_min_gain):
            from evokernel.memory.learn import maybe_distil

            distilled = maybe_distil(store, asker, backend=ctx.backend, every=ctx.distil_every,
                                     min_gain=ctx.distil_min_gain, dedup=ctx.distil_dedup, run=run.run_id,
                                     source=cand.get("model", ""), round_id=aid, timeout_s=ctx.learn_timeout)
            if distilled is not None:
                log.info("%s: best-practice distillation over %d refinement(s): %s %s", aid, len(distilled.traces),
                         distilled.status, [a["action"] for a in distilled.actions])

    # state: P(x), b_t, first feasible
    out: dict[str, Any] = {"iteration": iteration + 1, "attempts": iteration + 1,
                           "last_feedback": None if feasible or not judged else (verdict.get("feedback") or "")[:FEEDBACK_CHARS]}
    if eager:
        out["eager_ms"] = eager
    improved = False
    if feasible and latency:
        out["start_points"] = list(state.get("start_points") or []) + [
            {"id": trace_id, "latency_ms": float(latency), "iteration": iteration}]
        if not state.get("feasible"):
            out.update(feasible=True, first_feasible_iteration=iteration, first_latency_ms=float(latency))
        if best is None or latency < best:
            out.update(best_latency_ms=float(latency), best_id=trace_id)
            improved = True

    # 4: run log
    record = {"attempt_id": aid, "task": tid, "iteration": iteration, "stage": stage, "context": list(state.get("context") or []), "knowledge": list(state.get("knowledge") or []),
              "start_point": parent or None, "code_hash": cand.get("code_hash", ""), "feasible": feasible,
              # identical code: the verdict of the earlier attempt, not judged again (nodes/verdict_cache.py)
              "verdict_reused_from": verdict.get("reused_from") or None,
              "failed_gate": gate or None, "compiled": bool((verdict.get("gates") or {}).get("compile")),
              "latency_ms": latency, "eager_ms": eager, "speedup_vs_eager": vs_eager,
              "latency_kind": verdict.get("latency_kind", "measured") if feasible else None,
              # only with --compile-baseline: torch.compile of the reference, timed in the same rounds
              "compile_ms": verdict.get("compile_baseline_ms") if feasible else None,
              "speedup_vs_compile": verdict.get("speedup_vs_compile") if feasible else None,
              # the baseline was asked for but torch.compile failed on this task: why (the report lists it)
              "compile_error": ((verdict.get("details") or {}).get("compile_baseline") or {}).get("error")
              if feasible else None,
              "reward": reward, "reward_normalized": r_hat, "summary": summary,
              "feedback": None if feasible else _first_lines(verdict.get("feedback") or cand.get("error") or "", 6)[:600],
              "model": cand.get("model", ""),
              "tokens_in": cand.get("tokens_in", 0), "tokens_out": cand.get("tokens_out", 0),
              "cost_usd": cand.get("cost_usd", 0.0), "trace_id": trace_id,
              "recalled_from": cand.get("recalled_from") or None, "time": time.time()}
    if cand.get("tokens_in") or cand.get("tokens_out"):  # the token ledger is idempotent by attempt id too
        resources.tokens(ctx).record(aid, cand.get("model", ""), cand.get("tokens_in", 0), cand.get("tokens_out", 0),
                                     cand.get("cost_usd", 0.0), 1,
                                     **({"usage_details": cand["usage_details"]} if cand.get("usage_details") else {}))
    tokens = resources.tokens(ctx)
    for suffix, side in (("experience", written), ("distil", distilled)):
        if side is not None and (side.tokens_in or side.tokens_out):  # side calls are usage like any call
            tokens.record(f"{aid}:{suffix}", side.model or cand.get("model", ""), side.tokens_in, side.tokens_out,
                          side.cost_usd, max(side.calls, 1), purpose=suffix)
            # the attempt's usage in the run log (summary.json, the eval's report) includes its side calls
            record["tokens_in"] += side.tokens_in
            record["tokens_out"] += side.tokens_out
            record["cost_usd"] += side.cost_usd
    if written is not None:
        record["experience"] = {"kind": written.kind, "reason": written.reason or None, "model": written.model or None,
                                "tokens_in": written.tokens_in, "tokens_out": written.tokens_out,
                                "seconds": round(written.seconds, 2)}
    if distilled is not None:
        record["distilled"] = {"status": distilled.status, "traces": distilled.traces,
                               "actions": [{k: a[k] for k in ("action", "id")} for a in distilled.actions],
                               "tokens_in": distilled.tokens_in, "tokens_out": distilled.tokens_out}
    if cand.get("reply"):
        run.append_reply(aid, tid, iteration, cand["reply"])
    run.append(record)
    if improved:
        run.write_best(tid, cand["source"], float(latency), str(task.path), estimated, ctx.backend)
    runtime.stream_writer({"event": "attempt", "task": tid, "iteration": iteration, "stage": stage, "feasible": feasible,
                         "failed_gate": gate or None, "latency_ms": latency, "estimated": estimated,
                         "experience": record.get("experience", {}).get("kind"),
                         "experience_reason": record.get("experience", {}).get("reason"),
                         "best_latency_ms": out.get("best_latency_ms", best), "budget": ctx.budget})
    return out
