package apicheck_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	// Every library package, so that each registers its metrics.
	_ "github.com/reconcilekit/reconcilekit/applyset"
	_ "github.com/reconcilekit/reconcilekit/drift"
	_ "github.com/reconcilekit/reconcilekit/errors"
	_ "github.com/reconcilekit/reconcilekit/finalizer"
	_ "github.com/reconcilekit/reconcilekit/freshness"
	_ "github.com/reconcilekit/reconcilekit/ownership"
	_ "github.com/reconcilekit/reconcilekit/reconcile"
	_ "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
	_ "github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
	_ "github.com/reconcilekit/reconcilekit/recorder"
	_ "github.com/reconcilekit/reconcilekit/requeue"
	_ "github.com/reconcilekit/reconcilekit/shard"
	_ "github.com/reconcilekit/reconcilekit/status"
)

// metricsDoc is the page that documents every metric.
const metricsDoc = "docs/metrics.md"

// metric is what the code says, or the page says, about one metric.
type metric struct {
	Type    string   // counter, gauge, histogram or summary
	Labels  []string // sorted
	Package string   // the library package's directory
}

// constructors maps the prometheus constructors taking an Opts literal to
// the type of what they build.
var constructors = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter", "NewCounterFunc": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge", "NewGaugeFunc": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

// valueTypes maps the ValueType of a const metric to its type.
var valueTypes = map[string]string{"CounterValue": "counter", "GaugeValue": "gauge", "UntypedValue": "untyped"}

// defined reads, from the non-test source of every library package, the
// metrics it defines: each call of a prometheus constructor with an Opts
// literal (promauto's too), each prometheus.NewDesc, whose type is the
// ValueType of the const metrics built from it, and each gauge of
// internal/live's NewGauge. A metric whose name or
// labels are not literals is an error: the page could not be checked.
func defined(t *testing.T) map[string]metric {
	t.Helper()
	out := map[string]metric{}
	add := func(pos token.Position, name string, m metric) {
		if prev, dup := out[name]; dup {
			t.Errorf("%s: metric %s is defined twice (also in %s)", pos, name, prev.Package)
		}
		out[name] = m
	}
	for _, lib := range libraries {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, lib), func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			// The const metrics' ValueType, by the name of the field or
			// variable holding their Desc.
			constTypes := map[string][]string{}
			type desc struct {
				pos    token.Position
				name   string
				labels []string
				holder string
			}
			var descs []desc
			for _, f := range pkg.Files {
				var stack []ast.Node
				ast.Inspect(f, func(n ast.Node) bool {
					if n == nil {
						stack = stack[:len(stack)-1]
						return true
					}
					stack = append(stack, n)
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					fn := selectorName(call.Fun)
					pos := fset.Position(call.Pos())
					switch {
					case constructors[fn] != "" && len(call.Args) > 0 && isOptsLiteral(call.Args[0]):
						name, ok := optsName(call.Args[0].(*ast.CompositeLit))
						if !ok {
							t.Errorf("%s: %s without a literal Name (and no Namespace or Subsystem): %s cannot be checked", pos, fn, metricsDoc)
							return true
						}
						var labels []string
						if strings.HasSuffix(fn, "Vec") {
							if len(call.Args) < 2 {
								t.Errorf("%s: %s %s without labels", pos, fn, name)
								return true
							}
							if labels, ok = stringList(call.Args[1]); !ok {
								t.Errorf("%s: the labels of %s are not a []string literal: %s cannot be checked", pos, name, metricsDoc)
								return true
							}
						}
						add(pos, name, metric{Type: constructors[fn], Labels: sorted(labels), Package: lib})
					case fn == "NewDesc" && len(call.Args) == 4:
						name, ok := stringLiteral(call.Args[0])
						labels, lok := stringList(call.Args[2])
						if !ok || !lok {
							t.Errorf("%s: NewDesc without a literal name and []string labels: %s cannot be checked", pos, metricsDoc)
							return true
						}
						descs = append(descs, desc{pos, name, labels, holderOf(stack)})
					case fn == "NewGauge" && len(call.Args) == 4:
						// internal/live's gauge: a value per map, labelled
						// map=<name>, or one unlabelled value for nil maps.
						name, ok := stringLiteral(call.Args[0])
						maps, mok := stringList(call.Args[2])
						if !ok || !mok {
							t.Errorf("%s: NewGauge without a literal name and []string maps: %s cannot be checked", pos, metricsDoc)
							return true
						}
						var labels []string
						if len(maps) > 0 {
							labels = []string{"map"}
						}
						add(pos, name, metric{Type: "gauge", Labels: labels, Package: lib})
					case (fn == "MustNewConstMetric" || fn == "NewConstMetric") && len(call.Args) > 1:
						holder := lastName(call.Args[0])
						constTypes[holder] = append(constTypes[holder], valueTypes[selectorName(call.Args[1])])
					}
					return true
				})
			}
			for _, d := range descs {
				types := slices.Compact(slices.Sorted(slices.Values(constTypes[d.holder])))
				if len(types) != 1 || types[0] == "" {
					t.Errorf("%s: the const metrics of %s (held in %q) have types %q: want one ValueType", d.pos, d.name, d.holder, types)
					continue
				}
				add(d.pos, d.name, metric{Type: types[0], Labels: sorted(d.labels), Package: lib})
			}
		}
	}
	return out
}

