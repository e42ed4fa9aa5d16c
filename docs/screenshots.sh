#!/usr/bin/env bash
# Screenshots of the real Dagster UI on the bundled example (what docs/dagster.md describes).
#
#   docs/screenshots.sh [OUT_DIR] [PORT]      (needs: pip install 'privgate[dagster]', chromium)
#
# 1. prepares the example (python -m privgate.dagster.example --prepare-only): the Adult sample,
#    its holdout, three releases in a watched folder, a SQLite Dagster instance;
# 2. starts `dagster dev` on 127.0.0.1:PORT in its own process group; the release sensor turns
#    the releases into partitions and runs the gate (one run at a time: pool granularity run);
# 3. waits until the three releases have their gate_decision check result, drops a fourth, honest
#    release after the blocked one and waits for it, then takes headless Chromium screenshots of
#    the asset's checks, the gate_decision check, a rule check, the release asset's privacy
#    scorecard (its overview and its partitions = releases, with the trends by release) and the
#    latest-release view's checks;
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
# then an honest release after the blocked one: the latest-release view follows it
python3 - "$OUT/example/releases" <<'PY'
import sys
from pathlib import Path
from privgate import baselines
from privgate.data import load_example
folder = Path(sys.argv[1])
tmp = folder / ".release-4-marginals.parquet.tmp"
baselines.independent_marginals(load_example("adult_sample"), seed=11).write_parquet(tmp)
tmp.rename(folder / "release-4-marginals.parquet")
PY
for i in $(seq 1 180); do
  n=$(python3 -c "from privgate.history import HistoryStore; s=HistoryStore('$PRIVGATE_HISTORY_URL'); print(s.runs().height)" 2>/dev/null || echo 0)
  [ "$n" -ge 4 ] && break
  sleep 5
done
sleep 20
graphql "$Q" > "$OUT/checks.json" || true
shot() {  # name url
  "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1500,1100 \
    --virtual-time-budget=20000 --screenshot="$OUT/$1.png" "$BASE$2" > /dev/null 2>&1 || true
}
shot asset-checks "/assets/synthetic_release?view=checks"
shot gate-decision "/assets/synthetic_release?view=checks&checkDetail=gate_decision"
shot rule-check "/assets/synthetic_release?view=checks&checkDetail=hitting_rate__baseline_block"
shot scorecard "/assets/synthetic_release_privacy_scorecard"
shot latest-release-checks "/assets/synthetic_release_latest_release?view=checks"
shot release-checks-all-partitions "/assets/synthetic_release?view=checks"
# the scorecard of the newest release; docs/img/dagster-scorecard-trends.png is this page with the
# `trends` entry's "Show Markdown" dialog opened (a click: by hand, or over the DevTools protocol)
shot scorecard-trends "/assets/synthetic_release_privacy_scorecard?view=partitions&partition=release-4-marginals"
shot scorecard-partitions "/assets/synthetic_release_privacy_scorecard?view=partitions&partition=release-3-noisy-copy"

ls -l "$OUT"/*.png
