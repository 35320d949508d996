package xxljob

import (
	"strings"
)

// How Sundial's job fields map onto a trigger, and a callback onto a result: one place for
// both directions, used by dispatch (out) and the server (in).

// glueTypes maps the script handlers to XXL-JOB's glue types: a job with one of these
// handlers sends its params as the glue source, and the executor runs it as a script.
var glueTypes = map[string]string{
	"shell": "GLUE_SHELL", "sh": "GLUE_SHELL", "bash": "GLUE_SHELL",
	"python": "GLUE_PYTHON", "python3": "GLUE_PYTHON", "python2": "GLUE_PYTHON2",
	"nodejs": "GLUE_NODEJS", "node": "GLUE_NODEJS",
	"powershell": "GLUE_POWERSHELL", "php": "GLUE_PHP", "groovy": "GLUE_GROOVY",
}

// GlueType is the glue type of a job with handler: a script kind for the script handlers
// (and for a handler already named like GLUE_SHELL), GlueBean for any other (a handler
// registered on the executor).
func GlueType(handler string) string {
	if g, ok := glueTypes[strings.ToLower(handler)]; ok {
		return g
	}
	if u := strings.ToUpper(handler); strings.HasPrefix(u, "GLUE_") {
		return u
	}
	return GlueBean
}

// BlockStrategy maps an overlap policy (by its name or old name): skip refuses while one
// runs, cancel and terminate kill the running one, the others queue. XXL-JOB has no "allow"
// (runs side by side) nor a limit: its job thread runs one at a time, so allow and at_most
// become serial, and buffer_one too (its queue keeps every run).
func BlockStrategy(concurrency string) string {
	switch concurrency {
	case "skip", "discard":
		return BlockDiscard
	case "terminate", "cancel", "replace":
		return BlockCover
	}
	return BlockSerial
}

// TimeoutSeconds is executorTimeout: whole seconds, rounded up so that a timeout never
// shrinks (0: none).
func TimeoutSeconds(ms int64) int {
	if ms <= 0 {
		return 0
	}
	return int((ms + 999) / 1000)
}

// Outcome is the final state a callback's handle code and message mean: "succeeded" for
// 200, "timed_out" for 502, "canceled" for a run the executor killed (its message says
// "killed": a kill, or a replaced run under COVER_EARLY), "failed" otherwise.
func Outcome(code int, msg string) string {
	switch {
	case code == CodeOK:
		return "succeeded"
	case code == CodeTimeout:
		return "timed_out"
	case strings.Contains(msg, "killed"):
		return "canceled"
	}
	return "failed"
}
