"""What an evaluation runs: the config file of ``evokernel eval`` (TOML or YAML), validated.

Every field has a command-line flag of the same name (``--budget 10``, ``--method passk``, ...);
a flag overrides the file. A minimal file::

    name = "paper-main"
    tasks = ["cpu-l1", "cpu-l2"]          # suites, task directories, task files or suite/task ids
    budget = 10                          # T: attempts per operator, drafting and refining together
    seeds = 3                            # 3 -> [0, 1, 2]; or an explicit list
    methods = ["evokernel", "passk", "refinement"]

The cross product of ``generators`` × ``methods`` × ``policies`` × ``memory`` (the last two for
``evokernel`` only: the baselines use no shared memory and no retrieval policy) gives the
*groups* of the report; each group runs once per seed (an *arm*). docs/evaluation.md lists every
field with an example.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, create_model, field_validator, model_validator

from evokernel.graph.methods import METHODS
from evokernel.memory.retrieval import POLICIES
from evokernel.settings import RunSettings, default_of, eval_run_fields, type_of

# the run settings an eval config sets for every run (its run section); the other run settings are set by the
# harness per unit, as each setting's ``eval`` role says (evokernel.settings)
RUN_SETTINGS = tuple(f.name for f in eval_run_fields())
# old names of settings, upgraded in a stored eval.json (a config file that uses one is told the new name)
RENAMED = {"max_cost": "max_cost_usd", "generator": "generators", "models": "generators"}

MEMORY_MODES = ("shared", "ordered", "fresh", "per-task", "exported", "none")
MEMORY_HELP = {
    "shared": "one memory per arm, grown over the whole task stream (the paper's default)",
    "ordered": "one memory per arm, the stream run suite by suite in the listed order (L1 then L2: "
               "the transfer study); results are also reported per stage",
    "fresh": "each suite (stage) starts from a new memory holding only the seed knowledge (no transfer "
             "between suites: the control of the transfer study)",
    "per-task": "every task starts from a new memory holding only the seed knowledge (no sharing)",
    "exported": "start from the export file `memory_from` with the items of the evaluated tasks removed "
                "(backbone transfer), then share it over the stream",
    "none": "no memory at all: nothing retrieved, and of the seed knowledge only the candidate-format item "
            "(the one demonstration the baselines get); goes with policy none",
}


# list fields whose entries must come from a fixed set: field -> (allowed values, what one is called)
_CHOICES: dict[str, tuple[tuple[str, ...], str]] = {
    "methods": (METHODS, "method"), "policies": (POLICIES, "policy"), "memory": (MEMORY_MODES, "memory mode")}


class ConfigError(ValueError):
    """A config file or flag that cannot be used; the message says which field and why."""


Scalar = Union[bool, int, float, str]


def _run_section() -> dict[str, Any]:
    """The run section's fields: the run settings the eval sets for all its runs, with the types, defaults and
    help of their one declaration (:mod:`evokernel.settings`); validated by it (``EvalConfig._run_valid``)."""
    return {f.name: (type_of(f.name), Field(default_of(f), description=f.metadata["description"]))
            for f in eval_run_fields()}


RunSection = create_model("RunSection", __config__=ConfigDict(extra="forbid"), **_run_section())


class EvalConfig(RunSection):
    """Settings of one evaluation (see the module docstring): the plan's fields below, and the run section
    (every field of :data:`RUN_SETTINGS`, inherited from ``RunSection``)."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    name: str = Field("eval", description="name of the evaluation (titles, default output directory)")
    out: str = Field("", description="output directory [default: eval-runs/<name>]")
    tasks: list[str] = Field(default_factory=list, description="suites, task directories, task files or suite/task ids, in stream order")
    limit: int = Field(0, ge=0, description="only the first N tasks of each entry of `tasks` (0: all)")
    set: dict[str, Scalar] = Field(default_factory=dict, description="size overrides NAME = VALUE for every task defining NAME")
    generators: list[str] = Field(default_factory=lambda: ["template"], description="the generators compared, one group per entry: template (offline) or an LLM spec (openai:MODEL, deepseek:MODEL, ollama:MODEL, vllm:MODEL, local:NAME, hybrid:SPEC, or PROVIDER:MODEL for any LangChain init_chat_model provider: docs/generators.md); each is the run setting `generator` of its group's runs")
    seeds: list[int] = Field(default_factory=lambda: [0], description="run seeds (an integer n means 0..n-1)")
    methods: list[str] = Field(default_factory=lambda: ["evokernel"], description=f"any of {', '.join(METHODS)}")
    policies: list[str] = Field(default_factory=lambda: ["value"], description=f"retrieval policies of evokernel: any of {', '.join(POLICIES)}")
    memory: list[str] = Field(default_factory=lambda: ["shared"], description=f"memory modes of evokernel: any of {', '.join(MEMORY_MODES)}")
    variants: list[str] = Field(default_factory=list, description="POLICY/MEMORY pairs of evokernel to run instead of the full policies × memory product, e.g. [\"none/none\", \"value/exported\"]")
    memory_from: str = Field("", description="export file (evokernel memory export) for memory mode `exported`")
    workers: int = Field(1, ge=1, description="runs (or task shards) executed at the same time, each its own process")
    ray: str = Field("auto", min_length=1, description="Ray to run the units on: auto (the cluster in RAY_ADDRESS, else a local Ray), local, or a cluster address HOST:PORT")
    memory_server: bool = Field(False, description="with workers > 1, also split shared-memory streams into parallel shards served by one Chroma server per arm")
    trajectories: list[str] = Field(default_factory=list, description="task ids whose speedup trajectories the report draws (default: the 4 that improved most)")

    @field_validator("seeds", mode="before")
    @classmethod
    def _seeds(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            if v < 1:
                raise ValueError("seeds as a number must be >= 1 (it means 0..n-1)")
            return list(range(v))
        return v

    @field_validator("tasks", "methods", "policies", "memory", "generators", "trajectories", "variants", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("methods", "policies", "memory")
    @classmethod
    def _choices(cls, v: list[str], info: ValidationInfo) -> list[str]:
        allowed, what = _CHOICES[info.field_name]
        return _members(v, allowed, what)

    @field_validator("variants")
    @classmethod
    def _variants(cls, v: list[str]) -> list[str]:
        for pair in v:
            policy, sep, memory = pair.partition("/")
            if not sep:
                raise ValueError(f"variant {pair!r} is not POLICY/MEMORY (e.g. value/exported)")
            _members([policy], POLICIES, "policy")
            _members([memory], MEMORY_MODES, "memory mode")
        if len(set(v)) != len(v):
            raise ValueError(f"variant listed twice: {v}")
        return v

    @field_validator("generators")
    @classmethod
    def _generators(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("give at least one generator: template or an LLM spec (e.g. [\"openai:gpt-4o-mini\"])")
        if "llm" in v:
            raise ValueError("give the LLM spec itself (e.g. generators = [\"openai:gpt-4o-mini\"]), not llm")
        if any(not g.strip() for g in v) or len(set(v)) != len(v):
            raise ValueError(f"generators must be distinct, non-empty specs: {v}")
        return v

    @field_validator("seeds")
    @classmethod
    def _unique_seeds(cls, v: list[int]) -> list[int]:
        if not v:
            raise ValueError("give at least one seed")
        if len(set(v)) != len(v):
            raise ValueError(f"seeds repeat: {v}")
        return v

    @model_validator(mode="after")
    def _run_valid(self) -> "EvalConfig":
        RunSettings(**self.run_settings())  # a SettingsError names the setting (make_config reports it there)
        return self

    @model_validator(mode="after")
    def _consistent(self) -> "EvalConfig":
        if not self.tasks:
            raise ValueError("tasks: give at least one suite, task directory or task file (e.g. tasks = [\"cpu-l1\"])")
        for policy, memory in self.evokernel_variants():
            if memory == "none" and policy != "none":
                raise ValueError(f"memory mode none retrieves nothing: pair it with policy none, not {policy!r}")
        if "exported" in {m for _, m in self.evokernel_variants()} and "evokernel" in self.methods and not self.memory_from:
            raise ValueError("memory mode exported needs memory_from (a file written by `evokernel memory export`)")
        return self

    # ---------------------------------------------------------------- derived

    @property
    def output_dir(self) -> Path:
        return Path(self.out) if self.out else Path("eval-runs") / self.name

    def evokernel_variants(self) -> list[tuple[str, str]]:
        """(policy, memory mode) pairs evokernel runs: ``variants`` if given, else policies × memory."""
        if self.variants:
            return [tuple(v.split("/", 1)) for v in self.variants]  # type: ignore[misc]
        return [(p, m) for p in self.policies for m in self.memory]

    def run_settings(self) -> dict[str, Any]:
        """The run section: one value per setting in :data:`RUN_SETTINGS`, the same for every run of the eval."""
        return {name: getattr(self, name) for name in RUN_SETTINGS}

    def model_list(self) -> list[str]:
        """The generators, one group each (``generators``)."""
        return list(self.generators)

    def plan_key(self) -> dict[str, Any]:
        """The settings that decide what is run (all but parallelism and the output/report options):
        an existing output directory is continued only with the same plan."""
        return self.model_dump(exclude={"workers", "memory_server", "out", "trajectories", "name", "ray"})


def _members(values: list[str], allowed: tuple[str, ...], what: str) -> list[str]:
    if not values:
        raise ValueError(f"give at least one {what} (one of {', '.join(allowed)})")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {what} {', '.join(map(repr, bad))} (one of {', '.join(allowed)})")
    if len(set(values)) != len(values):
        raise ValueError(f"{what} listed twice: {values}")
    return values


def upgrade(stored: dict[str, Any]) -> dict[str, Any]:
    """A config (or plan key) stored in an older eval.json, in today's names: renamed settings take their new
    name, and an eval from before ``fit`` existed ran the sizes as written."""
    data = dict(stored)
    if "generators" not in data:  # generator = "llm" with models = [...], or the template generator
        generator, models = data.pop("generator", "template"), data.pop("models", None) or []
        data["generators"] = list(models) if generator == "llm" else ["template"]
    data = {RENAMED.get(k, k): v for k, v in data.items()}
    data.setdefault("fit", "none")
    return data


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping of a .toml, .yaml or .yml file."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read config file {p}: {e}") from None
    suffix = p.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"{p}: config files are .toml, .yaml or .yml")
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of settings, not {type(data).__name__}")
    return data


def make_config(data: dict[str, Any], source: str = "config") -> EvalConfig:
    """Validate a mapping; every problem is reported in one message, by field."""
    try:
        return EvalConfig.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            where = ".".join(str(x) for x in err["loc"]) or getattr((err.get("ctx") or {}).get("error"), "setting", "") \
                or "config"
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                new = RENAMED.get(str(err["loc"][0]) if err["loc"] else "")
                msg = f"renamed to {new} (see docs/evaluation.md)" if new else f"unknown setting (known: {', '.join(EvalConfig.model_fields)})"
            lines.append(f"  {where}: {msg}")
        raise ConfigError(f"{source}: invalid settings\n" + "\n".join(lines)) from None


def load_config(path: str | Path | None, overrides: dict[str, Any] | None = None) -> EvalConfig:
    """A config from a file (optional) with flag overrides applied on top (None values are unset flags)."""
    data = read_config_file(path) if path else {}
    for k, v in (overrides or {}).items():
        if v is not None:
            data[k] = v
    return make_config(data, str(path) if path else "flags")
