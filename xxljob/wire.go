// Package xxljob speaks XXL-JOB's executor protocol, in each of its generations, so that
// Sundial can drive existing XXL-JOB executors unchanged: the wire types of both directions,
// their encoding per generation, and the one client that calls executors (run or trigger,
// kill, beat, idleBeat, log). The server's admin endpoints (registry, registryRemove,
// callback) decode with this package; dispatch calls executors with its Client.
//
// The protocol facts come from XXL-JOB's executor (xxl-job-core EmbedServer and
// ExecutorBizImpl) and admin (OpenApiController); see docs/executor-protocol.md.
package xxljob

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Generation is an XXL-JOB protocol generation: the executor API changed twice.
type Generation string

// The generations. Gen2 is 2.0 – 3.2.x, Gen33 is 3.3.0 – 3.4.2, Gen35 is 3.5.0 and later.
const (
	// Gen2 wraps answers as ReturnT {code,msg,content}.
	Gen2 Generation = "2.x"
	// Gen33 wraps answers as Response {code,msg,data}; the rest is as in Gen2.
	Gen33 Generation = "3.3"
	// Gen35 triggers with /trigger, needs XXL-JOB-APPNAME with the token, and calls back
	// with {"callbackList":[…]} and logDateTime (not logDateTim).
	Gen35 Generation = "3.5"
)

// Generations lists the generations, oldest first.
var Generations = []Generation{Gen2, Gen33, Gen35}

// ParseGeneration accepts a generation as "2.x", "3.3" or "3.5", and the release numbers
// people know (2.4.2, 3.0, 3.4.2, 3.5.0): every release maps to the generation it speaks.
func ParseGeneration(s string) (Generation, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "2", "2.x":
		return Gen2, nil
	case "3.3", "3.4", "3.x":
		return Gen33, nil
	case "3.5":
		return Gen35, nil
	}
	var major, minor int
	if _, err := fmt.Sscanf(s, "%d.%d", &major, &minor); err == nil {
		switch {
		case major == 2 || (major == 3 && minor <= 2):
			return Gen2, nil
		case major == 3 && minor <= 4:
			return Gen33, nil
		case major == 3:
			return Gen35, nil
		}
	}
	return "", fmt.Errorf("XXL-JOB version %q: want 2.x, 3.3 or 3.5 (or a release such as 2.4.2, 3.4.2)", s)
}

// Headers of both directions.
const (
	HeaderToken   = "XXL-JOB-ACCESS-TOKEN"
	HeaderAppName = "XXL-JOB-APPNAME"
)

// Codes of the envelope and of callbacks. Callers judge only Code == CodeOK.
const (
	CodeOK      = 200
	CodeFail    = 500
	CodeTimeout = 502 // a handle code only: the job ran past executorTimeout
)

// MsgWrongToken is what XXL-JOB answers a wrong token with; executors log it.
const MsgWrongToken = "The access token is wrong."

// Block strategies (executorBlockStrategy).
const (
	BlockSerial  = "SERIAL_EXECUTION"
	BlockDiscard = "DISCARD_LATER"
	BlockCover   = "COVER_EARLY"
)

// GlueBean is the glue type of a job run by a handler registered on the executor.
const GlueBean = "BEAN"

// TriggerParam is the body of /run and /trigger (identical in every generation).
type TriggerParam struct {
	JobID                 int64  `json:"jobId"`
	ExecutorHandler       string `json:"executorHandler"`
	ExecutorParams        string `json:"executorParams"`
	ExecutorBlockStrategy string `json:"executorBlockStrategy"`
	ExecutorTimeout       int    `json:"executorTimeout"`
	LogID                 int64  `json:"logId"`
	LogDateTime           int64  `json:"logDateTime"`
	GlueType              string `json:"glueType"`
	GlueSource            string `json:"glueSource"`
	GlueUpdatetime        int64  `json:"glueUpdatetime"`
	BroadcastIndex        int    `json:"broadcastIndex"`
	BroadcastTotal        int    `json:"broadcastTotal"`
}

// JobParam is the body of /kill and /idleBeat.
type JobParam struct {
	JobID int64 `json:"jobId"`
}

// LogParam is the body of /log. Both spellings of the date are sent (3.5 renamed
// logDateTim to logDateTime); each generation reads its own and ignores the other.
type LogParam struct {
	LogDateTim  int64 `json:"logDateTim"`
	LogDateTime int64 `json:"logDateTime"`
	LogID       int64 `json:"logId"`
	FromLineNum int   `json:"fromLineNum"`
}

// LogResult is what /log returns: lines fromLineNum..toLineNum of the run's log file, each
// ended by a newline. The executor never sets IsEnd except for a missing file.
type LogResult struct {
	FromLineNum int    `json:"fromLineNum"`
	ToLineNum   int    `json:"toLineNum"`
	LogContent  string `json:"logContent"`
	IsEnd       bool   `json:"isEnd"`
}

