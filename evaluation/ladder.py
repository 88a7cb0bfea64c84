"""The Elo ladder of a self-play run: each generation rated against earlier ones and fixed anchors.

After generation g is made, `Ladder.add_generation(g, spec, wall_s)` plays duplicate-deal
matches of g against the previous K generations and every anchor, then rates every
player of the ladder together and writes the run's headline picture:

* ``run_dir/ladder_games.jsonl``: the journal, the one source of truth. Line 1 holds the
  ladder's settings; each generation has a header line (its spec, wall-clock seconds and
  opponents) followed by its games, each appended and flushed as it ends. A kill loses
  nothing finished, and calling `add_generation` again for the same generation plays only
  the games still missing.
* ``run_dir/ladder.json`` and ``run_dir/ladder.png``: rebuilt from the journal after every
  generation (``python evaluate.py ladder RUN_DIR`` does it by hand).

A generation is a typed agent (`agents.search.mcts.GuidedSearch`, an `agents.AgentRecipe`),
recorded in the journal as the spec a user would type and parsed once when read back
(the file's edge); anchors are agent specs (``greedy``, ``ismcts:time=0.01``...), parsed
when the ladder opens. Generations are labelled ``gen<g>``, anchors by their spec.

Matches reuse the tournament: a `Schedule` of the two agents (every seating of each deal,
3-4 players: every mix of the two at the table), its seeds and game loop, and the process
executor with its time limits. Every match of a ladder uses the same master seed, so deal
d is the same deal in all of them: the deal is the bootstrap unit across the whole ladder.

Ratings: one Bradley-Terry fit over all ladder games (the pairwise outcomes of
evaluation.stats, so 3-4 player games count every pair of seats held by different
players), on the Elo scale with the first anchor pinned at 0 (no anchors: the first
generation). 95% intervals: the percentile bootstrap over deals of evaluation.report (a
pair where one side won every game is redrawn from the fitted model).
"""

from __future__ import annotations

import itertools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Sequence

import numpy as np

from engine.extras import optional, require
from engine.files import atomic_write
from agents.base import AgentRecipe, is_typed, parse_agent, typed_agent

from .config import EvalConfig
from .executor import Executor
from .ratings import bradley_terry
from .report import resample_sweeps, rounded, write_json
from .run import check_agents, make_executor
from .stats import deal_bootstrap_weights, pairwise, per_deal, percentile_interval
from .tournament import GameResult, Journal, Schedule, play_tournament, write_lines

GAMES_FILE = "ladder_games.jsonl"
JSON_FILE = "ladder.json"
PLOT_FILE = "ladder.png"
# Settings that decide which games a ladder plays and how they are rated: a ladder reopened
# on the same run directory must repeat them (games_per_pair and previous may change; each
# generation's header keeps the values it was played with).
IDENTITY = ("players", "team", "seed", "anchors", "bootstrap", "prior_draws")


def generation_label(generation: int) -> str:
    return f"gen{generation}"


# --- the journal on disk ---------------------------------------------------------------------
@dataclass
class LadderGames:
    """The content of ladder_games.jsonl: settings, generation headers (in order), games."""

    settings: dict | None = None
    generations: list[dict] = field(default_factory=list)
    games: list[dict] = field(default_factory=list)
    torn: bool = False  # the file ended in a half-written line (dropped)

    def header(self, generation: int) -> dict | None:
        return next((h for h in self.generations if h["generation"] == generation), None)

    def player(self, generation: int):
        """A generation's agent (`agents.AgentRecipe`), parsed from its header's spec: the
        journal file is this spec's edge."""
        return parse_agent(self.header(generation)["spec"])

    def labels(self) -> list[str]:
        """Every player: the anchors, then the generations in order."""
        anchors = list(self.settings["anchors"]) if self.settings else []
        return anchors + [generation_label(h["generation"]) for h in self.generations]

    def lines(self) -> list[dict]:
        """Every record in the canonical order: settings, then each generation's header
        and its games by opponent and game id (the same file however the games were played)."""
        out = [self.settings] if self.settings else []
        for head in self.generations:
            order = {label: n for n, label in enumerate(head["opponents"])}
            games = [r for r in self.games if r["generation"] == head["generation"]]
            out += [head] + sorted(games, key=lambda r: (order[r["opponent"]], r["game"]))
        return out


