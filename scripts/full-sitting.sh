#!/usr/bin/env bash
# The full performance table of issue 23 in one sitting: the A/B of scripts/ab-sitting.sh
# (steady on PostgreSQL, SQLite and MariaDB, remote on PostgreSQL, 3 runs of each build
# alternated, Quartz once), then on the new build overload on each database (3 runs each),
# scale (both builds to 1M stored, the new one to 10M), and history (PostgreSQL 1M and 10M,
# MariaDB and SQLite 1M). Every database is recreated before every run. The A/B lines go to
# $DIR/ab.txt; every other run's JSON is kept whole in $DIR. ~1.5 h on 2 cores.
#   scripts/full-sitting.sh OLD_SUNDIAL_BINARY NEW_SUNDIAL_BINARY
set -euo pipefail
old=$1 new=$2
dir=${DIR:-full-sitting}
mkdir -p "$dir"
here=$(cd "$(dirname "$0")" && pwd)
PGBASE='postgres://postgres@127.0.0.1:5432'
pgdb() { psql -h 127.0.0.1 -U postgres -d postgres -qc "drop database if exists $1" -c "create database $1" >/dev/null 2>&1; }
mydb() { mysql -h 127.0.0.1 -u root -e "drop database if exists $1; create database $1"; }
stamp() { echo "# $* $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$dir/sitting.log"; }
sq=$(mktemp -d)
# keep NAME BIN ARGS...: one bench run, its JSON in $dir/NAME.json and its errors beside it.
keep() {
  local name=$1 bin=$2; shift 2
  stamp "start $name"
  "$bin" bench "$@" -o json > "$dir/$name.json" 2> "$dir/$name.err" || echo "exit $?" >> "$dir/$name.err"
}

stamp start
OUT="$dir/ab.txt" "$here/ab-sitting.sh" "$old" "$new"

for r in 1 2 3; do
  pgdb sitting; keep "overload-pg-$r" "$new" overload --db "$PGBASE/sitting?sslmode=disable"
  rm -f "$sq"/o.db*; keep "overload-sqlite-$r" "$new" overload --db "$sq/o.db"
  mydb sitting; keep "overload-mariadb-$r" "$new" overload --db 'mysql://root@tcp(127.0.0.1:3306)/sitting'
done

for b in old new; do
  bin=$old stored=10000,100000,1000000
  [ $b = new ] && bin=$new stored=10000,100000,1000000,10000000
  pgdb sitting_scale; keep "scale-pg-$b" "$bin" scale --db "$PGBASE/sitting_scale?sslmode=disable" --stored $stored
done
psql -h 127.0.0.1 -U postgres -d postgres -qc "drop database if exists sitting_scale" >/dev/null 2>&1

for n in 1000000 10000000; do
  pgdb sitting_hist; keep "history-pg-$n" "$new" history --db "$PGBASE/sitting_hist?sslmode=disable" --rows $n
done
psql -h 127.0.0.1 -U postgres -d postgres -qc "drop database if exists sitting_hist" >/dev/null 2>&1
mydb sitting_hist; keep history-mariadb-1000000 "$new" history --db 'mysql://root@tcp(127.0.0.1:3306)/sitting_hist' --rows 1000000
mysql -h 127.0.0.1 -u root -e "drop database if exists sitting_hist"
keep history-sqlite-1000000 "$new" history --db "$sq/h.db" --rows 1000000
stamp end
rm -rf "$sq"
