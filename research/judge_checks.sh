#!/usr/bin/env bash
# The judge's validation (issue 68, item 3): (a) the judge as a player against the shipped
# agent; (b, c) the error table: each agent plays 60 games against greedy (30 deals x 2
# seatings), then the judge grades its seat, floor included. Outputs in results/judge/.
#   bash research/judge_checks.sh match        # (a), 1,000 games
#   bash research/judge_checks.sh table        # (b) and (c), one row per agent below
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
  *) echo "usage: $0 match|table" >&2; exit 2 ;;
esac
