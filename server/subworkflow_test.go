package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sundial-scheduler/sundial"
	"github.com/sundial-scheduler/sundial/api"
)

// TestSubWorkflowAPI stores a workflow with a sub-workflow node over the API and runs it: the
// run's node shows its child run, the child run shows its parent, and data crosses the
// boundary. Recursion (with the path) and a missing workflow are refused naming the field. An
// operator of the parent's jobs' app only, not of the apps of the referenced workflow's jobs,
// gets 403 creating it, pointing a workflow at it, or running it. Deleting the referenced
// workflow later fails the node when it runs and leaves the referencing workflow readable.
func TestSubWorkflowAPI(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		e := newEnvOn(t, openStore(t, dialect), nil, func(s *Server) {
			s.Register("sw_inner", func(ctx context.Context) error {
				in := sundial.WorkflowFrom(ctx)
				parents, _ := in.Params["parents"].(map[string]any)
				return sundial.SetResult(ctx, fmt.Sprintf("inner saw %v", parents["a"]))
			})
			s.Register("sw_outer", func(ctx context.Context) error {
				in := sundial.WorkflowFrom(ctx)
				if raw, ok := in.Parents["sub"]; ok {
					return sundial.SetResult(ctx, raw)
				}
				return sundial.SetResult(ctx, "from a")
			})
		})
		ctx := context.Background()
		admin := e.client()
		// Scope: the apps of a sub-workflow's jobs count as the workflow's own.
		betaJob := must(admin.CreateJob(ctx, jobReq("beta-x", "beta", "http")))(t).ID
		alphaJob := must(admin.CreateJob(ctx, jobReq("alpha-a", "alpha", "http")))(t).ID
		alphaX := must(admin.CreateJob(ctx, jobReq("alpha-x", "alpha", "http")))(t).ID
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "beta-inner", Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"x","job_id":%d}]}`, betaJob))}))(t)
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "alpha-inner", Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"x","job_id":%d}]}`, alphaX))}))(t)
		alphaOp, _ := e.userClient(api.UserRequest{Name: "alf", Role: api.RoleOperator, Scope: []string{"alpha"}})
		scoped := func(sub string) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"sub","kind":"workflow","workflow":%q}],"edges":[{"from":"a","to":"sub"}]}`, alphaJob, sub))
		}
		_, err := alphaOp.CreateWorkflow(ctx, api.WorkflowRequest{Name: "alpha-outer", Graph: scoped("beta-inner")})
		wantStatus(t, "alpha's operator creates a workflow running beta's job through a sub-workflow", err, http.StatusForbidden)
		must(alphaOp.CreateWorkflow(ctx, api.WorkflowRequest{Name: "alpha-outer", Graph: scoped("alpha-inner")}))(t)
		_, err = alphaOp.UpdateWorkflow(ctx, "alpha-outer", api.WorkflowUpdate{Graph: scoped("beta-inner")})
		wantStatus(t, "alpha's operator points its workflow at beta's", err, http.StatusForbidden)
		must(admin.UpdateWorkflow(ctx, "alpha-outer", api.WorkflowUpdate{Graph: scoped("beta-inner")}))(t)
		_, err = alphaOp.RunWorkflow(ctx, "alpha-outer", nil)
		wantStatus(t, "alpha's operator runs a workflow that runs beta's job", err, http.StatusForbidden)

		inner := must(admin.CreateJob(ctx, jobReq("inner", "", "sw_inner")))(t).ID
		a := must(admin.CreateJob(ctx, jobReq("a", "", "sw_outer")))(t).ID
		b := must(admin.CreateJob(ctx, jobReq("b", "", "sw_outer")))(t).ID
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "inner", Graph: json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"x","job_id":%d}]}`, inner))}))(t)
		outerGraph := json.RawMessage(fmt.Sprintf(`{"nodes":[{"name":"a","job_id":%d},{"name":"sub","kind":"workflow","workflow":"inner"},{"name":"b","job_id":%d}],
			"edges":[{"from":"a","to":"sub"},{"from":"sub","to":"b"}]}`, a, b))
		must(admin.CreateWorkflow(ctx, api.WorkflowRequest{Name: "outer", Graph: outerGraph}))(t)

		for _, c := range []struct{ name, graph, field, msg string }{
			{"inner", `{"nodes":[{"name":"back","kind":"workflow","workflow":"outer"}]}`, "nodes[0].workflow", "recursion: inner -> outer -> inner"},
			{"outer", `{"nodes":[{"name":"z","kind":"workflow","workflow":"nope"}]}`, "nodes[0].workflow", `"nope" does not exist`},
			{"outer", `{"nodes":[{"name":"z","kind":"workflow"}]}`, "nodes[0].workflow", "needs the name"},
		} {
			_, err := admin.UpdateWorkflow(ctx, c.name, api.WorkflowUpdate{Graph: json.RawMessage(c.graph)})
			if ae := wantStatus(t, "bad sub-workflow", err, http.StatusBadRequest); ae.Field != c.field || !strings.Contains(ae.Message, c.msg) {
				t.Errorf("%s: %q on %q, want %q on %q", c.graph, ae.Message, ae.Field, c.msg, c.field)
			}
		}

		run := must(admin.RunWorkflow(ctx, "outer", nil))(t)
		eventually(t, "the run to end", func() bool {
			run = must(admin.GetWorkflowRun(ctx, run.ID))(t)
			return run.State != "running"
		})
		byName := map[string]api.WorkflowNode{}
		for _, n := range run.Nodes {
			byName[n.Node] = n
		}
		if run.State != "succeeded" || string(byName["b"].Result) != `{"x":"inner saw from a"}` {
			t.Fatalf("run %s (%s), nodes %+v: want succeeded with the child's sink result", run.State, run.Message, run.Nodes)
		}
		childID := byName["sub"].ChildRunID
		if childID == 0 {
			t.Fatalf("sub node %+v shows no child run", byName["sub"])
		}
		child := must(admin.GetWorkflowRun(ctx, childID))(t)
		if child.ParentRunID != run.ID || child.ParentNode != "sub" || child.State != "succeeded" {
			t.Errorf("child run %+v: want it linked to run %d node sub, succeeded", child, run.ID)
		}

		// A referenced workflow deleted later leaves the workflow naming it readable; its node
		// fails when it runs.
		if err := admin.DeleteWorkflow(ctx, "inner"); err != nil {
			t.Fatal(err)
		}
		must(admin.GetWorkflow(ctx, "outer"))(t)
		run = must(admin.RunWorkflow(ctx, "outer", nil))(t)
		eventually(t, "the run to end", func() bool {
			run = must(admin.GetWorkflowRun(ctx, run.ID))(t)
			return run.State != "running"
		})
		if run.State != "failed" || len(run.Nodes) < 2 || !strings.Contains(run.Nodes[1].Message, "does not exist") {
			t.Errorf("run of outer without inner: %+v; want failed at sub, naming the missing workflow", run)
		}
	})
}
