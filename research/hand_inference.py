"""How much do a seat's moves tell about its hand, and what is that worth to a search?

RESULTS.md: "2026-12-04, 17:35-19:35 UTC" (a learned model of the opponent's hand)
Verdict: the learned model explains 0.9% of the hand's uncertainty and is worth +0.02 +- 0.03 in play
(the true hand: 0.81): the lever is closed.

    python research/hand_inference.py                              # ismcts:time=0.01
    python research/hand_inference.py --spec greedy --deals 0      # a predictable player

A search's worlds deal the hidden tiles uniformly over what is public (`engine.determinize`).
A model of the opponent's hand, learned from finished games where the hands are known,
could deal better worlds. This measures the idea in three steps, in 2-player games:

1. Plays `--games` games of `--spec` against itself and records, at every turn, what the
   mover knows and the opponent's hand (the target a model would learn).
2. **What a move gives away.** For turns after the opponent passed up a placement of
   value v worth at least G more minutes than the one it played, how often it still
   holds a v, against the chance under uniform dealing (same positions).
3. **A learned hand model.** A small MLP reads the mover's public knowledge and the
   opponent's last `MOVES` moves (per value: the best minutes it could have scored and
   whether it fitted; the value played; the minutes scored; a pass) and gives one weight
   per value: a hand is drawn tile by tile, each value with probability proportional to
   its unseen count times its weight. Weight 1 everywhere is uniform dealing. Prints the
   held-out negative log-likelihood of the true hands, nats per tile, against uniform.
4. With `--deals D`: D duplicate deals (both seatings) against `--opponent` (default: the
   same spec) of plain ISMCTS (`ismcts:time=TIME`) whose worlds deal the opponent's hand
   from `--particles` hands drawn (a) uniformly (the control), (b) from the model, and
   (c) the opponent's true hand: a ceiling no honest agent reaches, what a perfect hand
   model would be worth.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np
import torch
from numba import njit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import agents  # noqa: E402
from agents.search import core as sk  # noqa: E402
from agents.play import play_game  # noqa: E402
from agents.search.mcts import ISMCTSAgent  # noqa: E402
from research.duplicate_deals import deal_scores, mean_and_half_width  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from engine import GameState, access, kernels, rules  # noqa: E402
from engine.deal import random_deal  # noqa: E402
from engine.determinize import BINOMIAL, SCRATCH_LEN, deal_around_particle  # noqa: E402
from engine.layout import PAD_OF_CELL  # noqa: E402
from engine.view import PlayerView  # noqa: E402

MOVES = 4  # the opponent's last moves the model reads
VALUES = rules.MAX_VALUE
MOVE_FEATURES = 3 * VALUES + 3  # best minutes per value, fits per value, value played, minutes, pass, present
POSITION_FEATURES = 2 * VALUES + 5
GAPS = (20, 40, 60)  # minutes passed up (step 2)
HIDDEN = 64
STEPS = 3000


# --- features ------------------------------------------------------------------------------
@njit(cache=True)
def best_minutes(grid, info, out):
    """out[v-1]: the most minutes a tile of value v would score on the board now
    (-1 where no v fits anywhere)."""
    out[:] = -1.0
    cells = kernels.open_cells(info)
    while cells != 0:
        p = kernels.lowest_bit_index(cells)
        cells = kernels.without_lowest_bit(cells)
        for v in range(1, access.capacity(grid, p) + 1):
            out[v - 1] = max(out[v - 1], kernels.points_if_placed(grid, p, v))


def move_features(grid, info, action: int) -> np.ndarray:
    """What one move (about to be played on this public state) shows about its mover."""
    best = np.zeros(VALUES)
    best_minutes(grid, info, best)
    f = np.zeros(MOVE_FEATURES, dtype=np.float32)
    f[:VALUES] = np.maximum(best, 0) / 100
    f[VALUES:2 * VALUES] = best >= 0
    if action < rules.PASS_ACTION:
        cell, v = divmod(action, VALUES)
        f[2 * VALUES + v] = 1
        f[3 * VALUES] = kernels.points_if_placed(grid, PAD_OF_CELL[cell], v + 1) / 100
    else:
        f[3 * VALUES + 1] = 1
    f[3 * VALUES + 2] = 1
    return f


def position_features(view: PlayerView, opponent_moves: list) -> np.ndarray:
    """What the seat of `view` knows (unseen tiles, its own hand, sizes, the opponent's
    pass fact) and the opponent's last MOVES moves, most recent first."""
    opponent = 1 - view.seat
    recent = np.zeros((MOVES, MOVE_FEATURES), dtype=np.float32)
    for j, f in enumerate(opponent_moves[::-1][:MOVES]):
        recent[j] = f
    cap, held = view.pass_facts[opponent]
    sizes = [view.hand_sizes[opponent] / 6, view.bag_size / 24, view.turn / 50, cap / 10, held / 6]
    knowledge = np.concatenate([view.unseen_counts() / 4, view.hand / 4, sizes])
    return np.concatenate([knowledge, recent.ravel()]).astype(np.float32)


