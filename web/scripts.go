package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sundial-scheduler/sundial/server"
	"github.com/sundial-scheduler/sundial/store"
)

// diffLine is one line of a line diff: Op is ' ' (in both), '-' (only in the old text) or
// '+' (only in the new one).
type diffLine struct {
	Op   string
	Text string
}

// maxDiffCells bounds the longest-common-subsequence table (lines of one text times lines
// of the other); larger scripts are shown as all removed then all added.
const maxDiffCells = 4 << 20

// lineDiff compares two texts line by line with a longest common subsequence, so the lines
// both keep line up and the rest show as removed or added.
func lineDiff(oldText, newText string) []diffLine {
	a, b := splitLines(oldText), splitLines(newText)
	if len(a)*len(b) > maxDiffCells {
		out := make([]diffLine, 0, len(a)+len(b))
		for _, l := range a {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range b {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j] is the common subsequence length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffLine
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, diffLine{" ", a[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", a[i]})
			i++
		default:
			out = append(out, diffLine{"+", b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		out = append(out, diffLine{"-", a[i]})
	}
	for ; j < len(b); j++ {
		out = append(out, diffLine{"+", b[j]})
	}
	return out
}

// splitLines splits a script into lines; a final line break ends the last line rather than
// starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

type scriptVersionView struct {
	Job     *store.Job
	Version *store.ScriptVersion
	// Against names what the version is compared with; Diff goes from the version to it.
	Against string
	Diff    []diffLine
}

// scriptVersion shows one kept version of a job's script and its line diff to the current
// script, or to another kept version (?with=N).
func (c *Console) scriptVersion(w http.ResponseWriter, r *http.Request) error {
	id, version, err := versionPath(r)
	if err != nil {
		return err
	}
	d, err := c.ops().GetJob.Execute(r.Context(), &server.JobRef{ID: id})
	if err != nil {
		return err
	}
	j := d.Job
	v, err := c.ops().GetScriptVersion.Execute(r.Context(), &server.ScriptVersionRef{JobID: id, Version: version})
	if err != nil {
		return err
	}
	sv := scriptVersionView{Job: j, Version: v, Against: "the current script"}
	other := j.Params
	if with, err := queryInt(r.URL.Query(), "with"); err != nil {
		return err
	} else if with > 0 {
		w2, err := c.ops().GetScriptVersion.Execute(r.Context(), &server.ScriptVersionRef{JobID: id, Version: with})
		if err != nil {
			return err
		}
		sv.Against, other = fmt.Sprintf("version %d", with), w2.Script
	}
	sv.Diff = lineDiff(v.Script, other)
	return c.render(w, r, http.StatusOK, "script", &view{Title: fmt.Sprintf("%s: script version %d", j.Name, v.Version),
		Nav: "jobs", Data: sv})
}

// scriptRestore makes a kept version the job's script, as the API does.
func (c *Console) scriptRestore(w http.ResponseWriter, r *http.Request) error {
	id, version, err := versionPath(r)
	if err != nil {
		return err
	}
	v, err := c.ops().RestoreScriptVersion.Execute(r.Context(), &server.ScriptVersionRef{JobID: id, Version: version})
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/jobs/%d?done=restored-%d#script-versions", id, v.Version), http.StatusSeeOther)
	return nil
}

// versionPath reads the job id and script version of a /jobs/{id}/script/versions/{version} path.
func versionPath(r *http.Request) (id, version int64, err error) {
	if id, err = pathInt(r, "id"); err != nil {
		return 0, 0, err
	}
	if version, err = pathInt(r, "version"); err != nil {
		return 0, 0, err
	}
	return id, version, nil
}
