"""README's commands and example are what CI and users run: keep them in step with the code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from schedgym.train.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.S)


def test_ci_runs_the_readme_test_command_verbatim():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.startswith("python3 -m venv")]
    assert len(ci) == 1
    assert ci[0] in [b.strip() for b in _bash_blocks()], "README's test command differs from CI's"


def test_the_readme_main_job_parses_with_the_cli():
    main = [b.strip() for b in _bash_blocks() if "schedgym compare" in b][0]
    argv = shlex.split(main.split(".venv/bin/schedgym ", 1)[1])
    args = build_parser().parse_args(argv)
    assert args.command == "compare"


def test_the_ten_line_example_runs():
    code = re.search(r"## Ten lines\n\n```python\n(.*?)```", README, flags=re.S)
    assert code is not None
    assert len(code.group(1).splitlines()) == 10, "the 'Ten lines' block must be ten lines"
    src = code.group(1).replace("horizon=500", "horizon=20")
    ns: dict = {}
    exec(compile(src, "README.md", "exec"), ns)
    assert ns["done"] and ns["total"] != 0.0
    # the example printed the last slot's gain/penalty beside the episode total
    assert ns["gain"] - ns["penalty"] == pytest.approx(ns["total"], rel=1e-9)
    assert ns["gain"] > ns["info"]["gain"]


def test_the_readme_agent_list_names_every_registered_agent():
    from schedgym.agents.registry import names

    listed = README.split("Agents (`schedgym.agents.make", 1)[1].split("## ", 1)[0]
    missing = [name for name in names() if f"`{name}`" not in listed]
    assert not missing, f"README's agent list lacks {missing}"
