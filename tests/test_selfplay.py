"""Generational self-play (training/selfplay.py), network-guided ismcts, the shipped agents."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml

import agents
from training import cli as train
from agents.play import play_game
from agents.search.mcts import GuidedSearch
from engine import random_deal
from training import teacher
from training.config import load_config
from training.selfplay import generation_file

TINY = {
    "name": "tiny", "algorithm": "selfplay", "seed": 3, "num_players": 2, "iterations": 2,
    "net": {"channels": 8, "blocks": 1, "points_skip": 20.0, "exposure_skip": 10.0, "exposure": "worst",
            "evaluator_hidden": 8},
    "selfplay": {"warm_start_teacher": "ismcts:iterations=8", "warm_start_games": 4, "warm_start_steps": 4,
                 "warm_start_evaluator_steps": 4, "batch_size": 16, "evaluator_batch_size": 16,
                 "games_per_generation": 32,
                 "search": "iterations=8,prior=3", "play": "iterations=8", "train_steps": 4, "evaluator_steps": 4,
                 "learning_rate": 0.001, "margin_weight": 0.0, "window": 1, "workers": 1, "ladder_games": 0},
    "eval": {"every": 1, "games": 2, "opponents": ["greedy"]},
}


def write_config(tmp_path, **changes):
    data = yaml.safe_load(yaml.safe_dump(TINY))
    for key, value in changes.items():
        node = data
        *parents, last = key.split(".")
        for part in parents:
            node = node[part]
        node[last] = value
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def played_chunks(monkeypatch):
    """The (teacher spec, chunk seed) of every chunk of games actually played."""
    played = []
    real = teacher.play_chunk

    def counting(spec, seed, *arguments):
        played.append((spec, seed))
        return real(spec, seed, *arguments)

    monkeypatch.setattr(teacher, "play_chunk", counting)
    return played


@pytest.mark.slow
def test_each_generation_learns_from_the_previous_generations_search_and_a_kill_changes_nothing(
        tmp_path, monkeypatch, played_chunks):
    """Two generations, rated on the ladder; the same run killed while generation 1 learns
    (its games stored, its network not yet saved), then resumed, ends with the same
    networks of every generation, metrics and Elo ladder (its games and ratings) as the
    run that was never killed."""
    from evaluation.ladder import load_ladder_games
    from test_training import assert_same_run, killed_and_resumed, same_weights
    from training.selfplay import SelfPlayTrainer

    config = write_config(tmp_path, **{"selfplay.ladder_games": 2, "selfplay.ladder_anchors": ["random"],
                                       "selfplay.games_per_generation": 16})
    whole, killed = killed_and_resumed(tmp_path, monkeypatch, config, SelfPlayTrainer, "_learn")
    # the warm start plays the plain teacher; generation 1 plays generation 0's own search
    assert {str(spec) for spec, _ in played_chunks} == {"ismcts:iterations=8"} | {
        f"ismcts:net={generation_file(run, 0)},iterations=8,prior=3" for run in (whole, killed)}
    ladder_table = json.loads((whole / "ladder.json").read_text())
    assert [row["generation"] for row in ladder_table["generations"]] == [0, 1]
    assert set(ladder_table["anchors"]) == {"random"} and (whole / "ladder.png").is_file()
    agent = agents.make(f"ismcts:net={generation_file(whole, 1)},iterations=8", seed=0)
    record = play_game([agent, agents.make("greedy", seed=1)], random_deal(5), 2)
    assert record.forfeit is None and len(record.actions) > 10, record.error  # a raising agent forfeits

    assert_same_run(whole, killed)
    for g in (0, 1):
        assert same_weights(generation_file(whole, g), generation_file(killed, g)), g

    def ladder(run):
        table = json.loads((run / "ladder.json").read_text())
        ratings = [{k: v for k, v in row.items() if k not in ("spec", "wall_s")}  # its run's path, wall time
                   for row in table["generations"]]
        games = sorted((g["opponent"], g["game"], g["seeds"], g["scores"], g["moves"], g["ranking"])
                       for g in load_ladder_games(run).games)
        return ratings, games

    assert ladder(killed) == ladder(whole) and len(ladder(whole)[1]) > 0


@pytest.mark.slow
def test_resume_mid_generation_plays_only_the_missing_games(tmp_path, played_chunks):
    config = write_config(tmp_path)
    runs = tmp_path / "runs"
    run = train.main(["--config", str(config), "--runs", str(runs), "--set", "iterations=1"])
    # a kill during generation 1: its first chunk of 16 games finished and was stored
    cfg = load_config(run / "config.yaml")
    search = GuidedSearch(str(generation_file(run, 0)), cfg.selfplay.search)
    seed = cfg.seed * 10_007 + 1
    teacher.teacher_games(search, 16, seed, 2, workers=1, progress=False, store=run / "games" / "gen_001")
    played_chunks.clear()
    train.main(["--resume", str(run), "--set", "iterations=2"])
    assert [s for _, s in played_chunks] == [seed * 1_000_003 + 1]  # only the second chunk was played
    assert generation_file(run, 1).is_file()
    # after the resume the evaluator still learns from every generation (evaluator_window 0),
    # the policy only from the newest (window 1)
    rows = list(csv.DictReader(open(run / "metrics.csv")))
    positions = [int(r["positions"]) for r in rows]
    assert [int(r["evaluator_positions"]) for r in rows] == positions
    assert [int(r["training_positions"]) for r in rows] == [positions[0], positions[1] - positions[0]]


def test_stored_chunks_round_trip_and_refuse_damage(tmp_path):
    games = teacher.teacher_games(agents.parse_agent("ismcts:iterations=4"), 2, 1, 2, workers=1, progress=False,
                                  store=tmp_path)
    again = teacher.teacher_games(agents.parse_agent("ismcts:iterations=4"), 2, 1, 2, workers=1, progress=False,
                                  store=tmp_path)
    np.testing.assert_array_equal(games.policy, again.policy)
    np.testing.assert_array_equal(games.final_info, again.final_info)
    (chunk,) = tmp_path.glob("chunk_*.npz")
    chunk.write_bytes(b"not a chunk")
    with pytest.raises(ValueError, match="damaged self-play chunk"):
        teacher.teacher_games(agents.parse_agent("ismcts:iterations=4"), 2, 1, 2, workers=1, progress=False,
                              store=tmp_path)


@pytest.mark.parametrize("key, value, message", [
    ("selfplay.search", "net=x.pt,iterations=5", "must not name a network"),
    ("selfplay.play", "iterations=0", "iterations"),
    ("selfplay.ladder_anchors", ["greedyy"], "unknown agent"),
    ("selfplay.warm_start_teacher", "greedy", "ismcts or pimc"),
    ("selfplay.evaluator_window", -1, "evaluator_window"),
    ("selfplay.games_per_generation", 0, "must be >= 1"),
    ("selfplay.search", "iterations=0", "iterations must be a positive integer"),
    ("selfplay.search", 300, "must be a string of ismcts parameters"),
    ("selfplay.league_fraction", 1.5, "league_fraction"),
])
def test_bad_selfplay_config_is_refused_before_training(tmp_path, key, value, message):
    with pytest.raises(ValueError, match=message):
        load_config(write_config(tmp_path, **{key: value}))


# Every retired config key or value: a one-line error saying why (and the search settings'
# retired parameters, through the agents' table).
RETIRED_CONFIG = [
    ("selfplay.policy_target", "completed_q", "'selfplay.policy_target' was retired: completed-Q"),
    ("selfplay.policy_target", "visits", "'selfplay.policy_target' was retired"),
    ("selfplay.full_search_fraction", 0.5, "'selfplay.full_search_fraction' was retired: playout cap"),
    ("selfplay.cheap_search", "iterations=100", "'selfplay.cheap_search' was retired"),
    ("net.exposure", "expected", "'net.exposure': 'expected' was retired: .* use exposure: outlook"),
    ("selfplay.search", "iterations=16,gumbel=4", "gumbel=4 was retired"),
    ("selfplay.play", "time=0.01,leaf=value", "leaf=value was retired"),
    ("selfplay.warm_start_teacher", "ismcts:halving=4", "halving=4 was retired"),
    ("selfplay.ladder_anchors", ["ismcts:time=0.01,rollout=greedy"], "rollout=greedy was retired"),
]


@pytest.mark.parametrize("key, value, message", RETIRED_CONFIG)
def test_every_retired_config_key_is_a_one_line_error(tmp_path, key, value, message):
    with pytest.raises(ValueError, match=message) as error:
        load_config(write_config(tmp_path, **{key: value}))
    assert "\n" not in str(error.value)


def test_search_settings_are_parsed_once_at_load_and_saved_as_text(tmp_path):
    from agents.settings import SearchSettings
    from training.config import config_to_dict

    cfg = load_config(write_config(tmp_path, **{"selfplay.search": "iterations=16, prior=3"}))
    assert cfg.selfplay.search == SearchSettings(iterations=16, prior=3.0)
    saved = config_to_dict(cfg)["selfplay"]
    assert saved["search"] == "iterations=16,prior=3" and isinstance(saved["play"], str)
    # the typed agents sit beside their spec strings and are never saved
    assert cfg.selfplay.teacher.name == "ismcts" and [str(a) for a in cfg.selfplay.anchors] == cfg.selfplay.ladder_anchors
    assert not {"teacher", "anchors"} & set(saved) and "lineup" not in config_to_dict(cfg)["eval"]
    assert len(type(cfg.selfplay).model_fields) <= 28


def test_network_guided_ismcts_checks_its_parameters(tmp_path):
    with pytest.raises(ValueError, match="give net=PATH"):
        agents.make("ismcts:prior=3")
    with pytest.raises(ValueError, match="not found"):
        agents.check_spec(f"ismcts:net={tmp_path / 'missing.pt'}")


def test_shipped_selfplay_agents_play_their_player_count():
    # play_game turns an agent that raises into a forfeit: a game with moves is not enough
    for spec in ("selfplay:iterations=20", "selfplay-policy"):
        record = play_game([agents.make(spec, seed=0), agents.make("greedy", seed=1)], random_deal(2), 2)
        assert record.forfeit is None and len(record.actions) > 10, (spec, record.error)
    four = [agents.make("selfplay:iterations=20", seed=0)] + [agents.make("greedy") for _ in range(3)]
    record = play_game(four, random_deal(3), 4)  # the shipped 4-player network
    assert record.forfeit is None and len(record.actions) > 10, record.error
    with pytest.raises(ValueError, match="3 players"):
        play_game([agents.make("selfplay:iterations=20"), agents.make("greedy"), agents.make("greedy")],
                  random_deal(2), 3)
    team = [agents.make("selfplay:iterations=20", seed=0), agents.make("greedy"),
            agents.make("selfplay-policy", seed=2), agents.make("greedy")]
    record = play_game(team, random_deal(4), 4, team=True)  # the shipped team network, with search and raw
    assert record.forfeit is None and len(record.actions) > 10, record.error


def test_a_missing_shipped_network_names_the_config_that_trains_it(tmp_path, monkeypatch):
    import agents.search.selfplay
    import agents.shipped

    monkeypatch.setattr(agents.shipped, "folder", lambda kind: tmp_path)
    with pytest.raises(ValueError, match="team variant .*configs/selfplay_team.yaml"):
        agents.search.selfplay.shipped_network(4, team=True)
    with pytest.raises(ValueError, match="for 2 players .*configs/selfplay_2p.yaml"):
        agents.search.selfplay.shipped_network(2)


def test_shipped_search_builds_its_settings_once():
    agent = agents.make("selfplay:iterations=20,prior=1")
    agent.reset(0, 2)
    assert agent._current.settings == agent.settings and agent.settings.prior == 1.0


def target_seats(games: teacher.TeacherGames, game: int) -> tuple[set, set]:
    """(seats whose moves carry a policy target, seats whose moves carry none) in one game."""
    rows = games.game == game
    targeted = games.policy[rows].sum(axis=1) > 0
    movers = games.mover[rows]
    return set(movers[targeted].tolist()), set(movers[~targeted].tolist())


def test_league_games_seat_an_earlier_generation_whose_moves_train_only_the_values(tmp_path):
    """Generation 2 plays generation 1's search with generation 0's in one seat of every
    game (league_fraction 1); generation 1 has no earlier generation to meet."""
    config = write_config(tmp_path, **{"iterations": 3, "selfplay.games_per_generation": 6,
                                       "selfplay.league_fraction": 1.0})
    run = train.main(["--config", str(config), "--runs", str(tmp_path / "runs")])

    def games_of(generation):
        return teacher.TeacherGames.concatenate([teacher.TeacherGames.load(p) for p in
                                                 sorted((run / "games" / f"gen_{generation:03d}").glob("*.npz"))])
    first = games_of(1)
    assert np.all(first.policy.sum(axis=1) > 0)
    second = games_of(2)
    guests = [target_seats(second, g)[1] for g in range(len(second.final_info))]
    assert all(len(seats) == 1 for seats in guests) and {s for seats in guests for s in seats} == {0, 1}
    rows = list(csv.DictReader(open(run / "metrics.csv")))  # the guests' positions still train the values
    assert int(rows[-1]["training_positions"]) == len(second.obs)


def test_no_spec_is_parsed_after_the_config_is_loaded(tmp_path, monkeypatch):
    """Agent specs are parsed once, at the config's edge: the trainer's games (the warm
    start's teacher, a league's opponents), its ladder's anchors and its evaluation build
    typed agents. Here a
    run (its chunks played in this process: workers 1) refuses parsing once its config is
    loaded."""
    loaded = train.load_config

    def load_then_refuse(*arguments):
        def refuse(spec):
            raise AssertionError(f"the spec {spec!r} was parsed after the config's edge")

        cfg = loaded(*arguments)
        monkeypatch.setattr(agents.base, "parse_spec", refuse)
        return cfg

    monkeypatch.setattr(train, "load_config", load_then_refuse)
    config = write_config(tmp_path, **{"iterations": 3, "selfplay.games_per_generation": 2,
                                       "selfplay.league_fraction": 1.0, "eval.opponents": ["greedy", "random"],
                                       "selfplay.ladder_games": 2, "selfplay.ladder_anchors": ["greedy", "random"]})
    run = train.main(["--config", str(config), "--runs", str(tmp_path / "runs")])
    rows = list(csv.DictReader(open(run / "metrics.csv")))
    assert len(rows) == 3 and all(row["eval_win_rate_vs_random"] for row in rows)
    assert list(json.loads((run / "ladder.json").read_text())["anchors"]) == ["greedy", "random"]
    assert yaml.safe_load((run / "config.yaml").read_text())["eval"]["opponents"] == ["greedy", "random"]


def test_a_spec_string_inside_the_trainer_is_a_clear_error(tmp_path):
    from training.policy_games import evaluate_policy

    with pytest.raises(ValueError, match="a self-play teacher or league opponent must be a typed agent"):
        teacher.teacher_games("ismcts:iterations=4", 1, 0, workers=1, progress=False, store=tmp_path / "none")
    with pytest.raises(ValueError, match="must be a typed agent .* got 'greedy'"):
        teacher.teacher_games(agents.parse_agent("ismcts:iterations=4"), 1, 0, league=("greedy",), league_fraction=1)
    with pytest.raises(ValueError, match="an evaluation opponent must be a typed agent"):
        evaluate_policy(None, "greedy", 2, seed=0)
    assert not (tmp_path / "none").exists()


def test_a_league_opponent_takes_one_team_in_the_team_variant():
    games = teacher.play_chunk(agents.parse_agent("ismcts:iterations=4"), 5, 4, 4, True,
                               league=(agents.parse_agent("ismcts:iterations=2"),), league_fraction=1.0)
    for g in range(4):
        learner, guest = target_seats(games, g)
        assert guest in ({0, 2}, {1, 3}) and learner == {0, 1, 2, 3} - guest


def test_the_teacher_shows_tiles_in_team_games_as_the_agents_do():
    """Self-play team games hold the shows the searches make in play (`show_before`): the
    network learns from positions where partners show tiles; no show outside teams."""
    from env import observation as ob

    def shown(games):
        vector = games.obs[:, ob.OBS_SIZE - ob.NUM_VECTOR_FEATURES:].astype(np.float32)
        return vector[:, ob.V_PARTNER_SHOWN:ob.V_PARTNER_SHOWN + 10].sum(axis=1) > 0

    team = teacher.play_chunk(agents.parse_agent("ismcts:iterations=8"), 3, 2, 4, True)
    assert shown(team).mean() > 0.5  # most positions after the first round see a partner's show
    assert not shown(teacher.play_chunk(agents.parse_agent("ismcts:iterations=8"), 3, 2, 4, False)).any()


@pytest.mark.parametrize("changes, message", [
    ({"league_fraction": 1.5}, "league_fraction must be in"),
    ({"league_fraction": 0.5}, "needs league opponents"),
    ({"league": (agents.parse_agent("greedy"),), "league_fraction": 1.0}, "not a search agent"),
])
def test_bad_league_settings_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        teacher.play_chunk(agents.parse_agent("ismcts:iterations=4"), 0, 1, 2, False, **changes)


def test_ray_chunks_read_every_network_from_the_nodes_copy():
    """The teacher and each league opponent name a network on the driver (typed searches,
    no spec strings); a Ray actor plays the chunk with its node's copies."""
    from agents.search.mcts import GuidedSearch
    from agents.settings import SearchSettings

    nine, three = SearchSettings(iterations=9), SearchSettings(iterations=3)
    job = teacher.ChunkJob(4, GuidedSearch("/run/g1.pt", nine), 7, 16, 2, False, "worst",
                           (GuidedSearch("/run/g0.pt"), agents.parse_agent("ismcts:iterations=3")), 0.5)
    assert job.networks() == ["/run/g1.pt", "/run/g0.pt"]
    assert job.on_node({"/run/g1.pt": "/node/a.pt", "/run/g0.pt": "/node/b.pt"}) == teacher.ChunkJob(
        4, GuidedSearch("/node/a.pt", nine), 7, 16, 2, False, "worst",
        (GuidedSearch("/node/b.pt"), agents.parse_agent("ismcts:iterations=3")), 0.5)
    assert three.spec() == "iterations=3"


