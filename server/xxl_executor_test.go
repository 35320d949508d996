package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// xxlExecutor plays an XXL-JOB executor of one generation over real sockets, written from
// the protocol description (XXL-JOB's EmbedServer, ExecutorBizImpl, JobThread and callback
// thread) and nothing of Sundial's: it serves run (or trigger for 3.5), kill, beat,
// idleBeat and log with its generation's envelope and token rules, keeps a log file per log
// id, and registers and calls back through the admin API, checking that each answer comes in
// its own generation's envelope.
//
// Handlers: "demoJobHandler" logs three lines and succeeds; "failingHandler" logs and fails;
// "blockingHandler" logs a line and runs until killed. A GLUE_SHELL trigger logs its source.
type xxlExecutor struct {
	t       *testing.T
	gen     string // 2.x, 3.3, 3.5
	app     string
	token   string
	admin   string // the admin's base URL with its context path
	srv     *httptest.Server
	running sync.WaitGroup

	mu       sync.Mutex
	triggers []map[string]any    // every trigger body received, in order
	logs     map[int64][]string  // the log file of each log id
	dates    map[int64]float64   // the logDateTime each log id was triggered with
	killed   map[int64]chan bool // per job id: closed by /kill while a run of it blocks
	kills    []int64             // job ids killed
	called   []int64             // log ids whose result was called back
	busy     map[int64]bool      // job ids with a run going
	bad      []string            // protocol violations seen, reported at the end
}

func newXXLExecutor(t *testing.T, gen, app, token, admin string) *xxlExecutor {
	t.Helper()
	x := &xxlExecutor{t: t, gen: gen, app: app, token: token, admin: admin, logs: map[int64][]string{},
		dates: map[int64]float64{}, killed: map[int64]chan bool{}, busy: map[int64]bool{}}
	x.srv = httptest.NewServer(http.HandlerFunc(x.serve))
	t.Cleanup(func() {
		x.mu.Lock()
		for _, c := range x.killed {
			close(c)
		}
		x.killed = map[int64]chan bool{}
		x.mu.Unlock()
		x.running.Wait()
		x.srv.Close()
		x.mu.Lock()
		defer x.mu.Unlock()
		for _, b := range x.bad {
			t.Errorf("XXL-JOB %s executor %s: %s", x.gen, x.addr(), b)
		}
	})
	return x
}

// addr is the executor's address as it registers it (with the trailing slash XXL-JOB sends).
func (x *xxlExecutor) addr() string { return x.srv.URL + "/" }

// url is the address as Sundial lists it.
func (x *xxlExecutor) url() string { return x.srv.URL }

func (x *xxlExecutor) violation(format string, args ...any) {
	x.mu.Lock()
	x.bad = append(x.bad, fmt.Sprintf(format, args...))
	x.mu.Unlock()
}

// reply writes an answer in the executor's envelope: content up to 3.2, data from 3.3.
func (x *xxlExecutor) reply(w http.ResponseWriter, code int, msg string, payload any) {
	env := map[string]any{"code": code, "msg": msg}
	if x.gen == "2.x" {
		env["content"] = payload
	} else {
		env["data"] = payload
	}
	w.Header().Set("Content-Type", "text/html;charset=UTF-8")
	_ = json.NewEncoder(w).Encode(env)
}