# --- games -------------------------------------------------------------------------------------
def _play_games(task):
    spec, seeds = task
    players = [agents.make(spec), agents.make(spec)]
    for p in players:
        p.warm_up()
    return [(seed, play_game(players, random_deal(seed), 2, seeds=[2 * seed, 2 * seed + 1]).actions)
            for seed in seeds]


def positions(deal, actions):
    """Replay one game: per turn, (features for the mover, the opponent's hand counts
    per value)."""
    state = GameState.from_deal(deal, 2)
    moves = ([], [])
    rows = []
    for action in actions:
        seat = state.current_player
        rows.append((position_features(PlayerView(state, seat), moves[1 - seat]), state.hands[1 - seat]))
        grid, info = state.arrays
        moves[seat].append(move_features(grid, info, action))
        state.step(action)
    return rows


def record_games(spec: str, games: int, workers: int):
    tasks = [(spec, list(range(i, games, 4 * workers))) for i in range(4 * workers)]
    x, hands, game = [], [], []
    with mp.get_context("spawn").Pool(workers) as pool:
        for chunk in pool.imap_unordered(_play_games, tasks):
            for seed, actions in chunk:
                for f, h in positions(random_deal(seed), actions):
                    x.append(f)
                    hands.append(h)
                    game.append(seed)
    x = np.array(x)
    unseen = np.rint(x[:, :VALUES] * 4).astype(np.float32)  # the features' first block: unseen counts / 4
    return x, unseen, np.array(hands, dtype=np.float32), np.array(game)