// selectorName is the name a call's function is selected by (prometheus.X,
// promauto.With(r).X, c.X), or the identifier.
func selectorName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name
	case *ast.Ident:
		return f.Name
	}
	return ""
}

// lastName is the last identifier of an expression such as c.desc or desc.
func lastName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	case *ast.UnaryExpr:
		return lastName(x.X)
	}
	return ""
}

// holderOf names what the NewDesc call at the top of stack is assigned to:
// a struct field of a composite literal, or a variable.
func holderOf(stack []ast.Node) string {
	if len(stack) < 2 {
		return ""
	}
	switch p := stack[len(stack)-2].(type) {
	case *ast.KeyValueExpr:
		return lastName(p.Key)
	case *ast.ValueSpec:
		if len(p.Names) == 1 {
			return p.Names[0].Name
		}
	case *ast.AssignStmt:
		if len(p.Lhs) == 1 {
			return lastName(p.Lhs[0])
		}
	}
	return ""
}

// isOptsLiteral reports whether e is a prometheus.XxxOpts{...} literal.
func isOptsLiteral(e ast.Expr) bool {
	lit, ok := e.(*ast.CompositeLit)
	return ok && strings.HasSuffix(selectorName(lit.Type), "Opts")
}

// optsName returns the literal Name of an Opts literal, refusing a
// Namespace or Subsystem that would prefix it.
func optsName(lit *ast.CompositeLit) (string, bool) {
	name, ok := "", false
	for _, el := range lit.Elts {
		kv, isKV := el.(*ast.KeyValueExpr)
		if !isKV {
			return "", false
		}
		switch lastName(kv.Key) {
		case "Name":
			name, ok = stringLiteral(kv.Value)
		case "Namespace", "Subsystem":
			return "", false
		}
	}
	return name, ok
}

