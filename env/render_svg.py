"""Board pictures for notebooks and docs: SVG (inline in Jupyter) and PNG (matplotlib).

    >>> from env.render_svg import show, board_svg, render_png
    >>> show(state)                        # displays inline in Jupyter (SVG / HTML)
    >>> svg_text = board_svg(state)        # a standalone <svg> document
    >>> png_bytes = render_png(state, "board.png")
    >>> show(before, after, titles=["before", "after"])   # several boards in a row

One layout, two back ends: `_layout` turns a state into a list of shapes (rectangles,
circles, text) in pixel units, and `board_svg` / `render_png` / `draw_board` write those
shapes as SVG elements or as matplotlib artists, so both pictures are the same.

What the picture shows: tiles with their values; the 8 Double Time cells tinted orange
(empty ones marked "2x", a tile on one gets a small "2x" in its corner); Time Out stones
as dark discs; the last placement outlined in red; optional *marks* (dashed ghost tiles,
e.g. the moves two agents would choose); row and column numbers; and an optional
caption: turn, bag, scores and hand sizes (the seat to move marked), the last move's
scoring breakdown, and one seat's hand (by default the seat to move; ``viewer=-1`` hides
it).

The state may be an `engine.GameState` or an `engine.view.PlayerView` (which shows only
its own seat's hand). The numpy `env.render.rgb_array` and the text `env.render.ansi`
remain the fast pictures used by the environments' ``render()``.
"""

from __future__ import annotations

import functools
import html
import io
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from engine import rules
from engine.extras import require
from engine.files import atomic_write

from .render import breakdown_text

# --- geometry and colours ------------------------------------------------------------------
CELL = 56  # pixels per cell
EDGE = 22  # room for row / column numbers
PAD = 10  # outer padding
LINE = 19  # caption line height
FONT = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"

BACKGROUND = "#e9dec4"
BOARD_EDGE = "#5a5046"
GRID_LINE = "#8c7f70"
DOUBLE_TINT = "#f4b460"
DOUBLE_INK = "#9a5a12"
TILE = "#fcfaf0"
TILE_EDGE = "#786e64"
INK = "#141414"
MUTED = "#6b6259"
STONE = "#23232a"
STONE_RIM = "#55555f"
LAST = "#d21e1e"
PAPER = "#ffffff"
MARK_COLORS = ("#1f5fd1", "#1a9a4a", "#8e2fc0", "#c26a00")
GHOST = "#ffffffb0"  # the veil of a ghost tile (a mark) on an empty cell


# --- shapes ----------------------------------------------------------------------------------
class _Shape:
    @functools.cached_property
    def svg(self) -> str:
        """The shape's SVG element, written once: the shapes of the board's cells, grid and
        numbers are made once (`_cell`, `_grid`, `_coords`), and a page of the web game
        draws the board again on every move."""
        return _svg_shape(self)


@dataclass(frozen=True)
class Rect(_Shape):
    x: float
    y: float
    w: float
    h: float
    fill: str | None = None
    stroke: str | None = None
    width: float = 1.0
    rx: float = 0.0
    dash: bool = False


@dataclass(frozen=True)
class Circle(_Shape):
    cx: float
    cy: float
    r: float
    fill: str | None = None
    stroke: str | None = None
    width: float = 1.0


@dataclass(frozen=True)
class Text(_Shape):
    x: float
    y: float  # the vertical centre of the text
    text: str
    size: float = 12.0
    color: str = INK
    anchor: str = "middle"  # "start", "middle" or "end"
    bold: bool = False


