"""The one search core: the same moves as before its parts were made pluggable, and
each part (selection, leaf evaluation) doing what it says."""

import json
from pathlib import Path

import numpy as np
import pytest

import agents
from agents import search_kernels as sk
from agents import search_parts as parts
from agents.play import play_game
from engine.deal import random_deal

FIXTURE = Path(__file__).parent / "fixtures" / "search_moves.json"
CASES = json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("case", CASES, ids=[f"{c['spec']}-{c['num_players']}p-deal{c['deal_seed']}" for c in CASES])
def test_search_plays_the_recorded_moves(case):
    """Recorded by tests/fixtures/record_search_moves.py with the code before the core
    was restructured: every seat plays the spec on a fixed deal with fixed seeds."""
    n, d = case["num_players"], case["deal_seed"]
    seats = [agents.make(case["spec"]) for _ in range(n)]
    record = play_game(seats, random_deal(d), n, seeds=[100 * d + s for s in range(n)])
    assert record.error is None
    assert record.actions == case["actions"]
