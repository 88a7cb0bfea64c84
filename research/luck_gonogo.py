"""Issue 61 item 1, the go/no-go of luck-adjusted scores, on stored tournaments.
RESULTS.md: "2026-12-06, 14:40-15:30 UTC" (luck-adjusted scores, the go/no-go)
Verdict: stop. The best value estimate, the
shipped fast evaluator read on the full state, cuts a deal's score variance by 5-8%
(CPU gain 1.07 in 2 and 4 players; bar 1.3); rollout values and re-run decision terms
add variance.

For each stored game (`evaluate.py --save-games`), replay it and sum the corrections of
`research.luck` (every tile drawn; the value W = the shipped fast evaluator read on the
full state, a logistic of the value difference with slope `--scale`). Then, per duplicate
set (deal), agent A's mean pairwise score raw and adjusted; the variance across deals of
each; the CPU of a game (its `seconds`) and of its correction; and the CPU needed for one
interval width, adjusted against raw:

    gain = var_raw * cpu_game / (var_adj * (cpu_game + cpu_correction))

Go (the issue's gate) if gain >= 1.3. `--scales` sweeps the slope (fit it on one match,
read the gain on another); `--beta` scales the correction (any fixed beta is unbiased).

    python research/luck_gonogo.py results/luck_2p_a results/luck_4p_a --scales 1 2 4 8
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents import parse_agent  # noqa: E402
from agents.policy_kernels import epsilon_threshold, rollout  # noqa: E402
from engine import kernels  # noqa: E402
from engine.view import PlayerView  # noqa: E402
from research.luck import EvaluatorValue, game_corrections, num_sides, outcome_matrix  # noqa: E402
from evaluation.stats import effective_ranking  # noqa: E402


class RolloutValue:
    """W as the mean outcome of `rollouts` playouts of the epsilon-greedy rollout policy
    from the full state, the bag reshuffled for each (so W reads nothing of the future).
    The same seeds at every call: common random numbers between an event's outcomes."""

    def __init__(self, num_players: int, team: bool, rollouts: int = 16, epsilon: float = 0.1, seed: int = 0):
        self.team, self.rollouts, self.seed = team, rollouts, seed
        self.eps = epsilon_threshold(epsilon)
        self.places = np.zeros(4, dtype=np.int64)

    def _expected_after(self, state, action: int) -> np.ndarray:  # (renamed: enumerate draws, CRN)
        """Wbar(state, action): the rollouts start before the draw, from a reshuffled bag."""
        return self(state, action)

    def __call__(self, state, action: int | None = None) -> np.ndarray:
        if state.is_over:
            return outcome_matrix([int(x) for x in state.ranking()], self.team)
        grid, info = state.arrays
        from engine.layout import BAG_POS, DEAL

        pos = int(info[BAG_POS])
        w = 0.0
        rng = np.random.default_rng(self.seed)
        n = int(state.num_players)
        for m in range(self.rollouts):
            g, i = grid.copy(), info.copy()
            tail = i[DEAL + pos: DEAL + 40]
            tail[:] = tail[rng.permutation(len(tail))]
            if action is not None:
                kernels.apply_action(g, i, np.int64(action))
            rollout(g, i, np.uint64(self.seed * 1000003 + m + 1), self.eps, True, np.int64(0))
            kernels.ranking(i, self.places)
            w = w + outcome_matrix(self.places[:n].tolist(), self.team)
        return w / self.rollouts


def rerun_distribution(spec: str, k: int, num_players: int, team: bool, seed: int):
    """The seat's move 'distribution' as k moves of the same agent re-run with fresh seeds."""
    from env.observation import encode

    agent = parse_agent(spec).build(seed=seed)
    counter = [seed]

    def dist(state, seat):
        if state.legal_actions() == [490]:
            return None
        moves = []
        for _ in range(k):
            counter[0] += 1
            agent.seed(counter[0])
            agent.reset(seat, num_players, team)
            obs = encode(state, seat) if getattr(agent, "needs_observation", False) else None
            moves.append((int(agent.act(obs, PlayerView(state, seat))), 1.0 / k))
        return moves

    return dist


def load_games(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "games.jsonl").read_text().splitlines() if line.strip()]


def sides_agents(g: dict) -> list[str]:
    seats = g["seats"]
    return [seats[0], seats[1]] if g["team"] else list(seats)


def deal_scores(games: list[dict], corr: list[np.ndarray], agent: str, beta: float = 1.0):
    """Per deal: agent's mean pairwise score against other agents, raw and adjusted."""
    raw: dict[int, list[float]] = {}
    adj: dict[int, list[float]] = {}
    for g, c in zip(games, corr):
        places = effective_ranking(g["ranking"], g.get("forfeit"), g["team"])
        w = outcome_matrix(places, g["team"])
        who = sides_agents(g)
        for s, a in enumerate(who):
            if a != agent:
                continue
            for t, b in enumerate(who):
                if b == agent:
                    continue
                raw.setdefault(g["deal_index"], []).append(w[s, t])
                adj.setdefault(g["deal_index"], []).append(w[s, t] - beta * c[s, t])
    deals = sorted(raw)
    return np.array([np.mean(raw[d]) for d in deals]), np.array([np.mean(adj[d]) for d in deals])


