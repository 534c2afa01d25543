"""Eval configs (TOML/YAML + flags) and the plan they expand into: no process is started here."""
import json
from pathlib import Path

import pytest

from evokernel.evals import harness
from evokernel.evals.config import ConfigError, load_config, make_config

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_toml_and_yaml_give_the_same_config(tmp_path):
    toml = write(tmp_path, "a.toml", 'name = "x"\ntasks = ["cpu-l1"]\nbudget = 5\nseeds = 3\n'
                                     'methods = ["evokernel", "passk"]\n[set]\nbatch_size = 16\n')
    yml = write(tmp_path, "a.yaml", "name: x\ntasks: [cpu-l1]\nbudget: 5\nseeds: 3\nmethods: [evokernel, passk]\n"
                                    "set: {batch_size: 16}\n")
    a, b = load_config(toml), load_config(yml)
    assert a == b
    assert a.seeds == [0, 1, 2] and a.set == {"batch_size": 16} and a.output_dir == Path("eval-runs/x")


def test_flags_override_the_file(tmp_path):
    cfg = load_config(write(tmp_path, "a.toml", 'tasks = ["cpu-l1"]\nbudget = 5\n'),
                      {"budget": 7, "methods": ["passk"], "seeds": [4, 9], "workers": None})
    assert (cfg.budget, cfg.methods, cfg.seeds, cfg.workers) == (7, ["passk"], [4, 9], 1)
    assert load_config(None, {"tasks": ["cpu-l2"]}).tasks == ["cpu-l2"]


@pytest.mark.parametrize("text, message", [
    ('tasks = ["cpu-l1"]\nbudgett = 3\n', "budgett: unknown setting"),
    ('tasks = ["cpu-l1"]\nbudget = 0\n', "budget: budget must be >= 1"),
    ('tasks = ["cpu-l1"]\nbudget = "ten"\n', "budget: Input should be a valid integer"),
    ('tasks = ["cpu-l1"]\nalpha = 2\n', "alpha: alpha must be in (0, 1]"),
    ('tasks = ["cpu-l1"]\nfit = "some"\n', "fit: unknown fit 'some'"),
    ('tasks = ["cpu-l1"]\nmax_cost = 2\n', "max_cost: renamed to max_cost_usd"),
    ('tasks = ["cpu-l1"]\nmethods = ["pass@k"]\n', "unknown method 'pass@k'"),
    ('tasks = ["cpu-l1"]\npolicies = ["best"]\n', "unknown policy 'best'"),
    ('tasks = ["cpu-l1"]\nmemory = ["global"]\n', "unknown memory mode 'global'"),
    ('tasks = ["cpu-l1"]\nseeds = [1, 1]\n', "seeds repeat"),
    ('tasks = ["cpu-l1"]\nseeds = 0\n', "seeds as a number must be >= 1"),
    ('budget = 3\n', "give at least one suite"),
    ('tasks = ["cpu-l1"]\ngenerator = "llm"\n', "generator: renamed to generators"),
    ('tasks = ["cpu-l1"]\nmodels = ["openai:x"]\n', "models: renamed to generators"),
    ('tasks = ["cpu-l1"]\ngenerators = ["llm"]\n', "give the LLM spec itself"),
    ('tasks = ["cpu-l1"]\ngenerators = []\n', "give at least one generator"),
    ('tasks = ["cpu-l1"]\nmemory = ["exported"]\n', "needs memory_from"),
    ('tasks = ["cpu-l1"\n', "not valid TOML"),
])
def test_bad_configs_name_the_field(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_config(write(tmp_path, "bad.toml", text))


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match=r"\.toml, \.yaml or \.yml"):
        load_config(write(tmp_path, "a.json", "{}"))
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(write(tmp_path, "a.yaml", "- 1\n- 2\n"))
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(write(tmp_path, "b.yaml", "a: [1,\n"))


def test_shipped_configs_are_valid(monkeypatch):
    monkeypatch.chdir(ROOT)  # shipped configs name task paths relative to the checkout's root
    for p in sorted((ROOT / "evals" / "configs").glob("*.toml")):
        cfg = load_config(p)
        external = [t for t in cfg.tasks if t.startswith("../")]  # KernelBench's files, outside the checkout
        if external and not all(Path(t).exists() for t in external):
            continue
        tasks = harness.resolve_tasks(cfg)
        assert tasks, p
        if len(cfg.methods) > 1 or len(cfg.policies) > 1:  # a comparison: the paper's protocol
            assert cfg.budget >= 10 and len(cfg.seeds) >= 3, p
    kb = [load_config(p) for p in (ROOT / "evals" / "configs").glob("kernelbench-cpu*.toml")]
    assert len(kb) == 3 and all(c.fit == "auto" and c.generators == ["template"] for c in kb)


