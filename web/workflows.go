package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
	"github.com/sundial-scheduler/sundial/internal/jobrun"
	"github.com/sundial-scheduler/sundial/schedule"
	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
	"github.com/sundial-scheduler/sundial/workflow"
)

// The workflow pages: the list, a workflow (its graph, triggers, run-now form and recent
// runs), a run (its graph coloured by each node's state, polled while it runs) and the
// editor. The graph is drawn in the browser (workflow.js: dagre lays it out, a small SVG
// renderer draws it) from the JSON the page carries in data-graph, so the same renderer
// serves the workflow, its runs and the editor's preview.

// workflowRunsShown is the recent runs a workflow's page lists.
const workflowRunsShown = 20

// graphView is what workflow.js draws: nodes with what they link to and their state in a run.
type graphView struct {
	Nodes []graphNode `json:"nodes"`
	Edges []graphEdge `json:"edges"`
	Run   bool        `json:"run,omitempty"`
	// Error is the editor's preview's validation error.
	Error string `json:"-"`
}

type graphNode struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Sub is the second line: the job's name, or a decision's expression.
	Sub string `json:"sub,omitempty"`
	// Href is where the node links: its job on a workflow's page, its execution on a run's.
	Href  string `json:"href,omitempty"`
	State string `json:"state,omitempty"`
	// Result is the node's result JSON in a run (shown as the node's tooltip and in the table).
	Result      string `json:"result,omitempty"`
	Message     string `json:"-"`
	ExecutionID int64  `json:"-"`
	JobID       int64  `json:"-"`
	// ChildRun is a sub-workflow node's run in a run (its Href then).
	ChildRun int64 `json:"-"`
}

type graphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	When string `json:"when"`
}

// JSON is the graph as workflow.js reads it from data-graph.
func (g graphView) JSON() string {
	b, _ := json.Marshal(g)
	return string(b)
}

// parseGraph reads a stored graph to draw it (the engine validated it when it was stored).
func parseGraph(src string) (*workflow.Graph, error) {
	var g workflow.Graph
	if err := json.Unmarshal([]byte(src), &g); err != nil {
		return nil, fmt.Errorf("web: workflow graph: %w", err)
	}
	g.Normalize()
	return &g, nil
}

// newGraphView is a workflow graph to draw; jobs names the referenced jobs (absent ones are
// shown by id: a node may outlive its job).
func newGraphView(g *workflow.Graph, jobs map[int64]string) graphView {
	v := graphView{Nodes: []graphNode{}, Edges: []graphEdge{}}
	for _, n := range g.Nodes {
		gn := graphNode{Name: n.Name, Kind: string(n.Kind), JobID: n.JobID}
		switch n.Kind {
		case workflow.KindDecision:
			gn.Sub = n.Expr
		case workflow.KindWorkflow:
			gn.Sub = "workflow " + n.Workflow
			gn.Href = "/workflows/" + url.PathEscape(n.Workflow)
		default:
			gn.Kind = string(workflow.KindJob)
			gn.Sub = jobs[n.JobID]
			if gn.Sub == "" {
				gn.Sub = fmt.Sprintf("job %d", n.JobID)
			}
			gn.Href = fmt.Sprintf("/jobs/%d", n.JobID)
		}
		v.Nodes = append(v.Nodes, gn)
	}
	for _, e := range g.Edges {
		when := string(e.When)
		if when == "" {
			when = string(workflow.OnSuccess)
		}
		v.Edges = append(v.Edges, graphEdge{From: e.From, To: e.To, When: when})
	}
	return v
}

// withRun colours the graph by the run's node states: a node with no row yet is pending.
func (v graphView) withRun(nodes []*store.WorkflowNode) graphView {
	byName := make(map[string]*store.WorkflowNode, len(nodes))
	for _, n := range nodes {
		byName[n.Node] = n
	}
	v.Run = true
	for i := range v.Nodes {
		gn := &v.Nodes[i]
		gn.State, gn.Href = string(workflow.Pending), ""
		if n := byName[gn.Name]; n != nil {
			gn.State, gn.Result, gn.Message, gn.ExecutionID = n.State, n.Result, n.Message, n.ExecutionID
			if n.ExecutionID != 0 {
				gn.Href = fmt.Sprintf("/executions/%d", n.ExecutionID)
			}
			if gn.ChildRun = n.ChildRun; n.ChildRun != 0 {
				gn.Href = fmt.Sprintf("/workflow-runs/%d", n.ChildRun)
			}
		}
	}
	return v
}

// graphJobsShown bounds the jobs a graph's page names one by one; a larger graph shows ids.
const graphJobsShown = 50