def corrections(games: list[dict], scale: float, value_kind: str = "evaluator", rollouts: int = 16,
                reruns: int = 0) -> tuple[list, float]:
    g0 = games[0]
    n, team = g0["num_players"], g0["team"]
    value = (EvaluatorValue(n, team, scale=scale) if value_kind == "evaluator"
             else RolloutValue(n, team, rollouts=rollouts))
    game_corrections(g0["deal"], g0["actions"][:4], n, team, value)  # compile
    cache: dict = {}
    out = []
    t0 = time.process_time()
    for gi, g in enumerate(games):
        dists = None
        if reruns:
            dists = [cache.setdefault(spec, rerun_distribution(spec, reruns, n, team, 10**6 * (1 + len(cache))))
                     for spec in g["seats"]]
        out.append(game_corrections(g["deal"], g["actions"], n, team, value, dists))
    return out, (time.process_time() - t0) / len(games)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--scales", nargs="+", type=float, default=[4.0])
    ap.add_argument("--beta", nargs="+", type=float, default=[1.0])
    ap.add_argument("--value", choices=["evaluator", "rollouts"], default="evaluator")
    ap.add_argument("--rollouts", type=int, default=16)
    ap.add_argument("--reruns", type=int, default=0, help="re-runs of each search move (decision terms)")
    ap.add_argument("--limit", type=int, default=0, help="first N games only")
    ap.add_argument("--phases", action="store_true", help="fitted coefficients per phase of the bag")
    args = ap.parse_args()
    for run in args.runs:
        games = [g for g in load_games(run) if g.get("ranking") and g.get("forfeit") is None]
        if args.limit:
            games = games[: args.limit]
        agent = games[0]["labels"][0]
        cpu_game = float(np.mean([g["seconds"] for g in games]))
        print(f"{run}: {len(games)} games, {games[0]['num_players']} players, agent {agent}, "
              f"{cpu_game:.3f} s a game")
        if args.phases:
            for scale in args.scales:
                print(f"  phases, scale {scale:g}:", regression_gain(games, phase_controls(games, scale), agent))
            continue
        for scale in args.scales:
            parts, cpu_corr = corrections(games, scale, args.value, args.rollouts, args.reruns)
            for beta in args.beta:
              for kind in (["draws", "decisions", "total"] if args.reruns else ["total"]):
                corr = [getattr(c, kind) for c in parts]
                raw, adj = deal_scores(games, corr, agent, beta)
                vr, va = raw.var(ddof=1), adj.var(ddof=1)
                gain = vr * cpu_game / (va * (cpu_game + cpu_corr))
                n = len(raw)
                print(f"  {kind} {args.value} scale {scale:g} beta {beta:g}: deals {n}; raw {raw.mean():.4f} +-{1.96 * np.sqrt(vr / n):.4f}"
                      f"  adjusted {adj.mean():.4f} +-{1.96 * np.sqrt(va / n):.4f}; variance ratio {vr / va:.3f};"
                      f" correction {cpu_corr * 1000:.1f} ms a game; CPU gain {gain:.3f}")



def phase_controls(games: list[dict], scale: float, edges=(16, 8)) -> list[np.ndarray]:
    """Per game, the draw corrections split by the bag's size when drawn: (phases, k, k)."""
    g0 = games[0]
    value = EvaluatorValue(g0["num_players"], g0["team"], scale=scale)
    out = []
    for g in games:
        k = 2 if g["team"] else g["num_players"]
        acc = np.zeros((len(edges) + 1, k, k))

        def on_event(kind, state, term, acc=acc):
            acc[sum(state.bag_size <= e for e in edges)] += term

        game_corrections(g["deal"], g["actions"], g["num_players"], g["team"], value, on_event=on_event)
        out.append(acc)
    return out


def regression_gain(games: list[dict], controls: list[np.ndarray], agent: str, seed: int = 0) -> dict:
    """Control variates with fitted coefficients, fitted on half the deals, read on the other."""
    cols = []
    for j in range(controls[0].shape[0]):
        raw, adj = deal_scores(games, [c[j] for c in controls], agent)
        cols.append(raw - adj)  # the deal's summed control j
    x = np.stack(cols, 1)
    y = raw
    rng = np.random.default_rng(seed)
    fit = rng.random(len(y)) < 0.5
    xc = x - x[fit].mean(0)  # controls have mean 0 in expectation; centering only for the fit
    beta = np.linalg.lstsq(xc[fit], y[fit] - y[fit].mean(), rcond=None)[0]
    test = ~fit
    adj_t = y[test] - x[test] @ beta
    return {"beta": beta.round(3).tolist(), "ratio_test": float(y[test].var(ddof=1) / adj_t.var(ddof=1)),
            "ratio_fit": float(y[fit].var(ddof=1) / (y[fit] - x[fit] @ beta).var(ddof=1))}


if __name__ == "__main__":
    main()