def load_ladder_games(path: str | os.PathLike) -> LadderGames:
    """Read a ladder journal (or the run directory holding it). A half-written last line
    (a kill mid-write) is dropped; any other line that is not a ladder record raises
    ValueError naming the file and line."""
    path = Path(path)
    path = path / GAMES_FILE if path.is_dir() or path.suffix != ".jsonl" else path
    if not path.is_file():
        raise ValueError(f"no ladder journal at {path}")
    text = path.read_text()
    lines = text.split("\n")
    data, seen = LadderGames(), set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        last_unfinished = number == len(lines)  # no newline after it: possibly torn
        try:
            record = json.loads(line)
            _add_record(data, record, seen)
        except (json.JSONDecodeError, ValueError, KeyError, TypeError) as exc:
            if last_unfinished and isinstance(exc, json.JSONDecodeError):
                data.torn = True
                continue
            why = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"{path}, line {number}: not a valid ladder record ({why}); "
                             "repair or delete that line") from None
    return data


def _add_record(data: LadderGames, record: dict, seen: set) -> None:
    """Check one journal record against those before it and add it to `data`."""
    if not isinstance(record, dict):
        raise TypeError(f"expected a JSON object, got {type(record).__name__}")
    kind = record.get("kind")
    if (data.settings is None) != (kind == "ladder"):
        raise ValueError("the settings (kind 'ladder') must be the first record, and only that one")
    if kind == "ladder":
        _ = [record[k] for k in IDENTITY]
        data.settings = record
    elif kind == "generation":
        _check_header(data, record)
        data.generations.append(record)
    elif kind == "game":
        _check_game(data, record, seen)
        data.games.append(record)
    else:
        raise ValueError(f"unknown record kind {kind!r}")


def _check_header(data: LadderGames, record: dict) -> None:
    g = record["generation"]
    if isinstance(g, bool) or not isinstance(g, int) or g < 0:
        raise ValueError(f"bad generation number {g!r}")
    if data.generations and g <= data.generations[-1]["generation"]:
        raise ValueError(f"generation {g} after generation {data.generations[-1]['generation']}")
    _ = (str(record["spec"]), float(record["wall_s"]), list(record["opponents"]), int(record["games_per_pair"]))


def _check_game(data: LadderGames, record: dict, seen: set) -> None:
    g, opponent = record["generation"], record["opponent"]
    head = data.header(g)
    if head is None or opponent not in head["opponents"]:
        raise ValueError(f"a game of generation {g!r} against {opponent!r}, which no generation header above "
                         "it plays")
    key = (g, opponent, int(record["game"]))
    if key in seen:
        raise ValueError(f"game {key[2]} of generation {g} against {opponent} appears twice")
    int(record["deal_index"])
    labels, scores, ranking = list(record["labels"]), list(record["scores"]), list(record["ranking"])
    if not set(labels) <= {generation_label(g), opponent}:
        raise ValueError(f"players {labels} in a game of {generation_label(g)} against {opponent}")
    if ranking and not len(labels) == len(scores) == len(ranking):
        raise ValueError("labels, scores and ranking differ in length")
    seen.add(key)


# --- ratings ---------------------------------------------------------------------------------
@dataclass
class LadderFit:
    """Bradley-Terry Elo of every player that has a finished game, with the bootstrap."""

    labels: list[str]  # every player of the ladder
    elo: np.ndarray  # (K,) Elo, NaN for a player without finished games
    boot: np.ndarray  # (B, K) Elo per bootstrap resample (NaN where a resample split the players)
    games: np.ndarray  # (K,) finished games each player sat in
    pinned: str | None  # the player at 0 Elo
    deals: int

    def index(self, player: int | str) -> int:
        """A player by label (``gen3``, ``greedy``) or generation number (3)."""
        label = generation_label(player) if isinstance(player, (int, np.integer)) and not isinstance(player, bool) \
            else player
        if label not in self.labels:
            raise ValueError(f"no player {label!r} in the ladder; players: {', '.join(self.labels)}")
        return self.labels.index(label)

    def interval(self, i: int) -> tuple[float, float]:
        lo, hi = percentile_interval(self.boot[:, i]) if len(self.boot) else (self.elo[i], self.elo[i])
        return float(lo), float(hi)

    def difference(self, a: int | str, b: int | str) -> tuple[float, float, float]:
        """Elo of a minus Elo of b, with its 95% bootstrap interval (both from the same resamples)."""
        i, j = self.index(a), self.index(b)
        diff = float(self.elo[i] - self.elo[j])
        if not len(self.boot):
            return diff, diff, diff
        lo, hi = percentile_interval(self.boot[:, i] - self.boot[:, j])
        return diff, float(lo), float(hi)


