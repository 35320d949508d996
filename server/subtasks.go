package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/store"
)

// SubtaskQuery selects a page of an execution's sub-tasks.
type SubtaskQuery struct {
	ID    int64
	State string
	After int64
	Limit int
}

// SubtaskPage is a page of sub-tasks with the counts of all of the run's by state.
type SubtaskPage struct {
	Subtasks []*store.Subtask
	More     bool
	Counts   map[string]int64
}

func (s *Server) listSubtasks(ctx context.Context, in *SubtaskQuery) (*SubtaskPage, error) {
	limit, err := checkLimit(in.Limit)
	if err != nil {
		return nil, err
	}
	if in.State != "" && !slices.Contains(store.SubtaskStates, in.State) {
		return nil, invalidField("state", "want one of %v, got %q", store.SubtaskStates, in.State)
	}
	if _, err := s.store.ExecutionGet(ctx, in.ID); err != nil {
		return nil, err
	}
	counts, err := s.store.SubtaskCounts(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.SubtasksList(ctx, store.SubtaskFilter{ExecutionID: in.ID, State: in.State, AfterID: in.After, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	page := &SubtaskPage{Counts: counts}
	page.Subtasks, page.More = cut(rows, limit)
	return page, nil
}

func readSubtaskQuery(r *http.Request, in *SubtaskQuery) (err error) {
	if in.ID, err = pathID(r, "id"); err != nil {
		return err
	}
	if in.Limit, in.After, err = idPage(r); err != nil {
		return err
	}
	in.State = r.URL.Query().Get("state")
	return nil
}

func writeSubtaskPage(w http.ResponseWriter, _ *http.Request, p *SubtaskPage) error {
	out := api.SubtaskPage{Page: pageOut(p.Subtasks, p.More, func(st *store.Subtask) string { return strconv.FormatInt(st.ID, 10) }, toSubtaskOut),
		Counts: p.Counts}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func toSubtaskOut(st *store.Subtask) api.Subtask {
	out := api.Subtask{ID: st.ID, ExecutionID: st.ExecutionID, ParentID: st.ParentID, Depth: st.Depth, Seq: st.Seq, State: st.State,
		Attempt: st.Attempt, MaxAttempts: st.MaxAttempts, Owner: st.Owner, Payload: json.RawMessage(st.Payload), Message: st.Message,
		CreatedAt: api.Time(st.CreatedAt), FinishedAt: api.Time(st.FinishedAt)}
	if st.Result != "" {
		out.Result = json.RawMessage(st.Result)
	}
	return out
}