def test_tasks_resolve_in_stream_order_with_overrides_and_errors():
    cfg = make_config({"tasks": ["cpu-l1", "cpu-l2/01_gemm_bias_relu"], "limit": 2, "set": {"dim": 1024}})
    tasks = harness.resolve_tasks(cfg)
    assert [t["id"] for t in tasks] == ["cpu-l1/01_relu", "cpu-l1/02_leaky_relu", "cpu-l2/01_gemm_bias_relu"]
    assert [t["stage"] for t in tasks] == ["cpu-l1", "cpu-l1", "cpu-l2"]  # a suite task named alone: its suite
    assert tasks[0]["overrides"] == {"dim": 1024} and tasks[2]["overrides"] == {}
    assert tasks[0]["arg"] == "cpu-l1/01_relu" and tasks[0]["category"] == "activation"
    with pytest.raises(ConfigError, match="no task defines nosuch"):
        harness.resolve_tasks(make_config({"tasks": ["cpu-l1"], "set": {"nosuch": 1}}))
    with pytest.raises(ConfigError, match="listed twice"):
        harness.resolve_tasks(make_config({"tasks": ["cpu-l1", "cpu-l1/03_gelu"]}))
    with pytest.raises(ConfigError, match="no such task file"):
        harness.resolve_tasks(make_config({"tasks": ["cpu-l9"]}))
    with pytest.raises(ConfigError, match="not one of the evaluated tasks"):
        harness.resolve_tasks(make_config({"tasks": ["cpu-l1"], "limit": 1, "trajectories": ["cpu-l1/03_gelu"]}))


def plan_of(**kw):
    cfg = make_config({"tasks": ["cpu-l1", "cpu-l2"], "limit": 2, **kw})
    return cfg, harness.plan(cfg, harness.resolve_tasks(cfg))


def units_of(p, arm):
    return [u for u in p["units"] if u["arm"] == arm]


def test_groups_cross_methods_policies_and_memory_modes():
    _, p = plan_of(methods=["evokernel", "passk"], policies=["value", "none"], memory=["ordered", "fresh"], seeds=2)
    names = [g["name"] for g in p["groups"]]
    assert names == ["evokernel-value-ordered", "evokernel-value-fresh", "evokernel-none-ordered",
                     "evokernel-none-fresh", "passk"]  # the baselines have no policy or memory mode
    assert p["groups"][-1] == {"name": "passk", "method": "passk", "policy": None, "memory": "private",
                               "model": "template"}
    assert len(p["arms"]) == 10 and p["stages"] == ["cpu-l1", "cpu-l2"]
    _, p = plan_of(generators=["openai:a", "ollama:b"], methods=["passk"])
    assert [g["name"] for g in p["groups"]] == ["openai__a-passk", "ollama__b-passk"]


def test_variants_pick_policy_memory_pairs_instead_of_the_product(tmp_path):
    # the weak-backbone experiment: no memory, seed knowledge only, a transferred memory by value and by similarity
    cfg, p = plan_of(variants=["none/none", "none/per-task", "value/exported", "similarity/exported"],
                     memory_from="m.jsonl")
    assert [(g["name"], g["policy"], g["memory"]) for g in p["groups"]] == [
        ("evokernel-none-none", "none", "none"), ("evokernel-none-per-task", "none", "per-task"),
        ("evokernel-value-exported", "value", "exported"), ("evokernel-similarity-exported", "similarity", "exported")]
    [u] = units_of(p, "evokernel-none-none/seed-0")  # no memory: one unit, like shared
    s = harness.unit_settings(cfg, p["groups"][0], 0, harness.Unit(**u), tmp_path, None)
    assert (s["policy"], s["seed_knowledge"]) == ("none", "format")
    u2 = units_of(p, "evokernel-value-exported/seed-0")[0]
    s = harness.unit_settings(cfg, p["groups"][2], 0, harness.Unit(**u2), tmp_path, None)
    assert (s["policy"], s["seed_knowledge"], s["relevance_margin"]) == ("value", "all", 0.0)
    cfg2, p2 = plan_of(relevance_margin=0.1)
    assert harness.unit_settings(cfg2, p2["groups"][0], 0, harness.Unit(**p2["units"][0]), tmp_path,
                                 None)["relevance_margin"] == 0.1
    with pytest.raises(ConfigError, match="policy none"):
        plan_of(variants=["value/none"])
    with pytest.raises(ConfigError, match="POLICY/MEMORY"):
        plan_of(variants=["value"])
    with pytest.raises(ConfigError, match="unknown memory mode"):
        plan_of(variants=["value/everything"])
    with pytest.raises(ConfigError, match="memory_from"):
        plan_of(variants=["value/exported"])