// Lines splits LogContent into its lines (the trailing newline ends the last one).
func (l *LogResult) Lines() []string {
	if l.ToLineNum < l.FromLineNum || l.LogContent == "" {
		return nil
	}
	s := strings.TrimSuffix(strings.ReplaceAll(l.LogContent, "\r\n", "\n"), "\n")
	return strings.Split(s, "\n")
}

// RegistryParam is the body of the admin's /api/registry and /api/registryRemove.
type RegistryParam struct {
	RegistryGroup string `json:"registryGroup"`
	RegistryKey   string `json:"registryKey"`
	RegistryValue string `json:"registryValue"`
}

// Callback is one run's result as an executor reports it to the admin's /api/callback.
type Callback struct {
	LogID       int64
	LogDateTime int64
	HandleCode  int
	HandleMsg   string
}

// callbackWire has both spellings of the date: ≤3.4 send logDateTim, 3.5 logDateTime.
type callbackWire struct {
	LogID       int64  `json:"logId"`
	LogDateTim  int64  `json:"logDateTim,omitempty"`
	LogDateTime int64  `json:"logDateTime,omitempty"`
	HandleCode  int    `json:"handleCode"`
	HandleMsg   string `json:"handleMsg"`
}

// DecodeCallbacks reads a callback body of any generation: a bare array (≤3.4) or an object
// with callbackList (3.5). It reports the generation family the body's shape belongs to
// (Gen33 stands for both ≤3.4 generations, which send the same body).
func DecodeCallbacks(body []byte) ([]Callback, Generation, error) {
	body = bytes.TrimSpace(body)
	var wire []callbackWire
	gen := Gen33
	switch {
	case len(body) > 0 && body[0] == '[':
		if err := json.Unmarshal(body, &wire); err != nil {
			return nil, "", fmt.Errorf("callback array: %w", err)
		}
	case len(body) > 0 && body[0] == '{':
		var obj struct {
			CallbackList []callbackWire `json:"callbackList"`
		}
		if err := json.Unmarshal(body, &obj); err != nil {
			return nil, "", fmt.Errorf("callback object: %w", err)
		}
		wire, gen = obj.CallbackList, Gen35
	default:
		return nil, "", fmt.Errorf("callback body: want a JSON array or object, got %.20q", body)
	}
	out := make([]Callback, len(wire))
	for i, w := range wire {
		at := w.LogDateTime
		if at == 0 {
			at = w.LogDateTim
		}
		out[i] = Callback{LogID: w.LogID, LogDateTime: at, HandleCode: w.HandleCode, HandleMsg: w.HandleMsg}
	}
	return out, gen, nil
}

// EncodeCallbacks writes callbacks in gen's body shape (what an executor of gen sends).
func EncodeCallbacks(gen Generation, cs []Callback) ([]byte, error) {
	wire := make([]callbackWire, len(cs))
	for i, c := range cs {
		wire[i] = callbackWire{LogID: c.LogID, HandleCode: c.HandleCode, HandleMsg: c.HandleMsg}
		if gen == Gen35 {
			wire[i].LogDateTime = c.LogDateTime
		} else {
			wire[i].LogDateTim = c.LogDateTime
		}
	}
	if gen == Gen35 {
		return json.Marshal(map[string]any{"callbackList": wire})
	}
	return json.Marshal(wire)
}

// Reply is an answer of either side: code, message and an optional payload.
type Reply struct {
	Code    int
	Msg     string
	Payload json.RawMessage
}

// OK reports whether the reply says success.
func (r *Reply) OK() bool { return r.Code == CodeOK }

// EncodeReply writes r in gen's envelope: {code,msg,content} for Gen2, {code,msg,data} from
// Gen33 on. An unknown generation ("" when the caller could not be identified) gets both
// payload fields, which every generation's JSON reader accepts.
func EncodeReply(gen Generation, r Reply) []byte {
	env := map[string]any{"code": r.Code}
	if r.Msg != "" {
		env["msg"] = r.Msg
	} else {
		env["msg"] = nil
	}
	var payload any = nil
	if len(r.Payload) > 0 {
		payload = r.Payload
	}
	switch gen {
	case Gen2:
		env["content"] = payload
	case Gen33, Gen35:
		env["data"] = payload
	default:
		env["content"], env["data"] = payload, payload
	}
	b, _ := json.Marshal(env) // a map of JSON values always encodes
	return b
}

// DecodeReply reads an answer of any generation: the payload is data, or content.
func DecodeReply(b []byte) (Reply, error) {
	var env struct {
		Code    int             `json:"code"`
		Msg     *string         `json:"msg"`
		Content json.RawMessage `json:"content"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return Reply{}, fmt.Errorf("answer %.60q: %w", b, err)
	}
	r := Reply{Code: env.Code, Payload: env.Data}
	if env.Msg != nil {
		r.Msg = *env.Msg
	}
	if isNull(r.Payload) {
		r.Payload = env.Content
	}
	if isNull(r.Payload) {
		r.Payload = nil
	}
	return r, nil
}

func isNull(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}
