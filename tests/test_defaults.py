"""The code's defaults are the shipped recipe, each written once (issue 72, item 1).

`tests/fixtures/resolved_configs.json` holds what every shipped config resolved to before
the defaults became the recipe: a config must train the same run as it did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.config import EvalConfig
from training.config import config_to_dict, load_config

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
RESOLVED = json.loads((REPO / "tests" / "fixtures" / "resolved_configs.json").read_text())


def resolved(path: Path) -> dict:
    """The config a shipped file resolves to, every key."""
    if path.stem.startswith("eval_"):
        return EvalConfig.from_yaml(path).to_dict()
    return config_to_dict(load_config(path))


def test_every_shipped_config_is_in_the_fixture():
    assert sorted(p.stem for p in CONFIGS) == sorted(RESOLVED)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_a_shipped_config_resolves_as_it_did_before_the_defaults_moved(path):
    assert json.loads(json.dumps(resolved(path))) == RESOLVED[path.stem]
