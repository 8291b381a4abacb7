"""What a paper experiment is: its YAML in ``configs/experiments`` (found, loaded, checked),
its settings (one per swept value) and its run description, the library behind ``schedgym
reproduce`` (:mod:`schedgym.train.reproduce`; its help describes the YAML and the files
written). The rows beside the paper's numbers are :mod:`schedgym.train.experiment_report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedgym.train import preflight
from schedgym.train.runspec import RunSpec, Setting
from schedgym.train.stats import parse_seeds

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs" / "experiments"
KEYS = {"name", "paper", "env_id", "scenario", "overrides", "agents", "reference", "seeds",
        "instance_seeds", "benchmarks", "metric", "sweeps", "paper_improvement_pct"}
SWEEP_KEYS = {"parameter", "values", "paper", "overrides", "label"}


def find_experiment(name: str) -> Path:
    """Path of an experiment given its name (``ogasched-table3``) or a YAML path."""
    p = Path(name)
    if p.suffix in (".yml", ".yaml") and p.is_file():
        return p
    cand = CONFIG_DIR / f"{name}.yml"
    if cand.is_file():
        return cand
    known = ", ".join(sorted(q.stem for q in CONFIG_DIR.glob("*.yml")))
    raise ValueError(f"experiment={name!r} is invalid: must be a YAML path or one of {known}")


def _fail(path: Path, key: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{path}: {key}={value!r} is invalid: must be {allowed}")


def _check_str(path: Path, cfg: dict[str, Any], key: str, optional: bool = False) -> None:
    val = cfg.get(key)
    if not (isinstance(val, str) and val) and not (optional and val is None):
        raise _fail(path, key, val, "a non-empty string" + (" or null" if optional else ""))


def _check_mapping(path: Path, key: str, val: Any, values: str = "") -> dict[str, Any]:
    if val is None:
        return {}
    if not isinstance(val, dict) or not all(isinstance(k, str) for k in val):
        raise _fail(path, key, val, "a mapping with string keys" + values)
    return val


def _check_schema(path: Path, cfg: dict[str, Any]) -> None:
    """The type of every key, so that a bad file fails here, before any episode runs."""
    from schedgym.train.cli_options import check_run_name, resolve_env_id

    for key in ("name", "env_id", "metric"):
        _check_str(path, cfg, key)
    check_run_name(cfg["name"], f"{path}: name")
    try:
        cfg["env_id"] = resolve_env_id(cfg["env_id"])
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    for key in ("paper", "scenario"):
        _check_str(path, cfg, key, optional=True)
    agents = cfg["agents"]
    if not (isinstance(agents, list) and agents and all(isinstance(a, str) for a in agents)):
        raise _fail(path, "agents", agents, "a non-empty list of agent names")
    if not isinstance(cfg["reference"], str):
        raise _fail(path, "reference", cfg["reference"], "one of the agents")
    for key in ("seeds", "instance_seeds"):
        val = cfg[key]
        if isinstance(val, bool) or not isinstance(val, str | int):
            raise _fail(path, key, val, 'seeds as a string such as "0-4" or an integer')
        try:
            parse_seeds(str(val))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if not isinstance(cfg.get("benchmarks", False), bool):
        raise _fail(path, "benchmarks", cfg["benchmarks"], "true or false")
    cfg["overrides"] = _check_mapping(path, "overrides", cfg["overrides"])
    for agent, pct in _check_mapping(path, "paper_improvement_pct",
                                     cfg.get("paper_improvement_pct"), " and number values"
                                     ).items():
        if isinstance(pct, bool) or not isinstance(pct, int | float):
            raise _fail(path, f"paper_improvement_pct.{agent}", pct, "a number")
    sweeps = cfg.get("sweeps")
    if sweeps is not None and not (isinstance(sweeps, list) and sweeps):
        raise _fail(path, "sweeps", sweeps, "a non-empty list of sweeps")
    for i, sw in enumerate(sweeps or []):
        where = f"sweeps[{i}]"
        if not isinstance(sw, dict):
            raise _fail(path, where, sw, "a mapping with keys " + ", ".join(sorted(SWEEP_KEYS)))
        for key in sw:
            if key not in SWEEP_KEYS:
                raise ValueError(f"{path}: unknown sweep key {key!r}; allowed {sorted(SWEEP_KEYS)}")
        if not isinstance(sw.get("parameter"), str):
            raise _fail(path, f"{where}.parameter", sw.get("parameter"), "a parameter name")
        if "label" in sw and not isinstance(sw["label"], str):
            raise _fail(path, f"{where}.label", sw["label"], "a string")
        if not (isinstance(sw.get("values"), list) and sw["values"]):
            raise _fail(path, f"{where}.values", sw.get("values"), "a non-empty list")
        for val in sw["values"]:
            if isinstance(val, dict):
                _check_mapping(path, f"{where}.values", val)
        sw["overrides"] = _check_mapping(path, f"{where}.overrides", sw.get("overrides"))
        for agent, vals in _check_mapping(path, f"{where}.paper", sw.get("paper")).items():
            if not isinstance(vals, list):
                raise _fail(path, f"{where}.paper.{agent}", vals, "a list of numbers")


def load_experiment(path: Path) -> dict[str, Any]:
    """Load and validate an experiment YAML (safe YAML, no aliases, at most
    :data:`~schedgym.train.safe_yaml.MAX_BYTES`): unknown keys are errors (typos never pass) and
    every value has the type the run needs, so a bad file fails before any episode runs."""
    from schedgym.train.safe_yaml import load_yaml

    path = Path(path)
    cfg = load_yaml(path, "experiment")
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: must be a YAML mapping")
    for key in cfg:
        if key not in KEYS:
            raise ValueError(f"{path}: unknown key {key!r}; allowed keys are {sorted(KEYS)}")
    for key in ("name", "env_id", "agents", "metric"):
        if key not in cfg:
            raise ValueError(f"{path}: missing required key {key!r}")
    cfg.setdefault("scenario", None)
    cfg.setdefault("overrides", {})
    cfg.setdefault("seeds", "0-2")
    cfg.setdefault("instance_seeds", "0")
    cfg.setdefault("reference", cfg["agents"][0] if isinstance(cfg["agents"], list)
                   and cfg["agents"] else None)
    _check_schema(path, cfg)
    if cfg["reference"] not in cfg["agents"]:
        raise ValueError(f"{path}: reference {cfg['reference']!r} is not one of the agents")
    labels = []
    for sw in cfg.get("sweeps") or []:
        labels.append(sw.get("label", sw.get("parameter")))
        for agent, vals in (sw.get("paper") or {}).items():
            if len(vals) != len(sw["values"]):
                raise ValueError(f"{path}: sweep {sw['parameter']!r}: paper values of {agent!r} "
                                 f"have {len(vals)} entries, expected {len(sw['values'])}")
    if len(set(labels)) != len(labels):
        raise ValueError(f"{path}: two sweeps share the label/parameter {labels}; give each a "
                         "distinct 'label'")
    return cfg


def settings(cfg: dict[str, Any], overrides: dict[str, Any]) -> list[Setting]:
    """One :class:`~schedgym.train.runspec.Setting` per swept value (``sweep`` its label,
    ``parameter``, ``value``, ``index``, ``overrides``). A sweep's ``overrides`` apply to its
    settings only (after the experiment's, before the command line's; the swept value always
    wins); a value that is a mapping sets several parameters at once (e.g. ``{n_types: 4,
    n_instances: 20}``); ``label`` names the sweep in the report (default: the parameter)."""
    out = []
    for sw in cfg.get("sweeps") or [{"parameter": None, "values": [None]}]:
        param = sw["parameter"]
        label = sw.get("label", param)
        for i, val in enumerate(sw["values"]):
            ov = {**cfg["overrides"], **(sw.get("overrides") or {}), **overrides}
            if isinstance(val, dict):
                ov.update({k: tuple(v) if isinstance(v, list) else v for k, v in val.items()})
            elif param is not None:
                ov[param] = tuple(val) if isinstance(val, list) else val
            name = f"{label}={val}" if param is not None else "-"
            out.append(Setting(name, ov, label or "-", param or "-", val, i))
    return out


def swept_keys(cfg: dict[str, Any]) -> set[str]:
    """Every parameter some sweep sets (``--set`` of one of them would be ignored)."""
    keys: set[str] = set()
    for sw in cfg.get("sweeps") or []:
        for val in sw["values"]:
            if isinstance(val, dict):
                keys.update(val)
            elif sw["parameter"] is not None:
                keys.add(sw["parameter"])
    return keys


def experiment_spec(cfg: dict[str, Any], seeds: list[int], overrides: dict[str, Any],
                    instance_seeds: list[int] | None = None, command: str = "") -> RunSpec:
    """The run description (``meta.json``) of an experiment."""
    return RunSpec(command="reproduce", experiment=cfg, cmdline=command, env_id=cfg["env_id"],
                   scenario=cfg["scenario"], agents=tuple(cfg["agents"]), seeds=tuple(seeds),
                   instance_seeds=tuple(instance_seeds or [0]), overrides=dict(overrides),
                   benchmarks=bool(cfg.get("benchmarks", False)),
                   settings=tuple(settings(cfg, overrides)))


def validate_experiment(cfg: dict[str, Any], overrides: dict[str, Any],
                        instance_seed: int = 0) -> None:
    """Build the env of every setting (and each agent once) before the first episode, so a
    bad ``--set`` value or sweep value fails at once with the env's one-line message."""
    from schedgym.train.runner import build_agent, make_env

    preflight.check_agents(list(cfg["agents"]))
    base = make_env(cfg["env_id"], cfg["scenario"], instance_seed,
                    {**cfg["overrides"], **overrides})
    with preflight.compile_notice():  # kernels compile here, not inside a timed episode
        for spec in cfg["agents"]:
            preflight.warm_up(base, build_agent(spec, base))
    base.close()
    for st in settings(cfg, overrides):
        make_env(cfg["env_id"], cfg["scenario"], instance_seed, st.overrides).close()
