#!/usr/bin/env bash
# A real server (SQLite) and two stand-alone executors (streams), N shell jobs firing every
# second through them: samples every 15 s the executors' and the server's resident memory,
# then stops them and prints the executions by state and their most common messages. Shows
# whether an executor's memory stays flat and whether the remote path loses or fails runs
# under the load asked (issue 23: "executor RSS flat"). Needs jq and python3.
#   scripts/executor-soak.sh SUNDIAL_BINARY [N jobs, default 200] [samples, default 16]
set -u
bin=$(realpath "$1") n=${2:-200} samples=${3:-16}
dir=$(mktemp -d) port=18080
cd "$dir"
export SUNDIAL_SERVER=http://127.0.0.1:$port
"$bin" server --addr 127.0.0.1:$port --db "$dir/s.db" > server.log 2>&1 &
spid=$!
for _ in $(seq 100); do grep -q "with the password" server.log 2>/dev/null && break; sleep 0.2; done
sleep 0.5
pw=$(grep -A2 "with the password" server.log | tail -1 | tr -d ' ')
SUNDIAL_TOKEN=$(echo "$pw" | "$bin" token create soak --login admin -o json | jq -r .token)
export SUNDIAL_TOKEN
"$bin" app create soak --title soak > /dev/null
(umask 077 && "$bin" app credential create soak -o json | jq -r .secret > soak.credential)
epids=()
for e in 1 2; do
  "$bin" executor --app soak --token-file soak.credential --enable-shell --spool-dir "$dir/spool$e" > "exec$e.log" 2>&1 &
  epids+=($!)
done
for j in $(seq "$n"); do "$bin" job create "j$j" --app soak --handler shell --params 'echo hi' --every 1s > /dev/null; done
echo "# $n jobs created $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg); dir $dir"
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
for _ in $(seq "$samples"); do
  sleep 15
  echo "$(date -u +%T) executor1 $(rss "${epids[0]}") kB executor2 $(rss "${epids[1]}") kB server $(rss $spid) kB load $(cut -d' ' -f1 /proc/loadavg)"
done
# The fires of the last 10 s before the executors stop, and those after, are told apart: they
# end by the stop (failed or lost as the executors leave), not by the load.
stopped_ms=$(date +%s%3N)
kill "${epids[@]}"; wait "${epids[@]}" 2>/dev/null
kill $spid; wait $spid 2>/dev/null
python3 - "$dir/s.db" "$stopped_ms" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
before = int(sys.argv[2]) - 10000
print("executions by state:", c.execute("SELECT state, COUNT(*) FROM executions GROUP BY state").fetchall())
print("  of those scheduled up to 10 s before the executors stopped:",
      c.execute("SELECT state, COUNT(*) FROM executions WHERE scheduled_at < ? GROUP BY state", (before,)).fetchall())
for row in c.execute("SELECT state, substr(handle_msg, 1, 90), COUNT(*) FROM executions WHERE state NOT IN ('succeeded')"
                     " GROUP BY 1, substr(handle_msg, 1, 40) ORDER BY 3 DESC LIMIT 5"):
    print(" ", row)
PY
echo "# logs in $dir"
