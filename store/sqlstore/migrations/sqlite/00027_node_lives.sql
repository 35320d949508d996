-- +goose Up
--
-- The row a node's acquisitions lock (NodeHold) to fence a life against the cluster declaring
-- it dead, apart from the nodes row its heartbeat writes: a heartbeat no longer waits for the
-- acquisitions in flight, which under overload held the row for seconds back to back until
-- the heartbeat missed the node timeout. Deleting a life's row here, or giving it to a new
-- life of the node, waits for the acquisitions that hold it.
CREATE TABLE node_lives (
    id          varchar(200) NOT NULL PRIMARY KEY,
    incarnation varchar(32)  NOT NULL
);
INSERT INTO node_lives (id, incarnation) SELECT id, incarnation FROM nodes;

-- +goose Down
DROP TABLE node_lives;
