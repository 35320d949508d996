package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sundial-scheduler/sundial/api"
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

// readableJobs names the jobs the console may show (a job out of the reader's scope stays an id).
func (c *Console) readableJobs(r *http.Request) (map[int64]string, []*store.Job, error) {
	names := map[int64]string{}
	var all []*store.Job
	in := server.JobQuery{Limit: 1000}
	for {
		page, err := c.ops().ListJobs.Execute(r.Context(), &in)
		if err != nil {
			return nil, nil, err
		}
		for _, j := range page.Jobs {
			names[j.ID] = j.Name
			if j.Handler != server.WorkflowHandler {
				all = append(all, j)
			}
		}
		if !page.More || len(page.Jobs) == 0 {
			return names, all, nil
		}
		in.After = page.Jobs[len(page.Jobs)-1].ID
	}
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

// The editor. Its form lists nodes (node_name, node_kind, node_job, node_expr,
// node_on_failure, one of each per row) and edges (edge_from, edge_to, edge_when); blank
// rows are left out. A validation error names a graph field (nodes[2].expr): it is shown at
// that row's input.

// nodeRow and edgeRow are the editor's rows, with the error at each of their inputs.
type nodeRow struct {
	Name, Kind, Job, Expr, OnFailure string
	Errs                             map[string]string
}

type edgeRow struct {
	From, To, When string
	Errs           map[string]string
}

type workflowEditView struct {
	Name, Description, Params string
	Nodes                     []nodeRow
	Edges                     []edgeRow
	// Errs are the errors of the form's own fields (name, params, graph as a whole).
	Errs    map[string]string
	Jobs    []*store.Job
	Preview graphView
}

// E is the error at a field of the form.
func (v workflowEditView) E(field string) string { return v.Errs[field] }

// graphForm reads the editor's rows into a graph; rowOf maps a graph field's index back to
// the row it came from. Kinds, conditions and failure handlings keep the form's words; the
// graph's validation names what is wrong.
func graphForm(form url.Values) (v workflowEditView, g workflow.Graph, nodeRowOf, edgeRowOf []int) {
	v = workflowEditView{Name: strings.TrimSpace(form.Get("name")), Description: strings.TrimSpace(form.Get("description")),
		Params: strings.TrimSpace(form.Get("params")), Errs: map[string]string{}}
	at := func(k string, i int) string {
		if vs := form[k]; i < len(vs) {
			return strings.TrimSpace(vs[i])
		}
		return ""
	}
	for i := range form["node_name"] {
		row := nodeRow{Name: at("node_name", i), Kind: at("node_kind", i), Job: at("node_job", i), Expr: at("node_expr", i),
			OnFailure: at("node_on_failure", i), Errs: map[string]string{}}
		if row.Name == "" && row.Job == "" && row.Expr == "" {
			continue
		}
		n := workflow.Node{Name: row.Name, Kind: workflow.Kind(row.Kind), OnFailure: workflow.OnFail(row.OnFailure)}
		if n.Kind == workflow.KindDecision {
			n.Expr = row.Expr
		} else if row.Job != "" {
			id, err := strconv.ParseInt(row.Job, 10, 64)
			if err != nil || id <= 0 {
				row.Errs["job_id"] = fmt.Sprintf("want a job, got %q", row.Job)
			}
			n.JobID = id
		}
		v.Nodes = append(v.Nodes, row)
		g.Nodes = append(g.Nodes, n)
		nodeRowOf = append(nodeRowOf, len(v.Nodes)-1)
	}
	for i := range form["edge_from"] {
		row := edgeRow{From: at("edge_from", i), To: at("edge_to", i), When: at("edge_when", i), Errs: map[string]string{}}
		if row.From == "" && row.To == "" {
			continue
		}
		v.Edges = append(v.Edges, row)
		g.Edges = append(g.Edges, workflow.Edge{From: row.From, To: row.To, When: workflow.Condition(row.When)})
		edgeRowOf = append(edgeRowOf, len(v.Edges)-1)
	}
	return v, g, nodeRowOf, edgeRowOf
}

// placeError shows a graph field error (nodes[1].name, edges[0].when, edges) at the row's
// input it names, or as the graph's error; it reports false for another error.
func (v *workflowEditView) placeError(field, msg string, nodeRowOf, edgeRowOf []int) {
	field = strings.TrimPrefix(field, "graph.")
	var kind string
	var i int
	var rest string
	if n, err := fmt.Sscanf(field, "nodes[%d]", &i); err == nil && n == 1 {
		kind = "nodes"
	} else if n, err := fmt.Sscanf(field, "edges[%d]", &i); err == nil && n == 1 {
		kind = "edges"
	}
	if j := strings.Index(field, "]."); j >= 0 {
		rest = field[j+2:]
	}
	switch {
	case kind == "nodes" && i >= 0 && i < len(nodeRowOf):
		v.Nodes[nodeRowOf[i]].Errs[or(rest, "name")] = msg
	case kind == "edges" && i >= 0 && i < len(edgeRowOf):
		v.Edges[edgeRowOf[i]].Errs[or(rest, "to")] = msg
	case field == "name" || field == "params" || field == "description":
		v.Errs[field] = msg
	default:
		v.Errs["graph"] = msg
	}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// check validates the form's graph as the workflow's validation does, placing its error.
func (v *workflowEditView) check(g *workflow.Graph, nodeRowOf, edgeRowOf []int) bool {
	for _, n := range v.Nodes {
		if len(n.Errs) > 0 {
			return false
		}
	}
	g.Normalize()
	err := g.Validate()
	var fe *schedule.FieldError
	if errors.As(err, &fe) {
		v.placeError(fe.Field, fe.Err.Error(), nodeRowOf, edgeRowOf)
		return false
	}
	return err == nil
}

func (c *Console) workflowEditor(w http.ResponseWriter, r *http.Request, status int, v workflowEditView) error {
	names, jobs, err := c.readableJobs(r)
	if err != nil {
		return err
	}
	v.Jobs = jobs
	// The rows always end in a blank node and a blank edge, the ones "add" copies.
	v.Nodes = append(v.Nodes, nodeRow{Kind: string(workflow.KindJob), Errs: map[string]string{}})
	v.Edges = append(v.Edges, edgeRow{Errs: map[string]string{}})
	if v.Errs == nil {
		v.Errs = map[string]string{}
	}
	v.Preview = previewOf(v, names)
	return c.render(w, r, status, "workflow_edit", &view{Title: "New workflow", Nav: "workflows", Data: v})
}

// previewOf draws what the form's rows name so far, valid or not: nodes without a name and
// edges to no node are left out.
func previewOf(v workflowEditView, names map[int64]string) graphView {
	pv := graphView{Nodes: []graphNode{}, Edges: []graphEdge{}}
	seen := map[string]bool{}
	for _, n := range v.Nodes {
		if n.Name == "" || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		gn := graphNode{Name: n.Name, Kind: or(n.Kind, string(workflow.KindJob))}
		if gn.Kind == string(workflow.KindDecision) {
			gn.Sub = n.Expr
		} else if id, err := strconv.ParseInt(n.Job, 10, 64); err == nil {
			gn.Sub = or(names[id], "job "+n.Job)
		}
		pv.Nodes = append(pv.Nodes, gn)
	}
	for _, e := range v.Edges {
		if seen[e.From] && seen[e.To] && e.From != e.To {
			pv.Edges = append(pv.Edges, graphEdge{From: e.From, To: e.To, When: or(e.When, string(workflow.OnSuccess))})
		}
	}
	return pv
}

func (c *Console) workflowNew(w http.ResponseWriter, r *http.Request) error {
	if u := userFrom(r.Context()); !u.Operates() {
		return errForbidden("a viewer cannot create workflows")
	}
	return c.workflowEditor(w, r, http.StatusOK, workflowEditView{})
}

// workflowPreview is the editor's live graph: the rows drawn, and the first error the
// workflow's validation finds.
func (c *Console) workflowPreview(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	v, g, nodeRowOf, edgeRowOf := graphForm(r.PostForm)
	names, _, err := c.readableJobs(r)
	if err != nil {
		return err
	}
	pv := previewOf(v, names)
	if len(g.Nodes) > 0 && !v.check(&g, nodeRowOf, edgeRowOf) {
		pv.Error = firstError(v)
	}
	return c.renderFragment(w, r, "workflow_edit", "wf-preview", pv)
}

// firstError is the one error a preview names, with the row it is at.
func firstError(v workflowEditView) string {
	for i, n := range v.Nodes {
		for f, msg := range n.Errs {
			return fmt.Sprintf("node %d (%s) %s: %s", i+1, or(n.Name, "unnamed"), f, msg)
		}
	}
	for i, e := range v.Edges {
		for f, msg := range e.Errs {
			return fmt.Sprintf("edge %d %s: %s", i+1, f, msg)
		}
	}
	return v.Errs["graph"]
}

// workflowCreate stores the editor's workflow through the API's create operation; a refused
// one reopens the editor with the error at its field.
func (c *Console) workflowCreate(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return err
	}
	v, g, nodeRowOf, edgeRowOf := graphForm(r.PostForm)
	if v.Params != "" && !json.Valid([]byte(v.Params)) {
		v.Errs["params"] = "not JSON: want an object such as {\"full\": true}"
	}
	if !v.check(&g, nodeRowOf, edgeRowOf) || len(v.Errs) > 0 {
		return c.workflowEditor(w, r, http.StatusOK, v)
	}
	graph, err := json.Marshal(g)
	if err != nil {
		return err
	}
	req := &api.WorkflowRequest{Name: v.Name, Description: v.Description, Graph: graph}
	if v.Params != "" {
		req.Params = json.RawMessage(v.Params)
	}
	wf, err := c.ops().CreateWorkflow.Execute(r.Context(), req)
	if err != nil {
		ae, _ := server.ErrorOf(err)
		switch {
		case ae.Code == "already_exists":
			v.Errs["name"] = ae.Message
		case ae.Status == http.StatusBadRequest || (ae.Status == http.StatusForbidden && ae.Field != ""):
			v.placeError(ae.Field, ae.Message, nodeRowOf, edgeRowOf)
		default:
			return err
		}
		return c.workflowEditor(w, r, http.StatusOK, v)
	}
	http.Redirect(w, r, "/workflows/"+url.PathEscape(wf.Name)+"?done=wf-created", http.StatusSeeOther)
	return nil
}
