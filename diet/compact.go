package diet

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Compact returns opts with the parts its informers hold (the objects a
// [Fields] transform kept in part) stored compact, and handed out as
// before. A part of a Go type still takes the type's whole struct: a
// corev1.Pod is 1,240 bytes before any field is set, so a Pod kept to its
// phase and exit code held about 2.8 KB in a cache. A compact part is the
// names, resourceVersion and UID the informer's store reads, and the JSON
// of every other non-zero field it kept, the rest of the metadata (labels,
// owner references) included: about 1.1 KB with the store's key and
// index (BenchmarkCachedBytesPerObject).
//
// Nothing that reads the cache sees the difference: the cache's informers
// hand every reader a part of the object's own Go type, as a [Fields]
// transform made it (its [PartialManager] entry included), built afresh
// from the compact form for each read (the client's Get and List, field
// indexes) and for each event handler (the controllers' watches,
// predicates, freshness): a reader may keep or change it without a copy.
// What a part takes in memory between reads and events is the compact
// form alone; each read costs one object built and dropped, as a copy of
// the cache's own object would (client.UnsafeDisableDeepCopy then saves
// nothing, and costs nothing).
//
// The fields kept are held as JSON holds them: a string that is not valid
// UTF-8 (which the API server's JSON never carries, though its protobuf
// may) comes back with U+FFFD in place of its invalid bytes.
//
// Objects that are not parts (whole objects, those of [ManagedFields]) and
// parts of unstructured objects are stored as they come. [CacheOptions]
// applies Compact; an operator that builds its cache options otherwise
// applies it last:
//
//	opts := diet.Compact(cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Transform: pods}}})
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: opts})
//
// Compact wraps opts.NewInformer (client-go's NewSharedIndexInformer when
// it is nil), so it composes with other options that set it
// (follow.CacheOptions); applied twice, the inner one finds nothing left to
// compact.
//
//bench:other "is 1,240 bytes"
//bench:figure "held about 2.8 KB" [BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet,_Pods_in_part,_not_compact @ B/object]
//bench:figure "about 1.1 KB" [BenchmarkCachedBytesPerObject/*v1.Pod/on_the_diet,_Pods_in_part @ B/object]
func Compact(opts cache.Options) cache.Options {
	next := opts.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		return &compactInformer{SharedIndexInformer: next(lw, obj, resync, indexers)}
	}
	return opts
}

// part is an object of a Go type a Fields transform kept in part, stored
// compact: what the informer's store and its own indexes read of the
// metadata (names, resourceVersion, UID) as strings, and the JSON of every
// other non-zero field (the rest of the metadata included). It is not a
// metav1.Object (whose struct alone is 232 bytes): meta.Accessor, which
// the store's key and namespace functions call, reads it through
// GetObjectMeta.
type part struct {
	name, namespace, resourceVersion string
	uid                              types.UID
	shape                            *shape
	rest                             []byte
}

// shape is what building objects of one Go type from their parts needs.
type shape struct {
	t    reflect.Type // pointer to struct
	meta []int        // index of the metadata field
}

// GetObjectKind implements runtime.Object. A part has no type of its own.
func (p *part) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object: a part of its own (rest is
// never changed).
func (p *part) DeepCopyObject() runtime.Object {
	c := *p
	return &c
}

// GetObjectMeta implements metav1.ObjectMetaAccessor, for meta.Accessor:
// the metadata the store reads.
func (p *part) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: p.name, Namespace: p.namespace, ResourceVersion: p.resourceVersion, UID: p.uid}
}

// object builds the part of p's Go type, as the Fields transform made it.
func (p *part) object() (runtime.Object, error) {
	v := reflect.New(p.shape.t.Elem())
	obj := v.Interface().(runtime.Object)
	if len(p.rest) > 0 {
		if err := json.Unmarshal(p.rest, obj); err != nil {
			return nil, fmt.Errorf("diet: a compact %s part: %w", p.shape.t, err)
		}
	}
	meta := v.Elem().FieldByIndex(p.shape.meta).Addr().Interface().(*metav1.ObjectMeta)
	meta.Name, meta.Namespace, meta.ResourceVersion, meta.UID = p.name, p.namespace, p.resourceVersion, p.uid
	meta.ManagedFields = partialEntries()
	return obj, nil
}

