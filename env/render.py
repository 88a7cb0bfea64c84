"""Pictures of a 24/7 game: clear text (``ansi``) and an RGB array (``rgb_array``).

Both read an engine `GameState` and show only public information plus, optionally, the
hand of one viewing seat. The RGB picture is drawn with numpy alone (a 3x5 pixel font),
so it is fast and needs no plotting library. For notebooks and documents, `env.render_svg`
draws a cleaner picture (SVG inline in Jupyter, PNG through matplotlib).
"""

from __future__ import annotations

import numpy as np

from engine import rules

# --- text ------------------------------------------------------------------------------
LEGEND = "legend: 2x = empty Double Time cell, # = Time Out, 7x = tile on Double Time, * = last move"


def ansi(state, viewer: int | None = None) -> str:
    """The board, scores, hand sizes, bag and `viewer`'s hand (default: the seat to move)
    as text. `viewer=-1` shows no hand."""
    n = state.num_players
    board = state.board
    timeout = set(state.timeout_cells)
    last = state.last_action
    last_cell = last // rules.MAX_VALUE if 0 <= last < rules.PASS_ACTION else -1
    double = set(rules.DOUBLE_TIME_CELLS)
    lines = []
    status = "game over" if state.is_over else f"player_{state.current_player} to move"
    lines.append(f"24/7  turn {state.turn}  bag {state.bag_size}  {status}"
                 + ("  (team: 0+2 vs 1+3)" if state.team else ""))
    scores = state.scores
    sizes = state.hand_sizes
    lines.append("scores: " + "  ".join(f"player_{s} {int(scores[s])} ({int(sizes[s])} tiles)"
                                        for s in range(n)))
    if state.team:
        lines.append(f"teams: 0+2 {int(scores[0] + scores[2])}  1+3 {int(scores[1] + scores[3])}")
    lines.append("     " + "".join(f"{c:>4}" for c in range(rules.BOARD_SIZE)))
    for r in range(rules.BOARD_SIZE):
        row = []
        for c in range(rules.BOARD_SIZE):
            cell = r * rules.BOARD_SIZE + c
            v = int(board[r, c])
            if v:
                mark = "*" if cell == last_cell else ("x" if cell in double else " ")
                row.append(f" {v:>2}{mark}")
            elif cell in timeout:
                row.append("  # ")
            elif cell in double:
                row.append(" 2x ")
            else:
                row.append("  . ")
        lines.append(f"  {r:>2} " + "".join(row))
    lines.append(LEGEND)
    if viewer is None:
        viewer = state.current_player
    if viewer is not None and 0 <= viewer < n:
        hand = state.hands[viewer]
        tiles = [str(v + 1) for v in range(rules.MAX_VALUE) for _ in range(int(hand[v]))]
        lines.append(f"hand of player_{viewer}: " + (" ".join(tiles) if tiles else "(empty)"))
        if state.team:
            shown = int(state.shown_tiles[rules.partner(viewer)])
            if shown:
                lines.append(f"partner player_{rules.partner(viewer)} shows: {shown}")
    return "\n".join(lines)


# --- pictures ----------------------------------------------------------------------------
_FONT = {  # 3x5 digits, rows top to bottom
    "0": ("111", "101", "101", "101", "111"), "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"), "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"), "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"), "7": ("111", "001", "001", "001", "001"),
    "8": ("111", "101", "111", "101", "111"), "9": ("111", "101", "111", "001", "111"),
}
_GLYPHS = {ch: np.array([[int(b) for b in row] for row in rows], dtype=bool) for ch, rows in _FONT.items()}

CELL = 48  # pixels per cell
BORDER = 8
BACKGROUND = (233, 222, 196)
GRID_LINE = (90, 80, 70)
DOUBLE_TINT = (244, 180, 96)
TILE = (252, 250, 240)
TILE_EDGE = (120, 110, 100)
INK = (20, 20, 20)
STONE = (35, 35, 40)
LAST = (210, 30, 30)


def _digits(img, text, cy, cx, scale, color):
    width = len(text) * 3 * scale + (len(text) - 1) * scale
    x = cx - width // 2
    y = cy - 5 * scale // 2
    for ch in text:
        glyph = np.kron(_GLYPHS[ch], np.ones((scale, scale), dtype=bool))
        img[y:y + glyph.shape[0], x:x + glyph.shape[1]][glyph] = color
        x += 4 * scale


def rgb_array(state) -> np.ndarray:
    """The board as an (H, W, 3) uint8 picture: tiles with their values, Double Time cells
    tinted, Time Out stones dark, the last placement outlined in red."""
    size = rules.BOARD_SIZE * CELL + 2 * BORDER
    img = np.empty((size, size, 3), dtype=np.uint8)
    img[:] = BACKGROUND
    board = state.board
    timeout = set(state.timeout_cells)
    last = state.last_action
    last_cell = last // rules.MAX_VALUE if 0 <= last < rules.PASS_ACTION else -1
    yy, xx = np.mgrid[0:CELL, 0:CELL]
    disc = (yy - CELL / 2 + 0.5) ** 2 + (xx - CELL / 2 + 0.5) ** 2 <= (CELL * 0.36) ** 2
    for cell in range(rules.NUM_CELLS):
        r, c = divmod(cell, rules.BOARD_SIZE)
        y0, x0 = BORDER + r * CELL, BORDER + c * CELL
        box = img[y0:y0 + CELL, x0:x0 + CELL]
        if cell in rules.DOUBLE_TIME_CELLS:
            box[:] = DOUBLE_TINT
        v = int(board[r, c])
        if v:
            box[4:-4, 4:-4] = TILE_EDGE
            box[6:-6, 6:-6] = TILE
            _digits(img, str(v), y0 + CELL // 2, x0 + CELL // 2, 4, INK)
        elif cell in timeout:
            box[disc] = STONE
        if cell == last_cell:
            box[:3, :] = LAST
            box[-3:, :] = LAST
            box[:, :3] = LAST
            box[:, -3:] = LAST
    for k in range(rules.BOARD_SIZE + 1):
        p = BORDER + k * CELL
        img[max(p - 1, 0):p + 1, BORDER:size - BORDER] = GRID_LINE
        img[BORDER:size - BORDER, max(p - 1, 0):p + 1] = GRID_LINE
    return img
