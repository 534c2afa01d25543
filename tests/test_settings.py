"""The run settings are declared once (evokernel/settings.py): the runtime context, the CLI's options, the eval
config's run section and a unit's settings file all come from that declaration, with one name and one default."""
import dataclasses
import json

import pytest
import typer
from typer.testing import CliRunner

from evokernel import settings as S
from evokernel.cli.app import app
from evokernel.cli.options import option_name
from evokernel.evals.config import RUN_SETTINGS, ConfigError, EvalConfig, make_config
from evokernel.graph.context import Context

# the eval config's own fields (its plan, output and report), which are no run settings
EVAL_PLAN = {"name", "out", "tasks", "limit", "set", "generators", "seeds", "methods", "policies", "memory",
             "variants", "memory_from", "workers", "ray", "memory_server", "trajectories"}


def command(name):
    group = typer.main.get_command(app)
    return group.commands[name]


def options(name):
    return {p.name: p for p in command(name).params}


def test_every_context_field_is_a_run_option_with_its_default_and_help_or_says_why_not():
    run = options("run")
    python_only = []
    for f in dataclasses.fields(Context):
        reason = f.metadata.get("python_only")
        if reason:
            python_only.append(f.name)
            assert len(reason) > 20 and f.name not in run, f.name  # a reason, and no option
            continue
        opt = run[f.name]
        assert opt.default == f.default, f.name
        assert opt.help == f.metadata["description"], f.name
        assert option_name(f.name) in opt.opts, f.name
    assert sorted(python_only) == ["resources", "review"]
    # the deliberate extra spellings, and nothing else
    assert run["budget"].opts == ["--budget", "-T"]
    assert run["memory_dir"].opts == ["--memory-dir", "--memory"]  # --memory: docs/memory.md, scale-out.md, ...
    assert run["max_cost_usd"].opts == ["--max-cost-usd"]
    assert run["recall"].secondary_opts == ["--no-recall"]


def test_verify_and_eval_take_the_settings_they_share_with_run_from_the_same_declaration():
    run, verify, ev = options("run"), options("verify"), options("eval")
    for name in ("backend", "fit", "strict", "compile_baseline", "llm_judge"):
        assert verify[name].help == run[name].help and verify[name].default == run[name].default, name
    for name in RUN_SETTINGS:
        # the eval's option only overrides its config file: no default of its own
        assert ev[name].help == run[name].help and ev[name].default is None, name
        assert ev[name].opts == run[name].opts, name
    # the other settings the harness sets per unit; of their names, the eval's options use those of its axes
    # (--method, --policy, --generator: repeatable, one group each) and --ray (where its units run)
    assert set(ev) & ({f.name for f in S.setting_fields()} - set(RUN_SETTINGS)) == {"method", "policy", "generator",
                                                                                     "ray"}


def test_the_eval_config_accepts_exactly_the_run_settings_of_its_run_section():
    declared = {f.name for f in S.setting_fields()}
    assert set(RUN_SETTINGS) == {f.name for f in S.eval_run_fields()}
    assert set(EvalConfig.model_fields) == EVAL_PLAN | set(RUN_SETTINGS)
    assert not EVAL_PLAN & set(RUN_SETTINGS)
    for f in S.eval_run_fields():
        field = EvalConfig.model_fields[f.name]
        assert field.default == f.default and field.description == f.metadata["description"], f.name
    # every other setting says how the harness sets it, and a config may not set it
    for name in sorted(declared - set(RUN_SETTINGS)):
        role = next(f for f in S.setting_fields() if f.name == name).metadata["eval"]
        assert role and role != S.EVAL_RUN, name
        if name in EVAL_PLAN:  # the eval's own field of the same name (ray: where the eval runs)
            continue
        with pytest.raises(ConfigError, match=f"{name}: (unknown setting|renamed to generators)"):
            make_config({"tasks": ["cpu-l1"], name: S.default_of(next(f for f in S.setting_fields() if f.name == name))})
    # and the run section is checked by the settings' own rules
    with pytest.raises(ConfigError, match="lambda_end: lambda_end must be >= 1"):
        make_config({"tasks": ["cpu-l1"], "lambda_end": 0.5})


def test_one_default_from_python_the_cli_and_the_eval():
    ctx, cfg, run = Context(), make_config({"tasks": ["cpu-l1"]}), options("run")
    for name in RUN_SETTINGS:
        assert getattr(ctx, name) == getattr(cfg, name) == run[name].default, name
    assert ctx.fit == "auto" and ctx.budget == 30  # KernelBench sizes fitted to the machine everywhere


def test_help_renders_for_every_command_that_takes_settings():
    for cmd in ("run", "verify", "eval"):
        r = CliRunner().invoke(app, [cmd, "--help"], terminal_width=200)
        assert r.exit_code == 0, r.output
        assert "--budget" in r.output or cmd == "verify"
        assert "--fit" in r.output
    r = CliRunner().invoke(app, ["run", "--help"], terminal_width=200)
    for f in S.cli_fields():
        assert option_name(f.name) in r.output, f.name


def test_settings_files_name_unknown_settings_and_bad_values(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('budget = 3\nn_contexts = 2\n')
    with pytest.raises(S.SettingsError, match="unknown setting.*n_contexts"):
        S.read_settings_file(p)
    p.write_text('review = true\n')  # python-only: no file either
    with pytest.raises(S.SettingsError, match="unknown setting.*review"):
        S.read_settings_file(p)
    p.write_text('budget = \n')
    with pytest.raises(S.SettingsError, match="not valid TOML"):
        S.read_settings_file(p)
    q = S.write_settings_file(tmp_path / "s.json", {"budget": 3, "tasks": ["cpu-l1"], "set": {"dim": 64}})
    assert S.read_settings_file(q) == {"budget": 3, "tasks": ["cpu-l1"], "set": {"dim": 64}}
    with pytest.raises(S.SettingsError, match="budget must be int"):
        S.RunSettings(budget="3")
    with pytest.raises(S.SettingsError, match="strict must be bool"):
        S.RunSettings(strict=1)
    assert S.RunSettings(alpha=1).alpha == 1.0 and isinstance(S.RunSettings(alpha=1).alpha, float)


def test_the_command_line_overrides_a_settings_file(tmp_path):
    """A file with a bad policy and a missing task: the command line's --policy wins (the settings are checked
    before the tasks are read), so the error is the task's."""
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"policy": "best", "tasks": ["cpu-l9"], "run_dir": str(tmp_path / "r")}))
    r = CliRunner().invoke(app, ["run", "--settings", str(p)])
    assert r.exit_code == 2 and "unknown policy 'best'" in r.output
    r = CliRunner().invoke(app, ["run", "--settings", str(p), "--policy", "value"])
    assert r.exit_code == 2 and "no such task file" in r.output and "policy" not in r.output
    r = CliRunner().invoke(app, ["run", "--settings", str(tmp_path / "missing.toml")])
    assert r.exit_code == 2 and "cannot read settings file" in r.output


def test_studio_shows_every_setting_with_its_default_and_help():
    """langgraph.json's graphs (what `langgraph dev` serves to Studio): their context schema is the declaration."""
    import importlib

    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    graphs = json.loads((root / "langgraph.json").read_text())["graphs"]
    assert set(graphs) == {"evokernel", "drafting", "refining"}
    for name, target in graphs.items():
        module, attr = target.split(":")
        props = getattr(importlib.import_module(module), attr).get_context_jsonschema()["properties"]
        for f in S.setting_fields():
            assert props[f.name].get("default") == f.default, (name, f.name)
            assert props[f.name]["description"] == f.metadata["description"], (name, f.name)