@pytest.mark.parametrize("steps", [1, 10, 20])
def test_the_learner_takes_any_number_of_steps(steps):
    """One learning-rate cycle of `steps` minibatches, however short (OneCycleLR divides by
    its warm-up length less one: 10 steps once divided by zero)."""
    import torch

    from training.config import config_from_dict
    from training.learner import Learner

    cfg = config_from_dict({**TINY, "selfplay": {**TINY["selfplay"], "train_steps": steps}})
    learner = Learner(cfg, torch.device("cpu"))
    learner.fill([(teacher.play_chunk(agents.parse_agent("ismcts:iterations=4"), 0, 1, 2, False), 1.0)])
    assert np.isfinite(learner.fit_policy_value(steps, 1e-3)["policy_loss"])


def test_the_learner_shows_each_position_turned_by_one_quarter_turn():
    """selfplay.symmetries: every minibatch row is a replay-buffer row turned by a random quarter
    turn, the same turn for its observation, legal mask, policy target and move features, and
    that turned row is what the network reads."""
    import torch

    from engine import symmetry
    from env.observation import turn_observations
    from training.config import config_from_dict
    from training.learner import Learner

    cfg = config_from_dict({**TINY, "selfplay": {**TINY["selfplay"], "symmetries": True}})
    learner = Learner(cfg, torch.device("cpu"))
    learner.fill([(teacher.play_chunk(agents.parse_agent("ismcts:iterations=4"), 0, 1, 2, False), 1.0)])
    buffer, n = learner.buffer, learner.buffer.size
    seen, real_forward, real_turned = [], learner.net.forward, learner._turned

    def turned(*rows):
        out = real_turned(*rows)
        seen.append(out)
        return out

    def forward(obs, mask, exposure):
        assert torch.equal(obs, torch.as_tensor(seen[-1][0])) and torch.equal(exposure, torch.as_tensor(seen[-1][3]))
        return real_forward(obs, mask, exposure)

    learner._turned, learner.net.forward = turned, forward
    learner.fit_policy_value(4, 1e-3)
    turns_used = set()
    for obs, mask, target, exposure in seen:
        for b in range(len(obs)):
            matches = [(k, i) for k in range(4) for i in range(n)
                       if np.array_equal(turn_observations(buffer.obs[i:i + 1].astype(np.float32), [k])[0], obs[b])]
            assert matches, "a minibatch row is no turned buffer row"
            k, i = matches[0]
            turns_used.add(k)
            assert np.array_equal(symmetry.turn_action_rows(buffer.mask[i:i + 1], [k])[0], mask[b])
            assert np.array_equal(symmetry.turn_action_rows(buffer.policy[i:i + 1].astype(np.float32), [k])[0],
                                  target[b])
            assert np.array_equal(symmetry.turn_action_rows(buffer.exposure[i:i + 1].astype(np.float32), [k])[0],
                                  exposure[b])
            assert not np.any(target[b][~mask[b]]), "the turned target puts weight on an illegal move"
    assert len(seen) == 4 and len(turns_used) > 1