// graphJobNames names the jobs g's nodes reference, each read through the API's operation (a
// job out of the reader's scope, or gone, stays an id). A run's page asks every second: it
// reads these few jobs, not the job list.
func (c *Console) graphJobNames(r *http.Request, g *workflow.Graph) map[int64]string {
	names := map[int64]string{}
	for _, n := range g.Nodes {
		if n.JobID == 0 || len(names) >= graphJobsShown {
			continue
		}
		if _, seen := names[n.JobID]; seen {
			continue
		}
		names[n.JobID] = ""
		if d, err := c.ops().GetJob.Execute(r.Context(), &server.JobRef{ID: n.JobID}); err == nil {
			names[n.JobID] = d.Job.Name
		}
	}
	return names
}

type workflowRow struct {
	*store.Workflow
	Nodes int
}

func (c *Console) workflowsPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	in := server.WorkflowQuery{Limit: 100}
	var err error
	if in.After, err = queryInt(q, "after"); err != nil {
		return err
	}
	page, err := c.ops().ListWorkflows.Execute(r.Context(), &in)
	if err != nil {
		return err
	}
	rows := make([]workflowRow, len(page.Workflows))
	for i, wf := range page.Workflows {
		rows[i] = workflowRow{Workflow: wf}
		if g, err := parseGraph(wf.Graph); err == nil {
			rows[i].Nodes = len(g.Nodes)
		}
	}
	next := ""
	if page.More {
		next = strconv.FormatInt(page.Workflows[len(page.Workflows)-1].ID, 10)
	}
	return c.render(w, r, http.StatusOK, "workflows", &view{Title: "Workflows", Nav: "workflows", Flash: flashText(q.Get("done")),
		Data: map[string]any{"Rows": rows, "Next": next}})
}

type workflowView struct {
	*store.Workflow
	Graph graphView
	// Triggers are the workflow's trigger jobs (handler sundial.workflow, params its name)
	// with their triggers.
	Triggers []jobRow
	Runs     []*store.WorkflowRun
	More     bool
	// Params is the run-now form's value, Err its error.
	Params, Err string
	// Backfill is the backfill dialog's form, Plan a dry run's answer; Backfills are those of
	// the workflow's trigger jobs.
	Backfill  Form
	Plan      *api.Backfill
	Backfills []api.Backfill
	// Editable says the reader may edit the workflow (its update operation would not refuse).
	Editable bool
}

// workflowForms are the dialogs of a workflow's page a refused or planned action reopens.
type workflowForms struct {
	Params, Err string
	Backfill    Form
	Plan        *api.Backfill
}

func (c *Console) workflowDetail(w http.ResponseWriter, r *http.Request) error {
	return c.showWorkflowWith(w, r, http.StatusOK, workflowForms{})
}

func (c *Console) showWorkflow(w http.ResponseWriter, r *http.Request, status int, params, perr string) error {
	return c.showWorkflowWith(w, r, status, workflowForms{Params: params, Err: perr})
}

func (c *Console) showWorkflowWith(w http.ResponseWriter, r *http.Request, status int, forms workflowForms) error {
	params, perr := forms.Params, forms.Err
	name := r.PathValue("name")
	wf, err := c.ops().GetWorkflow.Execute(r.Context(), &server.WorkflowRef{Name: name})
	if err != nil {
		return err
	}
	g, err := parseGraph(wf.Graph)
	if err != nil {
		return err
	}
	names := c.graphJobNames(r, g)
	v := workflowView{Workflow: wf, Graph: newGraphView(g, names), Params: params, Err: perr, Backfill: forms.Backfill, Plan: forms.Plan}
	if params == "" {
		v.Params = wf.Params
	}
	v.Editable = c.ops().UpdateWorkflow.Allows(r.Context(), &server.WorkflowChange{Name: wf.Name,
		WorkflowUpdate: api.WorkflowUpdate{Graph: json.RawMessage(wf.Graph)}}) == nil
	triggers, err := c.ops().ListJobs.Execute(r.Context(), &server.JobQuery{Handler: server.WorkflowHandler, Limit: 1000, WithTriggers: true, WithLast: true})
	if err != nil {
		return err
	}
	for _, j := range triggers.Jobs {
		if strings.TrimSpace(j.Params) == wf.Name {
			v.Triggers = append(v.Triggers, jobRow{Job: j, Triggers: triggers.Triggers[j.ID], Last: triggers.Last[j.ID]})
			bs, err := c.ops().ListBackfills.Execute(r.Context(), &server.JobRef{ID: j.ID})
			if err != nil {
				return err
			}
			v.Backfills = append(v.Backfills, *bs...)
		}
	}
	runs, err := c.ops().ListWorkflowRuns.Execute(r.Context(), &server.WorkflowRunQuery{Name: name, Limit: workflowRunsShown})
	if err != nil {
		return err
	}
	v.Runs, v.More = runs.Runs, runs.More
	return c.render(w, r, status, "workflow", &view{Title: "Workflow " + wf.Name, Nav: "workflows", Data: v,
		Flash: flashText(r.URL.Query().Get("done"))})
}