# --- reading a state ---------------------------------------------------------------------------
def _public(state, viewer, caption=True):
    """What the picture needs, from a GameState or a PlayerView (the last move's scoring
    only for a `caption`)."""
    n = int(state.num_players)
    view_seat = getattr(state, "seat", None)  # a PlayerView knows only its own hand
    if viewer is None:
        viewer = view_seat if view_seat is not None else int(state.current_player)
    hand = None
    if viewer is not None and 0 <= viewer < n:
        if view_seat is not None:
            hand = np.asarray(state.hand) if viewer == view_seat else None
        else:
            hand = np.asarray(state.hands[viewer])
    return dict(n=n, board=np.asarray(state.board), timeout=set(int(c) for c in state.timeout_cells),
                last=int(state.last_action), scores=[int(s) for s in state.scores],
                sizes=[int(s) for s in state.hand_sizes], bag=int(state.bag_size), turn=int(state.turn),
                over=bool(state.is_over), current=int(state.current_player), team=bool(state.team),
                viewer=viewer, hand=hand, breakdown=_last_breakdown(state) if caption else ())


def _last_breakdown(state) -> tuple:
    """The last placement's scoring entries (`GameState`, `PlayerView` and `ReferenceGame`
    all report them, however the game was stepped)."""
    return tuple(getattr(state, "last_breakdown", ()) or ())


def _normalize_marks(marks) -> list[tuple[int, int, str, str]]:
    """marks -> [(cell, value, label, colour)]. A mark is an action id, or a tuple
    (action, label) / (action, label, colour)."""
    out = []
    for i, m in enumerate(marks or ()):
        if isinstance(m, (int, np.integer)):
            m = (int(m),)
        action = int(m[0])
        label = str(m[1]) if len(m) > 1 and m[1] is not None else ""
        color = m[2] if len(m) > 2 else MARK_COLORS[i % len(MARK_COLORS)]
        if not 0 <= action < rules.PASS_ACTION:
            continue  # a pass or a show has no cell to mark
        cell, value = rules.decode_action(action)
        out.append((cell, value, label, color))
    return out


# --- layout ----------------------------------------------------------------------------------
def _layout(state, viewer=None, caption=True, marks=None, title=None, coords=True):
    """(width, height, shapes) of the picture of `state`, in pixels."""
    p = _public(state, viewer, caption)
    size = rules.BOARD_SIZE * CELL
    x0 = PAD + (EDGE if coords else 0)
    y0 = PAD + (EDGE if coords else 0) + (LINE + 4 if title else 0)
    width = x0 + size + PAD + (EDGE if coords else 0) // 2
    shapes: list = []
    if title:
        shapes.append(Text(width / 2, PAD + LINE / 2, str(title), 14, INK, "middle", True))
    shapes.append(Rect(x0 - 4, y0 - 4, size + 8, size + 8, BACKGROUND, BOARD_EDGE, 2.0, 6.0))
    board = p["board"]
    last_cell = p["last"] // rules.MAX_VALUE if 0 <= p["last"] < rules.PASS_ACTION else -1
    double = set(rules.DOUBLE_TIME_CELLS)
    marked = {m[0] for m in _normalize_marks(marks)}
    for cell, v in enumerate(board.ravel().tolist()):
        shapes += _cell(x0, y0, cell, v, cell == last_cell, cell in p["timeout"], cell in marked)
    shapes += _grid(x0, y0)
    if last_cell >= 0:
        r, c = divmod(last_cell, rules.BOARD_SIZE)
        shapes.append(Rect(x0 + c * CELL + 1.5, y0 + r * CELL + 1.5, CELL - 3, CELL - 3, None, LAST, 3.0, 4.0))
    for cell, value, label, color in _normalize_marks(marks):
        r, c = divmod(cell, rules.BOARD_SIZE)
        x, y = x0 + c * CELL, y0 + r * CELL
        shapes.append(Rect(x + 4, y + 4, CELL - 8, CELL - 8, GHOST if not board[r, c] else None,
                           color, 2.5, 5.0, dash=True))
        if not board[r, c]:
            shapes.append(Text(x + CELL / 2, y + CELL / 2 + 1, str(value), 20, color, "middle", True))
            if cell in double:
                shapes.append(Text(x + CELL - 9, y + 12, "2×", 8.5, DOUBLE_INK, "end", True))
        if label:
            shapes.append(Text(x + 8, y + CELL - 11, label, 9.5, color, "start", True))
    if coords:
        shapes += _coords(x0, y0)
    bottom: float = y0 + size + 10
    if caption:
        bottom = _caption(p, shapes, PAD + 2, bottom, width - 2 * PAD)
    return width, bottom + PAD, shapes


