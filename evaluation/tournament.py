"""The tournament: which games to play (the schedule) and the loop that plays them.

Schedule (documented in evaluate.py --help):

* **Tables.** With 2 players, every pair of agents. With 3-4 players and at least as
  many agents as seats, every combination of distinct agents; with fewer agents than
  seats, every multiset of agents that has at least two different agents (e.g. 2
  agents, 3 seats: A A B and A B B). Team variant: every pair, A on seats 0+2 and B
  on seats 1+3.
* **Duplicate deals.** Deal d is played at every table in every seating: the distinct
  cyclic rotations of the table (so each agent holds each hand and each seat once), or
  with ``seating: permutations`` every distinct order. One deal over all tables is a
  *duplicate set*, the unit of the bootstrap and of the SPRT.
* **Job ids** run deal-major: ``job = deal * jobs_per_deal + k``, so they do not depend
  on the number of deals (a resumed or extended run keeps its ids), and any prefix of
  the ids holds whole duplicate sets.
* **Seeds.** Deal d uses ``deal_seed(seed, d)``; seat s of job j seeds its agent with
  ``agent_seed(seed, j, s)``. Results do not depend on the worker count.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from engine.files import atomic_write_text

from .executor import Executor, GameJob
from .stats import Sprt, effective_ranking, game_sides


def deal_seed(seed: int, deal: int) -> int:
    """The engine seed of deal `deal` (63-bit, decorrelated across master seeds)."""
    ss = np.random.SeedSequence(entropy=(seed, 0), spawn_key=(deal,))
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


def agent_seed(seed: int, job_id: int, seat: int) -> int:
    ss = np.random.SeedSequence(entropy=(seed, 1), spawn_key=(job_id, seat))
    return int(ss.generate_state(1, np.uint32)[0])


def make_tables(num_agents: int, players: int, team: bool = False,
                one_vs_rest: bool = False) -> list[tuple[int, ...]]:
    """Agent index per seat of each table (see the module docstring). `one_vs_rest`
    (2 agents): only the table where agent 0 holds one seat (its team's, in the team
    variant) and agent 1 every other seat: a best response against a fixed agent."""
    if one_vs_rest:
        if num_agents != 2:
            raise ValueError(f"one_vs_rest needs exactly 2 agents, got {num_agents}")
        return [(0, 1, 0, 1)] if team else [(0,) + (1,) * (players - 1)]
    if team:
        return [(a, b, a, b) for a, b in itertools.combinations(range(num_agents), 2)]
    if num_agents >= players:
        return list(itertools.combinations(range(num_agents), players))
    return [t for t in itertools.combinations_with_replacement(range(num_agents), players) if len(set(t)) > 1]


def seatings_of(table: tuple[int, ...], mode: str = "rotations") -> list[tuple[int, ...]]:
    """Distinct seatings of a table, in a fixed order (the table itself first)."""
    if mode == "rotations":
        cand = [table[r:] + table[:r] for r in range(len(table))]
    elif mode == "permutations":
        cand = sorted(set(itertools.permutations(table)), key=lambda p: (p != table, p))
    else:
        raise ValueError(f"unknown seating mode {mode!r}")
    return list(dict.fromkeys(cand))


@dataclass(frozen=True)
class Slot:
    """One game of a duplicate set: a table in one seating."""

    table: int
    seating: tuple[int, ...]  # agent index per seat


class Schedule:
    """All games of a tournament, addressed by job id."""

    def __init__(self, lineup: list, players: int, games: int, seed: int, team: bool = False,
                 seating: str = "rotations", one_vs_rest: bool = False):
        """`lineup`: the typed agents (`EvalConfig.lineup`), which the jobs carry."""
        self.lineup, self.players, self.team, self.seed = list(lineup), players, team, seed
        self.tables = make_tables(len(lineup), players, team, one_vs_rest)
        mode = "rotations" if team else seating  # a team table only rotates by one seat
        self.slots = [Slot(t, s) for t, table in enumerate(self.tables) for s in seatings_of(table, mode)]
        self.seatings_per_table = max(len(seatings_of(t, mode)) for t in self.tables)
        self.num_deals = math.ceil(games / self.seatings_per_table)

    @property
    def jobs_per_deal(self) -> int:
        return len(self.slots)

    @property
    def num_jobs(self) -> int:
        return self.num_deals * self.jobs_per_deal

    def locate(self, job_id: int) -> tuple[int, Slot]:
        """(deal index, slot) of a job."""
        return job_id // self.jobs_per_deal, self.slots[job_id % self.jobs_per_deal]

    def job(self, job_id: int) -> GameJob:
        deal, slot = self.locate(job_id)
        return GameJob(job_id=job_id, deal_seed=deal_seed(self.seed, deal),
                       seating=tuple(self.lineup[a] for a in slot.seating),
                       seeds=tuple(agent_seed(self.seed, job_id, s) for s in range(self.players)),
                       team=self.team)

    def deal_jobs(self, deal: int) -> range:
        return range(deal * self.jobs_per_deal, (deal + 1) * self.jobs_per_deal)


# --- finished games: the typed record, and the journal on disk --------------------------------
@dataclass(frozen=True)
class GameResult:
    """One finished game of a tournament, as the statistics read it. Built once from its
    journal line (`from_line`), where its places are computed; the line itself is kept,
    to be written back as it was read."""

    game: int
    deal_index: int
    labels: tuple[str, ...]  # agent label per seat
    scores: tuple[int, ...]  # minutes per seat; empty for a void game
    places: tuple[int, ...]  # per seat, 0 = first; a forfeiting seat last (stats.effective_ranking)
    rewards: tuple[float, ...]
    team: bool
    forfeit: int | None  # the seat that forfeited
    forfeit_reason: str | None  # why (agents.play.FORFEIT_REASONS); "error" in journals older than reasons
    error: str | None
    table: int | None
    deal_seed: int | None
    moves: int | None
    line: dict = field(compare=False, repr=False)  # the journal's line

    @classmethod
    def from_line(cls, line: dict, team: bool) -> "GameResult":
        forfeit = line.get("forfeit")
        return cls(game=int(line["game"]), deal_index=int(line["deal_index"]), labels=tuple(line["labels"]),
                   scores=tuple(line["scores"]) if line.get("ranking") else (),
                   places=tuple(effective_ranking(line.get("ranking") or [], forfeit, team)),
                   rewards=tuple(line.get("rewards") or ()), team=team, forfeit=forfeit,
                   forfeit_reason=None if forfeit is None else line.get("forfeit_reason") or "error",
                   error=line.get("error"), table=line.get("table"), deal_seed=line.get("deal_seed"),
                   moves=line.get("moves"), line=line)

    @property
    def void(self) -> bool:
        """No result: the game could not be set up (its error says why)."""
        return not self.places

    def sides(self, seating: Sequence[int] | None = None) -> list[tuple]:
        """(agent, minutes, place) of each side (a seat, or a team of two seats); the
        agent is its index in `seating`, else its label."""
        return game_sides(self.labels if seating is None else seating, self.scores, self.places, self.team)

    def winner(self) -> str:
        """Label of the side alone in first place; "draw" if first is shared; "void"."""
        if self.void:
            return "void"
        first = [label for label, _, place in self.sides() if place == 0]
        return first[0] if len(first) == 1 else "draw"


class Journal:
    """games.jsonl: one JSON record per finished game, appended and flushed as each game
    ends, so an interrupted run loses nothing and a rerun resumes from it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._file = None

    def load(self) -> dict[int, dict]:
        """The records on disk by game id. A torn last line (a kill mid-write) is dropped
        and the file rewritten without it, so appends stay valid JSONL."""
        if not self.path.exists():
            return {}
        records: dict[int, dict] = {}
        torn = False
        with self.path.open() as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    records[int(rec["game"])] = rec
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    torn = True
        if torn:
            self.rewrite(records.values())
        return records

    def append(self, record: dict) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a")
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._file.flush()

    def rewrite(self, records: Iterable[dict]) -> None:
        """Replace the file atomically with `records` sorted by game id."""
        self.close()
        write_lines(self.path, sorted(records, key=lambda r: r["game"]))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def write_lines(path: Path, records: Iterable[dict]) -> None:
    """Replace `path` (a .jsonl file) atomically with one JSON line per record."""
    atomic_write_text(path, "".join(json.dumps(record, separators=(",", ":")) + "\n" for record in records))