def test_units_follow_the_memory_mode():
    _, p = plan_of(memory=["shared"])
    [u] = units_of(p, "evokernel/seed-0")
    assert (u["name"], u["memory"], len(u["task_ids"]), u["after"], u["server"]) == \
        ("all", "arms/evokernel/seed-0/memory", 4, None, False)

    _, p = plan_of(memory=["ordered"])
    s1, s2 = units_of(p, "evokernel-ordered/seed-0")
    assert s1["task_ids"] == ["cpu-l1/01_relu", "cpu-l1/02_leaky_relu"] and s2["after"] == s1["key"]
    assert s1["memory"] == s2["memory"]  # one memory, L1 then L2

    _, p = plan_of(memory=["fresh"])
    f1, f2 = units_of(p, "evokernel-fresh/seed-0")
    assert f1["memory"] != f2["memory"] and f2["after"] is None

    _, p = plan_of(memory=["per-task"])
    us = units_of(p, "evokernel-per-task/seed-0")
    assert len(us) == 4 and len({u["memory"] for u in us}) == 4 and all(len(u["task_ids"]) == 1 for u in us)

    _, p = plan_of(memory=["shared"], workers=3, memory_server=True)
    us = units_of(p, "evokernel/seed-0")
    assert [len(u["task_ids"]) for u in us] == [2, 1, 1] and all(u["server"] for u in us)
    assert len({u["memory"] for u in us}) == 1

    _, p = plan_of(methods=["refinement"], workers=2)
    us = units_of(p, "refinement/seed-0")
    assert [u["task_ids"] for u in us] == [["cpu-l1/01_relu", "cpu-l1/02_leaky_relu"],
                                           ["cpu-l2/01_gemm_bias_relu", "cpu-l2/02_layernorm_gelu"]]
    assert all(not u["server"] and u["memory"].endswith(u["name"] + "/memory") for u in us)


def test_a_unit_is_given_one_settings_file_with_every_setting(tmp_path):
    from evokernel.settings import RunSettings, read_settings_file, setting_fields

    cfg, p = plan_of(methods=["evokernel"], policies=["similarity"], budget=7, strict=True, n_context=2,
                     alpha=0.3, set={"dim": 1024}, seeds=[5], compile_baseline=True, epsilon_end=0.1,
                     llm_judge="openai:judge")
    u = harness.Unit(**p["units"][0])
    cmd = harness.unit_command(cfg, p["groups"][0], 5, u, tmp_path, resume=False, memory_url=None)
    path = tmp_path / u.run_dir / harness.UNIT_SETTINGS
    assert cmd[3:] == ["run", "--settings", str(path)]  # no flag per setting: the file holds them
    given = read_settings_file(path)
    # the eval's run section, as configured
    assert {k: given[k] for k in cfg.run_settings()} == cfg.run_settings()
    assert (given["budget"], given["strict"], given["n_context"], given["alpha"], given["epsilon_end"],
            given["llm_judge"]) == (7, True, 2, 0.3, 0.1, "openai:judge")
    # the unit's own: group, seed, memory, run directory, tasks; recall off (an arm measures from scratch)
    assert (given["method"], given["policy"], given["seed"], given["generator"], given["recall"]) == \
        ("evokernel", "similarity", 5, "template", False)
    assert given["memory_dir"] == f"{tmp_path}/arms/evokernel-similarity/seed-5/memory"
    assert given["run_dir"] == str(tmp_path / u.run_dir)
    assert given["tasks"] == u.targets and len(u.targets) == 4 and given["set"] == {"dim": 1024}
    # every setting the file names is a run setting, and they make a valid one
    names = {f.name for f in setting_fields()}
    RunSettings(**{k: v for k, v in given.items() if k in names})
    resume = harness.unit_command(cfg, p["groups"][0], 5, u, tmp_path, resume=True, memory_url="http://127.0.0.1:9")
    assert resume[3:] == ["run", "--settings", str(path), "--resume"]
    assert read_settings_file(path)["memory_url"] == "http://127.0.0.1:9"