// workflowRun runs the workflow now with the form's params (empty: the workflow's own) and
// shows the run.
func (c *Console) workflowRun(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	params := strings.TrimSpace(r.PostFormValue("params"))
	in := &server.WorkflowRunStart{Name: name}
	if params != "" {
		if !json.Valid([]byte(params)) {
			return c.showWorkflow(w, r, http.StatusBadRequest, params, "not JSON: want an object such as {\"full\": true}")
		}
		in.Params = json.RawMessage(params)
	}
	out, err := c.ops().RunWorkflow.Execute(r.Context(), in)
	if err != nil {
		if ae, _ := server.ErrorOf(err); ae.Status == http.StatusBadRequest {
			return c.showWorkflow(w, r, http.StatusBadRequest, params, ae.Message)
		}
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/workflow-runs/%d", out.Run.ID), http.StatusSeeOther)
	return nil
}

type workflowRunView struct {
	Run      *store.WorkflowRun
	Workflow *store.Workflow
	Graph    graphView
	Now      int64
	// Parent is the sub-workflow node this run runs for (nil for a run of its own).
	Parent *store.WorkflowNode
}

// Ended says the run will change no more (the page stops polling).
func (v workflowRunView) Ended() bool { return v.Run.State != string(workflow.RunRunning) }

// Took is the run's duration so far.
func (v workflowRunView) Took() int64 {
	if v.Run.FinishedAt != 0 {
		return v.Run.FinishedAt - v.Run.CreatedAt
	}
	return v.Now - v.Run.CreatedAt
}

// workflowRunPage shows a run; while it runs the page asks again every second for its live
// part (an htmx request naming #wf-live gets only that).
func (c *Console) workflowRunPage(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	out, err := c.ops().GetWorkflowRun.Execute(r.Context(), &server.WorkflowRunRef{ID: id})
	if err != nil {
		return err
	}
	g, err := parseGraph(out.Run.Graph)
	if err != nil {
		return err
	}
	names := c.graphJobNames(r, g)
	v := workflowRunView{Run: out.Run, Graph: newGraphView(g, names).withRun(out.Nodes), Now: c.clock.Now().UnixMilli()}
	// The workflow may have been deleted since (nil); its runs stay as history.
	v.Workflow, v.Parent = out.Workflow, out.Parent
	vw := &view{Title: fmt.Sprintf("Workflow run #%d", id), Nav: "workflows", Data: v, Flash: flashText(r.URL.Query().Get("done"))}
	if r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Target") == "wf-live" {
		vw.User, vw.CSRF = userFrom(r.Context()), csrfFrom(r.Context())
		return c.renderFragment(w, r, "workflow_run", "wf-live", vw)
	}
	return c.render(w, r, http.StatusOK, "workflow_run", vw)
}