# --- the loop ------------------------------------------------------------------------------
class SprtStop:
    """Feeds whole duplicate sets, in deal order, to a sequential test of agent 0 vs 1.

    Deals are fed only once all their games are in, in order, so the stopping deal does
    not depend on which worker finished first.
    """

    def __init__(self, schedule: Schedule, test: Sprt):
        self.schedule, self.test = schedule, test
        self.next_deal = 0
        self.stop_deal: int | None = None  # last deal used once decided

    def update(self, done: dict[int, GameResult]) -> bool:
        while self.stop_deal is None and self.next_deal < self.schedule.num_deals:
            jobs = self.schedule.deal_jobs(self.next_deal)
            if not all(j in done for j in jobs):
                break
            score = deal_score(self.schedule, [done[j] for j in jobs])
            if score is not None and self.test.feed(score) is not None:
                self.stop_deal = self.next_deal
            self.next_deal += 1
        return self.stop_deal is not None


def deal_score(schedule: Schedule, games: list[GameResult]) -> float | None:
    """Mean score of agent 0 against agent 1 over one duplicate set (None if no result)."""
    points = []
    for game in games:
        if game.void:
            continue
        for (ai, _, pi), (aj, _, pj) in itertools.combinations(game.sides(schedule.locate(game.game)[1].seating), 2):
            if {ai, aj} == {0, 1}:
                s = 1.0 if pi < pj else 0.0 if pi > pj else 0.5
                points.append(s if ai == 0 else 1.0 - s)
    return float(np.mean(points)) if points else None


