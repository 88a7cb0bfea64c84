"""Fuzz tests: every public entry point meets bad input with a clear ValueError and
leaves its state byte-identical; odd but valid arrays (other integer dtypes, strided,
read-only, byte-swapped, lists) give the same result as the canonical int64 array and
never a new compiled version of a kernel.

The bad inputs come from one seeded generator: wrong shapes and ndim, floats (integral,
non-integral, NaN, inf), bools, complex, strings, None, dicts, object arrays, values out
of range (negative, one past the end, int64 and uint64 extremes, Python ints beyond 64
bits), strided views holding such values, and corrupted saved states.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import GameState, random_deal, rules
from engine.batch import BatchState, batch_legal_mask, batch_reset, batch_step, check_states
from env.aec import raw_env
from env.gym_env import TwentyFourSevenEnv
from env.step_kernels import vec_reset, vec_reset_from_deals, vec_step
from env.vector import TwentyFourSevenVectorEnv

SEED = 20261201
KERNELS = (batch_step, batch_reset, batch_legal_mask, vec_step, vec_reset, vec_reset_from_deals)


# ----------------------------------------------------------------- input generators
def odd_but_valid(rng, good: np.ndarray) -> list:
    """The same values as other integer dtypes, layouts and containers."""
    high = int(good.max(initial=0))
    dtypes = [np.int64, np.int32, np.uint64, ">i8", "<u4"] + ([np.int16, np.uint16] if high < 2**15 else [])
    strided = np.repeat(good, 3).reshape(*good.shape, 3)[..., 1]
    readonly = good.copy()
    readonly.flags.writeable = False
    fortran = np.asfortranarray(good) if good.ndim > 1 else good[::-1].copy()[::-1]
    return [good.astype(dtypes[int(rng.integers(len(dtypes)))]), strided, readonly, fortran, good.tolist()]


def bad_arrays(rng, good: np.ndarray, low: int, high: int) -> list:
    """Bad stand-ins for the int array `good` whose values must lie in low..high."""
    pos = tuple(int(rng.integers(s)) for s in good.shape)

    def with_value(value, dtype=None):
        if dtype is None:  # a Python int beyond int64 goes into an object array
            dtype = np.int64 if -(2**63) <= value < 2**63 else object
        arr = good.astype(dtype)
        arr[pos] = value
        return arr

    flat = good.reshape(-1)
    cases = [
        # shapes
        flat[:-1].reshape(-1), np.append(flat, flat[:1]), good[None], good[..., None], np.int64(low), [],
        np.zeros((0,) + good.shape[1:], dtype=np.int64), good.T if good.ndim > 1 else good.reshape(1, -1),
        # dtypes
        good.astype(np.float64), good + 0.5, with_value(np.nan, np.float64), with_value(np.inf, np.float64),
        good.astype(np.bool_), good.astype(np.complex128), good.astype(str), good.astype(object).tolist()[:-1],
        with_value(None, object), with_value("3", object), with_value(1.5, object), np.float32(low),
        None, "0" * good.size, b"\x00" * good.size, {0: low}, {low}, 1.5, object(),
        # ranges, values reported as given
        with_value(low - 1), with_value(high + 1), with_value(2**63 - 1), with_value(-(2**63)),
        with_value(2**64 - 1, np.uint64), with_value(2**70, object),
        # a strided view holding a bad value
        np.repeat(with_value(high + 1), 2).reshape(*good.shape, 2)[..., 0],
    ]
    rng.shuffle(cases)
    return cases


def bad_scalars(rng, low: int, high: int) -> list:
    cases = [None, "1", b"1", 1.0, float(low), np.nan, np.inf, -np.inf, True, np.bool_(False), low - 1,
             high + 1, 2**63, 2**64 - 1, np.uint64(2**64 - 1), np.int64(-(2**63)), np.float32(low),
             complex(low, 0), [low], np.array([low]), {"a": low}, object()]
    rng.shuffle(cases)
    return cases


def expect_value_error(call, *args, **kwargs) -> ValueError:
    """call(*args) must raise ValueError, and nothing else (no KeyError, IndexError...)."""
    try:
        call(*args, **kwargs)
    except ValueError as exc:
        assert str(exc), "the message must name the problem"
        return exc
    except Exception as exc:  # noqa: BLE001 - any other type is the failure reported
        raise AssertionError(f"{call.__qualname__}{args!r} raised {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{call.__qualname__}{args!r} accepted bad input")


def kernel_versions() -> dict:
    return {k: len(k.signatures) for k in KERNELS}


@pytest.fixture(scope="module")
def warm():
    """Load every kernel once so later counts of compiled versions are stable."""
    batch = BatchState.new(2, 2, seed=0)
    batch.step(batch.legal_mask().argmax(1))
    batch.reset([1, 2])
    v = TwentyFourSevenVectorEnv(num_envs=2)
    v.reset(seed=0, options={"deals": random_deal(0)})
    obs, _ = v.reset(seed=0)
    v.step(obs["action_mask"].argmax(1).astype(np.int64))
    return kernel_versions()


# ----------------------------------------------------------------- single game
def test_game_state_step(warm):
    rng = np.random.default_rng(SEED)
    for num_players, team in ((2, False), (4, True)):
        g = GameState.new(num_players, seed=int(rng.integers(1000)), team=team)
        for _ in range(5):
            before = [a.copy() for a in g.arrays]
            legal = set(g.legal_actions() + g.show_actions())
            illegal = [a for a in rng.integers(0, rules.NUM_TEAM_ACTIONS, 20).tolist() if a not in legal]
            for bad in bad_scalars(rng, 0, rules.NUM_TEAM_ACTIONS - 1) + illegal[:5]:
                expect_value_error(g.step, bad)
                assert all(np.array_equal(x, y) for x, y in zip(g.arrays, before))
            g.step(rng.choice(sorted(legal)))


def valid_position() -> dict:
    return dict(board={(3, 3): 5, (3, 4): 6, (2, 2): 9}, hands=[[1, 2, 2], [3, 10]], num_players=2,
                team=False, current_player=1, bag=[7, 8, 4], scores=[0, 10])


BAD_POSITION_FIELDS = {
    "board": [None, [], [(3, 3, 5)], {(3, 3): 0}, {(3, 3): 11}, {(3, 3): 5.0}, {(3, 3.0): 5}, {(7, 0): 1},
              {(-1, 0): 1}, {(3,): 5}, {"a": 1}, {(3, 3): True}, {(3, 3): "5"}, {(3, 3): np.nan},
              {(3, 2): 10, (3, 3): 10, (3, 4): 5}, {(0, 0): 9, (1, 1): 9, (2, 2): 7},
              {(3, 3): np.uint64(2**64 - 1)}, {(np.uint64(2**64 - 1), 3): 5}],
    "hands": [None, [[1]], [[1], [2], [3]], [[1] * 7, []], [[0], [1]], [["1"], [2]], [[1.5], [2]], "ab",
              [None, [1]], [[np.uint64(2**64 - 1)], []], [[9, 9, 9], [9]], [{1}, [2]], 5, [[True], [2]],
              [np.array([[1, 2]]), [2]], [[np.nan], []]],
    "bag": [None, [0], [11], [1.5], "12", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] * 3, [np.nan], [True], 7,
            np.array([2**64 - 1], dtype=np.uint64), [[1, 2]]],
    "current_player": [2, -1, 1.5, "1", None, True, np.uint64(2**64 - 1), np.nan, [1]],
    "num_players": [1, 5, "2", 2.0, None, True, np.nan],
    "team": ["no", "yes", None, 2, 1.0, [True], np.array([True, False])],
    "scores": [[0], [0, -1], [0, 1.5], "ab", [0, np.nan], [0, 2**64 - 1], 5, [0, None], [[0, 1]]],
}


def test_from_position_fields():
    GameState.from_position(**valid_position())  # the base position is valid
    rng = np.random.default_rng(SEED + 1)
    for field, values in BAD_POSITION_FIELDS.items():
        for value in values:
            kw = dict(valid_position(), **{field: value})
            expect_value_error(GameState.from_position, **kw)
    # random mutations of a real mid-game position: a tile more anywhere breaks a rule
    g = GameState.new(2, seed=3)
    for _ in range(12):
        g.step(g.legal_actions()[-1])
    board = {divmod(int(c), 7): int(v) for c, v in enumerate(g.board.ravel()) if v}
    hands = [[v + 1 for v in range(10) for _ in range(int(h[v]))] for h in g.hands]
    for _ in range(30):
        v = int(rng.integers(1, 11))
        extra_hand = [list(h) for h in hands]
        extra_hand[0] += [v] * 7
        expect_value_error(GameState.from_position, board, extra_hand, 2, False, 0, g.bag.tolist())
        expect_value_error(GameState.from_position, board, hands, 2, False, 0, g.bag.tolist() + [v] * 5)


def test_from_deal_and_new():
    rng = np.random.default_rng(SEED + 2)
    deal = random_deal(5)
    for bad in bad_arrays(rng, deal.astype(np.int64), 1, rules.MAX_VALUE):
        if isinstance(bad, np.ndarray) and bad.dtype.kind == "f" and np.array_equal(bad, deal):
            continue  # a deal may be given as integral floats (documented in rules.check_deal)
        expect_value_error(GameState.from_deal, bad, 2)
    for bad in ("no", None, 2, [True], "False"):
        expect_value_error(GameState.new, 4, 0, bad)
        expect_value_error(GameState.from_deal, deal, 4, bad)
    for bad in ("1", 1.5, np.nan, True, [1], object()):
        expect_value_error(GameState.new, 2, bad)


# ----------------------------------------------------------------- batch API
def snapshot_batch(batch: BatchState):
    return batch.grid.copy(), batch.info.copy()


def same_batch(batch: BatchState, snap) -> bool:
    return np.array_equal(batch.grid, snap[0]) and np.array_equal(batch.info, snap[1])


@pytest.mark.parametrize("num_players,team", [(2, False), (4, True)], ids=["2p", "team"])
def test_batch_methods(warm, num_players, team):
    rng = np.random.default_rng(SEED + 3 + num_players)
    n = 5
    batch = BatchState.new(n, num_players, seed=11, team=team)
    for _ in range(3):
        snap = snapshot_batch(batch)
        masks = batch.legal_mask()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64)
        for bad in bad_arrays(rng, actions, 0, batch.num_actions - 1):
            expect_value_error(batch.step, bad)
            assert same_batch(batch, snap)
        seeds = rng.integers(0, 2**62, n)
        for bad in bad_arrays(rng, seeds, -(2**63), 2**63 - 1):
            if not isinstance(bad, np.ndarray) or bad.dtype.kind not in "iu" or bad.shape != (n,):
                expect_value_error(batch.reset, bad)  # any in-range int is a seed
                assert same_batch(batch, snap)
        for bad in [np.zeros((n, batch.num_actions), dtype=d) for d in (np.int8, np.uint8, np.float64)] + [
                np.zeros((n + 1, batch.num_actions), bool), np.zeros((n, batch.num_actions + 1), bool)[:, 1:],
                np.zeros((batch.num_actions, n), bool).T, np.zeros(n * batch.num_actions, bool), "out", 0]:
            expect_value_error(batch.legal_mask, bad)
            assert same_batch(batch, snap)
        for bad in bad_scalars(rng, 0, n - 1):
            expect_value_error(batch.game, bad)
        for bad in ("1", 1.5, np.nan, True, [1], np.float32(2), np.array(3)):
            expect_value_error(batch.random_playout, bad)
        assert same_batch(batch, snap)
        # odd but valid: the same step as the int64 array
        expected = BatchState(*snapshot_batch(batch), num_players, team)
        points = expected.step(actions)
        for odd in odd_but_valid(rng, actions):
            batch.grid[:], batch.info[:] = snap
            assert np.array_equal(batch.step(odd), points)
            assert same_batch(batch, snapshot_batch(expected))
    assert kernel_versions() == warm


def corrupt(rng, grid: np.ndarray, info: np.ndarray) -> str:
    """Set one random entry of game 0 to a random value; returns what was changed."""
    values = [-1, 0, 1, 5, 11, 25, 99, 2**15 - 1, -(2**15)]
    if rng.random() < 0.5:
        p, c = int(rng.integers(grid.shape[1])), int(rng.integers(grid.shape[2]))
        grid[0, p, c] = rng.choice(values)
        return f"grid[0, {p}, {c}]"
    k = int(rng.integers(info.shape[1]))
    info[0, k] = rng.choice(values + [2**62, -(2**62), int(info[0, k]) + 1])
    return f"info[0, {k}]"


def test_batch_constructor_with_corrupt_states(warm):
    """Corrupt states are refused; any corruption that is accepted (a field play leaves
    free, such as a score or the turn count) is a state the kernels play safely."""
    rng = np.random.default_rng(SEED + 4)
    base = BatchState.new(3, 3, seed=2)
    base.step(base.legal_mask().argmax(1))
    accepted = 0
    for _ in range(150):
        grid, info = snapshot_batch(base)
        what = corrupt(rng, grid, info)
        try:
            batch = BatchState(grid, info, 3, False)
        except ValueError:
            continue
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"{what}: {type(exc).__name__}: {exc}") from exc
        accepted += 1
        batch.random_playout(seed=1)
        assert batch.is_over.all(), what
        check_states(batch.grid, batch.info, 3, False)
    assert accepted < 50  # most corruptions are caught


# ----------------------------------------------------------------- environments
def snapshot_vector(v: TwentyFourSevenVectorEnv):
    return [a.copy() for a in (v._grid, v._info, v._rng, v._deals)] + [repr(v.np_random.bit_generator.state)]


def same_snapshot(a, b) -> bool:
    return all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y for x, y in zip(a, b))


def test_vector_env(warm):
    rng = np.random.default_rng(SEED + 5)
    n = 4
    v = TwentyFourSevenVectorEnv(num_envs=n, num_players=3)
    obs, _ = v.reset(seed=1)
    for _ in range(3):
        snap = snapshot_vector(v)
        mask = obs["action_mask"]
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask], dtype=np.int64)
        for bad in bad_arrays(rng, actions, 0, v.num_actions - 1):
            expect_value_error(v.step, bad)
            assert same_snapshot(snapshot_vector(v), snap)
        for bad in bad_scalars(rng, 0, 2**63):
            if bad is not None and not (isinstance(bad, (int, np.integer)) and not isinstance(bad, (bool, np.bool_))
                                        and 0 <= bad):
                expect_value_error(v.reset, seed=bad)
        for bad in (5, [1], "deals", {"deals": random_deal(0)[:-1]}, {"deals": np.zeros((n, 40))},
                    {"deals": np.stack([random_deal(i) for i in range(n - 1)])}, {"deals": [None] * 40}):
            expect_value_error(v.reset, seed=3, options=bad)
        assert same_snapshot(snapshot_vector(v), snap)
        obs, *_ = v.step(actions)
    assert kernel_versions() == warm


def test_vector_set_state(warm):
    rng = np.random.default_rng(SEED + 6)
    v = TwentyFourSevenVectorEnv(num_envs=3, num_players=2)
    obs, _ = v.reset(seed=4)
    v.step(obs["action_mask"].argmax(1).astype(np.int64))
    saved = v.get_state()
    target = TwentyFourSevenVectorEnv(num_envs=3, num_players=2)
    target.reset(seed=8)
    snap = snapshot_vector(target)
    keys = sorted(saved)
    for _ in range(60):
        state = {k: (x.copy() if isinstance(x, np.ndarray) else x) for k, x in saved.items()}
        action = rng.integers(4)
        key = keys[int(rng.integers(len(keys)))]
        if action == 0:
            del state[key]
        elif action == 1:
            state[key] = [None, "x", 1.5, np.nan, {}, -1, np.zeros(2)][int(rng.integers(7))]
        elif action == 2:
            state["unexpected"] = 1
        else:
            corrupt(rng, state["grid"], state["info"])
        try:
            target.set_state(state)
        except ValueError:
            assert same_snapshot(snapshot_vector(target), snap)
            continue
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"{type(exc).__name__}: {exc}") from exc
        # accepted (a free field): the games still play; restore the reference
        target.step(np.array([target.game(i).legal_actions()[0] for i in range(3)]))
        target.reset(seed=8)
        snap = snapshot_vector(target)
    for bad in (None, [], "state", saved["grid"]):
        expect_value_error(target.set_state, bad)
    target.set_state(saved)
    assert same_snapshot(snapshot_vector(target), snapshot_vector(v))
    assert kernel_versions() == warm


def test_gym_env_step():
    rng = np.random.default_rng(SEED + 7)
    e = TwentyFourSevenEnv(num_players=2, illegal_action="raise")
    e.reset(seed=2)
    for _ in range(3):
        before = [a.copy() for a in e.game.arrays] + [repr(e.np_random.bit_generator.state)]
        legal = set(e.game.legal_actions())
        illegal = [a for a in rng.integers(0, rules.NUM_ACTIONS, 10).tolist() if a not in legal]
        for bad in bad_scalars(rng, 0, rules.NUM_ACTIONS - 1) + illegal[:3]:
            expect_value_error(e.step, bad)
            after = [a.copy() for a in e.game.arrays] + [repr(e.np_random.bit_generator.state)]
            assert same_snapshot(after, before)
        for bad in (dict(seed=-1), dict(seed=1.5), dict(seed="1"), dict(options=[1]),
                    dict(options={"deal": [1] * 40})):
            expect_value_error(e.reset, **bad)
            assert same_snapshot([a.copy() for a in e.game.arrays] + [repr(e.np_random.bit_generator.state)],
                                 before)
        e.step(min(legal))
    for bad in (dict(team="no"), dict(num_players=4, team="yes"), dict(seat=2), dict(seat="random?")):
        expect_value_error(TwentyFourSevenEnv, **bad)


def test_aec_env_step():
    rng = np.random.default_rng(SEED + 8)
    e = raw_env(num_players=4, team=True)
    e.reset(seed=3)
    for _ in range(3):
        before = [a.copy() for a in e.game.arrays]
        legal = set(e.game.legal_actions() + e.game.show_actions())
        illegal = [a for a in rng.integers(0, rules.NUM_TEAM_ACTIONS, 10).tolist() if a not in legal]
        for bad in bad_scalars(rng, 0, rules.NUM_TEAM_ACTIONS - 1) + illegal[:3]:
            expect_value_error(e.step, bad)
            assert all(np.array_equal(x, y) for x, y in zip(e.game.arrays, before))
        expect_value_error(e.reset, seed=1, options={"deal": [1] * 40})
        expect_value_error(e.reset, seed="1")
        assert all(np.array_equal(x, y) for x, y in zip(e.game.arrays, before))
        e.step(min(legal))
    for bad in (dict(team="no"), dict(num_players=4, team="False"), dict(num_players=2.0)):
        expect_value_error(raw_env, **bad)