// workflowRunCancel cancels a run through the API's operation and returns to it.
func (c *Console) workflowRunCancel(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.ops().CancelWorkflowRun.Execute(r.Context(), &server.WorkflowRunRef{ID: id}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/workflow-runs/%d?done=wf-canceled-%d", id, id), http.StatusSeeOther)
	return nil
}

// workflowRunRetry starts a run's failed and canceled nodes again through the API's
// operation (the engine refuses a run with none: 409).
func (c *Console) workflowRunRetry(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.ops().RetryWorkflowRun.Execute(r.Context(), &server.WorkflowRunRef{ID: id}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/workflow-runs/%d?done=wf-retried-%d", id, id), http.StatusSeeOther)
	return nil
}

// workflowNodeRetry starts one failed or canceled node of a run again.
func (c *Console) workflowNodeRetry(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	if _, err := c.ops().RetryWorkflowNode.Execute(r.Context(), &server.WorkflowNodeRef{ID: id, Node: r.PathValue("node")}); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/workflow-runs/%d?done=wf-node-retried-%d", id, id), http.StatusSeeOther)
	return nil
}

// workflowNodeMark marks a node of a run succeeded (with no result), so the nodes after it
// start.
func (c *Console) workflowNodeMark(w http.ResponseWriter, r *http.Request) error {
	id, err := pathInt(r, "id")
	if err != nil {
		return err
	}
	in := &server.WorkflowNodeMark{WorkflowNodeRef: server.WorkflowNodeRef{ID: id, Node: r.PathValue("node")}}
	if _, err := c.ops().MarkWorkflowNode.Execute(r.Context(), in); err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/workflow-runs/%d?done=wf-node-marked-%d", id, id), http.StatusSeeOther)
	return nil
}

// The editor, for a new workflow and a stored one. Its form has a row per node and per edge;
// each input of a row is named after the graph's JSON field it edits (node_<field>,
// edge_<field>, graph_<field> for the graph's own settings), one value per row, so a
// validation error naming a graph field (nodes[2].retries) is shown at that row's input.
// nodeField, edgeField and graphField list the inputs: a new setting of a node, an edge
// or the graph is one entry there (TestEditorCoversGraphFields wants every JSON field of
// package workflow's Node, Edge and Graph listed), a new node kind one entry in nodeKinds.

// rowInput is how a field is entered.
type rowInput string

const (
	inText   rowInput = "text"
	inNumber rowInput = "number" // a whole number; blank leaves the field out
	inSelect rowInput = "select"
	// inJob is the job picker: a search as you type over the jobs the reader may see
	// (GET /workflow-jobs) that sets the row's job id.
	inJob rowInput = "job"
)

// rowField is one input of an editor row.
type rowField struct {
	// Key is the graph's JSON field the input edits.
	Key     string
	Label   string
	Input   rowInput
	Options []string
	// Kinds are the node kinds that have the field (none: every row): another kind's row
	// hides the input and its value is not read.
	Kinds             []workflow.Kind
	Placeholder, Hint string
	Mono              bool
	// List is the datalist the input suggests from.
	List string
}

// nodeKinds are the kinds a node row offers.
var nodeKinds = []string{string(workflow.KindJob), string(workflow.KindDecision), string(workflow.KindWorkflow)}

var (
	jobOnly   = []workflow.Kind{workflow.KindJob}
	nodeField = []rowField{
		{Key: "name", Label: "Name", Input: inText, Mono: true},
		{Key: "kind", Label: "Kind", Input: inSelect, Options: nodeKinds},
		{Key: "job_id", Label: "Job", Input: inJob, Kinds: jobOnly},
		{Key: "expr", Label: "Decision expression", Input: inText, Kinds: []workflow.Kind{workflow.KindDecision},
			Placeholder: "params.full == true", Mono: true},
		{Key: "workflow", Label: "Sub-workflow", Input: inText, Kinds: []workflow.Kind{workflow.KindWorkflow},
			Placeholder: "the workflow's name", Mono: true},
		{Key: "on_failure", Label: "On failure", Input: inSelect, Options: []string{string(workflow.FailWorkflow), string(workflow.Continue), string(workflow.Skip)}},
		{Key: "timeout_ms", Label: "Timeout (ms)", Input: inNumber, Kinds: jobOnly, Placeholder: "the job's"},
		{Key: "retries", Label: "Retries", Input: inNumber, Kinds: jobOnly, Placeholder: "the job's"},
		{Key: "retry_backoff_ms", Label: "Retry backoff (ms)", Input: inNumber, Kinds: jobOnly, Placeholder: "the job's"},
	}
	edgeField = []rowField{
		{Key: "from", Label: "From", Input: inText, Mono: true, List: "wf-node-names"},
		{Key: "to", Label: "To", Input: inText, Mono: true, List: "wf-node-names"},
		{Key: "when", Label: "When", Input: inSelect, Options: []string{string(workflow.OnSuccess), string(workflow.OnFailure),
			string(workflow.Always), string(workflow.IfTrue), string(workflow.IfFalse)}},
	}
	graphField = []rowField{
		{Key: "timeout_ms", Label: "Run timeout (ms)", Input: inNumber, Placeholder: "none",
			Hint: "A run still running after this fails; its running nodes are killed"},
	}
)

func (f rowField) has(kind string) bool {
	return len(f.Kinds) == 0 || slices.Contains(f.Kinds, workflow.Kind(kind))
}

// KindsAttr is the data-kinds the page script shows the input by ("" for every kind).
func (f rowField) KindsAttr() string {
	ks := make([]string, len(f.Kinds))
	for i, k := range f.Kinds {
		ks[i] = string(k)
	}
	return strings.Join(ks, " ")
}

// rowCell is a field of one row as the page shows it.
type rowCell struct {
	rowField
	// Name and ID are the input's form name and element id; Value its text.
	Name, ID, Value string
	// Display is the picked job's name (the job picker's text).
	Display string
	Err     string
	// Shown is false when the row's kind has no such field.
	Shown bool
}

// formRow is a node's or an edge's row: its values by field, and the errors at them.
type formRow struct {
	Vals map[string]string
	Errs map[string]string
}

type workflowEditView struct {
	Name, Description, Params string
	// Concurrency and MaxConcurrent are the workflow's overlap policy, kept beside the graph
	// (an update without them would reset it to allow).
	Concurrency, MaxConcurrent string
	// Version is the stored workflow's version the form was read at (0 for a new one): its
	// save is a compare-and-set on it.
	Version int64
	// Conflict says another edit saved the workflow first, at version Current.
	Conflict string
	Current  int64
	Nodes    []formRow
	Edges    []formRow
	Graph    map[string]string
	// Errs are the errors of the form's own fields (name, params, the graph's settings, the
	// graph as a whole).
	Errs    map[string]string
	Preview graphView
	// jobs names the jobs the rows pick.
	jobs map[int64]string
}

// E is the error at a field of the form.
func (v workflowEditView) E(field string) string { return v.Errs[field] }

// Edit says the form edits a stored workflow.
func (v workflowEditView) Edit() bool { return v.Version != 0 }

// NodeCells, EdgeCells and GraphCells are the inputs of row i and of the graph.
func (v workflowEditView) NodeCells(i int) []rowCell {
	return v.cells("node", nodeField, v.Nodes[i], i)
}
func (v workflowEditView) EdgeCells(i int) []rowCell {
	return v.cells("edge", edgeField, v.Edges[i], i)
}
func (v workflowEditView) GraphCells() []rowCell {
	cs := make([]rowCell, len(graphField))
	for i, f := range graphField {
		cs[i] = rowCell{rowField: f, Name: "graph_" + f.Key, ID: "graph-" + fieldID(strings.ReplaceAll(f.Key, "_", "-")),
			Value: v.Graph[f.Key], Err: v.Errs[f.Key], Shown: true}
	}
	return cs
}

func (v workflowEditView) cells(row string, fields []rowField, r formRow, i int) []rowCell {
	cs := make([]rowCell, len(fields))
	for j, f := range fields {
		c := rowCell{rowField: f, Name: row + "_" + f.Key, ID: fmt.Sprintf("%s-%s-%d", row, strings.ReplaceAll(f.Key, "_", "-"), i),
			Value: r.Vals[f.Key], Err: r.Errs[f.Key], Shown: f.has(or(r.Vals["kind"], string(workflow.KindJob)))}
		if f.Input == inJob && c.Value != "" {
			id, _ := strconv.ParseInt(c.Value, 10, 64)
			c.Display = or(v.jobs[id], "job "+c.Value)
		}
		cs[j] = c
	}
	return cs
}

// NodeNames are the rows' node names, offered to the edges' from and to.
func (v workflowEditView) NodeNames() []string {
	var ns []string
	for _, n := range v.Nodes {
		if s := n.Vals["name"]; s != "" {
			ns = append(ns, s)
		}
	}
	return ns
}

// readRows reads the form's rows of fields named prefix_<key>; a row whose texts, numbers
// and job are all blank is left out (its selects always have a value).
func readRows(form url.Values, prefix string, fields []rowField) []formRow {
	n := 0
	for _, f := range fields {
		n = max(n, len(form[prefix+f.Key]))
	}
	var rows []formRow
	for i := range n {
		r := formRow{Vals: map[string]string{}, Errs: map[string]string{}}
		blank := true
		for _, f := range fields {
			if vs := form[prefix+f.Key]; i < len(vs) {
				r.Vals[f.Key] = strings.TrimSpace(vs[i])
			}
			blank = blank && (f.Input == inSelect || r.Vals[f.Key] == "")
		}
		if !blank {
			rows = append(rows, r)
		}
	}
	return rows
}

// object is the JSON object of a row's fields its kind has, its blank ones left out; a
// number that is not one is an error at its field.
func object(fields []rowField, r formRow) map[string]any {
	o := map[string]any{}
	for _, f := range fields {
		v := r.Vals[f.Key]
		if v == "" || !f.has(or(r.Vals["kind"], string(workflow.KindJob))) {
			continue
		}
		if f.Input == inNumber || f.Input == inJob {
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case err != nil && f.Input == inJob:
				r.Errs[f.Key] = fmt.Sprintf("want a job, got %q", v)
			case err != nil:
				r.Errs[f.Key] = fmt.Sprintf("want a whole number, got %q", v)
			}
			o[f.Key] = n
			continue
		}
		o[f.Key] = v
	}
	return o
}

// graphForm reads the editor's form into a graph. Kinds, conditions and failure handlings
// keep the form's words; the graph's validation names what is wrong.
func graphForm(form url.Values) (v workflowEditView, g workflow.Graph) {
	v = workflowEditView{Name: strings.TrimSpace(form.Get("name")), Description: strings.TrimSpace(form.Get("description")),
		// A textarea sends its lines ended by CRLF: the stored text keeps the ones it had.
		Params: strings.ReplaceAll(strings.TrimSpace(form.Get("params")), "\r\n", "\n"),
		Nodes:  readRows(form, "node_", nodeField), Edges: readRows(form, "edge_", edgeField),
		Graph: map[string]string{}, Errs: map[string]string{}}
	v.Version, _ = strconv.ParseInt(form.Get("version"), 10, 64)
	v.Concurrency = or(strings.TrimSpace(form.Get("concurrency")), string(jobrun.Allow))
	v.MaxConcurrent = strings.TrimSpace(form.Get("max_concurrent"))
	doc := map[string]any{}
	for _, f := range graphField {
		v.Graph[f.Key] = strings.TrimSpace(form.Get("graph_" + f.Key))
	}
	maps.Copy(doc, object(graphField, formRow{Vals: v.Graph, Errs: v.Errs}))
	nodes, edges := []any{}, []any{}
	for _, r := range v.Nodes {
		nodes = append(nodes, object(nodeField, r))
	}
	for _, r := range v.Edges {
		edges = append(edges, object(edgeField, r))
	}
	doc["nodes"], doc["edges"] = nodes, edges
	// The rows become the graph through its JSON, so each field reaches the graph by the name
	// the API gives it; a field listed here that the graph lacks is refused.
	b, err := json.Marshal(doc)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = dec.Decode(&g)
	}
	if err != nil {
		v.Errs["graph"] = err.Error()
	}
	return v, g
}

