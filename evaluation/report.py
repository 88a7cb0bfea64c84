"""From game records to results: results.json, games.csv and the terminal table."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from engine.files import atomic_write_text

from .ratings import bradley_terry, openskill_ratings
from .stats import (deal_bootstrap_weights, likelihood_of_superiority, pairwise, per_deal, percentile_interval,
                    safe_ratio, score_to_elo, wilson_interval)
from .tournament import GameResult, Schedule

RESULTS_VERSION = 1


def rounded(x, nd: int = 4):
    """Round for JSON; None and NaN become None, -0.0 becomes 0.0."""
    if x is None:
        return None
    x = float(x)
    return None if not np.isfinite(x) else round(x, nd) + 0.0


def analyze(records: Sequence[GameResult], schedule: Schedule, labels: list[str], *, bootstrap: int = 1000,
            anchor: int | None = 0, prior_draws: float = 1.0, seed: int = 0) -> dict:
    """All statistics of a finished (or partial) tournament, as a JSON-ready dict."""
    k = len(labels)
    valid = [r for r in records if not r.void]
    seatings = {r.game: schedule.locate(r.game)[1].seating for r in records}
    deals = sorted({r.deal_index for r in valid})
    deal_pos = {d: i for i, d in enumerate(deals)}
    nd = len(deals)

    def per_deal_of(games: Sequence[GameResult]):
        """Per-deal pairwise sums (`stats.PerDeal`) over some of the valid games."""
        return per_deal(pairwise((deal_pos[r.deal_index], seatings[r.game], r.scores, r.places, schedule.team)
                                 for r in games), k, nd)

    pd = per_deal_of(valid)
    tot = pd.total()

    # per-agent minutes per seat, per deal (for the bootstrap)
    seat_min = np.zeros((nd, k))
    seat_n = np.zeros((nd, k))
    for r in valid:
        for a, m in zip(seatings[r.game], r.scores):
            seat_min[deal_pos[r.deal_index], a] += m
            seat_n[deal_pos[r.deal_index], a] += 1

    weights = deal_bootstrap_weights(nd, bootstrap, seed) if bootstrap and nd else None
    boot = pd.total(weights) if weights is not None else None

    # ratings
    elo = bradley_terry(tot.points, prior_draws, anchor) if nd else np.zeros(k)
    if boot is not None:
        points_b = resample_sweeps(boot, tot, elo, seed)
        elo_b = np.array([bradley_terry(p, prior_draws, anchor) for p in points_b])
        elo_ci = percentile_interval(elo_b)
    else:
        elo_ci = np.stack([elo, elo], -1)
    games_a = tot.games.sum(1)
    score_a = safe_ratio(tot.points.sum(1), games_a)
    minutes = safe_ratio(seat_min.sum(0), seat_n.sum(0))
    minutes_ci = (percentile_interval(safe_ratio(weights @ seat_min, weights @ seat_n))
                  if weights is not None else np.stack([minutes, minutes], -1))
    forfeits = np.zeros(k, dtype=int)
    reasons: list[dict[str, int]] = [{} for _ in range(k)]
    for r in valid:
        if r.forfeit is not None:
            a = seatings[r.game][r.forfeit]
            forfeits[a] += 1
            reasons[a][r.forfeit_reason] = reasons[a].get(r.forfeit_reason, 0) + 1
    ratings = {}
    for i in np.argsort(-elo, kind="stable"):
        ratings[labels[i]] = {"value": rounded(elo[i], 1), "ci95": [rounded(elo_ci[i, 0], 1), rounded(elo_ci[i, 1], 1)],
                              "games": int(sum(seat_n[:, i])), "score": rounded(score_a[i]),
                              "mean_minutes": rounded(minutes[i], 2),
                              "mean_minutes_ci95": [rounded(minutes_ci[i, 0], 2), rounded(minutes_ci[i, 1], 2)],
                              "forfeits": int(forfeits[i]), "forfeit_reasons": dict(sorted(reasons[i].items()))}

    # pairs
    pairs = {}
    if boot is not None:
        wr_ci = percentile_interval(safe_ratio(boot.points, boot.games))
        mg_ci = percentile_interval(safe_ratio(boot.margin, boot.games))
    for i in range(k):
        for j in range(k):
            n = tot.games[i, j]
            if i == j or n == 0:
                continue
            wins, draws = int(tot.wins[i, j]), int(tot.draws[i, j])
            wr, mg = tot.points[i, j] / n, tot.margin[i, j] / n
            swept = wins == n or wins + draws == 0  # one side won every game
            pairs[f"{labels[i]} vs {labels[j]}"] = {
                "agent": labels[i], "opponent": labels[j], "games": int(n),
                "wins": wins, "draws": draws, "losses": int(n) - wins - draws,
                "win_rate": rounded(wr),
                # a sweep does not vary under the deal bootstrap: use Wilson there
                "win_rate_ci95": ([rounded(wr_ci[i, j, 0]), rounded(wr_ci[i, j, 1])] if boot is not None and not swept
                                  else [rounded(x) for x in wilson_interval(tot.points[i, j], n)]),
                "win_rate_ci95_wilson": [rounded(x) for x in wilson_interval(tot.points[i, j], n)],
                "los": rounded(likelihood_of_superiority(wins, int(n) - wins - draws)),
                "mean_margin": rounded(mg, 2),
                "margin_ci95": ([rounded(mg_ci[i, j, 0], 2), rounded(mg_ci[i, j, 1], 2)] if boot is not None
                                else [rounded(mg, 2)] * 2),
                "mean_minutes": [rounded(tot.minutes[i, j] / n, 2), rounded(tot.minutes[j, i] / n, 2)],
                # one side won every game: the Elo gap is then set by prior_draws, and the data
                # only bound it from below (elo_gap_min: from the Wilson lower bound)
                "separated": bool(swept),
                "elo_gap_min": (rounded(score_to_elo(wilson_interval(tot.points[i, j], n)[0]), 1)
                                if wins == n else None),
            }

    tables = osk = None
    paired = paired_differences(tot, boot, labels)
    if schedule.players > 2 and not schedule.team:
        tables = table_scores(valid, schedule.tables, labels, per_deal_of, weights)
        fit = openskill_ratings(((seatings[r.game], r.places) for r in valid), k)
        if fit is not None:
            osk = {labels[i]: {kk: rounded(v, 3) for kk, v in fit[i].items()} for i in range(k)}
    return {
        "version": RESULTS_VERSION,
        "agents": [str(agent) for agent in schedule.lineup],
        "labels": list(labels),
        "players": schedule.players,
        "team": schedule.team,
        "games": len(valid),
        "void_games": len(records) - len(valid),
        "deals": nd,
        "schedule": {"tables": [[labels[a] for a in t] for t in schedule.tables],
                     "seatings_per_table": schedule.seatings_per_table,
                     "games_per_deal": schedule.jobs_per_deal, "deals_planned": schedule.num_deals},
        "rating_method": {
            "model": "bradley-terry maximum likelihood on all pairwise results (draws = half a win)",
            "scale": "elo (400 * log10 odds)",
            "anchor": "mean of all agents = 0" if anchor is None else f"{labels[anchor]} = 0",
            "prior_draws": prior_draws,
            "ci95": (f"percentile bootstrap over deals ({bootstrap} resamples); a pair where one side won every "
                     "game is redrawn from the fitted model" if boot is not None else "none"),
        },
        "ratings": ratings,
        "pairs": pairs,
        "paired": paired,
        "tables": tables,
        "openskill": osk,
    }


def paired_differences(tot, boot, labels: list[str]) -> list[dict]:
    """Two agents compared through a common opponent, deal by deal: for each opponent o
    and each two other agents x, y that played it, x's score against o minus y's, with a
    95% interval from the deal bootstrap. Both scores are taken on the same resampled
    deals, so what the deals share (the tiles, who starts) cancels: the interval is the
    paired one, much narrower than two separate intervals when the agents are alike.
    `tot` and `boot` are `analyze`'s totals (K, K) and bootstrap totals (B, K, K)."""
    k = len(labels)
    rate = safe_ratio(tot.points, tot.games)
    rates = safe_ratio(boot.points, boot.games) if boot is not None else None
    out = []
    for o in range(k):
        played = [a for a in range(k) if a != o and tot.games[a, o] > 0]
        for x, y in itertools.combinations(played, 2):
            difference = rate[x, o] - rate[y, o]
            lo, hi = (percentile_interval(rates[:, x, o] - rates[:, y, o]) if rates is not None
                      else (difference, difference))
            out.append({"agents": [labels[x], labels[y]], "opponent": labels[o],
                        "scores": [rounded(rate[x, o]), rounded(rate[y, o])], "difference": rounded(difference),
                        "difference_ci95": [rounded(lo), rounded(hi)]})
    return out