def fit_ladder(games: Sequence[dict], labels: Sequence[str], team: bool, pin: str | None = None,
               bootstrap: int = 1000, prior_draws: float = 1.0, seed: int = 0) -> LadderFit:
    """One Bradley-Terry fit over all `games` (journal records) between `labels`, with
    `pin` at 0 Elo (None or without games: the first player that has games)."""
    labels = list(labels)
    valid = [game for game in (GameResult.from_line(r, team) for r in games) if not game.void]
    unknown = {label for r in valid for label in r.labels} - set(labels)
    if unknown:
        raise ValueError(f"games name players that are not in the ladder: {sorted(unknown)}")
    played = [label for label in labels if any(label in r.labels for r in valid)]
    k, full = len(played), len(labels)
    games_n = np.array([sum(label in r.labels for r in valid) for label in labels], dtype=np.int64)
    if k < 2:
        return LadderFit(labels, np.full(full, np.nan), np.zeros((0, full)), games_n, None, 0)
    pin = pin if pin in played else played[0]
    at = {label: n for n, label in enumerate(played)}
    deals = sorted({r.deal_index for r in valid})
    deal_pos = {d: n for n, d in enumerate(deals)}
    rows = pairwise((deal_pos[r.deal_index], [at[label] for label in r.labels], r.scores, r.places, team)
                    for r in valid)
    per = per_deal(rows, k, len(deals))
    total = per.total()
    elo = bradley_terry(total.points, prior_draws, at[pin])
    boot = np.zeros((0, k))
    if bootstrap:
        resampled = per.total(deal_bootstrap_weights(len(deals), bootstrap, seed))
        boot = np.array([_fit_or_nan(p, prior_draws, at[pin])
                         for p in resample_sweeps(resampled, total, elo, seed)])
    spread = [labels.index(label) for label in played]
    elo_full = np.full(full, np.nan)
    elo_full[spread] = elo
    boot_full = np.full((len(boot), full), np.nan)
    boot_full[:, spread] = boot
    return LadderFit(labels, elo_full, boot_full, games_n, pin, len(deals))


def _fit_or_nan(points: np.ndarray, prior_draws: float, pin: int) -> np.ndarray:
    """A resample that drops every deal linking two groups of players has no joint scale."""
    try:
        return bradley_terry(points, prior_draws, pin)
    except ValueError:
        return np.full(points.shape[0], np.nan)


def _fit_journal(data: LadderGames) -> LadderFit:
    if data.settings is None:
        raise ValueError("the ladder journal is empty: no settings, no games")
    s = data.settings
    pin = s["anchors"][0] if s["anchors"] else (generation_label(data.generations[0]["generation"])
                                               if data.generations else None)
    return fit_ladder(data.games, data.labels(), s["team"], pin, s["bootstrap"], s["prior_draws"], s["seed"])


def _as_games(ladder_games) -> LadderGames:
    if isinstance(ladder_games, LadderGames):
        return ladder_games
    if isinstance(ladder_games, (str, os.PathLike)):
        return load_ladder_games(ladder_games)
    raise TypeError(f"ladder_games must be a run directory, a ladder_games.jsonl path or LadderGames, "
                    f"got {type(ladder_games).__name__}")


def elo_difference(ladder_games, a: int | str, b: int | str) -> tuple[float, float, float]:
    """(Elo of a - Elo of b, 95% low, 95% high) from one fit over all ladder games, the
    interval from the deal bootstrap of the difference itself. `ladder_games`: a run
    directory, its ladder_games.jsonl, or a LadderGames; a player: a generation number
    or a label (``gen3``, an anchor's spec)."""
    return _fit_journal(_as_games(ladder_games)).difference(a, b)