@functools.lru_cache(maxsize=4096)
def _cell(x0, y0, cell, v, last, timeout, marked) -> tuple:
    """The shapes of one cell holding `v` (0: empty), its tile the `last` placed, a Time
    Out stone on it, or a ghost tile (drawn with the marks) going there."""
    r, c = divmod(cell, rules.BOARD_SIZE)
    x, y = x0 + c * CELL, y0 + r * CELL
    cx, cy = x + CELL / 2, y + CELL / 2
    double = cell in rules.DOUBLE_TIME_CELLS
    shapes: list = [Rect(x, y, CELL, CELL, DOUBLE_TINT)] if double else []
    if v:
        shapes.append(Rect(x + 5, y + 5, CELL - 10, CELL - 10, TILE, TILE_EDGE, 1.5, 5.0))
        shapes.append(Text(cx, cy + 1, str(v), 22, LAST if last else INK, "middle", True))
        if double:
            shapes.append(Text(x + CELL - 9, y + 12, "2×", 8.5, DOUBLE_INK, "end", True))
    elif double and marked:
        pass  # a ghost tile goes here; its "2x" goes in the corner, drawn with the mark
    elif timeout:
        shapes.append(Circle(cx, cy, CELL * 0.34, STONE, STONE_RIM, 2.0))
    elif double:
        shapes.append(Text(cx, cy, "2×", 13, DOUBLE_INK, "middle", True))
    return tuple(shapes)


@functools.lru_cache(maxsize=16)
def _grid(x0, y0) -> tuple:
    size = rules.BOARD_SIZE * CELL
    return tuple(shape for k in range(rules.BOARD_SIZE + 1)
                 for shape in (Rect(x0 + k * CELL - 0.5, y0, 1, size, GRID_LINE),
                               Rect(x0, y0 + k * CELL - 0.5, size, 1, GRID_LINE)))


@functools.lru_cache(maxsize=16)
def _coords(x0, y0) -> tuple:
    """The row and column numbers."""
    return tuple(shape for k in range(rules.BOARD_SIZE)
                 for shape in (Text(x0 + k * CELL + CELL / 2, y0 - EDGE / 2 - 3, str(k), 10, MUTED),
                               Text(x0 - EDGE / 2 - 3, y0 + k * CELL + CELL / 2, str(k), 10, MUTED)))


def _caption(p, shapes, x, y, width) -> float:
    chars = int(width / (12 * 0.58))

    def line(text, size=12.0, color=INK, bold=False):
        nonlocal y
        for part in textwrap.wrap(text, chars) or [""]:
            y += LINE
            shapes.append(Text(x, y - LINE / 2, part, size, color, "start", bold))

    status = "game over" if p["over"] else f"player_{p['current']} to move"
    line(f"turn {p['turn']}  ·  bag {p['bag']}  ·  {status}", 12.5, INK, True)
    if p["over"]:
        best = max(p["scores"])
        lead = [s for s in range(p["n"]) if p["scores"][s] == best]
    else:
        lead = [p["current"]]
    for s in range(p["n"]):
        noun = "tile" if p["sizes"][s] == 1 else "tiles"
        y += LINE
        if s in lead:
            shapes.append(Text(x, y - LINE / 2, "▶", 11, INK, "start"))
        shapes.append(Text(x + 16, y - LINE / 2, f"player_{s}: {p['scores'][s]} min, {p['sizes'][s]} {noun} in hand",
                           12, INK if s in lead else MUTED, "start", s in lead))
    if p["team"]:
        sc = p["scores"]
        line(f"teams: 0+2 {sc[0] + sc[2]} min, 1+3 {sc[1] + sc[3]} min", 12, MUTED)
    last = p["last"]
    if 0 <= last < rules.PASS_ACTION:
        total = sum(c.minutes for c in p["breakdown"])
        line(f"last move: {rules.action_text(last)}: {breakdown_text(p['breakdown'], total)}", 11.5, LAST)
    elif last == rules.PASS_ACTION:
        line(f"last move: {rules.action_text(last)}", 11.5, LAST)
    if p["hand"] is not None:
        hand = p["hand"]
        tiles = [v + 1 for v in range(rules.MAX_VALUE) for _ in range(int(hand[v]))]
        line(f"hand of player_{p['viewer']}:" + ("" if tiles else " (empty)"), 12, INK)
        if tiles:
            t = 30
            y += 4
            for i, v in enumerate(tiles):
                tx = x + i * (t + 5)
                shapes.append(Rect(tx, y, t, t, TILE, TILE_EDGE, 1.2, 4.0))
                shapes.append(Text(tx + t / 2, y + t / 2 + 1, str(v), 14, INK, "middle", True))
            y += t
    return y


