"""Pictures of a 24/7 game: the text board (`board_text`, the env's ``ansi`` mode, the
terminal game and replays) and an RGB array (``rgb_array``); and a move's score in words
(`breakdown_text`).

Both read an engine `GameState` (the text board also a `PlayerView`) and show only public
information plus, optionally, the hand of one viewing seat. The RGB picture is drawn with
numpy alone (a 3x5 pixel font), so it is fast and needs no plotting library. For notebooks and documents, `env.render_svg`
draws a cleaner picture (SVG inline in Jupyter, PNG through matplotlib).
"""

from __future__ import annotations

import numpy as np

from engine import rules

# --- text ------------------------------------------------------------------------------
# One text board for every front end: the env's ``ansi``/``human`` modes, the terminal game
# and `evaluate.py replay`. Each cell is 5 characters; every cell state reads differently:
# parentheses mark a Double Time cell, "." an empty cell, "##" a Time Out stone, "*" after
# a tile the last move.
LEGEND = ("legend:  .  empty cell   ( .) empty Double Time cell (doubles a move)   7  tile\n"
          "        ( 7) tile on Double Time   ## Time Out stone, (##) on Double Time   7* last move")


def cell_text(value: int, double: bool, timeout: bool, last: bool) -> str:
    """One cell of the text board (5 characters), see `LEGEND`."""
    mark = "*" if value and last else " "
    body = f"{value:>2}" if value else "##" if timeout else " ."
    return f"({body}){mark}" if double else f" {body}{mark} "


def player_name(seat: int, names=None) -> str:
    """'player 1', or 'player 1 (greedy)' given a name per seat."""
    name = names[seat] if names is not None and seat < len(names) else None
    return f"player {seat}" + (f" ({name})" if name else "")


def board_text(game, viewer: int | None = None, names=None, legend: bool = True) -> str:
    """The text board: status, each player's minutes and tiles, the 7x7 board (see
    `LEGEND`) and `viewer`'s hand. `game` is an engine `GameState` or a `PlayerView`;
    `viewer` defaults to the view's seat, else the seat to move; -1 shows no hand.
    `names` gives each seat a label ('you', an agent spec) shown after its number."""
    n = game.num_players
    own = getattr(game, "seat", None)  # a PlayerView holds one seat's hand only
    if viewer is None:
        viewer = own if own is not None else game.current_player
    if own is not None and viewer not in (own, -1):
        raise ValueError(f"a view of seat {own} shows no other seat's hand, got viewer={viewer}")
    if not -1 <= viewer < n:
        raise ValueError(f"viewer must be -1 (no hand) or a seat in 0..{n - 1}, got {viewer!r}")
    board, timeout = game.board, set(game.timeout_cells)
    last = game.last_action
    last_cell = rules.decode_action(last)[0] if 0 <= last < rules.PASS_ACTION else -1
    double = set(rules.DOUBLE_TIME_CELLS)
    status = "game over" if game.is_over else f"{player_name(game.current_player, names)} to move"
    lines = [f"24/7  turn {game.turn}  bag {game.bag_size}  {status}"
             + ("  (teams: 0+2 vs 1+3)" if game.team else "")]
    scores, sizes = game.scores, game.hand_sizes
    lines.append("scores: " + " | ".join(f"{player_name(s, names)} {int(scores[s])} min, {int(sizes[s])} tile{'' if sizes[s] == 1 else 's'}"
                                        for s in range(n)))
    if game.team:
        lines.append(f"teams: 0+2 {int(scores[0] + scores[2])} min | 1+3 {int(scores[1] + scores[3])} min")
    lines.append("     " + "".join(f"{c:^5}" for c in range(rules.BOARD_SIZE)).rstrip())
    for r in range(rules.BOARD_SIZE):
        cells = [cell_text(int(board[r, c]), cell in double, cell in timeout, cell == last_cell)
                 for c, cell in ((c, rules.cell_of(r, c)) for c in range(rules.BOARD_SIZE))]
        lines.append(f"  {r}  " + "".join(cells).rstrip())
    if legend:
        lines.append(LEGEND)
    if viewer >= 0:
        hand = game.hand if own is not None else game.hands[viewer]
        tiles = [str(v + 1) for v in range(rules.MAX_VALUE) for _ in range(int(hand[v]))]
        lines.append(f"hand of {player_name(viewer, names)}: " + (" ".join(tiles) if tiles else "(empty)"))
        if game.team:
            partner = rules.partner(viewer)
            shown = game.partner_shown if own is not None else int(game.shown_tiles[partner])
            if shown:
                lines.append(f"partner {player_name(partner, names)} shows: {shown}")
    return "\n".join(lines)


def ansi(state, viewer: int | None = None) -> str:
    """The env's text mode: `board_text` of `state` with `viewer`'s hand (default: the
    seat to move; -1: none)."""
    return board_text(state, viewer)


def check_render_mode(mode, modes) -> None:
    """An env constructor's check of its `render_mode` (None or one of `modes`)."""
    if mode is not None and mode not in modes:
        raise ValueError(f"render_mode must be one of {modes} or None, got {mode!r}")


def render_frame(mode: str | None, state, viewer: int | None):
    """What a single-game env's ``render()`` returns in `mode`: the RGB array, the text
    board (``ansi``), or None after printing it (``human``); None with a warning when the
    env has no render mode."""
    if mode is None:
        import gymnasium

        gymnasium.logger.warn("render() called without a render_mode; pass render_mode= to the env")
        return None
    if state is None:
        raise RuntimeError("call reset() before render()")
    if mode == "rgb_array":
        return rgb_array(state)
    text = ansi(state, viewer)
    if mode == "human":
        print(text)
        return None
    return text


# --- score breakdowns ----------------------------------------------------------------------
_KIND_WORDS = {"sum7": "sum 7", "sum24": "sum 24", "24in7": "24 in 7 tiles", "24/7": "24/7 bonus"}


def _kind_words(kind: str) -> str:
    if kind in _KIND_WORDS:
        return _KIND_WORDS[kind]
    if kind.startswith("run"):
        return f"run of {kind[3:]}"
    if kind.startswith("set"):
        return f"set of {kind[3:]}"
    return kind


def breakdown_text(breakdown, points: int) -> str:
    """A move's score in words, from the engine's breakdown (`GameState.last_breakdown`):
    'sum 24 (row) + run of 4 (col), doubled: 160'; 'no minutes' for nothing."""
    parts = [_kind_words(c.kind) + (f" ({c.axis})" if c.axis else "")
             for c in breakdown if c.kind != "double_time"]
    if not parts:
        return "no minutes"
    doubled = any(c.kind == "double_time" for c in breakdown)
    return " + ".join(parts) + (", doubled" if doubled else "") + f": {points}"


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