// formOf is the editor's form of a stored workflow: what graphForm reads back into its graph.
func formOf(wf *store.Workflow, g *workflow.Graph) url.Values {
	form := url.Values{"name": {wf.Name}, "description": {wf.Description}, "params": {wf.Params},
		"version": {strconv.FormatInt(wf.Version, 10)}, "concurrency": {or(wf.Concurrency, string(jobrun.Allow))}}
	if wf.MaxConcurrent > 0 {
		form.Set("max_concurrent", strconv.Itoa(wf.MaxConcurrent))
	}
	add := func(prefix string, fields []rowField, x any) {
		b, _ := json.Marshal(x)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var m map[string]any
		_ = dec.Decode(&m)
		for _, f := range fields {
			s := ""
			if v, ok := m[f.Key]; ok && v != nil {
				s = fmt.Sprint(v)
			}
			form.Add(prefix+f.Key, s)
		}
	}
	add("graph_", graphField, g)
	for _, n := range g.Nodes {
		add("node_", nodeField, n)
	}
	for _, e := range g.Edges {
		add("edge_", edgeField, e)
	}
	return form
}

// placeError shows a graph field error (nodes[1].name, edges[0].when, edges, timeout_ms) at
// the row's input it names, or as the graph's error.
func (v *workflowEditView) placeError(field, msg string) {
	field = strings.TrimPrefix(field, "graph.")
	at := func(rows []formRow, fields []rowField, i int, rest, dflt string) bool {
		if i < 0 || i >= len(rows) {
			return false
		}
		if !slices.ContainsFunc(fields, func(f rowField) bool { return f.Key == rest }) {
			rest = dflt
		}
		rows[i].Errs[rest] = msg
		return true
	}
	rest := ""
	if j := strings.Index(field, "]."); j >= 0 {
		rest = field[j+2:]
	}
	var i int
	switch {
	case strings.HasPrefix(field, "nodes[") && fmtScan(field, "nodes[%d]", &i) && at(v.Nodes, nodeField, i, rest, "name"):
	case strings.HasPrefix(field, "edges[") && fmtScan(field, "edges[%d]", &i) && at(v.Edges, edgeField, i, rest, "to"):
	case field == "name" || field == "params" || field == "description" || field == "concurrency" || field == "max_concurrent" ||
		slices.ContainsFunc(graphField, func(f rowField) bool { return f.Key == field }):
		v.Errs[field] = msg
	default:
		v.Errs["graph"] = msg
	}
}

