package managedfields_test

import (
	"fmt"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/reconcilekit/reconcilekit/internal/managedfields"
)

// protocolTCP is the KeyDefault of compare.KubernetesRules.
var protocolTCP = []managedfields.KeyDefault{{Field: "protocol", Value: "TCP"}}

// TestSets: the fields a partial takeover may take are those desired sets
// to something other than a zero value (content of a Go struct), list
// elements found by key (a missing protocol is TCP) or value.
func TestSets(t *testing.T) {
	content := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "memcached", "empty": ""}},
		"spec": map[string]any{
			"paused":   false,
			"replicas": int64(1),
			"ratios":   []any{float32(0.5), float32(80)},
			"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{
					"name":  "memcached",
					"ports": []any{map[string]any{"name": "memcached", "containerPort": int64(11211)}},
					"args":  []any{"-v"},
				}},
				"volumes": []any{},
			}},
		},
	}
	container := `f:spec.f:template.f:spec.f:containers.k:{"name":"memcached"}`
	tests := []struct {
		path string
		want bool
	}{
		{`f:metadata.f:labels.f:app`, true},
		{`f:metadata.f:labels.f:empty`, false},
		{`f:metadata.f:labels.f:gone`, false},
		{`f:metadata.f:labels`, true},
		{`f:spec.f:paused`, false},
		{`f:spec.f:replicas`, true},
		{`f:spec.f:template.f:spec.f:volumes`, false},
		{container, true},
		{`f:spec.f:template.f:spec.f:containers.k:{"name":"sidecar"}`, false},
		{container + `.f:ports.k:{"containerPort":11211,"protocol":"TCP"}`, true},
		{container + `.f:ports.k:{"containerPort":11211,"protocol":"TCP"}.f:name`, true},
		{container + `.f:ports.k:{"containerPort":11211,"protocol":"TCP"}.f:protocol`, false},
		{container + `.f:ports.k:{"containerPort":11211,"protocol":"UDP"}`, false},
		{container + `.f:ports.k:{"containerPort":11212,"protocol":"TCP"}`, false},
		{container + `.f:args.v:"-v"`, true},
		{container + `.f:args.v:"-x"`, false},
		{container + `.f:args.i:0`, true},
		{container + `.f:args.i:1`, false},
		{`f:spec.f:replicas.f:nested`, false},
		// Numbers compare by value whatever their Go type, a float32 of
		// content built by hand too.
		{`f:spec.f:ratios.v:0.5`, true},
		{`f:spec.f:ratios.v:80`, true},
		{`f:spec.f:ratios.v:0.25`, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := fieldpath.MakePath(pathElements(t, tt.path)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := managedfields.Sets(content, p, protocolTCP, true); got != tt.want {
				t.Errorf("Sets = %v, want %v", got, tt.want)
			}
		})
	}
}

// pathElements parses "f:a.k:{...}.v:1" into path elements.
func pathElements(t *testing.T, s string) []any {
	t.Helper()
	var out []any
	for s != "" {
		// An element ends at the next ".x:" outside a JSON value.
		depth, end := 0, len(s)
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			case '.':
				if depth == 0 && i+2 < len(s) && s[i+2] == ':' {
					end = i
				}
			}
			if end != len(s) {
				break
			}
		}
		pe, err := fieldpath.DeserializePathElement(s[:end])
		if err != nil {
			t.Fatalf("%s: %v", s[:end], err)
		}
		out = append(out, pe)
		s = s[min(end+1, len(s)):]
	}
	return out
}

// TestSetsOfUnstructuredContent: in unstructured content a key present
// with a zero value is set, as compare's walk of unstructured content has
// it; null and empty lists and maps still set nothing. A list element
// whose key field is missing has the default of the KeyDefaults given, and
// only of those.
func TestSetsOfUnstructuredContent(t *testing.T) {
	content := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"empty": "", "gone": nil}},
		"spec": map[string]any{
			"paused":    false,
			"replicas":  int64(0),
			"ratio":     float32(0),
			"volumes":   []any{},
			"selector":  map[string]any{},
			"endpoints": []any{map[string]any{"name": "web", "port": int64(80)}},
		},
	}
	zone := []managedfields.KeyDefault{{Field: "zone", Value: "a"}}
	tests := []struct {
		path        string
		keys        []managedfields.KeyDefault
		typed, want bool
	}{
		{path: `f:metadata.f:labels.f:empty`, want: true},
		{path: `f:metadata.f:labels.f:empty`, typed: true, want: false},
		{path: `f:metadata.f:labels.f:gone`, want: false},
		{path: `f:spec.f:paused`, want: true},
		{path: `f:spec.f:paused`, typed: true, want: false},
		{path: `f:spec.f:replicas`, want: true},
		{path: `f:spec.f:replicas`, typed: true, want: false},
		{path: `f:spec.f:ratio`, want: true},
		{path: `f:spec.f:ratio`, typed: true, want: false},
		{path: `f:spec.f:volumes`, want: false},
		{path: `f:spec.f:selector`, want: false},
		{path: `f:spec.f:endpoints.k:{"name":"web","zone":"a"}`, keys: zone, want: true},
		{path: `f:spec.f:endpoints.k:{"name":"web","zone":"a"}.f:port`, keys: zone, want: true},
		{path: `f:spec.f:endpoints.k:{"name":"web","zone":"a"}.f:zone`, keys: zone, want: false},
		{path: `f:spec.f:endpoints.k:{"name":"web","zone":"b"}`, keys: zone, want: false},
		{path: `f:spec.f:endpoints.k:{"name":"web","zone":"a"}`, keys: protocolTCP, want: false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/typed=%v", tt.path, tt.typed), func(t *testing.T) {
			p, err := fieldpath.MakePath(pathElements(t, tt.path)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := managedfields.Sets(content, p, tt.keys, tt.typed); got != tt.want {
				t.Errorf("Sets = %v, want %v", got, tt.want)
			}
		})
	}
}