// compactInformer stores the parts its transform leaves compact, and
// hands out whole parts.
type compactInformer struct {
	toolscache.SharedIndexInformer

	// mu guards what compact learns of Go types (the informer's transform
	// runs on one goroutine; the lock costs nothing uncontended).
	mu     sync.Mutex
	shapes map[reflect.Type]*shape
	fields map[reflect.Type]map[string][]int
	// namespaces holds one copy of each namespace the parts name; mu
	// guards it.
	namespaces interner
}

// SetTransform implements toolscache.SharedInformer: f, then compact.
func (i *compactInformer) SetTransform(f toolscache.TransformFunc) error {
	return i.SharedIndexInformer.SetTransform(func(in any) (any, error) {
		if f != nil {
			out, err := f(in)
			if err != nil {
				return nil, err
			}
			in = out
		}
		return i.compact(in)
	})
}

// compact returns in as a part when it is a typed object kept in part, and
// in itself otherwise.
func (i *compactInformer) compact(in any) (any, error) {
	obj, ok := in.(metav1.Object)
	if !ok || !IsPartial(obj) {
		return in, nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	s := i.shapeOf(reflect.TypeOf(in))
	if s == nil {
		return in, nil
	}
	v := reflect.ValueOf(in).Elem()
	meta := v.FieldByIndex(s.meta).Interface().(metav1.ObjectMeta) // a copy
	// Many objects share a namespace: held once.
	p := &part{name: meta.Name, namespace: i.namespaces.intern(meta.Namespace), resourceVersion: meta.ResourceVersion, uid: meta.UID, shape: s}
	meta.Name, meta.Namespace, meta.ResourceVersion, meta.UID, meta.ManagedFields = "", "", "", "", nil
	rest := map[string]any{}
	for name, index := range i.jsonFields(v.Type()) {
		field := v.FieldByIndex(index)
		if name == "metadata" {
			field = reflect.ValueOf(&meta).Elem()
		}
		if val, ok := i.kept(field); ok {
			rest[name] = val
		}
	}
	if len(rest) > 0 {
		b, err := json.Marshal(rest)
		if err != nil {
			return nil, fmt.Errorf("diet: compact a %s part: %w", s.t, err)
		}
		p.rest = b
	}
	return p, nil
}

// shapeOf returns the shape of Go type t (a pointer to a struct with
// metadata), nil for another type. i.mu is held.
func (i *compactInformer) shapeOf(t reflect.Type) *shape {
	if s, ok := i.shapes[t]; ok {
		return s
	}
	var s *shape
	if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		if index, ok := jsonFields(t.Elem())["metadata"]; ok && t.Elem().FieldByIndex(index).Type == reflect.TypeFor[metav1.ObjectMeta]() {
			s = &shape{t: t, meta: index}
		}
	}
	if i.shapes == nil {
		i.shapes = map[reflect.Type]*shape{}
	}
	i.shapes[t] = s
	return s
}