# --- the board for a page that draws it -------------------------------------------------------
def board_data(state, marks=None) -> dict:
    """What `board_svg(state, caption=False, marks=marks)` draws, as data: the cells'
    values (row by row, 0: empty), the Time Out stones' cells, the last action and the
    marks as [cell, value, label, colour]. The web game sends this, not the picture, and
    its page draws the same SVG from it with `page_style` (play.js `boardSvg`; a browser
    test holds the two drawings equal, character for character)."""
    return {"cells": np.asarray(state.board).ravel().tolist(), "timeouts": sorted(int(c) for c in state.timeout_cells),
            "last": int(state.last_action), "marks": [list(m) for m in _normalize_marks(marks)]}


def page_style() -> dict:
    """The sizes, colours and board facts a page needs to draw `board_data` as
    `board_svg` does (with the row and column numbers, no caption, no title)."""
    return {"cell": CELL, "edge": EDGE, "pad": PAD, "font": FONT, "size": rules.BOARD_SIZE,
            "max_value": rules.MAX_VALUE, "pass": rules.PASS_ACTION, "double": list(rules.DOUBLE_TIME_CELLS),
            "colours": {"background": BACKGROUND, "board_edge": BOARD_EDGE, "grid": GRID_LINE,
                        "double_tint": DOUBLE_TINT, "double_ink": DOUBLE_INK, "tile": TILE, "tile_edge": TILE_EDGE,
                        "ink": INK, "muted": MUTED, "stone": STONE, "stone_rim": STONE_RIM, "last": LAST,
                        "paper": PAPER, "ghost": GHOST, "marks": list(MARK_COLORS)}}


# --- SVG ---------------------------------------------------------------------------------------
def _svg_color(color):
    """SVG colour and opacity from '#rrggbb' or '#rrggbbaa'."""
    if color and color.startswith("#") and len(color) == 9:
        return color[:7], int(color[7:], 16) / 255
    return color, None


def _svg_paint(attr, color):
    if color is None:
        return f' {attr}="none"'
    c, alpha = _svg_color(color)
    return f' {attr}="{c}"' + (f' {attr}-opacity="{alpha:.3f}"' if alpha is not None else "")


def _svg_shape(s) -> str:
    if isinstance(s, Rect):
        extra = f' rx="{s.rx:g}"' if s.rx else ""
        if s.stroke:
            extra += f' stroke-width="{s.width:g}"' + (' stroke-dasharray="5 3"' if s.dash else "")
        return (f'<rect x="{s.x:g}" y="{s.y:g}" width="{s.w:g}" height="{s.h:g}"'
                f'{_svg_paint("fill", s.fill)}{_svg_paint("stroke", s.stroke)}{extra}/>')
    if isinstance(s, Circle):
        extra = f' stroke-width="{s.width:g}"' if s.stroke else ""
        return (f'<circle cx="{s.cx:g}" cy="{s.cy:g}" r="{s.r:g}"'
                f'{_svg_paint("fill", s.fill)}{_svg_paint("stroke", s.stroke)}{extra}/>')
    weight = ' font-weight="bold"' if s.bold else ""
    return (f'<text x="{s.x:g}" y="{s.y:g}" font-size="{s.size:g}" fill="{s.color}" text-anchor="{s.anchor}"'
            f' dominant-baseline="central"{weight}>{html.escape(s.text)}</text>')


