package render

import (
	"fmt"
	"reflect"
	"sync"
	"text/template"
	"text/template/parse"
)

// executor executes parsed templates for one render at a time. Its function
// set is bound to its own budget, which is how template functions reach the
// state of the render that calls them; executors are pooled, so the cost of
// building a function set is paid once per executor, not per render.
type executor struct {
	engine *Engine
	root   *template.Template
	bound  map[string]*template.Template
	budget budget

	// includes are the bundle's included layers by name.
	includes map[string]string
	// chain is the layers being rendered, outermost first, for include cycles.
	chain []string
	// includeDepth is how many include calls are executing.
	includeDepth int
	// active is the stack of templates executing; an include rebinds the
	// names of its caller when it returns.
	active []*parsed
	// buffers are reused include output buffers, one per include depth.
	buffers [][]byte
	// out is the reused output buffer of a render's pieces.
	out []byte
	// data, flights and spans are a render's template data, its sorted
	// flight messages and its pieces, reused.
	data    Data
	flights []FlightMessage
	spans   []span
	// writers are reused writers, one per nesting level of execution.
	writers []*budgetWriter
	// textArg holds the argument of a guardText call, and textArgs is it as
	// a reflect.Value, made once, so that the call allocates nothing.
	textArg  string
	textArgs [1]reflect.Value
	// bindings are the templates bound since the executor left the pool.
	// They are unbound when it returns, so an idle executor keeps no
	// parse tree alive that the cache has dropped.
	bindings []*template.Template
}

// maxBoundNames bounds the template names an executor keeps bound; past it
// the executor is dropped rather than returned to the pool.
const maxBoundNames = 4096

func newExecutor(e *Engine) *executor {
	x := &executor{engine: e, bound: map[string]*template.Template{}}
	x.textArgs[0] = reflect.ValueOf(&x.textArg).Elem()
	x.root = template.New("\x00root").Funcs(x.funcMap()).Option("missingkey=zero")
	return x
}

// bind makes p's templates the ones its names refer to. Templates of
// different sources never call each other (parseTemplate checks that every
// {{template}} names a template of the same source), so stale bindings left
// by other sources are unreachable.
func (x *executor) bind(p *parsed) *template.Template {
	for _, t := range p.defines {
		x.bindTree(t.Name, t)
	}
	return x.bindTree(p.name, p.main)
}

func (x *executor) bindTree(name string, t *parse.Tree) *template.Template {
	nt := x.bound[name]
	if nt != nil {
		nt.Tree = t
	} else {
		var err error
		if nt, err = x.root.AddParseTree(name, t); err != nil {
			panic(err) // AddParseTree fails only on a nil template
		}
		x.bound[name] = nt
	}
	x.bindings = append(x.bindings, nt)
	return nt
}

// executeTo runs p with data, appending what it writes to buf.
func (x *executor) executeTo(buf []byte, p *parsed, data any) ([]byte, error) {
	if p.err != nil {
		return buf, p.err
	}
	if p.empty {
		return buf, nil
	}
	level := len(x.active)
	if level == len(x.writers) {
		x.writers = append(x.writers, &budgetWriter{budget: &x.budget})
	}
	w := x.writers[level]
	w.buf = buf
	x.active = append(x.active, p)
	err := x.bind(p).Execute(w, data)
	x.active = x.active[:level]
	if level > 0 {
		x.bind(x.active[level-1])
	}
	buf, w.buf = w.buf, nil
	if err != nil {
		return buf, cleanError(err)
	}
	return buf, nil
}

// include renders the template of the PromptLayer name with data as ., for
// {{ include "name" DATA }}.
func (x *executor) include(name string, data any) (string, error) {
	if err := x.budget.spend(1); err != nil {
		return "", err
	}
	if err := x.checkIncludeChain(name); err != nil {
		return "", err
	}
	src, ok := x.includes[name]
	if !ok {
		return "", fmt.Errorf("include %q: no PromptLayer %q was resolved for this persona", name, name)
	}
	out, err := x.executeIncluded(name, x.engine.cache.get(KindLayer, name, src), data)
	if err != nil {
		if standaloneError(err) != nil {
			return "", err
		}
		return "", fmt.Errorf("include %q: %w", name, err)
	}
	// The included text counts as output where the caller writes it, not
	// twice.
	x.budget.output -= len(out)
	return out, nil
}

// checkIncludeChain refuses to include name when it is already being
// rendered, or when includes are nested as deep as the limit allows.
func (x *executor) checkIncludeChain(name string) error {
	for i, n := range x.chain {
		if n == name {
			return &IncludeError{Chain: append(append([]string{}, x.chain[i:]...), name), Cycle: true}
		}
	}
	if x.includeDepth >= x.budget.limits.MaxIncludeDepth {
		return &IncludeError{Chain: append(append([]string{}, x.chain...), name), Limit: x.budget.limits.MaxIncludeDepth}
	}
	return nil
}

// executeIncluded runs the included layer name, parsed as p, into the
// reused buffer of its include depth, with name on the include chain.
func (x *executor) executeIncluded(name string, p *parsed, data any) (string, error) {
	level := x.includeDepth
	if level == len(x.buffers) {
		x.buffers = append(x.buffers, nil)
	}
	x.chain = append(x.chain, name)
	x.includeDepth++
	buf, err := x.executeTo(x.buffers[level][:0], p, data)
	x.includeDepth--
	x.chain = x.chain[:len(x.chain)-1]
	x.buffers[level] = buf
	if err != nil {
		return "", err
	}
	return string(buf), nil
}

// executorPool keeps idle executors. Unlike sync.Pool it is not emptied by
// the garbage collector, so an executor's function set is built rarely.
type executorPool struct {
	mu   sync.Mutex
	idle []*executor
}

const (
	maxIdleExecutors = 64
	maxKeptBuffer    = 64 << 10
	maxKeptItems     = 1024
)

func (p *executorPool) get(e *Engine) *executor {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		x := p.idle[n-1]
		p.idle = p.idle[:n-1]
		return x
	}
	return newExecutor(e)
}

func (p *executorPool) put(x *executor) {
	x.includes, x.chain, x.active, x.includeDepth = nil, x.chain[:0], x.active[:0], 0
	for _, nt := range x.bindings {
		nt.Tree = nil
	}
	x.bindings = x.bindings[:0]
	if cap(x.bindings) > maxBoundNames {
		x.bindings = nil
	}
	for i, b := range x.buffers {
		if cap(b) > maxKeptBuffer {
			x.buffers[i] = nil
		}
	}
	if cap(x.out) > maxKeptBuffer {
		x.out = nil
	}
	// An idle executor keeps no bundle's data alive.
	x.data = Data{}
	clear(x.flights[:cap(x.flights)])
	clear(x.spans[:cap(x.spans)])
	if cap(x.flights) > maxKeptItems {
		x.flights = nil
	}
	if cap(x.spans) > maxKeptItems {
		x.spans = nil
	}
	if len(x.bound) > maxBoundNames {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) < maxIdleExecutors {
		p.idle = append(p.idle, x)
	}
}