func (x *xxlExecutor) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		x.reply(w, 500, "invalid request, HttpMethod not support.", nil)
		return
	}
	// ≤3.4 check the token only when they have one; 3.5 needs token and app name both.
	if r.Header.Get("XXL-JOB-ACCESS-TOKEN") != x.token || (x.gen == "3.5" && r.Header.Get("XXL-JOB-APPNAME") != x.app) {
		x.violation("%s without the app's token and name headers", r.URL.Path)
		x.reply(w, 500, "The access token is wrong.", nil)
		return
	}
	var body map[string]any
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &body)
	trigger := "/run"
	if x.gen == "3.5" {
		trigger = "/trigger"
	}
	switch r.URL.Path {
	case trigger:
		x.trigger(w, body)
	case "/beat":
		x.reply(w, 200, "", nil)
	case "/idleBeat":
		x.mu.Lock()
		busy := x.busy[int64(num(body["jobId"]))]
		x.mu.Unlock()
		if busy {
			x.reply(w, 500, "job thread is running or has trigger queue.", nil)
			return
		}
		x.reply(w, 200, "", nil)
	case "/kill":
		job := int64(num(body["jobId"]))
		x.mu.Lock()
		x.kills = append(x.kills, job)
		c, ok := x.killed[job]
		delete(x.killed, job)
		x.mu.Unlock()
		if !ok {
			x.reply(w, 200, "job thread already killed.", nil)
			return
		}
		close(c)
		x.reply(w, 200, "", nil)
	case "/log":
		x.log(w, body)
	default:
		x.reply(w, 500, "invalid request, uri-mapping("+r.URL.Path+") not found.", nil)
	}
}

func num(v any) float64 { f, _ := v.(float64); return f }

func str(v any) string { s, _ := v.(string); return s }

func (x *xxlExecutor) trigger(w http.ResponseWriter, p map[string]any) {
	for _, k := range []string{"jobId", "executorHandler", "executorParams", "executorBlockStrategy", "executorTimeout",
		"logId", "logDateTime", "glueType", "glueSource", "glueUpdatetime", "broadcastIndex", "broadcastTotal"} {
		if _, ok := p[k]; !ok {
			x.violation("trigger without %s: %v", k, p)
		}
	}
	logID, job := int64(num(p["logId"])), int64(num(p["jobId"]))
	x.mu.Lock()
	x.triggers = append(x.triggers, p)
	x.dates[logID] = num(p["logDateTime"])
	x.busy[job] = true
	var kill chan bool
	if str(p["executorHandler"]) == "blockingHandler" {
		kill = make(chan bool)
		x.killed[job] = kill
	}
	x.mu.Unlock()
	x.reply(w, 200, "", nil) // accepted into the job's queue; the result comes by callback
	x.running.Add(1)
	go func() {
		defer x.running.Done()
		x.write(logID, fmt.Sprintf("----------- xxl-job job execute start -----------<br>----------- Param:%s", str(p["executorParams"])))
		x.write(logID, fmt.Sprintf("shard %d/%d on %s", int(num(p["broadcastIndex"])), int(num(p["broadcastTotal"])), x.addr()))
		code, msg := 200, ""
		switch {
		case str(p["glueType"]) == "GLUE_SHELL":
			x.write(logID, "script: "+str(p["glueSource"]))
		case str(p["executorHandler"]) == "demoJobHandler":
			x.write(logID, "XXL-JOB, Hello World.")
		case str(p["executorHandler"]) == "failingHandler":
			x.write(logID, "about to fail")
			code, msg = 500, "job failed on purpose"
		case kill != nil:
			x.write(logID, "blocking until killed")
			if released := <-kill; released {
				x.write(logID, "released")
			} else {
				code, msg = 500, "scheduling center kill job. [job running, killed]"
			}
		default:
			code, msg = 500, "job handler ["+str(p["executorHandler"])+"] not found."
		}
		x.write(logID, "----------- xxl-job job execute end(finish) -----------")
		x.mu.Lock()
		delete(x.busy, job)
		x.mu.Unlock()
		x.callback(logID, code, msg)
		x.mu.Lock()
		x.called = append(x.called, logID)
		x.mu.Unlock()
	}()
}

// release lets the job's blocking run end successfully, without a kill from the admin.
func (x *xxlExecutor) release(job int64) {
	x.mu.Lock()
	c, ok := x.killed[job]
	delete(x.killed, job)
	x.mu.Unlock()
	if ok {
		c <- true
	}
}

// calledBack reports whether the executor has called back the run's result.
func (x *xxlExecutor) calledBack(logID int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Contains(x.called, logID)
}

