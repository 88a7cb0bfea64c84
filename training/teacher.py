"""Teacher games: positions labelled by a search agent, played by an executor's workers.

The selfplay trainer's warm start (generation 0) is *expert iteration*'s first step
(Anthony, Tian & Barber 2017): a strong search (by default the numba ISMCTS with greedy rollouts, which
beats the greedy agent ~80% of the time) plays every seat of many games, and each
decision becomes a training example: the mover's observation and mask, the search's
root visit distribution (policy target), and the game's final result (value target,
added by the trainer). The network then learns to predict in one forward pass what the
search finds with a thousand simulations.

Games are split into fixed chunks, each with its own seed, and the chunks' results are
put back in chunk order, so the examples do not depend on the number of workers. Each
chunk is a job (`ChunkJob`) of the tournaments' executors: this machine's
(`evaluation.executor.make_local_executor`) or, with ``executor="ray"``, the Ray job pool
(`evaluation.ray_executor.map_on_ray`; the networks the searches read are published to
the nodes, so the run directory need not be shared). A chunk whose worker dies is played
again whole. Given a `store` directory, every finished chunk is saved there (written
whole, then renamed) and a later call with the same arguments loads it instead of
playing it again: a killed run resumes without losing finished games.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from agents.search.mcts import GuidedSearch
from engine import GameState, layout, rules
from engine.files import atomic_write
from engine.view import PlayerView
from evaluation.executor import make_local_executor
from evaluation.progress import progress_bar

GAMES_PER_CHUNK = 16


@dataclass
class TeacherGames:
    """Examples from finished games, one row per decision."""

    obs: np.ndarray  # float16 (N, OBS_SIZE), the mover's observation
    mask: np.ndarray  # bool (N, NUM_ACTIONS)
    policy: np.ndarray  # float32 (N, NUM_ACTIONS): the policy target, the root visit distribution
    exposure: np.ndarray  # float16 (N, 490): `agents.networks.features.exposure` of the position
    state_features: np.ndarray  # float32 (N, 72): `agents.networks.evaluator.mover_features` (full state)
    game: np.ndarray  # int64 (N,): index of the game in `final_info`
    mover: np.ndarray  # int64 (N,)
    final_info: np.ndarray  # int64 (games, INFO_LEN): the final state of every game

    @staticmethod
    def concatenate(parts: list["TeacherGames"]) -> "TeacherGames":
        offsets = np.cumsum([0] + [len(p.final_info) for p in parts[:-1]])
        return TeacherGames(
            obs=np.concatenate([p.obs for p in parts]), mask=np.concatenate([p.mask for p in parts]),
            policy=np.concatenate([p.policy for p in parts]),
            exposure=np.concatenate([p.exposure for p in parts]),
            state_features=np.concatenate([p.state_features for p in parts]),
            game=np.concatenate([p.game + o for p, o in zip(parts, offsets)]),
            mover=np.concatenate([p.mover for p in parts]),
            final_info=np.concatenate([p.final_info for p in parts]))

    def save(self, path: Path) -> None:
        """Write to `path` (.npz) all or nothing: a temporary file renamed over it."""
        atomic_write(path, lambda f: np.savez(f, **dataclasses.asdict(self)))

    @staticmethod
    def load(path: Path) -> "TeacherGames":
        """Read a chunk written by `save` (no pickled objects are allowed in it; fields it
        holds beyond `TeacherGames`'s, such as the root values `q` older chunks stored, are
        left unread)."""
        try:
            with np.load(path, allow_pickle=False) as data:
                return TeacherGames(**{f.name: data[f.name] for f in dataclasses.fields(TeacherGames)})
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"damaged self-play chunk {path}: {exc}; delete it to play its games again") from exc


def play_chunk(teacher, seed: int, games: int, num_players: int, team: bool, exposure: str = "worst",
               league: tuple = (), league_fraction: float = 0.0) -> TeacherGames:
    """Play `games` games with `teacher` in every seat: a typed search agent with
    `act_with_visits`, an `agents.AgentRecipe` (the config's warm-start teacher, e.g.
    ``ismcts:iterations=1000``, parsed at its edge) or a `agents.search.mcts.GuidedSearch` (a
    generation's network and search settings); seeded, so reproducible. `exposure`: the
    kind of `agents.networks.features.exposure` stored with each position. `league`,
    `league_fraction`: `LeagueSeats`."""
    from agents.networks import evaluator, features
    from env.observation import encode

    if not 0.0 <= league_fraction <= 1.0:
        raise ValueError(f"league_fraction must be in [0, 1], got {league_fraction!r}")
    if league_fraction > 0 and not league:
        raise ValueError("league_fraction > 0 needs league opponents (typed agents)")
    rng = np.random.default_rng(seed)
    seats = [teacher.build(seed=int(rng.integers(2**62))) for _ in range(num_players)]
    if not hasattr(seats[0], "act_with_visits"):
        raise ValueError(f"teacher {teacher} is not a search agent with root visit counts (use ismcts or pimc)")
    opponents = LeagueSeats(league, league_fraction, num_players, team, seed) if league_fraction > 0 else None
    obs, mask, policy, exposures, state_features, game_of, mover_of, finals = [], [], [], [], [], [], [], []
    for g in range(games):
        state = GameState.new(num_players, seed=int(rng.integers(2**62)), team=team)
        for s, agent in enumerate(seats):
            agent.reset(s, num_players, team)
        guests = opponents.seat_game() if opponents else {}
        views = [PlayerView(state, s) for s in range(num_players)]
        while not state.is_over:
            seat = state.current_player
            searcher = guests.get(seat, seats[seat])
            action, visits, _ = searcher.act_with_visits(views[seat])
            obs.append(encode(state, seat).astype(np.float16))
            mask.append(state.legal_action_mask()[: rules.NUM_ACTIONS])
            # a league opponent's move trains the values only (no policy target: a row of zeros)
            target = np.zeros(rules.NUM_ACTIONS) if seat in guests else visits / visits.sum()
            policy.append(target.astype(np.float32))
            exposures.append(features.exposure(*state.arrays, kind=exposure).astype(np.float16))
            state_features.append(evaluator.mover_features(*state.arrays))
            game_of.append(g)
            mover_of.append(seat)
            # team variant: the tile shown before placing, as the agent shows it in a game
            # (`MCTSAgent.show_before`); the position above is the one searched, before the show
            show = searcher.show_before(views[seat], action) if team else None
            if show is not None:
                state.step(show)
            state.step(action)
        finals.append(state.arrays[1].copy())
    return TeacherGames(np.array(obs), np.array(mask), np.array(policy), np.array(exposures),
                        np.array(state_features, dtype=np.float32).reshape(-1, evaluator.NUM_FEATURES),
                        np.array(game_of, dtype=np.int64), np.array(mover_of, dtype=np.int64),
                        np.array(finals, dtype=np.int64).reshape(-1, layout.INFO_LEN))


class LeagueSeats:
    """The league's opponents of a chunk's games: for each game, with probability
    `fraction`, one seat (team variant: one team's two seats) and one typed opponent drawn
    uniformly (an earlier generation's `GuidedSearch`), built once per seat it takes, on
    its own random stream (the games without an opponent stay as they were)."""

    def __init__(self, opponents: tuple, fraction: float, num_players: int, team: bool, seed: int):
        self.opponents, self.fraction, self.num_players, self.team = list(opponents), fraction, num_players, team
        self.rng = np.random.default_rng([seed, 2])
        self.agents: dict[tuple, object] = {}  # (opponent, seat): one agent per seat it takes

    def seat_game(self) -> dict:
        """{seat: agent} of the next game's opponent (reset for its seats), or {}."""
        if self.rng.random() >= self.fraction:
            return {}
        opponent = self.opponents[int(self.rng.integers(len(self.opponents)))]
        first = int(self.rng.integers(2 if self.team else self.num_players))
        seats = (first, first + 2) if self.team else (first,)
        guests = {}
        for seat in seats:
            key = (opponent, seat)
            if key not in self.agents:
                self.agents[key] = opponent.build(seed=int(self.rng.integers(2**62)))
                if not hasattr(self.agents[key], "act_with_visits"):
                    raise ValueError(f"league opponent {opponent} is not a search agent (use ismcts or pimc)")
            guests[seat] = self.agents[key]
            guests[seat].reset(seat, self.num_players, self.team)
        return guests


@dataclass(frozen=True)
class ChunkJob:
    """One chunk of games as an executor's job: `play_chunk`'s arguments (typed agents: no
    worker reads a spec), and the chunk's index, which comes back with its games."""

    index: int
    teacher: object
    seed: int
    games: int
    num_players: int
    team: bool
    exposure: str
    league: tuple
    league_fraction: float

    def run(self, limits=None, on_move=None) -> tuple[int, TeacherGames]:
        """``(index, games)``. The searches play without a clock: `limits` and `on_move`
        (a timed game's, `evaluation.executor.Job`) are not used."""
        return self.index, play_chunk(self.teacher, self.seed, self.games, self.num_players, self.team,
                                      self.exposure, self.league, self.league_fraction)

    def networks(self) -> list[str]:
        """The network files its searches read (the teacher's, the league's)."""
        return [agent.net for agent in (self.teacher, *self.league) if isinstance(agent, GuidedSearch)]

    def on_node(self, copies: dict[str, str]) -> "ChunkJob":
        """The job with every search reading its node's copy of its network (`copies`)."""
        return dataclasses.replace(self, teacher=with_local_network(self.teacher, copies),
                                   league=tuple(with_local_network(agent, copies) for agent in self.league))


def with_local_network(agent, copies: dict[str, str]):
    """`agent` reading this node's copy of its network, if it is a `GuidedSearch`."""
    if isinstance(agent, GuidedSearch):
        return dataclasses.replace(agent, net=copies[agent.net])
    return agent


def teacher_games(teacher, games: int, seed: int, num_players: int = 2, team: bool = False,
                  workers: int = 0, progress: bool = True, store: str | Path | None = None,
                  executor: str = "process", ray_address: str | None = None,
                  exposure: str = "worst", league: tuple = (), league_fraction: float = 0.0) -> TeacherGames:
    """Play `games` teacher games in `workers` processes (0 = one per CPU core); with
    `store`, finished chunks are kept there and reused (see the module doc). ``executor=
    "ray"``: in `workers` Ray actors (0 = one per CPU of the cluster at `ray_address`,
    None = a local Ray instance). `exposure`: the kind of exposure features stored (the
    learner's network's, `NetConfig.exposure`); `teacher`, `league`, `league_fraction`:
    see `play_chunk` (typed agents: no worker reads a spec)."""
    from agents.base import typed_agent

    if executor not in ("process", "ray"):
        raise ValueError(f"executor must be 'process' or 'ray', got {executor!r}")
    for agent in (teacher, *league):
        typed_agent(agent, "a self-play teacher or league opponent")
    jobs = [ChunkJob(i, teacher, seed * 1_000_003 + i, min(GAMES_PER_CHUNK, games - start), num_players, team,
                     exposure, tuple(league), league_fraction)
            for i, start in enumerate(range(0, games, GAMES_PER_CHUNK))]
    files = [None] * len(jobs)
    parts: list[TeacherGames | None] = [None] * len(jobs)
    if store is not None:
        store = Path(store)
        store.mkdir(parents=True, exist_ok=True)
        files = [store / f"chunk_{job.index:05d}_seed{job.seed}.npz" for job in jobs]
        for i, path in enumerate(files):
            if path.is_file():
                parts[i] = TeacherGames.load(path)
    todo = [job for job, part in zip(jobs, parts) if part is None]
    bar = progress_bar(total=games, initial=games - sum(job.games for job in todo),
                       desc=f"games ({teacher})", unit="game", disable=not progress, dynamic_ncols=True)
    for i, part in _play(todo, workers, executor, ray_address):
        parts[i] = part
        if files[i] is not None:
            part.save(files[i])
        bar.update(jobs[i].games)
    bar.close()
    return TeacherGames.concatenate(parts)


def _play(jobs: list[ChunkJob], workers: int, executor: str, address: str | None) \
        -> Iterator[tuple[int, TeacherGames]]:
    """``(index, games)`` of each chunk as it finishes: in this machine's executor, or on Ray
    in `workers` actors (0 = one per CPU of the cluster at `address`, None = a local Ray
    instance) with the networks the chunks read published to the nodes. Workers ignore
    Ctrl-C (the trainer's to handle) and stop with this generator (a second Ctrl-C)."""
    if executor == "ray":
        from evaluation.ray_executor import map_on_ray

        files = sorted({path for job in jobs for path in job.networks()})
        warm = functools.partial(_warm_teachers, list(dict.fromkeys(job.teacher for job in jobs)))
        yield from (played for _, played in map_on_ray(ChunkPlayer, jobs, workers, address, files, warm))
        return
    with make_local_executor(min(workers or os.cpu_count() or 1, len(jobs))) as pool:
        yield from pool.map_jobs(jobs)


class ChunkPlayer:
    """A Ray pool actor's handler: plays a chunk job with this node's copies of its networks."""

    def __init__(self, copies: dict[str, str]):
        self.copies = copies

    def __call__(self, job: ChunkJob) -> tuple[int, TeacherGames]:
        return job.on_node(self.copies).run()


def _warm_teachers(teachers: list, copies: dict[str, str]) -> None:
    """Compile (or load) the engine's kernels and the teachers' on this node."""
    from evaluation.ray_executor import warm_node

    warm_node((), [with_local_network(teacher, copies) for teacher in teachers])