def significant_drops(ladder_games, fit: LadderFit | None = None) -> list[dict]:
    """Every generation whose Elo is below its predecessor's (the previous generation with
    games) with the whole 95% interval of the difference below 0."""
    data = _as_games(ladder_games)
    fit = fit or _fit_journal(data)
    rated = [h["generation"] for h in data.generations if np.isfinite(fit.elo[fit.index(h["generation"])])]
    drops = []
    for before, after in itertools.pairwise(rated):
        diff, lo, hi = fit.difference(after, before)
        if hi < 0:
            drops.append({"generation": after, "previous": before, "elo": rounded(diff, 1),
                          "ci95": [rounded(lo, 1), rounded(hi, 1)]})
    return drops


# --- ladder.json and ladder.png -----------------------------------------------------------------
def summarize(data: LadderGames, fit: LadderFit) -> dict:
    """The content of ladder.json."""
    s = data.settings

    def entry(label: str) -> dict:
        i = fit.index(label)
        lo, hi = fit.interval(i) if np.isfinite(fit.elo[i]) else (None, None)
        return {"elo": rounded(fit.elo[i], 1), "elo_ci95": [rounded(lo, 1), rounded(hi, 1)], "games": int(fit.games[i])}

    generations = [dict({"generation": h["generation"], "spec": h["spec"]}, **entry(generation_label(h["generation"])),
                        wall_s=h["wall_s"]) for h in data.generations]
    rated = [g for g in generations if g["elo"] is not None]
    progress = None
    if len(rated) >= 2:
        diff, lo, hi = fit.difference(rated[-1]["generation"], rated[0]["generation"])
        progress = {"first": rated[0]["generation"], "last": rated[-1]["generation"], "elo": rounded(diff, 1),
                    "ci95": [rounded(lo, 1), rounded(hi, 1)]}
    valid = sum(bool(r.get("ranking")) for r in data.games)
    return {
        "generations": generations,
        "anchors": {a: entry(a) for a in s["anchors"]},
        "scale": _scale_text(fit, s),
        "players": s["players"], "team": s["team"],
        "games": valid, "void_games": len(data.games) - valid, "deals": fit.deals,
        "last_minus_first": progress,
        "significant_drops": significant_drops(data, fit),
    }


def _scale_text(fit: LadderFit, settings: dict) -> str:
    if fit.pinned is None:
        return "no ratings yet: fewer than two players have finished games"
    why = ("the first anchor, a fixed agent, so a rating keeps its meaning as generations are added"
           if fit.pinned in settings["anchors"] else "the first generation (the ladder has no anchors)")
    return (f"{fit.pinned} = 0 Elo: {why}. Bradley-Terry maximum likelihood over every ladder game "
            f"(pairwise outcomes, a draw half a win, {settings['prior_draws']:g} virtual draw(s) per pair); "
            f"95% intervals: percentile bootstrap over deals ({settings['bootstrap']} resamples), a pair where "
            "one side won every game redrawn from the fitted model")