func fmtScan(s, format string, i *int) bool {
	n, err := fmt.Sscanf(s, format, i)
	return err == nil && n == 1
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// check validates the form's graph as the workflow's validation does, placing its error.
func (v *workflowEditView) check(g *workflow.Graph) bool {
	if v.firstError() != "" {
		return false
	}
	g.Normalize()
	err := g.Validate()
	var fe *schedule.FieldError
	if errors.As(err, &fe) {
		v.placeError(fe.Field, fe.Err.Error())
		return false
	}
	return err == nil
}

func (c *Console) workflowEditor(w http.ResponseWriter, r *http.Request, status int, v workflowEditView, g *workflow.Graph) error {
	v.jobs = c.graphJobNames(r, g)
	// The rows always end in a blank node and a blank edge, the ones "add" copies.
	v.Nodes = append(v.Nodes, formRow{Vals: map[string]string{"kind": string(workflow.KindJob)}, Errs: map[string]string{}})
	v.Edges = append(v.Edges, formRow{Vals: map[string]string{}, Errs: map[string]string{}})
	v.Preview = previewOf(v, v.jobs)
	title := "New workflow"
	if v.Edit() {
		title = "Edit workflow " + v.Name
	}
	return c.render(w, r, status, "workflow_edit", &view{Title: title, Nav: "workflows", Data: v})
}

// previewOf draws what the form's rows name so far, valid or not: nodes without a name and
// edges to no node are left out.
func previewOf(v workflowEditView, names map[int64]string) graphView {
	pv := graphView{Nodes: []graphNode{}, Edges: []graphEdge{}}
	seen := map[string]bool{}
	for _, r := range v.Nodes {
		n := r.Vals
		if n["name"] == "" || seen[n["name"]] {
			continue
		}
		seen[n["name"]] = true
		gn := graphNode{Name: n["name"], Kind: or(n["kind"], string(workflow.KindJob))}
		if gn.Kind == string(workflow.KindDecision) {
			gn.Sub = n["expr"]
		} else if gn.Kind == string(workflow.KindWorkflow) {
			gn.Sub = n["workflow"]
		} else if id, err := strconv.ParseInt(n["job_id"], 10, 64); err == nil {
			gn.Sub = or(names[id], "job "+n["job_id"])
		}
		pv.Nodes = append(pv.Nodes, gn)
	}
	for _, r := range v.Edges {
		e := r.Vals
		if seen[e["from"]] && seen[e["to"]] && e["from"] != e["to"] {
			pv.Edges = append(pv.Edges, graphEdge{From: e["from"], To: e["to"], When: or(e["when"], string(workflow.OnSuccess))})
		}
	}
	return pv
}

func (c *Console) workflowNew(w http.ResponseWriter, r *http.Request) error {
	if u := userFrom(r.Context()); !u.Operates() {
		return errForbidden("a viewer cannot create workflows")
	}
	return c.workflowEditor(w, r, http.StatusOK, workflowEditView{Graph: map[string]string{}, Errs: map[string]string{}}, &workflow.Graph{})
}

// workflowEdit opens the editor on a stored workflow, to those its update operation would
// not refuse. A graph the form cannot carry whole (a setting the editor lacks) is refused
// rather than shown without it, so saving cannot drop it.
func (c *Console) workflowEdit(w http.ResponseWriter, r *http.Request) error {
	wf, err := c.ops().GetWorkflow.Execute(r.Context(), &server.WorkflowRef{Name: r.PathValue("name")})
	if err != nil {
		return err
	}
	if err := c.ops().UpdateWorkflow.Allows(r.Context(), &server.WorkflowChange{Name: wf.Name,
		WorkflowUpdate: api.WorkflowUpdate{Graph: json.RawMessage(wf.Graph)}}); err != nil {
		return err
	}
	g, err := parseGraph(wf.Graph)
	if err != nil {
		return err
	}
	v, back := graphForm(formOf(wf, g))
	back.Normalize()
	if want, got := mustJSON(g), mustJSON(&back); want != got {
		return &api.Error{Status: http.StatusConflict, Code: "conflict", Message: fmt.Sprintf(
			"workflow %s has settings the console's editor cannot show (%s): edit it with sundial workflow update or the API", wf.Name, got)}
	}
	return c.workflowEditor(w, r, http.StatusOK, v, g)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// workflowPreview is the editor's live graph: the rows drawn, and the first error the
// workflow's validation finds.
func (c *Console) workflowPreview(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	v, g := graphForm(r.PostForm)
	pv := previewOf(v, c.graphJobNames(r, &g))
	if len(g.Nodes) > 0 && !v.check(&g) {
		pv.Error = v.firstError()
	}
	return c.renderFragment(w, r, "workflow_edit", "wf-preview", pv)
}

// firstError is the one error a preview names, with the row it is at.
func (v workflowEditView) firstError() string {
	for i, n := range v.Nodes {
		for _, f := range nodeField {
			if msg := n.Errs[f.Key]; msg != "" {
				return fmt.Sprintf("node %d (%s) %s: %s", i+1, or(n.Vals["name"], "unnamed"), f.Key, msg)
			}
		}
	}
	for i, e := range v.Edges {
		for _, f := range edgeField {
			if msg := e.Errs[f.Key]; msg != "" {
				return fmt.Sprintf("edge %d %s: %s", i+1, f.Key, msg)
			}
		}
	}
	for _, f := range graphField {
		if msg := v.Errs[f.Key]; msg != "" {
			return f.Key + ": " + msg
		}
	}
	return v.Errs["graph"]
}

// readEditor reads and checks the editor's form; ok is false when it shows an error.
func readEditor(r *http.Request) (v workflowEditView, g workflow.Graph, graph []byte, ok bool, err error) {
	if err := r.ParseForm(); err != nil {
		return v, g, nil, false, err
	}
	v, g = graphForm(r.PostForm)
	if v.Params != "" && !json.Valid([]byte(v.Params)) {
		v.Errs["params"] = "not JSON: want an object such as {\"full\": true}"
	}
	if _, perr := v.overlap(); perr != nil {
		v.Errs["max_concurrent"] = perr.Error()
	}
	if !v.check(&g) || len(v.Errs) > 0 {
		return v, g, nil, false, nil
	}
	graph, err = json.Marshal(g)
	return v, g, graph, err == nil, err
}

// overlap is the form's overlap policy as the API takes it; the policy itself is checked by the
// operation, which names the field it refuses.
func (v workflowEditView) overlap() (api.WorkflowOverlap, error) {
	o := api.WorkflowOverlap{Concurrency: v.Concurrency}
	if v.MaxConcurrent == "" {
		return o, nil
	}
	n, err := strconv.Atoi(v.MaxConcurrent)
	if err != nil {
		return o, fmt.Errorf("not a whole number: %q", v.MaxConcurrent)
	}
	o.MaxConcurrent = n
	return o, nil
}

// refused shows an operation's refusal of the editor's workflow at its field; it returns
// false for an error that is not about the form.
func (v *workflowEditView) refused(err error) bool {
	ae, _ := server.ErrorOf(err)
	switch {
	case ae.Code == "already_exists":
		v.Errs["name"] = ae.Message
	case ae.Status == http.StatusBadRequest || (ae.Status == http.StatusForbidden && ae.Field != ""):
		v.placeError(ae.Field, ae.Message)
	default:
		return false
	}
	return true
}

// workflowCreate stores the editor's workflow through the API's create operation; a refused
// one reopens the editor with the error at its field.
func (c *Console) workflowCreate(w http.ResponseWriter, r *http.Request) error {
	v, g, graph, ok, err := readEditor(r)
	if err != nil {
		return err
	}
	if !ok {
		return c.workflowEditor(w, r, http.StatusOK, v, &g)
	}
	req := &api.WorkflowRequest{Name: v.Name, Description: v.Description, Graph: graph}
	req.WorkflowOverlap, _ = v.overlap()
	if v.Params != "" {
		req.Params = json.RawMessage(v.Params)
	}
	wf, err := c.ops().CreateWorkflow.Execute(r.Context(), req)
	if err != nil {
		if !v.refused(err) {
			return err
		}
		return c.workflowEditor(w, r, http.StatusOK, v, &g)
	}
	http.Redirect(w, r, "/workflows/"+url.PathEscape(wf.Name)+"?done=wf-created", http.StatusSeeOther)
	return nil
}

// workflowUpdate saves the editor's workflow through the API's update operation, a
// compare-and-set on the version the form was read at (or the newer one its "save over"
// button names). When another edit came first it reopens the form as it was sent, nothing
// lost, with the conflict and the version now stored.
func (c *Console) workflowUpdate(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	v, g, graph, ok, err := readEditor(r)
	if err != nil {
		return err
	}
	v.Name = name
	if over, err := strconv.ParseInt(r.PostForm.Get("overwrite"), 10, 64); err == nil && over > 0 {
		v.Version = over
	}
	if !ok {
		return c.workflowEditor(w, r, http.StatusOK, v, &g)
	}
	if v.Version == 0 {
		return errBadRequest("version: the form names no version of the workflow")
	}
	req := &server.WorkflowChange{Name: name, WorkflowUpdate: api.WorkflowUpdate{Description: v.Description, Graph: graph, Version: v.Version}}
	req.WorkflowOverlap, _ = v.overlap()
	if v.Params != "" {
		req.Params = json.RawMessage(v.Params)
	}
	wf, err := c.ops().UpdateWorkflow.Execute(r.Context(), req)
	if ae, _ := server.ErrorOf(err); ae.Status == http.StatusConflict {
		now, gerr := c.ops().GetWorkflow.Execute(r.Context(), &server.WorkflowRef{Name: name})
		if gerr != nil {
			return gerr
		}
		v.Conflict, v.Current = ae.Message, now.Version
		return c.workflowEditor(w, r, http.StatusConflict, v, &g)
	}
	if err != nil {
		if !v.refused(err) {
			return err
		}
		return c.workflowEditor(w, r, http.StatusOK, v, &g)
	}
	http.Redirect(w, r, fmt.Sprintf("/workflows/%s?done=wf-saved-%d", url.PathEscape(wf.Name), wf.Version), http.StatusSeeOther)
	return nil
}

// jobPicks is how many jobs the editor's job picker lists for a search.
const jobPicks = 20

// workflowJobs is the job picker's list: the first jobs the reader may see whose name
// contains the search, through the job list operation (not the workflows' trigger jobs).
func (c *Console) workflowJobs(w http.ResponseWriter, r *http.Request) error {
	q := strings.TrimSpace(r.URL.Query().Get("job_q"))
	in := server.JobQuery{NameContains: q, Limit: jobPicks + 1}
	var picks []*store.Job
	more := false
	// A few pages at most: trigger jobs are few among the jobs.
	for range 5 {
		page, err := c.ops().ListJobs.Execute(r.Context(), &in)
		if err != nil {
			return err
		}
		for _, j := range page.Jobs {
			if j.Handler == server.WorkflowHandler {
				continue
			}
			if len(picks) == jobPicks {
				more = true
				break
			}
			picks = append(picks, j)
		}
		if more || !page.More || len(page.Jobs) == 0 {
			more = more || page.More
			break
		}
		in.After = page.Jobs[len(page.Jobs)-1].ID
	}
	return c.renderFragment(w, r, "workflow_edit", "wf-picks", map[string]any{"Jobs": picks, "More": more, "Query": q})
}