PAIRED_ROWS_SHOWN = 12  # more (5 agents and up) are in results.json only


def table_scores(valid: Sequence[GameResult], tables: Sequence[tuple[int, ...]], labels: list[str], per_deal_of,
                 weights: np.ndarray | None) -> list[dict]:
    """3-4 players: for each table (a mix such as A B B B), each agent's mean pairwise
    score against the seats of *other* agents at that table, over the games of that table
    only, with a bootstrap interval over deals. "One search agent against three ismcts
    seats" is the A B B B table's score of A, which the all-tables pair figure mixes with
    the A A B B and A A A B tables. `per_deal_of(games)` aggregates games as `analyze` does."""
    out = []
    for t, table in enumerate(tables):
        games = [r for r in valid if r.table == t]
        pd = per_deal_of(games)
        tot = pd.total()
        boot = pd.total(weights) if weights is not None else None
        agents = {}
        for a in sorted(set(table)):
            n = tot.games[a].sum()
            if n == 0:
                continue
            score, margin = tot.points[a].sum() / n, tot.margin[a].sum() / n
            if boot is None:
                (lo, hi), (mlo, mhi) = (score, score), (margin, margin)
            else:  # one agent's sums against everyone, per resample
                n_b = boot.games[:, a].sum(-1)
                lo, hi = percentile_interval(safe_ratio(boot.points[:, a].sum(-1), n_b))
                mlo, mhi = percentile_interval(safe_ratio(boot.margin[:, a].sum(-1), n_b))
            agents[labels[a]] = {"num_seats": table.count(a), "comparisons": int(n), "score": rounded(score),
                                 "score_ci95": [rounded(lo), rounded(hi)], "mean_margin": rounded(margin, 2),
                                 "margin_ci95": [rounded(mlo, 2), rounded(mhi, 2)]}
        out.append({"seats": [labels[a] for a in table], "games": len(games), "agents": agents})
    return out