def plot_ladder(summary: dict, path: str | os.PathLike) -> Path:
    """Elo with 95% interval bars against generation (left) and wall-clock time (right),
    the anchors as horizontal lines; written to a temporary file, then moved into place."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    path = Path(path)
    gens = [g for g in summary["generations"] if g["elo"] is not None]
    elo = np.array([g["elo"] for g in gens], dtype=float)
    ci = np.array([[np.nan if x is None else x for x in g["elo_ci95"]] for g in gens], dtype=float).reshape(-1, 2)
    err = np.nan_to_num(np.abs(np.stack([elo - ci[:, 0], ci[:, 1] - elo]))) if gens else None
    hours = max((g["wall_s"] for g in gens), default=0.0) > 3 * 3600
    unit, per = ("hours", 3600.0) if hours else ("minutes", 60.0)
    fig = Figure(figsize=(12, 4.5))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    xs = ([g["generation"] for g in gens], [g["wall_s"] / per for g in gens])
    for ax, x, xlabel in zip(axes, xs, ("generation", f"wall-clock time ({unit})")):
        for n, (name, a) in enumerate(summary["anchors"].items()):
            if a["elo"] is not None:
                ax.axhline(a["elo"], color=f"C{n + 1}", lw=1, ls="--", label=f"{name} ({a['elo']:+.0f})")
        if gens:
            ax.errorbar(x, elo, yerr=err, fmt="o-", color="C0", capsize=4, label="generations")
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("Elo (95% interval)")
    axes[0].legend(fontsize=8, loc="best")
    fig.suptitle(f"Elo ladder, {summary['players']} players{' (teams)' if summary['team'] else ''}: "
                 f"{summary['games']} games; " + summary["scale"].split(":")[0])
    fig.tight_layout()
    atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=110))
    return path


def format_ladder(summary: dict) -> str:
    """The ladder as a terminal table."""
    rows = [f"  {'player':<10} {'spec':<34} {'Elo':>6}  {'95% CI':<16} {'games':>6} {'wall':>9}"]

    def cells(name, spec, e, wall):
        lo, hi = e["elo_ci95"]
        ci = "-" if lo is None else f"[{lo:+.0f}, {hi:+.0f}]"
        elo = "-" if e["elo"] is None else f"{e['elo']:+.0f}"
        return f"  {name:<10} {spec[:34]:<34} {elo:>6}  {ci:<16} {e['games']:>6} {wall:>9}"

    for name, e in summary["anchors"].items():
        rows.append(cells("anchor", name, e, ""))
    for g in summary["generations"]:
        rows.append(cells(generation_label(g["generation"]), g["spec"], g, f"{g['wall_s'] / 60:.1f} min"))
    rows.append(f"  scale: {summary['scale']}")
    p = summary.get("last_minus_first")
    if p:
        rows.append(f"  gen{p['last']} - gen{p['first']}: {p['elo']:+.0f} Elo, 95% CI "
                    f"[{p['ci95'][0]:+.0f}, {p['ci95'][1]:+.0f}]")
    for d in summary.get("significant_drops", []):
        rows.append(f"  significant drop: gen{d['generation']} - gen{d['previous']}: {d['elo']:+.0f} Elo, "
                    f"95% CI [{d['ci95'][0]:+.0f}, {d['ci95'][1]:+.0f}]")
    return "\n".join(rows)


def write_outputs(run_dir: Path, data: LadderGames) -> dict:
    """Refit and write ladder.json and ladder.png (each atomically); return the summary."""
    summary = summarize(data, _fit_journal(data))
    write_json(run_dir / JSON_FILE, summary)
    if optional("matplotlib", "the ladder's plot (ladder.png)"):
        plot_ladder(summary, run_dir / PLOT_FILE)
    return summary


def rebuild_ladder(run_dir: str | os.PathLike, plot_only: bool = False) -> dict:
    """`evaluate.py ladder RUN_DIR`: rewrite ladder.json and ladder.png from the journal
    (the journal is only read), or with `plot_only` redraw ladder.png from ladder.json."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"no such run directory: {run_dir}")
    if plot_only:
        path = run_dir / JSON_FILE
        try:
            summary = json.loads(path.read_text())
            _ = (summary["generations"], summary["anchors"], summary["scale"], summary["players"])
        except FileNotFoundError:
            raise ValueError(f"no {JSON_FILE} in {run_dir}: rebuild it without --plot-only") from None
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path} is not a ladder summary ({exc}); rebuild it without --plot-only") from None
        require("matplotlib", "the ladder's plot (--plot-only)")
        plot_ladder(summary, run_dir / PLOT_FILE)
        return summary
    return write_outputs(run_dir, load_ladder_games(run_dir))


