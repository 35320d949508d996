package workflow

import (
	"errors"
	"fmt"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
)

// The sandbox of decision expressions: an expression sees only the run's params and its
// parents' results (no functions of the host, no I/O), is at most MaxExprLength long and
// MaxExprNodes nodes big, may allocate at most exprMemory items, and must end within
// ExprTimeout.
const (
	MaxExprLength = 1000
	MaxExprNodes  = 200
	exprMemory    = 10_000
)

// ExprTimeout bounds the evaluation of one decision.
var ExprTimeout = 100 * time.Millisecond

// safeBuiltins are the expr builtins a decision may call: pure, and linear in their input.
var safeBuiltins = []string{"len", "abs", "lower", "upper", "trim", "int", "float", "string", "keys", "values", "min", "max"}

// exprEnv is the shape of what a decision sees: params, the run's parameters (a JSON object),
// and parents, each parent's result by node name.
func exprEnv(params, parents map[string]any) map[string]any {
	if params == nil {
		params = map[string]any{}
	}
	if parents == nil {
		parents = map[string]any{}
	}
	return map[string]any{"params": params, "parents": parents}
}

// CompileDecision compiles a decision expression in the sandbox; it must yield a bool.
func CompileDecision(src string) (*vm.Program, error) {
	if src == "" {
		return nil, errors.New("a decision node needs an expression")
	}
	if len(src) > MaxExprLength {
		return nil, fmt.Errorf("the expression is %d characters long, more than the %d allowed", len(src), MaxExprLength)
	}
	opts := []expr.Option{expr.Env(exprEnv(nil, nil)), expr.AsBool(), expr.MaxNodes(MaxExprNodes), expr.DisableAllBuiltins()}
	for _, b := range safeBuiltins {
		opts = append(opts, expr.EnableBuiltin(b))
	}
	p, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", src, err)
	}
	return p, nil
}

// Decide evaluates a decision expression over the run's params and the parents' results.
func Decide(src string, params, parents map[string]any) (bool, error) {
	p, err := CompileDecision(src)
	if err != nil {
		return false, err
	}
	type answer struct {
		v   any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		// The memory budget and the node limit bound the work; the timer bounds the wait even
		// so, and an evaluation past it is left to end on its own.
		defer func() {
			if r := recover(); r != nil {
				done <- answer{err: fmt.Errorf("%w: %v", ErrDecision, r)}
			}
		}()
		m := vm.VM{MemoryBudget: exprMemory}
		v, err := m.Run(p, exprEnv(params, parents))
		done <- answer{v, err}
	}()
	t := time.NewTimer(ExprTimeout)
	defer t.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			return false, fmt.Errorf("%w: expression %q: %w", ErrDecision, src, a.err)
		}
		b, ok := a.v.(bool)
		if !ok {
			return false, fmt.Errorf("%w: expression %q yields %T, not a bool", ErrDecision, src, a.v)
		}
		return b, nil
	case <-t.C:
		return false, fmt.Errorf("%w: expression %q ran longer than %s", ErrDecision, src, ExprTimeout)
	}
}
