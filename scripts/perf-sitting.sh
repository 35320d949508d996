#!/usr/bin/env bash
# One measuring sitting: the real Quartz 2.3.2 and Sundial on the same PostgreSQL, one after the
# other, so that every ratio compares runs of the same machine state. Prints one line per run
# to standard output (and to $OUT, default perf-sitting.txt). Needs ../shared/quartz-oracle set
# up (its setup.sh) and PostgreSQL at 127.0.0.1:5432 (user postgres, trust). Takes ~30 min.
#   RUNS=3 scripts/perf-sitting.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
out=${OUT:-perf-sitting.txt}
: > "$out"
log() { echo "$*" | tee -a "$out"; }
bin=$(mktemp -d)/sundial
go build -o "$bin" ./cmd/sundial
pg() { psql -h 127.0.0.1 -U postgres -qc "drop database if exists $1" -c "create database $1"; }
pg sundial_sitting
PG='postgres://postgres@127.0.0.1:5432/sundial_sitting?sslmode=disable'
log "# start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) $(nproc) cores"

quartz=../shared/quartz-oracle
if [ -x "$quartz/run_bench.sh" ]; then
  (cd "$quartz" && ./db.sh drop >/dev/null 2>&1; ./db.sh create >/dev/null)
  for m in 250 1000 10000; do
    log "quartz M=$m :: $(cd "$quartz" && ./run_bench.sh sitting-m$m mode=throughput M=$m I=1000 D=30 warmupS=10 threads=50 batch=50 2>&1 | grep RESULT)"
    rm -rf "$quartz/results/sitting-m$m"
  done
fi

# run ARGS...: one bench run; each result line it prints (scale prints one per stored size).
run() { "$bin" bench "$@" 2>&1 | grep -E '^(steady|scale|backlog|remote) ' | while read -r line; do log "$* :: $line"; done || true; }
sqlite=$(mktemp -d)
for m in 250 1000; do run steady --db "$PG" --triggers $m --interval 1s --warmup 10s --duration 30s; done
for _ in $(seq "$runs"); do
  for m in 10000 20000 30000; do run steady --db "$PG" --triggers $m --interval 1s --warmup 5s --duration 15s; done
  run steady --db "$PG" --nodes 2 --triggers 30000 --interval 1s --warmup 5s --duration 15s
  run backlog --db "$PG" --fires 100000
  for m in 10000 15000; do
    rm -f "$sqlite"/s.db*
    run steady --db "$sqlite/s.db" --triggers $m --interval 1s --warmup 5s --duration 15s
  done
done
pg sundial_sitting_remote
for m in 1000 5000; do
  run remote --db 'postgres://postgres@127.0.0.1:5432/sundial_sitting_remote?sslmode=disable' --triggers $m --interval 1s --warmup 5s --duration 15s
done
run scale --db "$PG" --triggers 5000 --interval 1s --stored 10000,100000,1000000 --warmup 5s --duration 15s
log "# end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$sqlite" "$(dirname "$bin")"
