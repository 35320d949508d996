package store

import "context"

// Sub-task states. A sub-task is pending until a runner claims it (running); its result is
// accepted once (succeeded or failed); a failed attempt with attempts left goes back to
// pending. Canceled ends the sub-tasks of an execution that ended without them.
const (
	SubtaskPending   = "pending"
	SubtaskRunning   = "running"
	SubtaskSucceeded = "succeeded"
	SubtaskFailed    = "failed"
	SubtaskCanceled  = "canceled"
)

// SubtaskStates lists the sub-task states in the order counts are shown.
var SubtaskStates = []string{SubtaskPending, SubtaskRunning, SubtaskSucceeded, SubtaskFailed, SubtaskCanceled}

// Map states: a map waits for its sub-tasks, is reduced by the runner that claimed it, and is
// done once its execution has a result.
const (
	MapWaiting  = "waiting"
	MapReducing = "reducing"
	MapDone     = "done"
)

// Subtask is one task of a map: its parent execution, the sub-task that mapped it (0 for the
// execution's own handler), its payload, and its latest attempt.
type Subtask struct {
	ID          int64
	ExecutionID int64
	JobID       int64
	Handler     string
	ParentID    int64
	Depth       int
	Seq         int
	Payload     string
	State       string
	Attempt     int
	MaxAttempts int
	// Owner is who runs the current attempt: a node's life ("node/incarnation") or an
	// executor instance; "" while pending.
	Owner      string
	Result     string
	Message    string
	CreatedAt  int64
	ClaimedAt  int64
	FinishedAt int64
}

// SubtaskMap is an execution waiting for, or reducing, its sub-tasks.
type SubtaskMap struct {
	ExecutionID int64
	JobID       int64
	Handler     string
	State       string
	Owner       string
	Total       int64
	CreatedAt   int64
	UpdatedAt   int64
}

// SubtaskResult is the outcome of one claimed attempt, for SubtasksComplete.
type SubtaskResult struct {
	ID      int64
	Attempt int
	Owner   string
	// State is SubtaskSucceeded or SubtaskFailed; a failure with attempts left goes back to
	// pending.
	State   string
	Result  string
	Message string
}

// SubtaskFilter selects sub-tasks of one execution for SubtasksList.
type SubtaskFilter struct {
	ExecutionID int64
	State       string // "" for every state
	AfterID     int64
	Limit       int
}

// Subtasks is the store of map/reduce sub-tasks; it is part of Querier.
type Subtasks interface {
	// SubtasksMap records that m.ExecutionID mapped ts (inserting the map row on its first
	// call), in batched statements, and sets the IDs of the sub-tasks it inserted. A sub-task
	// whose (ExecutionID, ParentID, Seq) is stored already is skipped (a repeated map call).
	// When the map would hold more than maxTotal sub-tasks nothing is stored and the error is
	// ErrLimit. It returns how many it inserted.
	SubtasksMap(ctx context.Context, m *SubtaskMap, ts []*Subtask, maxTotal int64) (int, error)
	// SubtasksClaim moves up to limit pending sub-tasks of the handlers to running for
	// owner, adding one to their attempt, and returns them.
	SubtasksClaim(ctx context.Context, owner string, handlers []string, limit int) ([]*Subtask, error)
	// SubtasksComplete records results, each a compare-and-set on state running and its
	// attempt and owner, and returns the IDs accepted; a result for an attempt no longer
	// running changes nothing.
	SubtasksComplete(ctx context.Context, rs []SubtaskResult) ([]int64, error)
	// SubtasksRelease moves the running sub-tasks of the owners back to pending and the maps
	// they were reducing back to waiting (their runner died), and returns how many sub-tasks
	// it moved.
	SubtasksRelease(ctx context.Context, owners []string) (int64, error)
	// SubtaskOwners lists the owners, starting with prefix, that hold running sub-tasks or
	// reduce maps, each once and sorted.
	SubtaskOwners(ctx context.Context, prefix string) ([]string, error)
	// SubtaskMapsClaimReady moves up to limit waiting maps of the handlers whose sub-tasks
	// are all terminal to reducing for owner and returns them.
	SubtaskMapsClaimReady(ctx context.Context, owner string, handlers []string, limit int) ([]*SubtaskMap, error)
	// SubtaskMapEnd moves the map from reducing by owner to done and reports whether it did.
	SubtaskMapEnd(ctx context.Context, executionID int64, owner string) (bool, error)
	// SubtaskMapGet returns the map of the execution (ErrNotFound for none).
	SubtaskMapGet(ctx context.Context, executionID int64) (*SubtaskMap, error)
	// SubtaskCounts counts the execution's sub-tasks by state (states with none are absent).
	SubtaskCounts(ctx context.Context, executionID int64) (map[string]int64, error)
	// SubtasksList lists sub-tasks by id.
	SubtasksList(ctx context.Context, f SubtaskFilter) ([]*Subtask, error)
}