def board_svg(state, viewer: int | None = None, caption: bool = True, marks=None, title: str | None = None,
              coords: bool = True, scale: float = 1.0) -> str:
    """The board of `state` as a standalone SVG document (a string).

    viewer: the seat whose hand the caption shows (default the seat to move; -1: none).
    caption: add turn, bag, scores, hand sizes, the last move's breakdown and the hand.
    marks: ghost tiles to draw, each an action id or (action, label[, colour]).
    title: a line above the board. scale: multiplies the displayed size (not the layout).
    """
    width, height, shapes = _layout(state, viewer, caption, marks, title, coords)
    body = "\n".join(s.svg for s in shapes)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width * scale:g}" height="{height * scale:g}" '
            f'viewBox="0 0 {width:g} {height:g}" font-family="{FONT}">\n'
            f'<rect x="0" y="0" width="{width:g}" height="{height:g}" fill="{PAPER}"/>\n{body}\n</svg>')


def boards_svg(states: Sequence, titles: Sequence[str] | None = None, gap: float = 12, **options) -> str:
    """Several boards side by side in one SVG (options as for `board_svg`, except that
    `marks`, if given, is a list with one entry per board)."""
    per_marks = options.pop("marks", None) or [None] * len(states)
    if len(per_marks) != len(states):
        raise ValueError(f"marks: one entry per board expected ({len(states)}), got {len(per_marks)}")
    parts, x, height = [], 0.0, 0.0
    for i, state in enumerate(states):
        svg = board_svg(state, marks=per_marks[i], title=titles[i] if titles else None, **options)
        w = float(svg.split('width="', 1)[1].split('"', 1)[0])
        h = float(svg.split('height="', 1)[1].split('"', 1)[0])
        parts.append(svg.replace("<svg ", f'<svg x="{x:g}" y="0" ', 1))
        x += w + gap
        height = max(height, h)
    width = max(x - gap, 1.0)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{height:g}" '
            f'viewBox="0 0 {width:g} {height:g}">\n' + "\n".join(parts) + "\n</svg>")


# --- matplotlib --------------------------------------------------------------------------------
def _mpl_color(color):
    if color is None:
        return "none"
    if color.startswith("#") and len(color) == 9:
        return tuple(int(color[i:i + 2], 16) / 255 for i in (1, 3, 5, 7))
    return color


def _draw_shapes(ax, width, height, shapes, pt_per_px):
    from matplotlib.patches import Circle as MplCircle
    from matplotlib.patches import FancyBboxPatch

    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_aspect("equal")
    ax.axis("off")
    for s in shapes:
        if isinstance(s, Rect):
            style = f"round,pad=0,rounding_size={s.rx}" if s.rx else "square,pad=0"
            ax.add_patch(FancyBboxPatch((s.x, s.y), s.w, s.h, boxstyle=style, facecolor=_mpl_color(s.fill),
                                        edgecolor=_mpl_color(s.stroke),
                                        linewidth=s.width * pt_per_px if s.stroke else 0,
                                        linestyle=(0, (5 / s.width, 3 / s.width)) if s.dash else "-",
                                        mutation_aspect=1))
        elif isinstance(s, Circle):
            ax.add_patch(MplCircle((s.cx, s.cy), s.r, facecolor=_mpl_color(s.fill), edgecolor=_mpl_color(s.stroke),
                                   linewidth=s.width * pt_per_px if s.stroke else 0))
        else:
            ha = {"start": "left", "middle": "center", "end": "right"}[s.anchor]
            ax.text(s.x, s.y, s.text, fontsize=s.size * pt_per_px, color=s.color, ha=ha, va="center_baseline",
                    fontweight="bold" if s.bold else "normal", family="DejaVu Sans")


