"""Draw docs/board.png, the README's picture: a 2-player game in progress.

    python docs/make_board_picture.py

Both seats play the move that scores the most minutes now (ties: the lowest action id),
from a fixed deal, and the picture is taken right after the first move worth at least
`MIN_SHOWN_MINUTES` once the board holds `MIN_TILES` tiles, so that it shows Time Out
stones, Double Time cells and a score breakdown. The board is drawn by
`env.render_svg.render_png`, the renderer the notebooks use.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PICTURE = ROOT / "docs" / "board.png"
DEAL_SEED = 12
MIN_TILES = 16
MIN_SHOWN_MINUTES = 60
MAX_TURNS = 60


def best_scoring_action(game) -> int:
    """The legal action that scores the most minutes now (lowest id on ties)."""
    def minutes(action: int) -> int:
        return game.clone().step(action)

    return max(game.legal_actions(), key=lambda a: (minutes(a), -a))


def game_to_show():
    from engine import GameState

    game = GameState.new(2, seed=DEAL_SEED)
    for _ in range(MAX_TURNS):
        if game.is_over:
            break
        points = game.step(best_scoring_action(game))
        if points >= MIN_SHOWN_MINUTES and int((game.board > 0).sum()) >= MIN_TILES:
            return game
    raise RuntimeError(f"deal {DEAL_SEED} never showed a {MIN_SHOWN_MINUTES}-minute move; pick another seed")


def main() -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from env.render_svg import render_png

    png = render_png(game_to_show(), title="A 2-player game of 24/7 after a scoring move")
    fd, tmp = tempfile.mkstemp(dir=PICTURE.parent, prefix=PICTURE.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(png)
    os.chmod(tmp, 0o644)  # mkstemp creates the file private
    os.replace(tmp, PICTURE)
    print(f"wrote {PICTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