func stringLiteral(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// stringList reads a []string{...} literal, or nil.
func stringList(e ast.Expr) ([]string, bool) {
	if id, ok := e.(*ast.Ident); ok && id.Name == "nil" {
		return nil, true
	}
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	var out []string
	for _, el := range lit.Elts {
		s, ok := stringLiteral(el)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func sorted(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(s))
}

var (
	// metricRow is a row of the table: | `name` | type | labels | `package` | meaning |.
	metricRow = regexp.MustCompile("^\\| `(reconcilekit_\\w+)` \\| (\\w+) \\| ([^|]*) \\| `([a-z/]+)` \\| [^|]+ \\|$")
	// parenthesised drops the example values after a label.
	parenthesised = regexp.MustCompile(`\([^)]*\)`)
	codeSpan      = regexp.MustCompile("`([^`]+)`")
)

// documented reads the table of docs/metrics.md.
func documented(t *testing.T) map[string]metric {
	t.Helper()
	out := map[string]metric{}
	for line := range strings.Lines(readDoc(t, metricsDoc)) {
		line = strings.TrimRight(line, "\n")
		if !strings.HasPrefix(line, "| `reconcilekit_") {
			continue
		}
		m := metricRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s: a row that is not | `name` | type | labels | `package` | meaning |: %s", metricsDoc, line)
			continue
		}
		var labels []string
		for _, l := range codeSpan.FindAllStringSubmatch(parenthesised.ReplaceAllString(m[3], ""), -1) {
			labels = append(labels, l[1])
		}
		if _, dup := out[m[1]]; dup {
			t.Errorf("%s documents %s twice", metricsDoc, m[1])
		}
		out[m[1]] = metric{Type: m[2], Labels: sorted(labels), Package: m[4]}
	}
	return out
}

// TestEveryMetricIsDocumented proves docs/metrics.md lists every metric the
// library packages define, with its type, labels and package, and nothing
// else; that every name starts with reconcilekit_; and that every metric it
// lists is registered on controller-runtime's registry once the packages
// are imported, as the page says.
func TestEveryMetricIsDocumented(t *testing.T) {
	code, doc := defined(t), documented(t)
	if len(code) == 0 {
		t.Fatal("found no metric in the library's source: the scan is broken")
	}
	for name, m := range code {
		if !strings.HasPrefix(name, "reconcilekit_") {
			t.Errorf("metric %s of %s does not start with reconcilekit_", name, m.Package)
		}
		d, ok := doc[name]
		if !ok {
			t.Errorf("metric %s (%s, labels %q, package %s) is missing from %s", name, m.Type, m.Labels, m.Package, metricsDoc)
			continue
		}
		if diff := cmp.Diff(m, d); diff != "" {
			t.Errorf("%s's row of %s differs from the code (-code +page):\n%s", name, metricsDoc, diff)
		}
	}
	for name, d := range doc {
		if _, ok := code[name]; !ok {
			t.Errorf("%s documents %s, which no library package defines", metricsDoc, name)
		}
		if !registered(t, name, d.Labels) {
			t.Errorf("%s documents %s, which is not registered on controller-runtime's registry", metricsDoc, name)
		}
	}
}

// probe is a collector of one descriptor, to ask a registry whether a
// metric of that name is registered.
type probe struct{ desc *prometheus.Desc }

func (p probe) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (p probe) Collect(chan<- prometheus.Metric)    {}

// registered reports whether controller-runtime's registry holds a metric
// named name: a registry refuses a second descriptor of a name it holds
// (with another help text, as the probe's is), and accepts one it does not.
func registered(t *testing.T, name string, labels []string) bool {
	t.Helper()
	p := probe{prometheus.NewDesc(name, "probe of "+metricsDoc, labels, nil)}
	err := metrics.Registry.Register(p)
	if err == nil {
		metrics.Registry.Unregister(p)
		return false
	}
	var already prometheus.AlreadyRegisteredError
	return errors.As(err, &already) || strings.Contains(err.Error(), "same fully-qualified name")
}

// TestTheMetricsCheckFindsWhatItLooksFor proves the probe tells a
// registered metric from an unregistered one, so the test above can fail.
func TestTheMetricsCheckFindsWhatItLooksFor(t *testing.T) {
	if !registered(t, "controller_runtime_reconcile_total", []string{"controller", "result"}) {
		t.Error("controller-runtime's own reconcile counter is not seen as registered")
	}
	if registered(t, "reconcilekit_no_such_metric_total", nil) {
		t.Error("a metric nobody registered is seen as registered")
	}
}