def draw_board(state, ax=None, viewer: int | None = None, caption: bool = True, marks=None,
               title: str | None = None, coords: bool = True, dpi: float = 100):
    """Draw the board of `state` with matplotlib and return the Figure.

    With `ax`, draw into that Axes (its figure's layout should be final: text sizes are
    fixed from the Axes' current size). Without, a new Figure sized to the picture
    (created without pyplot, so nothing is left open; Jupyter displays it inline).
    """
    require("matplotlib", "drawing the board with matplotlib (draw_board, render_png)")
    width, height, shapes = _layout(state, viewer, caption, marks, title, coords)
    if ax is None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=(width / 100, height / 100), dpi=dpi)
        ax = fig.add_axes((0, 0, 1, 1))
        pt_per_px = 72 / 100
    else:
        fig = ax.figure
        bbox = ax.get_position()
        w_in, h_in = bbox.width * fig.get_figwidth(), bbox.height * fig.get_figheight()
        pt_per_px = 72 * min(w_in / width, h_in / height)
    ax.set_facecolor(PAPER)
    _draw_shapes(ax, width, height, shapes, pt_per_px)
    return fig


def render_png(state, path: str | Path | None = None, scale: float = 1.5, **options) -> bytes:
    """The board of `state` as PNG bytes drawn by matplotlib (options as for `board_svg`);
    also written to `path` if given. `scale` 1 is one pixel per layout unit."""
    require("matplotlib", "drawing the board with matplotlib (draw_board, render_png)")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = draw_board(state, dpi=100 * scale, **options)
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100 * scale, facecolor=PAPER)
    data = buf.getvalue()
    if path is not None:
        Path(path).write_bytes(data)
    return data


# --- Jupyter -----------------------------------------------------------------------------------
class BoardPicture:
    """A snapshot of a board that displays itself in Jupyter (SVG, or HTML with the SVG
    inline). Made by `show`. `save("x.svg")` / `save("x.png")` write it to a file."""

    def __init__(self, states: Sequence, titles: Sequence[str] | None = None, **options):
        self.states = [s.clone() if hasattr(s, "clone") else s for s in states]
        self.titles = list(titles) if titles is not None else None
        self.options = options

    @property
    def svg(self) -> str:
        if len(self.states) == 1:
            return board_svg(self.states[0], title=self.titles[0] if self.titles else None, **self.options)
        return boards_svg(self.states, self.titles, **self.options)

    def _repr_svg_(self) -> str:
        return self.svg

    def _repr_html_(self) -> str:
        return f'<div style="overflow-x:auto">{self.svg}</div>'

    def to_png(self) -> bytes:
        if len(self.states) != 1:
            raise ValueError("PNG output is for one board; save each state separately")
        opts = dict(self.options)
        opts.pop("scale", None)
        return render_png(self.states[0], title=self.titles[0] if self.titles else None, **opts)

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        data = self.to_png() if path.suffix.lower() == ".png" else self.svg.encode("utf-8")
        return atomic_write(path, lambda f: f.write(data))

    def __repr__(self) -> str:
        return f"<BoardPicture of {len(self.states)} board(s)>"


def show(*states, titles: Iterable[str] | None = None, title: str | None = None, **options) -> BoardPicture:
    """A displayable picture of one or more states (side by side); options as for
    `board_svg`. `title` is the title of a single board, `titles` one per board. With
    several boards, `marks` is a list with one entry per board."""
    if not states:
        raise ValueError("show() needs at least one state")
    if title is not None:
        if titles is not None or len(states) != 1:
            raise ValueError("title= is for one board; give titles=[...] for several")
        titles = [title]
    return BoardPicture(list(states), list(titles) if titles is not None else None, **options)