// jsonFields is the package's jsonFields, once per type. i.mu is held.
func (i *compactInformer) jsonFields(t reflect.Type) map[string][]int {
	f, ok := i.fields[t]
	if !ok {
		if i.fields == nil {
			i.fields = map[reflect.Type]map[string][]int{}
		}
		f = jsonFields(t)
		i.fields[t] = f
	}
	return f
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// kept returns what of v encoding/json must write for json.Unmarshal into a
// zero value to give v back: nothing (false) for a zero value that is not
// behind a pointer, list or map; zero values inside those are kept, as a
// pointer to zero is not nil and a list element keeps its place.
// i.mu is held.
func (i *compactInformer) kept(v reflect.Value) (any, bool) {
	if v.IsZero() {
		return nil, false
	}
	return i.keptWhole(v), true
}

// keptWhole is kept for a value that must be written even when zero: a
// type that encodes itself (metav1.Time, resource.Quantity) as it does.
// i.mu is held.
func (i *compactInformer) keptWhole(v reflect.Value) any {
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) {
		return v.Interface()
	}
	if v.CanAddr() && (reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)) {
		return v.Addr().Interface()
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return i.keptWhole(v.Elem())
	case reflect.Struct:
		out := map[string]any{}
		for name, index := range i.jsonFields(t) {
			if val, ok := i.kept(v.FieldByIndex(index)); ok {
				out[name] = val
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return v.Interface() // []byte: base64, as encoding/json writes it
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for n := range v.Len() {
			out[n] = i.keptWhole(v.Index(n))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if k := t.Key(); k.Kind() != reflect.String || k.Implements(textMarshaler) {
			// A key encoding/json writes otherwise: the map whole, as it
			// writes it.
			return v.Interface()
		}
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			out[it.Key().String()] = i.keptWhole(it.Value())
		}
		return out
	default:
		return v.Interface()
	}
}

// expand returns obj built whole when it is a part, and obj otherwise.
// A part that cannot be built (it can only be one this package encoded)
// is handed out compact rather than lost.
func expand(obj any) any {
	switch o := obj.(type) {
	case *part:
		out, err := o.object()
		if err != nil {
			return obj
		}
		return out
	case toolscache.DeletedFinalStateUnknown:
		o.Obj = expand(o.Obj)
		return o
	}
	return obj
}

// expandAll returns objs with every part built whole; objs itself when it
// holds none.
func expandAll(objs []any) []any {
	for n, o := range objs {
		if _, ok := o.(*part); ok {
			out := make([]any, len(objs))
			copy(out, objs[:n])
			for m := n; m < len(objs); m++ {
				out[m] = expand(objs[m])
			}
			return out
		}
	}
	return objs
}

// AddEventHandler implements toolscache.SharedInformer: h is given whole
// parts.
func (i *compactInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(expandingHandler{h})
}

// AddEventHandlerWithResyncPeriod implements toolscache.SharedInformer.
func (i *compactInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithResyncPeriod(expandingHandler{h}, resync)
}

// AddEventHandlerWithOptions implements toolscache.SharedInformer.
func (i *compactInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandlerWithOptions(expandingHandler{h}, o)
}

// AddIndexers implements toolscache.SharedIndexInformer: the index
// functions are given whole parts.
func (i *compactInformer) AddIndexers(indexers toolscache.Indexers) error {
	return i.SharedIndexInformer.AddIndexers(expandingIndexers(indexers))
}

// GetIndexer implements toolscache.SharedIndexInformer: its reads hand out
// whole parts.
func (i *compactInformer) GetIndexer() toolscache.Indexer {
	return expandingIndexer{i.SharedIndexInformer.GetIndexer()}
}

// GetStore implements toolscache.SharedInformer, as GetIndexer.
func (i *compactInformer) GetStore() toolscache.Store {
	return expandingIndexer{i.SharedIndexInformer.GetIndexer()}
}

func expandingIndexers(indexers toolscache.Indexers) toolscache.Indexers {
	out := make(toolscache.Indexers, len(indexers))
	for name, f := range indexers {
		out[name] = func(obj any) ([]string, error) { return f(expand(obj)) }
	}
	return out
}

// expandingHandler gives h whole parts.
type expandingHandler struct {
	h toolscache.ResourceEventHandler
}

func (e expandingHandler) OnAdd(obj any, initial bool) { e.h.OnAdd(expand(obj), initial) }
func (e expandingHandler) OnUpdate(old, obj any)       { e.h.OnUpdate(expand(old), expand(obj)) }
func (e expandingHandler) OnDelete(obj any)            { e.h.OnDelete(expand(obj)) }

// expandingIndexer hands out whole parts from the informer's indexer.
type expandingIndexer struct{ toolscache.Indexer }

func (x expandingIndexer) List() []any { return expandAll(x.Indexer.List()) }

func (x expandingIndexer) Get(obj any) (any, bool, error) {
	item, ok, err := x.Indexer.Get(obj)
	return expand(item), ok, err
}

func (x expandingIndexer) GetByKey(key string) (any, bool, error) {
	item, ok, err := x.Indexer.GetByKey(key)
	return expand(item), ok, err
}

func (x expandingIndexer) Index(name string, obj any) ([]any, error) {
	items, err := x.Indexer.Index(name, obj)
	return expandAll(items), err
}

func (x expandingIndexer) ByIndex(name, value string) ([]any, error) {
	items, err := x.Indexer.ByIndex(name, value)
	return expandAll(items), err
}

func (x expandingIndexer) AddIndexers(indexers toolscache.Indexers) error {
	return x.Indexer.AddIndexers(expandingIndexers(indexers))
}
