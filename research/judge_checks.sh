#!/usr/bin/env bash
# The judge's validation (issue 68, item 3): (a) the judge as a player against the shipped
# agent; (b, c) the error table: each agent plays 60 games against greedy (30 deals x 2
# seatings), then the judge grades its seat, floor included. Outputs in results/judge/.
#   bash research/judge_checks.sh match        # (a), 1,000 games
#   bash research/judge_checks.sh table        # (b) and (c), one row per agent below
#   bash research/judge_checks.sh summary      # the table of docs/status.md, "Error per game"
set -euo pipefail
cd "$(dirname "$0")/.."
JUDGE=selfplay:iterations=28000
case "${1:-}" in
  match)
    python evaluate.py --agents "$JUDGE" selfplay:time=0.01 --games 1000 --seed 6803 --workers 1 \
      --no-progress --out results/judge/match ;;
  table)
    # greedy's row: its seats in the games of selfplay:time=0.01 against it
    for spec in selfplay:time=0.01 greedy ismcts:time=0.01 ismcts:time=0.04 selfplay:time=0.04 \
                ismcts:time=0.16 selfplay:time=0.16 "$JUDGE"; do
      games="results/judge/table/${spec//[:=]/_}"; [ "$spec" = greedy ] && games=results/judge/table/selfplay_time_0.01
      out="results/judge/table/${spec//[:=]/_}"
      [ -f "$games/games.jsonl" ] || python evaluate.py --agents "$spec" greedy --games 60 --seed 6804 \
        --workers 1 --save-games --no-progress --no-plots --out "$games"
      [ -f "$out/analysis.json" ] || python evaluate.py analyze "$games" --agent "$spec" --out "$out" \
        --no-progress --no-plots
    done ;;
  summary)
    python - <<'PY'
import json
from pathlib import Path
rows = ["| agent | games | decisions | error per game [95%] | share of a win a game | same move as the judge "
        "| floor per game | clearly weaker than the judge |", "|---|---|---|---|---|---|---|---|"]
for run in ("greedy", "ismcts_time_0.01", "ismcts_time_0.04", "ismcts_time_0.16", "selfplay_time_0.01",
            "selfplay_time_0.04", "selfplay_time_0.16", "selfplay_iterations_28000"):
    path = Path("results/judge/table") / run / "analysis.json"
    if not path.is_file():
        continue
    result = json.loads(path.read_text())
    (player, s), = result["players"].items()
    lo, hi = s["error_per_game_ci95"]
    rows.append(f"| `{player}` | {s['games']} | {s['decisions']:,} | {s['error_per_game']:.3f} [{lo:.3f}, {hi:.3f}] | "
                f"{s['error_per_game'] / 2:.0%} | {s['agreement']:.0%} | {s['floor_per_game']:+.3f} | "
                f"{'yes' if s['weaker_than_judge'] else '**no**'} |")
print("\n".join(rows))
PY
    ;;
  *) echo "usage: $0 match|table|summary" >&2; exit 2 ;;
esac