def resample_sweeps(boot, tot, elo: np.ndarray, seed: int) -> np.ndarray:
    """Bootstrap crosstables (B, K, K) where every pair in which one side won all games
    (a sweep) is redrawn from the fitted model: Binomial(games, P(win) of the fitted
    ratings). Resampling deals cannot vary a sweep (every resample is a sweep again, so
    the interval would have zero width); the fitted model, kept finite by the prior
    draws, can. Other pairs keep the deal bootstrap."""
    points = boot.points.copy()
    swept = (tot.games > 0) & (tot.points == tot.games)  # i won every game against j
    if not swept.any():
        return points
    rng = np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(0x5EEB,)))
    p_win = 1.0 / (1.0 + 10.0 ** ((elo[None, :] - elo[:, None]) / 400.0))
    for i, j in zip(*np.nonzero(swept)):
        games = np.rint(boot.games[:, i, j]).astype(np.int64)
        wins = rng.binomial(games, p_win[i, j])
        points[:, i, j], points[:, j, i] = wins, games - wins
    return points


# --- games.csv -------------------------------------------------------------------------------
def write_games_csv(path: Path, records: Sequence[GameResult], players: int) -> None:
    """One row per game, sorted by game id (identical whatever the worker count).
    rank<s>: place of seat s, 0 = first (a forfeiting seat is last)."""
    head = (["game", "deal", "deal_seed", "table"] + [f"seat{s}" for s in range(players)]
            + [f"score{s}" for s in range(players)] + [f"rank{s}" for s in range(players)]
            + ["winner", "moves", "forfeit", "forfeit_reason", "error"])
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(head)
    for r in sorted(records, key=lambda r: r.game):
        w.writerow([r.game, r.deal_index, r.deal_seed, r.table, *r.labels, *(r.scores or [""] * players),
                    *(r.places or [""] * players), r.winner(), "" if r.moves is None else r.moves,
                    "" if r.forfeit is None else r.forfeit, r.forfeit_reason or "",
                    r.error.splitlines()[0] if r.error else ""])
    atomic_write_text(path, f.getvalue())