def annotate(schedule: Schedule, labels: list[str], record: dict, save_moves: bool) -> dict:
    """The journal form of an executor record: where it sits in the schedule, who played."""
    deal, slot = schedule.locate(record["game"])
    out = {"game": record["game"], "deal_index": deal, "table": slot.table,
           "labels": [labels[a] for a in slot.seating]}
    out.update(record)
    if not save_moves:
        out.pop("deal", None)
        out.pop("actions", None)
    out["moves"] = len(record.get("actions", ()))
    return out


def play_tournament(schedule: Schedule, executor_factory: Callable[[int], Executor], journal: Journal,
                    labels: list[str], save_moves: bool = False, sprt: Sprt | None = None,
                    progress: bool = True) -> tuple[list[GameResult], SprtStop | None]:
    """Play every job of `schedule` not yet in `journal`; return the games that count
    (sorted by game id; with an SPRT, the whole duplicate sets up to its decision)."""
    from .progress import progress_bar

    done = {j: GameResult.from_line(line, schedule.team) for j, line in journal.load().items()}
    stop = SprtStop(schedule, sprt) if sprt is not None else None
    todo = [j for j in range(schedule.num_jobs) if j not in done]
    stopped = stop.update(done) if stop else False
    resumed = schedule.num_jobs - len(todo)
    if todo and not stopped:
        bar = progress_bar(total=schedule.num_jobs, initial=resumed, unit="game", dynamic_ncols=True,
                           desc="games", disable=not progress, smoothing=0.05)
        try:
            with executor_factory(len(todo)) as executor:
                for record in executor.map_jobs(schedule.job(j) for j in todo):
                    line = annotate(schedule, labels, record, save_moves)
                    journal.append(line)
                    game = GameResult.from_line(line, schedule.team)
                    done[game.game] = game
                    bar.update(1)
                    if game.error:
                        what = ("void" if game.forfeit is None
                                else f"seat {game.forfeit} forfeits ({game.forfeit_reason})")
                        bar.write(f"game {game.game}: {what}: {game.error.splitlines()[0][:150]}")
                    if stop and stop.update(done):
                        bar.set_postfix_str(f"SPRT {stop.test.result.decision} LLR={stop.test.result.llr:.2f}")
                        break
        finally:
            bar.close()
            # sorted by game id: the same file however it was played
            journal.rewrite(game.line for game in done.values())
    last = schedule.num_jobs if stop is None or stop.stop_deal is None else \
        (stop.stop_deal + 1) * schedule.jobs_per_deal
    counted = [done[j] for j in range(last) if j in done]
    return counted, stop