# --- the ladder ------------------------------------------------------------------------------
class Ladder:
    """The Elo ladder of one run directory (see the module docstring).

    anchors: fixed agent specs every generation plays (the first is pinned at 0 Elo).
    players, team: the game. games_per_pair: games of each match, rounded up to whole
    duplicate sets (every seating of a deal). seed: master seed of every match's deals and
    agent seeds. workers: game processes (0 = all cores). previous: K, how many earlier
    generations each new one plays. move_time_limit, game_time_limit: as in evaluate.py
    (their defaults: `evaluation.config.EvalConfig.time_limits`). bootstrap,
    prior_draws: the ratings' resamples and virtual draws. imports: modules or .py files
    that register agents. executor, ray_address: where the matches' games run, as in
    evaluate.py (``"ray"``: on a Ray cluster). Reopening a run directory with other
    players, team, seed, anchors, bootstrap or prior_draws raises ValueError.
    """

    def __init__(self, run_dir: str | os.PathLike, anchors: Sequence[str], players: int = 2, team: bool = False,
                 games_per_pair: int = 100, seed: int = 0, workers: int = 0, previous: int = 2,
                 move_time_limit: float | None = None, game_time_limit: float | None = None,
                 bootstrap: int = 1000, prior_draws: float = 1.0, imports: Sequence[str] = (),
                 start_method: str = "spawn", progress: bool = False, executor: str = "process",
                 ray_address: str | None = None):
        if not isinstance(run_dir, (str, os.PathLike)):
            raise TypeError(f"run_dir must be a path, got {type(run_dir).__name__}")
        # spec strings are this public constructor's edge (parsed by the config's validation,
        # after its plugins load); typed anchors (a trainer's parsed config) are not parsed again
        specs = isinstance(anchors, (list, tuple)) and all(isinstance(a, str) and a.strip() for a in anchors)
        if not specs and not (isinstance(anchors, (list, tuple)) and all(map(is_typed, anchors))):
            raise ValueError(f"anchors must be a list of agent specs or one of typed agents, got {anchors!r}")
        lineup = None if specs else list(anchors)
        anchors = [str(a).strip() for a in anchors]
        if len(set(anchors)) != len(anchors):
            raise ValueError(f"anchors must be distinct, got {anchors!r}")
        previous = _count("previous", previous, 0)
        if not anchors and previous < 1:
            raise ValueError("a ladder without anchors needs previous >= 1, or generations never meet")
        # the tournament config checks the shared fields (types, ranges, specs, time limits)
        self._config = EvalConfig.from_dict(dict(
            agents=anchors, players=players, team=team, games=games_per_pair, seed=seed, workers=workers,
            bootstrap=bootstrap, prior_draws=prior_draws, imports=list(imports), start_method=start_method,
            move_time_limit=move_time_limit, game_time_limit=game_time_limit, progress=progress,
            executor=executor, ray_address=ray_address), "ladder")
        self._anchors = dict(zip(anchors, self._check_config(self._config, lineup)))
        self.run_dir, self.previous = Path(run_dir), previous
        cfg = self._config
        self.settings = {"kind": "ladder", "players": cfg.players, "team": cfg.team, "seed": cfg.seed,
                         "anchors": anchors, "bootstrap": cfg.bootstrap, "prior_draws": cfg.prior_draws}
        self.path = self.run_dir / GAMES_FILE
        self.data = LadderGames()
        if self.path.is_file():
            self.data = load_ladder_games(self.path)
            if self.data.settings is not None:
                self._check_same_ladder()
        self._journal = Journal(self.path)
        self._players = {}  # generation -> the typed agent add_generation was given

    @staticmethod
    def _check_config(cfg: EvalConfig, lineup: list | None = None) -> list:
        """The tournament's own checks (types, ranges, specs and their files, time limits),
        then every agent built once and seated: a bad one fails before any game. Returns
        the typed agents (`lineup`, or the config's specs parsed)."""
        size = len(cfg.agents)
        if size < 2:  # a tournament needs two agents; random stands in (it always builds)
            cfg = cfg.override(agents=cfg.agents + ["random"] * (2 - size))
            lineup = None if lineup is None else lineup + [AgentRecipe("random", "random")] * (2 - size)
        cfg.validate(lineup)
        check_agents(cfg)
        return cfg.lineup[:size]

    def _check_same_ladder(self) -> None:
        theirs = self.data.settings or {}
        diff = [k for k in IDENTITY if theirs.get(k) != self.settings[k]]
        if diff:
            what = ", ".join(f"{k}: {theirs.get(k)!r} there, {self.settings[k]!r} now" for k in diff)
            raise ValueError(f"{self.path} holds a different ladder ({what}); use another run directory")

    def _player(self, generation: int):
        """An earlier generation's typed agent: as this ladder was given it, or parsed from
        the journal's header (the file's edge: a generation added before a resume)."""
        return self._players[generation] if generation in self._players else self.data.player(generation)

    @property
    def generations(self) -> list[int]:
        """The generations in the ladder so far (the last may have games still to play)."""
        return [h["generation"] for h in self.data.generations]

    # --- adding a generation -------------------------------------------------------------
    def add_generation(self, generation: int, player, wall_s: float) -> dict:
        """Play generation `generation` (the typed agent `player`, made `wall_s` seconds into
        the run) against the previous K generations and every anchor, refit the ladder,
        write ladder.json and ladder.png, and return ladder.json's content. Called again
        for the last generation, it plays only the games still missing (its first call's
        wall_s is kept)."""
        head = self._header_for(generation, player, wall_s)
        self._players[generation] = player
        earlier = {generation_label(h["generation"]): h["generation"] for h in self.data.generations}
        opponents = {o: self._anchors[o] if o in self._anchors else self._player(earlier[o]) for o in head["opponents"]}
        cfg = self._config.override(agents=[head["spec"]] + [str(p) for p in opponents.values()],
                                    games=head["games_per_pair"])
        self._check_config(cfg, [player, *opponents.values()])
        self._start(head)
        matches = [(label, Schedule([player, opponent], cfg.players, cfg.games, cfg.seed, cfg.team))
                   for label, opponent in opponents.items()]
        todo = sum(s.num_jobs - len(_MatchJournal(self, head["generation"], o).load()) for o, s in matches)
        pool = _LentExecutor(lambda: make_executor(min(cfg.num_workers(), todo), cfg.imports, cfg.start_method,
                                                   cfg.time_limits(), cfg.executor, cfg.ray_address))
        try:
            for opponent, schedule in matches:
                play_tournament(schedule, lambda _: pool, _MatchJournal(self, head["generation"], opponent),
                                [generation_label(head["generation"]), opponent], progress=cfg.progress)
        finally:
            pool.shut()
            self._journal.close()
        return write_outputs(self.run_dir, self.data)

    def _header_for(self, generation, player, wall_s) -> dict:
        """The generation's header: the one on disk when resuming, else a new one."""
        generation = _count("generation", generation, 0)
        spec = str(typed_agent(player, "a generation"))
        if isinstance(wall_s, bool) or not isinstance(wall_s, (int, float)) or not math.isfinite(wall_s) \
                or wall_s < 0:
            raise ValueError(f"wall_s must be a finite number of seconds >= 0, got {wall_s!r}")
        last = self.data.generations[-1] if self.data.generations else None
        if last is not None and generation == last["generation"]:
            if spec != last["spec"]:
                raise ValueError(f"generation {generation} is in the ladder as {last['spec']!r}, not {spec!r}")
            return last
        if last is not None and generation < last["generation"]:
            raise ValueError(f"generation numbers must increase: got {generation} after {last['generation']}")
        if last is not None and wall_s < last["wall_s"]:
            raise ValueError(f"wall_s is the run's clock when the generation was made and cannot go back: "
                             f"{wall_s:g} s after {last['wall_s']:g} s for generation {last['generation']}")
        earlier = [generation_label(h["generation"]) for h in self.data.generations]
        return {"kind": "generation", "generation": generation, "spec": spec, "wall_s": float(wall_s),
                "games_per_pair": self._config.games,
                "opponents": earlier[len(earlier) - min(self.previous, len(earlier)):] + self.settings["anchors"]}

    def _start(self, head: dict) -> None:
        """Write the settings and the header before any game of the generation; drop a
        half-written last line first, so that appends continue a valid file."""
        new = head not in self.data.generations
        if self.data.settings is None:
            self.data.settings = dict(self.settings)
        if new:
            self.data.generations.append(head)
        if self.data.torn or not self.path.is_file():
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._rewrite()
        elif new:
            self._journal.append(head)

    def _rewrite(self) -> None:
        self._journal.close()  # its handle would point at the replaced file
        write_lines(self.path, self.data.lines())
        self.data.torn = False


class _MatchJournal:
    """What play_tournament needs of a journal, for one match inside the ladder's journal:
    the match's finished games by game id, appending one, and rewriting (the whole
    ladder journal, in canonical order)."""

    def __init__(self, ladder: Ladder, generation: int, opponent: str):
        self.ladder, self.generation, self.opponent = ladder, generation, opponent

    def load(self) -> dict[int, dict]:
        return {r["game"]: r for r in self.ladder.data.games
                if r["generation"] == self.generation and r["opponent"] == self.opponent}

    def append(self, record: dict) -> None:
        record = {"kind": "game", "generation": self.generation, "opponent": self.opponent, **record}
        self.ladder._journal.append(record)
        self.ladder.data.games.append(record)

    def rewrite(self, records) -> None:
        self.ladder._rewrite()


class _LentExecutor(Executor):
    """One executor lent to every match of a generation (workers start once, not per
    match): the matches' `close` does nothing, `shut` stops it. Started on first use."""

    def __init__(self, start):
        self._start, self._inner = start, None

    def map_jobs(self, jobs):
        if self._inner is None:
            self._inner = self._start()
        return self._inner.map_jobs(jobs)

    def close(self) -> None:
        pass

    def shut(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None


def _count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)
