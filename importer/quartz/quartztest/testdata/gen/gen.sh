#!/usr/bin/env bash
# Regenerates ../postgres and ../mysql with the real Quartz 2.3.2: creates a scratch database
# on each server, loads Quartz's own schema (tables_postgres.sql, tables_mysql_innodb.sql from
# its jar) for the table prefixes QRTZ_ and LEGACY_, runs Gen.java, and drops the databases.
#
#   QUARTZ_ORACLE=/work/shared/quartz-oracle ./gen.sh
#
# QUARTZ_ORACLE is the quartz-oracle directory after its setup.sh (Debian's libquartz2-java,
# libpostgresql-jdbc-java, libhikaricp-java, libslf4j-java); MariaDB needs Debian's
# libmariadb-java too. PGURL (default postgres://postgres@127.0.0.1:5432/postgres) and
# MYSQL_ARGS (default "-h127.0.0.1 -uroot") reach the servers.
set -euo pipefail
cd "$(dirname "$0")"
Q=${QUARTZ_ORACLE:-/work/shared/quartz-oracle}
PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432/postgres}
MYSQL_ARGS=${MYSQL_ARGS:--h127.0.0.1 -uroot}
DB=quartz_gen_$$
MARIADB_JAR=$(dpkg -L libmariadb-java | grep -E '/mariadb-java-client\.jar$' | head -1)
CP="$Q/lib/quartz.jar:$Q/lib/slf4j-api.jar:$Q/lib/slf4j-simple.jar:$Q/lib/HikariCP.jar:$Q/lib/postgresql.jar:$MARIADB_JAR"
tmp=$(mktemp -d)
cleanup() {
  psql -q "$PGURL" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  mysql $MYSQL_ARGS -e "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

javac -nowarn -d "$tmp" -cp "$CP" Gen.java

# Quartz's schema for one prefix: its own script, QRTZ_ renamed.
schema() { # file in the jar, prefix
  unzip -p "$Q/lib/quartz.jar" "org/quartz/impl/jdbcjobstore/$1" | sed "s/QRTZ_/$2/g"
}
for dialect in postgres mysql; do
  mkdir -p "../$dialect"
  if [ $dialect = postgres ]; then
    f=tables_postgres.sql
  else
    f=tables_mysql_innodb.sql
  fi
  { schema $f QRTZ_; schema $f LEGACY_; } > "../$dialect/schema.sql"
done

psql -q "$PGURL" -c "CREATE DATABASE $DB"
pgdb="${PGURL%/*}/$DB"
psql -q -v ON_ERROR_STOP=1 "$pgdb" -f ../postgres/schema.sql >/dev/null 2>&1
mysql $MYSQL_ARGS -e "CREATE DATABASE $DB"
mysql $MYSQL_ARGS "$DB" < ../mysql/schema.sql

pghost=$(echo "$PGURL" | sed -E 's#^postgres(ql)?://([^@]*@)?([^/]*)/.*#\3#')
pguser=$(echo "$PGURL" | sed -E 's#^postgres(ql)?://([^:@]*).*@.*#\2#')
JAVA="java -Duser.timezone=Europe/Paris -Duser.language=en -Duser.country=US -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp $tmp:$CP Gen"
$JAVA postgres "jdbc:postgresql://$pghost/$DB" "$pguser" "" ../postgres
$JAVA mysql "jdbc:mariadb://127.0.0.1:3306/$DB" root "" ../mysql
echo "written: ../postgres ../mysql"
