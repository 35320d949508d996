package sqlstore

import (
	"runtime"
	"strings"
	"sync"
)

// WithOperationCounts makes the store count its statements and transactions by the operation
// that sent them (Stats.ByOperation): the store method, and the function outside the store
// that called it. It walks the stack on every statement, so it is for benchmarks and tests
// that measure where a fire's database work goes, not for a serving node.
func WithOperationCounts() Option {
	return func(c *config) { c.byOp = &opCounts{m: map[string]*OpCount{}} }
}

// OpCount is the work of one operation (Stats.ByOperation).
type OpCount struct {
	Statements   int64
	Transactions int64
}

type opCounts struct {
	mu sync.Mutex
	m  map[string]*OpCount
}

// add counts a statement (tx false: one inside a transaction) or a transaction's begin.
func (o *opCounts) add(statement, tx bool) {
	label := operationOf()
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.m[label]
	if c == nil {
		c = &OpCount{}
		o.m[label] = c
	}
	if statement {
		c.Statements++
	}
	if tx {
		c.Transactions++
	}
}

func (o *opCounts) snapshot() map[string]OpCount {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[string]OpCount, len(o.m))
	for k, v := range o.m {
		out[k] = *v
	}
	return out
}

const pkgPath = "github.com/sundial-scheduler/sundial/store/sqlstore."

// operationOf names the calling operation "Method ← caller": the outermost exported method of
// this package on the stack, and the first function outside it (the engine's, the
// dispatcher's, the server's), package-qualified.
func operationOf() string {
	pcs := make([]uintptr, 48)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	method, caller := "", ""
	for {
		f, more := frames.Next()
		if name, ok := strings.CutPrefix(f.Function, pkgPath); ok {
			if i := strings.LastIndexByte(name, '.'); i >= 0 {
				if m := name[i+1:]; m != "" && m[0] >= 'A' && m[0] <= 'Z' {
					method = m
				}
			}
		} else if method != "" {
			caller = strings.TrimPrefix(f.Function, "github.com/sundial-scheduler/sundial/")
			break
		}
		if !more {
			break
		}
	}
	return method + " ← " + caller
}
