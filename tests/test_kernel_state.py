"""The incremental state the kernels keep agrees with a recount from the board."""

import numpy as np

from engine import GameState, kernels, layout, rules


def recount(state: GameState):
    """Frontier, capacities and Time Outs recomputed from the board alone."""
    board = state.board
    frontier, caps = [], {}
    for cell in range(rules.NUM_CELLS):
        r, c = divmod(cell, 7)
        if board[r, c]:
            continue
        touches = any(board[r + dr, c + dc] for dr in (-1, 0, 1) for dc in (-1, 0, 1)
                      if (dr or dc) and 0 <= r + dr < 7 and 0 <= c + dc < 7)
        if not touches:
            continue
        worst = 0
        for dr, dc in rules.AXIS_STEPS:
            total = 0
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < 7 and 0 <= cc < 7 and board[rr, cc]:
                    total += board[rr, cc]
                    rr, cc = rr + sign * dr, cc + sign * dc
            worst = max(worst, total)
        frontier.append(cell)
        caps[cell] = max(0, min(10, rules.LINE_CAP - worst))
    return frontier, caps


def test_incremental_state_matches_recount():
    rng = np.random.default_rng(1)
    for seed in range(60):
        state = GameState.new(2 + seed % 3, seed=seed)
        while not state.is_over:
            frontier, caps = recount(state)
            grid, info = state.arrays
            assert sorted(state.frontier_cells + state.timeout_cells) == frontier
            assert state.timeout_cells == [c for c in frontier if caps[c] == 0]
            for cell in frontier:
                assert grid[layout.PAD_OF_CELL[cell], layout.CAP] == caps[cell]
            for c in range(1, 11):
                expected = sum(1 for cell in frontier if caps[cell] == c)
                assert kernels.open_cells_with_capacity(info, c) == expected
            legal = state.legal_actions()
            assert kernels.count_placements(info) == (0 if legal == [rules.PASS_ACTION] else len(legal))
            state.step(legal[rng.integers(len(legal))])


def test_scoring_without_placing_matches_placing():
    """points_if_placed (and points_on_lines) give what the move really scores,
    scoring_setup's candidates never leave out a value that scores (the greedy policies and
    the observation's points planes score only the candidates), and a value outside
    run_set_candidates scores exactly its sums (placement_points' shortcut)."""
    rng = np.random.default_rng(2)
    scored = 0
    by_sums = 0
    for seed in range(40):
        state = GameState.new(2 + seed % 3, seed=seed)
        while not state.is_over:
            grid, info = state.arrays
            for action in state.legal_actions():
                if action >= rules.PASS_ACTION:
                    continue
                cell, value = divmod(action, rules.MAX_VALUE)
                value += 1
                p = layout.PAD_OF_CELL[cell]
                lines = kernels.lines_through(grid, p)
                predicted = kernels.points_if_placed(grid, p, value)
                assert kernels.points_on_lines(grid, p, value, *lines) == predicted
                assert predicted == state.clone().step(action), (seed, action)
                if predicted > 0:
                    scored += 1
                    assert (kernels.scoring_setup(grid, p, 0x7FE)[5] >> value) & 1, (seed, action)
                    if not (kernels.sum_candidates(*lines) >> value) & 1:
                        assert (kernels.run_set_candidates(grid, p, *lines) >> value) & 1, (seed, action)
                if not (kernels.run_set_candidates(grid, p, *lines) >> value) & 1:
                    assert kernels.placement_points(grid, p, value, *lines, 0) == predicted, (seed, action)
                    by_sums += predicted > 0
            legal = state.legal_actions()
            state.step(legal[rng.integers(len(legal))])
    assert scored > 500 and by_sums > 300  # the checks really met scoring moves