def test_an_existing_output_dir_is_continued_only_with_the_same_plan(tmp_path):
    cfg = make_config({"tasks": ["cpu-l1"], "limit": 1, "budget": 2, "out": str(tmp_path / "e")})
    ed, meta = harness.prepare(cfg, "evokernel eval x.toml")
    assert json.loads((tmp_path / "e" / "eval.json").read_text())["plan_key"]["budget"] == 2
    assert meta["conditions"]["tolerance"].startswith("atol = rtol = 0.01")
    assert "torch" in meta["conditions"]["software"]
    # more workers: fine (recorded); another budget: refused, naming the field
    _, meta2 = harness.prepare(cfg.model_copy(update={"workers": 2}), "evokernel eval x.toml --workers 2")
    assert meta2["config"]["workers"] == 2 and len(meta2["invocations"]) == 1
    with pytest.raises(ConfigError, match="budget"):
        harness.prepare(cfg.model_copy(update={"budget": 3}), "evokernel eval x.toml -T 3")
    # an eval made before a setting existed ran with its default: it continues; another value is refused
    meta = json.loads((tmp_path / "e" / "eval.json").read_text())
    del meta["plan_key"]["relevance_margin"], meta["plan_key"]["variants"]
    (tmp_path / "e" / "eval.json").write_text(json.dumps(meta))
    harness.prepare(cfg, "evokernel eval x.toml")
    meta = json.loads((tmp_path / "e" / "eval.json").read_text())
    del meta["plan_key"]["relevance_margin"]
    (tmp_path / "e" / "eval.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="relevance_margin"):
        harness.prepare(cfg.model_copy(update={"relevance_margin": 0.1}), "evokernel eval x.toml")


def _forget_learned_memory(path):
    meta = json.loads(path.read_text())
    for k in ("llm_experiences", "distil_every"):
        del meta["plan_key"][k], meta["config"][k]
    path.write_text(json.dumps(meta))


def test_an_llm_eval_from_before_model_written_memory_continues_only_without_it(tmp_path):
    """It stored template sentences and distilled nothing; the new defaults would mix both kinds in one eval."""
    llm = make_config({"tasks": ["cpu-l1"], "limit": 1, "budget": 2, "out": str(tmp_path / "e"),
                       "generators": ["openai:gpt-4o-mini"]})
    harness.prepare(llm, "evokernel eval x.toml")
    _forget_learned_memory(tmp_path / "e" / "eval.json")
    with pytest.raises(ConfigError, match="distil_every, llm_experiences"):
        harness.prepare(llm, "evokernel eval x.toml")
    _, meta = harness.prepare(llm.model_copy(update={"llm_experiences": False, "distil_every": 0}), "evokernel eval x.toml")
    assert meta["config"]["llm_experiences"] is False and meta["plan_key"]["distil_every"] == 0
    # the template generator ignores both: an old template eval continues with any value
    tpl = make_config({"tasks": ["cpu-l1"], "limit": 1, "budget": 2, "out": str(tmp_path / "t")})
    harness.prepare(tpl, "evokernel eval x.toml")
    _forget_learned_memory(tmp_path / "t" / "eval.json")
    harness.prepare(tpl, "evokernel eval x.toml")



def test_an_eval_stored_with_old_setting_names_continues(tmp_path):
    """eval.json of an older version: generator = "llm" + models (now generators), max_cost (now max_cost_usd)."""
    cfg = make_config({"tasks": ["cpu-l1"], "limit": 1, "budget": 2, "out": str(tmp_path / "e"),
                       "generators": ["openai:m"], "max_cost_usd": 1.5})
    ed, _ = harness.prepare(cfg, "evokernel eval x.toml")
    meta = json.loads(ed.meta_path.read_text())
    for part in (meta["config"], meta["plan_key"]):
        del part["generators"]
        part.update(generator="llm", models=["openai:m"], max_cost=part.pop("max_cost_usd"))
    ed.meta_path.write_text(json.dumps(meta))
    old = harness.config_of(json.loads(ed.meta_path.read_text()))
    assert (old.generators, old.max_cost_usd) == (["openai:m"], 1.5)
    _, meta = harness.prepare(cfg, "evokernel eval x.toml")  # the same plan: continued
    assert meta["plan_key"]["generators"] == ["openai:m"] and "max_cost" not in meta["config"]
    with pytest.raises(ConfigError, match="max_cost_usd"):
        harness.prepare(cfg.model_copy(update={"max_cost_usd": 2.0}), "evokernel eval x.toml")


def test_an_eval_gains_seeds_but_keeps_the_ones_it_ran(tmp_path):
    cfg = make_config({"tasks": ["cpu-l1"], "limit": 1, "budget": 2, "seeds": [0], "out": str(tmp_path / "e")})
    _, meta = harness.prepare(cfg, "evokernel eval x.toml --seeds 0,")
    first = [u["key"] for u in meta["units"]]
    _, meta = harness.prepare(cfg.model_copy(update={"seeds": [1, 0]}), "evokernel eval x.toml")
    keys = [u["key"] for u in meta["units"]]
    assert keys[:len(first)] == first and keys[len(first):] == [k.replace("seed-0", "seed-1") for k in first]
    assert [a["seed"] for a in meta["arms"]] == [0, 1]
    saved = json.loads((tmp_path / "e" / "eval.json").read_text())
    assert saved["plan_key"]["seeds"] == [0, 1] and saved["config"]["seeds"] == [0, 1]
    assert saved["conditions"]["seeds"] == "0, 1" and saved["seeds_added"][0]["seeds"] == [1]
    assert harness.config_of(saved).seeds == [0, 1]  # `evokernel eval --out DIR` continues with both
    from evokernel.evals.report import build_report

    command = build_report(tmp_path / "e")["command"]  # the report says how the seeds came
    assert command.splitlines() == ["evokernel eval x.toml --seeds 0,", f"# then seed(s) 1 added ({saved['seeds_added'][0]['time']}):",
                                    "evokernel eval x.toml"]
    # dropping a seed that ran, or changing a seed together with another setting, is refused
    with pytest.raises(ConfigError, match="seeds may only be added"):
        harness.prepare(cfg.model_copy(update={"seeds": [1, 2]}), "evokernel eval x.toml")
    with pytest.raises(ConfigError, match="budget, seeds"):
        harness.prepare(cfg.model_copy(update={"seeds": [0, 1, 2], "budget": 3}), "evokernel eval x.toml")

def test_fit_is_a_setting_recorded_per_task_and_passed_to_every_unit(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="fit"):
        make_config({"tasks": ["cpu-l1"], "fit": "sometimes"})
    big = tmp_path / "tasks"
    big.mkdir()
    relu = (ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py").read_text()
    (big / "19_ReLU.py").write_text(relu.replace("batch_size = 160", "batch_size = 4096")
                                    .replace("dim = 65536", "dim = 393216"))
    cfg = make_config({"tasks": [str(big)], "out": str(tmp_path / "e")})
    assert cfg.fit == "auto" and cfg.plan_key()["fit"] == "auto"
    [t] = harness.resolve_tasks(cfg)
    assert t["fit"]["mode"] == "auto" and set(t["fit"]["changed"]) == {"batch_size", "dim"}
    assert t["overrides"] == {}  # the fitted sizes are not --set values: each unit fits the same way
    p = harness.plan(cfg, [t])
    given = harness.unit_settings(cfg, p["groups"][0], 0, harness.Unit(**p["units"][0]), tmp_path, None)
    assert given["fit"] == "auto" and given["set"] == {}
    # the sizes as written are too large for this machine: refused before any unit starts, naming its size
    # and the setting that fits it
    with pytest.raises(ConfigError, match=r"19_ReLU: its tensors .* take 12.0 GiB.*fit = auto"):
        harness.resolve_tasks(cfg.model_copy(update={"fit": "none"}))
    none = cfg.model_copy(update={"fit": "none", "set": {"batch_size": 16}})
    [t] = harness.resolve_tasks(none)
    assert t["fit"] == {"mode": "none", "changed": {}}
    # an eval directory from before --fit ran its sizes as written: it continues with fit none
    ed, meta = harness.prepare(none, "evokernel eval x.toml")
    raw = json.loads(ed.meta_path.read_text())
    del raw["plan_key"]["fit"], raw["config"]["fit"]
    ed.meta_path.write_text(json.dumps(raw))
    _, meta = harness.prepare(none, "evokernel eval x.toml")
    assert meta["config"]["fit"] == "none"
    with pytest.raises(ConfigError, match="fit"):
        harness.prepare(cfg.model_copy(update={"set": {"batch_size": 16}}), "evokernel eval x.toml")