func (x *xxlExecutor) write(logID int64, line string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.logs[logID] = append(x.logs[logID], time.Now().Format("2006-01-02 15:04:05")+" [test] "+line)
}

// log answers /log from fromLineNum to the end of the file; the file is found by the date
// the trigger carried (3.5 reads logDateTime, older generations logDateTim).
func (x *xxlExecutor) log(w http.ResponseWriter, p map[string]any) {
	logID, from := int64(num(p["logId"])), int(num(p["fromLineNum"]))
	key := "logDateTim"
	if x.gen == "3.5" {
		key = "logDateTime"
	}
	x.mu.Lock()
	lines, ok := x.logs[logID]
	date := x.dates[logID]
	lines = append([]string(nil), lines...)
	x.mu.Unlock()
	if !ok || num(p[key]) != date {
		x.reply(w, 200, "", map[string]any{"fromLineNum": from, "toLineNum": 0, "logContent": "readLog fail, logFile not exists", "isEnd": true})
		return
	}
	var b strings.Builder
	to := 0
	for i := from; i >= 1 && i <= len(lines); i++ {
		b.WriteString(lines[i-1] + "\n")
		to = i
	}
	x.reply(w, 200, "", map[string]any{"fromLineNum": from, "toLineNum": to, "logContent": b.String(), "isEnd": false})
}

// registry registers (or with remove, unregisters) the executor through the admin API and
// returns the answer's code and message.
func (x *xxlExecutor) registry(remove bool, token string) (int, string) {
	path := "/api/registry"
	if remove {
		path = "/api/registryRemove"
	}
	return x.post(path, token, map[string]string{"registryGroup": "EXECUTOR", "registryKey": x.app, "registryValue": x.addr()})
}

// callback reports one run's result as the generation does.
func (x *xxlExecutor) callback(logID int64, code int, msg string) (int, string) {
	return x.callbackWith(x.token, logID, code, msg)
}

func (x *xxlExecutor) callbackWith(token string, logID int64, code int, msg string) (int, string) {
	x.mu.Lock()
	date := x.dates[logID]
	x.mu.Unlock()
	item := map[string]any{"logId": logID, "handleCode": code, "handleMsg": msg}
	var body any = []any{item}
	if x.gen == "3.5" {
		item["logDateTime"] = date
		body = map[string]any{"callbackList": []any{item}}
	} else {
		item["logDateTim"] = date
	}
	return x.post("/api/callback", token, body)
}

// post calls the admin API and checks that the answer is in the generation's envelope.
func (x *xxlExecutor) post(path, token string, body any) (int, string) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, x.admin+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	req.Header.Set("XXL-JOB-ACCESS-TOKEN", token)
	if x.gen == "3.5" {
		req.Header.Set("XXL-JOB-APPNAME", x.app)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		x.violation("POST %s: %v", path, err)
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(raw, &env) != nil {
		x.violation("POST %s: HTTP %d %s, want 200 with a JSON envelope", path, resp.StatusCode, raw)
		return 0, string(raw)
	}
	_, hasContent := env["content"]
	_, hasData := env["data"]
	code := int(num(env["code"]))
	// A refusal of an unidentified caller may carry both; a success is in the caller's shape.
	if code == 200 && ((x.gen == "2.x") != hasContent || (x.gen != "2.x") != hasData) {
		x.violation("POST %s answered %s: not the %s envelope", path, raw, x.gen)
	}
	return code, str(env["msg"])
}

// triggered returns the trigger bodies received so far.
func (x *xxlExecutor) triggered() []map[string]any {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]map[string]any(nil), x.triggers...)
}

// triggerOf returns the trigger of log id, if it came here.
func (x *xxlExecutor) triggerOf(logID int64) map[string]any {
	for _, p := range x.triggered() {
		if int64(num(p["logId"])) == logID {
			return p
		}
	}
	return nil
}

func (x *xxlExecutor) killedJobs() []int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]int64(nil), x.kills...)
}
