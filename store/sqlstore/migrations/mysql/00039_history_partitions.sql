-- +goose Up
-- PostgreSQL partitions the history by day here (see its 00039). MariaDB/MySQL keep one
-- table and retention deletes old history in batches of primary keys found through
-- executions_fired_idx, for these reasons (docs/architecture.md, "History"):
--  * every unique key of a partitioned table must hold the partition column, so the primary
--    key would become (id, scheduled_at), and InnoDB clusters rows by it: each lookup and
--    compare-and-set by id (alarms, late results, the console) would probe every partition;
--  * adding or dropping a partition (ALTER TABLE ... ADD/DROP/REORGANIZE PARTITION) takes an
--    exclusive metadata lock on the whole table, which waits for every open transaction that
--    touched the history and stops every later one (every fire moves a row into it) until
--    it is done; there is no default partition, so a day not created yet fails the insert
--    unless a MAXVALUE partition catches it, and splitting that partition rewrites its rows.
SELECT 1;

-- +goose Down
SELECT 1;