# --- what a move gives away (step 2) ---------------------------------------------------------
def uniform_chance_of_value(unseen: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Per row and value: the chance that a hand of `size` tiles dealt uniformly from the
    unseen tiles holds at least one of that value, 1 - C(total - count, size) / C(total, size)."""
    count = unseen.astype(np.int64)
    total = count.sum(axis=1, keepdims=True)
    size = size.astype(np.int64)[:, None]
    return 1 - BINOMIAL[total - count, size] / BINOMIAL[total, size]


def passed_up_table(x, unseen, hands):
    last = x[:, POSITION_FEATURES:POSITION_FEATURES + MOVE_FEATURES]
    best, played, scored, present = (last[:, :VALUES], last[:, 2 * VALUES:3 * VALUES], last[:, 3 * VALUES],
                                     last[:, 3 * VALUES + 2])
    size = hands.sum(axis=1)
    chance = uniform_chance_of_value(unseen, size)
    table = []
    for gap in GAPS:
        rows, values = np.nonzero((present[:, None] > 0) & (best >= scored[:, None] + gap / 100) & (played == 0)
                                  & (unseen > 0))
        table.append((gap, len(rows), float((hands[rows, values] > 0).mean()), float(chance[rows, values].mean())))
    return table


# --- the hand model (step 3) ---------------------------------------------------------------------
def hand_nll(weights_log, unseen, hands):
    """Nats per tile of the true hands when each tile's value is drawn with probability
    proportional to unseen count x exp(weight) (the with-replacement likelihood)."""
    log_unseen = torch.where(unseen > 0, unseen.clamp(min=1e-9).log(), torch.full_like(unseen, -1e9))
    log_p = torch.log_softmax(log_unseen + weights_log, dim=-1)
    return -(hands * torch.where(unseen > 0, log_p, 0.0)).sum(-1) / hands.sum(-1).clamp(min=1)


def fit_hand_model(x, unseen, hands, held, seed: int):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                                torch.nn.ReLU(), torch.nn.Linear(HIDDEN, VALUES))
    optimizer = torch.optim.Adam(model.parameters(), 1e-3, weight_decay=1e-4)
    x, unseen, hands = torch.tensor(x), torch.tensor(unseen), torch.tensor(hands)
    train, test = np.nonzero(~held)[0], np.nonzero(held & (hands.sum(-1) > 0).numpy())[0]
    uniform = hand_nll(torch.zeros(len(test), VALUES), unseen[test], hands[test]).mean().item()
    best, best_state = np.inf, None
    generator = np.random.default_rng(seed)
    for step in range(STEPS):
        batch = generator.choice(train, 512)
        loss = hand_nll(model(x[batch]), unseen[batch], hands[batch]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (step + 1) % 250 == 0:  # keep the best held-out model (early stopping)
            with torch.no_grad():
                held_out = hand_nll(model(x[test]), unseen[test], hands[test]).mean().item()
            if held_out < best:
                best, best_state = held_out, [p.detach().numpy().astype(np.float64).copy() for p in model.parameters()]
    return uniform, best, best_state


# --- a search whose worlds deal the opponent's hand from a belief (step 4) ----------------------
@njit(inline="always", cache=True)
def hand_world(root_grid, root_info, observer, tiles, num_unseen, work, data, rng):
    """A world part of the search core: dealt around a particle of `hands`
    (`engine.determinize.deal_around_particle`); data = (hands, fixed seats, scratch)."""
    hands, fixed, scratch = data
    return deal_around_particle(root_grid, root_info, observer, hands, fixed, tiles, num_unseen, rng, work.grid,
                                work.info, scratch)


@njit(cache=True)
def search_around_hands(root_grid, root_info, observer, iterations, params, rng, tree, work, data):
    """`search_kernels.search_greedy_rollout`, except that each simulation's world is dealt
    around a particle of the hands in `data` (`hand_world`)."""
    return sk.run(root_grid, root_info, observer, iterations, params, rng, tree, work, data, hand_world, sk.ucb,
                  sk.expand_greedy, sk.rollout_leaf, sk.no_model)


@njit(cache=True)
def draw_hands(unseen, weights, size, cap, held, seat, out, rng):
    """Fill out[:, seat, 1..10] with hands of `size` tiles drawn one by one from the
    unseen counts (index 1..10), each value with probability ~ count x weight; a hand that
    breaks the seat's pass fact (at least `held` tiles above `cap`) is drawn again.
    Returns (hands drawn, rng)."""
    n, tries = 0, 0
    left = np.zeros(11)
    while n < out.shape[0] and tries < 20 * out.shape[0]:
        tries += 1
        out[n, seat, :] = 0
        left[:] = unseen
        for _ in range(size):
            total = 0.0
            for v in range(1, 11):
                total += left[v] * weights[v]
            rng, bits = kernels.rng_next(rng)
            x = np.float64(bits >> np.uint64(11)) / 2.0**53 * total
            pick = 0
            for v in range(1, 11):
                if left[v] > 0:
                    pick = v
                    x -= left[v] * weights[v]
                    if x < 0:
                        break
            left[pick] -= 1
            out[n, seat, pick] += 1
        above = 0
        for v in range(cap + 1, 11):
            above += out[n, seat, v]
        if above >= held:
            n += 1
    return n, rng


class HandBeliefISMCTS(ISMCTSAgent):
    """Plain ISMCTS whose worlds deal the opponent's hand from `belief`: "uniform",
    "model" (the fitted MLP's weights) or "true" (its real hand: cheating, a ceiling)."""

    observes_actions = True

    def __init__(self, belief: str, model=None, particles: int = 256, **kwargs) -> None:
        super().__init__(**kwargs)
        self.belief, self.model = belief, model
        self.cheating = belief == "true"
        self._hands = np.zeros((particles, 4, 11), dtype=np.int64)
        self._scratch = np.zeros(SCRATCH_LEN, dtype=np.int64)
        self._moves: list = []
        self._current = (self._hands[:0], np.int64(0))

    def reset(self, seat, num_players, team=False) -> None:
        super().reset(seat, num_players, team)
        self._moves = []

    def observe_action(self, view, seat: int, action: int) -> None:
        if seat != view.seat:
            self._moves.append(move_features(*view.public_arrays(), action))

    def _weights(self, view) -> np.ndarray:
        if self.belief == "uniform":
            return np.ones(VALUES)
        h = position_features(view, self._moves).astype(np.float64)
        layers = self.model
        for i in range(0, len(layers) - 2, 2):
            h = np.maximum(layers[i] @ h + layers[i + 1], 0)
        w = layers[-2] @ h + layers[-1]
        return np.exp(w - w.max())

    def _search(self, view):
        opponent = 1 - view.seat
        if self.belief == "true":
            self._hands[0, opponent, 1:] = view.full_state(self).hands[opponent]
            self._current = (self._hands[:1], np.int64(1 << opponent))
        else:
            unseen = np.zeros(11)
            unseen[1:] = view.unseen_counts()
            weights = np.zeros(11)
            weights[1:] = self._weights(view)
            cap, held = view.pass_facts[opponent]
            n, _ = draw_hands(unseen, weights, int(view.hand_sizes[opponent]), int(cap), int(held), opponent,
                              self._hands, self._seed64())
            self._current = (self._hands[:n], np.int64(1 << opponent))
        return super()._search(view)

    def _call(self, grid, info, observer, iterations, rng):
        hands, fixed = self._current
        self.use_search(search_around_hands, (hands, fixed, self._scratch))
        return super()._call(grid, info, observer, iterations, rng)


def _play_deals(task):
    belief, model, particles, time_budget, opponent, seeds = task
    searcher = HandBeliefISMCTS(belief, model, particles, time=time_budget)
    other = agents.make(opponent)
    searcher.warm_up()
    other.warm_up()
    return deal_scores(searcher, other, seeds)


def match(belief, model, particles, time_budget, opponent, deals, workers):
    tasks = [(belief, model, particles, time_budget, opponent, list(range(i, deals, 4 * workers)))
             for i in range(4 * workers)]
    with mp.get_context("spawn").Pool(workers) as pool:
        return mean_and_half_width(np.concatenate([s for s in pool.imap_unordered(_play_deals, tasks)]))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", default="ismcts:time=0.01", help="the player whose hands are guessed")
    parser.add_argument("--games", type=int, default=4000)
    parser.add_argument("--deals", type=int, default=500, help="duplicate deals of step 4 (0: skip it)")
    parser.add_argument("--time", type=float, default=0.01, help="the searches' seconds a move (step 4)")
    parser.add_argument("--opponent", default=None, help="step 4's opponent (default: --spec)")
    parser.add_argument("--particles", type=int, default=256, help="hands drawn a move (step 4)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.games < 20 or args.deals < 0 or args.workers < 1 or args.time <= 0 or args.particles < 1:
        raise SystemExit("--games must be >= 20, --deals >= 0, --workers >= 1, --time > 0, --particles >= 1")
    print(f"machine: {describe()}")
    start = time.perf_counter()
    x, unseen, hands, game = record_games(args.spec, args.games, args.workers)
    print(f"{args.games} games of {args.spec} against itself: {len(x)} turns ({time.perf_counter() - start:.0f} s)")
    result = {"spec": args.spec, "games": args.games, "passed_up": passed_up_table(x, unseen, hands)}
    print("after the opponent passed up a value v worth >= G more minutes than its move:")
    for gap, n, holds, chance in result["passed_up"]:
        print(f"  G = {gap:2d}: {n:7d} (turn, value) pairs; it still holds a v {holds:.3f}, "
              f"uniform dealing {chance:.3f}")
    uniform, fitted, model = fit_hand_model(x, unseen, hands, game % 10 == 0, args.seed)
    result.update(uniform_nats=uniform, model_nats=fitted)
    print(f"held-out hands (every tenth game): uniform {uniform:.4f} nats/tile, model {fitted:.4f} "
          f"(gain {uniform - fitted:.4f}, {100 * (uniform - fitted) / uniform:.1f}%)")
    if args.deals:
        opponent = args.opponent or args.spec
        print(f"ISMCTS at {args.time} s a move against {opponent}, {args.deals} duplicate deals, worlds dealing "
              f"the opponent's hand from:")
        for belief in ("uniform", "model", "true"):
            score, half = match(belief, model, args.particles, args.time, opponent, args.deals, args.workers)
            result[belief] = score
            label = {"uniform": "uniform particles (control)", "model": "the learned model",
                     "true": "its true hand (cheating ceiling)"}[belief]
            print(f"  {label:34s} {score:.3f} +- {half:.3f}")
    return result


if __name__ == "__main__":
    main()
