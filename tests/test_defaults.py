"""The code's defaults are the shipped recipe, each written once (issue 72, item 1).

`tests/fixtures/resolved_configs.json` holds what every shipped config resolved to before
the defaults became the recipe: a config must train the same run as it did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.config import EvalConfig
from training.config import keys_read, load_config

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
RESOLVED = json.loads((REPO / "tests" / "fixtures" / "resolved_configs.json").read_text())


def resolved(path: Path) -> dict:
    """The config a shipped file resolves to: every key its run reads (a PPO run's unread
    selfplay: section took the recipe's defaults)."""
    if path.stem.startswith("eval_"):
        return EvalConfig.from_yaml(path).to_dict()
    return keys_read(load_config(path))


def test_every_shipped_config_is_in_the_fixture():
    assert sorted(p.stem for p in CONFIGS) == sorted(RESOLVED)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_shipped_config_resolves_as_it_did_before_the_defaults_moved(path):
    before = dict(RESOLVED[path.stem])
    if not path.stem.startswith("eval_"):
        del before["ppo" if before["algorithm"] == "selfplay" else "selfplay"]
    assert json.loads(json.dumps(resolved(path))) == before


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_shipped_config_holds_only_what_differs_from_the_defaults(path):
    """cleanrl's habit: the code's defaults are the benchmarked recipe, a config its differences."""
    import yaml

    from training.config import TrainConfig, config_to_dict

    written = yaml.safe_load(path.read_text())
    defaults = EvalConfig().to_dict() if path.stem.startswith("eval_") else config_to_dict(TrainConfig())
    same = [f"{key}.{sub}" if sub else key
            for key, value in written.items()
            for sub, v, d in ([(s, v, defaults[key][s]) for s, v in value.items()] if isinstance(value, dict)
                              and isinstance(defaults[key], dict) and key != "opponents" else [(None, value, defaults[key])])
            if v == d]
    assert not same, f"{path.name} restates defaults: {same}"


# Each default's literal, in every spelling the product has used for it, and how often it may
# be written: once, where it is set (a restatement elsewhere drifts the day the default moves).
PRODUCT = [path for folder in ("engine", "env", "agents", "evaluation", "training", "humanplay")
           for path in (REPO / folder).rglob("*.py")] + [REPO / name for name in ("train.py", "evaluate.py", "play.py")]
WRITTEN_ONCE = {
    # the shipped networks' search (agents.settings.SELFPLAY_SEARCH): self-play's, the selfplay agent's
    "iterations=1000,prior=3": (r"iterations\s*=\s*1000\s*,\s*prior\s*=\s*3", 1),
    "its prior": (r"\bprior(\s*:\s*float)?\s*=\s*3(\.0)?\b", 1),
    # a search's iterations (SearchSettings), which the best response of `evaluate.py exploit` and
    # `ladder --exploit` takes by default: never a spec string of its own
    "iterations default": (r"setting\(1000,", 1),
    "br's default spec": (r"[\"']iterations=1000[\"']", 0),
    # evaluate's time limits: set in evaluation/config.py, never in words
    "move time limit": (r"DEFAULT_MOVE_TIME_LIMIT\s*=\s*60", 1),
    "time limits in words": (r"default 60\b|Default: 60\b|60 s, or|10x the largest|10 times the largest"
                             r"|30x the move|30 times the move", 0),
}


@pytest.mark.parametrize("name", WRITTEN_ONCE)
def test_a_default_is_written_once(name):
    import re

    pattern, times = WRITTEN_ONCE[name]
    found = [f"{path.relative_to(REPO)}:{text[:m.start()].count(chr(10)) + 1}"
             for path in PRODUCT for text in [path.read_text()] for m in re.finditer(pattern, text)]
    assert len(found) == times, f"{name} written {len(found)} times (want {times}): {found}"
