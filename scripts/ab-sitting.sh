#!/usr/bin/env bash
# One A/B sitting: two builds of sundial, run alternately, 3 runs of each scenario, every
# database recreated before every run, and Quartz 2.3.2 once on the same PostgreSQL. Prints one
# line per run (scenario, build, the bench's JSON figures) to standard output and to $OUT.
# Needs PostgreSQL (127.0.0.1:5432, user postgres, trust) and MariaDB (127.0.0.1:3306, root, no
# password); Quartz only when ../shared/quartz-oracle is set up (its setup.sh). ~25 min.
#   scripts/ab-sitting.sh OLD_SUNDIAL_BINARY NEW_SUNDIAL_BINARY
set -euo pipefail
old=$1 new=$2
runs=${RUNS:-3}
out=${OUT:-ab-sitting.txt}
: > "$out"
log() { echo "$*" | tee -a "$out"; }
pgdb() { psql -h 127.0.0.1 -U postgres -d postgres -qc "drop database if exists sitting" -c "create database sitting" >/dev/null 2>&1; }
mydb() { mysql -h 127.0.0.1 -u root -e "drop database if exists sitting; create database sitting"; }
sq=$(mktemp -d)
PG='postgres://postgres@127.0.0.1:5432/sitting?sslmode=disable'
MY='mysql://root@tcp(127.0.0.1:3306)/sitting'
fields='achieved_fires_per_s lateness_p99_ns duplicates missing unfired transactions_per_fire statements_per_fire cpu_s_per_1000_fires rss_mib'
# run NAME BUILD ARGS...: one bench run, summarised on one line.
run() {
  local name=$1 build=$2; shift 2
  local bin=$old; [ "$build" = new ] && bin=$new
  local json
  # Builds before 6bdb2a6 exit 1 from `bench remote` beyond capacity, after printing their
  # figures: their executors could not hand their last results to the stopping node.
  json=$("$bin" bench "$@" -o json 2>/dev/null) || true
  case $json in *achieved_fires_per_s*) ;; *) log "$name $build FAILED"; return ;; esac
  log "$name $build $(echo "$json" | python3 -c "
import json,sys
d=json.load(sys.stdin)[0]
print(' '.join('%s=%s' % (k, round(d[k],4) if isinstance(d.get(k),float) else d.get(k,'-')) for k in '$fields'.split()))")"
}
log "# start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $(nproc) cores; old $old new $new"
quartz=../shared/quartz-oracle
if [ -x "$quartz/run_bench.sh" ] && [ -d "$quartz/build" -o -d "$quartz/lib" -o -d "$quartz/target" ]; then
  (cd "$quartz" && ./db.sh drop >/dev/null 2>&1; ./db.sh create >/dev/null 2>&1)
  log "quartz M=1000 :: $(cd "$quartz" && ./run_bench.sh sitting-m1000 mode=throughput M=1000 I=1000 D=30 warmupS=10 threads=50 batch=50 2>&1 | grep RESULT || true)"
fi
steady='steady --interval 1s --warmup 5s --duration 15s'
for _ in $(seq "$runs"); do
  for b in old new; do pgdb; run pg-steady-20k $b $steady --db "$PG" --triggers 20000; done
  for b in old new; do rm -f "$sq"/s.db*; run sqlite-steady-10k $b $steady --db "$sq/s.db" --triggers 10000; done
  for b in old new; do mydb; run mariadb-steady-10k $b $steady --db "$MY" --triggers 10000; done
  for b in old new; do pgdb; run pg-remote-10k $b remote --interval 1s --warmup 5s --duration 15s --db "$PG" --triggers 10000 --executors 2; done
done
log "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$sq"
