#!/usr/bin/env bash
# Screenshots of the real Dagster UI on the bundled example (what docs/dagster.md describes).
#
#   docs/screenshots.sh [OUT_DIR] [PORT]      (needs: pip install 'privgate[dagster]', chromium)
#
# 1. prepares the example (python -m privgate.dagster.example --prepare-only): the Adult sample,
#    its holdout, three releases in a watched folder, a SQLite Dagster instance;
# 2. starts `dagster dev` on 127.0.0.1:PORT in its own process group; the release sensor turns
#    the releases into partitions and runs the gate (one run at a time: pool granularity run);
# 3. waits until the three releases have their gate_decision check result, then takes headless
#    Chromium screenshots of the asset's checks, the gate_decision check, a rule check and the
#    release asset's privacy scorecard (its overview and its partitions = releases);
# 4. stops its own process group. PNGs land in OUT_DIR (default ./privgate-screenshots).
set -euo pipefail
OUT=$(realpath -m "${1:-privgate-screenshots}")
PORT=${2:-3311}
BROWSER=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$BROWSER" ] || { echo "chromium not found (apt-get install -y chromium)" >&2; exit 2; }
mkdir -p "$OUT"
eval "$(python3 -m privgate.dagster.example --dir "$OUT/example" --prepare-only | grep '^export ')"
export PRIVGATE_SENSOR_INTERVAL=5
setsid dagster dev -m privgate.dagster -h 127.0.0.1 -p "$PORT" > "$OUT/dagster.log" 2>&1 &
PGID=$!
trap 'kill -KILL -- "-$PGID" 2>/dev/null || true' EXIT
BASE="http://127.0.0.1:$PORT"
graphql() { curl -s -X POST -H 'Content-Type: application/json' --data "$1" "$BASE/graphql"; }
Q='{"query":"{ assetNodes { assetKey { path } assetChecksOrError { ... on AssetChecks { checks { name executionForLatestMaterialization { status } } } } } }"}'
for i in $(seq 1 180); do           # up to 15 minutes on a busy machine
  n=$(python3 - "$PRIVGATE_HISTORY_URL" <<'PY' 2>/dev/null || echo 0
import sys
from privgate.history import HistoryStore
try:
    s = HistoryStore(sys.argv[1]); print(s.runs().height); s.close()
except Exception:
    print(0)
PY
)
  [ "$n" -ge 3 ] && break
  sleep 5
done
sleep 20                            # let the last run's events reach the UI
graphql "$Q" > "$OUT/checks.json" || true
shot() {  # name url
  "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1500,1100 \
    --virtual-time-budget=20000 --screenshot="$OUT/$1.png" "$BASE$2" > /dev/null 2>&1 || true
}
shot asset-checks "/assets/synthetic_release?view=checks"
shot gate-decision "/assets/synthetic_release?view=checks&checkDetail=gate_decision"
shot rule-check "/assets/synthetic_release?view=checks&checkDetail=hitting_rate__baseline_block"
shot scorecard "/assets/synthetic_release_privacy_scorecard"
shot scorecard-partitions "/assets/synthetic_release_privacy_scorecard?view=partitions&partition=release-3-noisy-copy"

ls -l "$OUT"/*.png