# --- terminal ---------------------------------------------------------------------------------
def _table(rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.rjust(widths[c]) if c in right else cell.ljust(widths[c]) for c, cell in enumerate(row)]
        lines.append("  " + "  ".join(cells).rstrip())
        if n == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _f(x, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def format_results(res: dict, sprt: dict | None = None) -> str:
    """The human summary printed at the end of a run."""
    sched = res["schedule"]
    out = [f"{len(res['agents'])} agents, {res['players']} players{' (teams)' if res['team'] else ''}: "
           f"{len(sched['tables'])} table(s) x {sched['seatings_per_table']} seating(s) x {res['deals']} deal(s)"
           f" = {res['games']} games" + (f", {res['void_games']} void" if res["void_games"] else "")]
    m = res["rating_method"]
    out.append(f"\nRatings: Bradley-Terry Elo, {m['anchor']}; 95% CI: {m['ci95']}")
    rows = [["#", "agent", "Elo", "95% CI", "games", "score", "mean game score", "forfeits"]]
    for n, (label, r) in enumerate(res["ratings"].items(), 1):
        lo, hi = r["ci95"]
        rows.append([str(n), label, _f(r["value"], "+.0f"), f"[{_f(lo, '+.0f')}, {_f(hi, '+.0f')}]",
                     str(r["games"]), _f(r["score"], ".3f"), _f(r["mean_minutes"], ".1f"), str(r["forfeits"])])
    out.append(_table(rows, right={0, 2, 4, 5, 6, 7}))
    why = [f"{label} {r['forfeits']} ({', '.join(f'{k} {v}' for k, v in r.get('forfeit_reasons', {}).items())})"
           for label, r in res["ratings"].items() if r["forfeits"]]
    if why:
        out.append("  forfeits (the seat ranks last): " + "; ".join(why))
    out.append("\nPairs (first agent's view; win rate counts a draw as half; CI: bootstrap over deals)")
    rows = [["agent", "opponent", "games", "W", "D", "L", "win rate", "95% CI", "margin", "95% CI", "mean game scores"]]
    order = list(res["ratings"])
    for key, p in sorted(res["pairs"].items(), key=lambda kv: (order.index(kv[1]["agent"]),
                                                               order.index(kv[1]["opponent"]))):
        if order.index(p["agent"]) > order.index(p["opponent"]):
            continue  # each pair once, from the stronger side
        lo, hi = p["win_rate_ci95"]
        mlo, mhi = p["margin_ci95"]
        rows.append([p["agent"], p["opponent"], str(p["games"]), str(p["wins"]), str(p["draws"]), str(p["losses"]),
                     _f(p["win_rate"], ".3f"), f"[{_f(lo, '.3f')}, {_f(hi, '.3f')}]",
                     _f(p["mean_margin"], "+.1f"), f"[{_f(mlo, '+.1f')}, {_f(mhi, '+.1f')}]",
                     f"{_f(p['mean_minutes'][0], '.0f')}-{_f(p['mean_minutes'][1], '.0f')}"])
    if len(rows) > 1:
        out.append(_table(rows, right={2, 3, 4, 5, 6, 8}))
    sep = [p for p in res["pairs"].values() if p.get("elo_gap_min") is not None]
    if sep:
        out.append("  sweeps (one side won every game; win-rate CI: Wilson; rating gaps: upper end set by the"
                   " prior draws):\n" + "\n".join(f"    {p['agent']} - {p['opponent']} >= {p['elo_gap_min']:+.0f} Elo"
                                                   for p in sep))
    paired = res.get("paired") or []
    if 0 < len(paired) <= PAIRED_ROWS_SHOWN:
        out.append("\nPaired by deal (first agent's score against the opponent minus the second's, on the same"
                   " deals; CI: bootstrap over deals)")
        rows = [["first", "second", "opponent", "scores", "difference", "95% CI"]]
        for p in paired:
            lo, hi = p["difference_ci95"]
            rows.append([*p["agents"], p["opponent"], f"{_f(p['scores'][0], '.3f')}-{_f(p['scores'][1], '.3f')}",
                         _f(p["difference"], "+.3f"), f"[{_f(lo, '+.3f')}, {_f(hi, '+.3f')}]"])
        out.append(_table(rows, right={4}))
    elif paired:
        out.append(f"\nPaired by deal: {len(paired)} comparisons, in results.json (\"paired\")")
    if res.get("tables") and len(res["tables"]) > 1:
        out.append("\nTables (each agent's mean pairwise score against the other agents' seats at that table;"
                   " CI: bootstrap over deals)")
        rows = [["table", "agent", "games", "score", "95% CI", "margin", "95% CI"]]
        for table in res["tables"]:
            mix = " + ".join(f"{table['seats'].count(a)}x {a}" for a in dict.fromkeys(table["seats"]))
            for label, a in table["agents"].items():
                lo, hi = a["score_ci95"]
                mlo, mhi = a["margin_ci95"]
                rows.append([mix, label, str(table["games"]), _f(a["score"], ".3f"),
                             f"[{_f(lo, '.3f')}, {_f(hi, '.3f')}]", _f(a["mean_margin"], "+.1f"),
                             f"[{_f(mlo, '+.1f')}, {_f(mhi, '+.1f')}]"])
        out.append(_table(rows, right={2, 3, 5}))
    if res.get("openskill"):
        out.append("\nPlackett-Luce (openskill, games in id order): " + ", ".join(
            f"{label} {v['ordinal']:.1f} (mu {v['mu']:.1f}, sigma {v['sigma']:.2f})"
            for label, v in sorted(res["openskill"].items(), key=lambda kv: -kv[1]["ordinal"])))
    if sprt:
        verdict = {"H1": f"H1 accepted: elo >= {sprt['elo1']:g}", "H0": f"H0 accepted: elo <= {sprt['elo0']:g}",
                   None: "undecided"}[sprt["decision"]]
        out.append(f"\nSPRT {res['labels'][0]} vs {res['labels'][1]} [{sprt['elo0']:g}, {sprt['elo1']:g}]: "
                   f"LLR {sprt['llr']:.2f} (bounds {sprt['lower']:.2f}, {sprt['upper']:.2f}) after "
                   f"{sprt['units']} deal(s): {verdict}")
    return "\n".join(out)


def write_json(path: Path, data: dict) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
