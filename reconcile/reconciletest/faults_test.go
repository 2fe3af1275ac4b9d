package reconciletest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rt "github.com/reconcilekit/reconcilekit/reconcile/reconciletest"
)

func mustFaults(t testing.TB, seed uint64, opts ...rt.FaultOption) *rt.FaultInjector {
	t.Helper()
	f, err := rt.NewFaultInjector(seed, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// outcomes sends n Gets through a fresh injector and returns the fault each
// got (FaultNone for success).
func outcomes(t testing.TB, seed uint64, n int, opts ...rt.FaultOption) []rt.Fault {
	t.Helper()
	f := mustFaults(t, seed, opts...)
	c := f.Wrap(newFake(t, configMap("ns", "cm")))
	got := make([]rt.Fault, n)
	for i := range got {
		got[i] = rt.FaultNone
		before := len(f.Injected())
		err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "cm"}, &corev1.ConfigMap{})
		if inj := f.Injected(); len(inj) > before {
			got[i] = inj[len(inj)-1].Fault
			if !errors.Is(err, inj[len(inj)-1].Request.Err) {
				t.Fatalf("request %d: err = %v, want the injected %v", i, err, inj[len(inj)-1].Request.Err)
			}
		} else if err != nil {
			t.Fatalf("request %d: err = %v without an injected fault", i, err)
		}
	}
	return got
}

// TestFaultInjectionIsDeterministicFromSeed: the same seed and options give
// the same faults in the same order; another seed gives another order.
func TestFaultInjectionIsDeterministicFromSeed(t *testing.T) {
	opts := []rt.FaultOption{rt.Rate(0.3)}
	a := outcomes(t, 42, 500, opts...)
	b := outcomes(t, 42, 500, opts...)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different faults (-first +second):\n%s", diff)
	}
	if c := outcomes(t, 43, 500, opts...); cmp.Equal(a, c) {
		t.Error("seeds 42 and 43 gave identical faults over 500 requests")
	}
	kinds := map[rt.Fault]int{}
	for _, f := range a {
		kinds[f]++
	}
	for _, f := range []rt.Fault{rt.FaultConflict, rt.FaultThrottle, rt.FaultServerError, rt.FaultTimeout, rt.FaultDeadlineExceeded} {
		if kinds[f] == 0 {
			t.Errorf("Rate with no faults listed never injected %q in 500 requests: %v", f, kinds)
		}
	}
}

// TestFaultRateIsRespected: over many requests the injected fraction stays
// within 5 standard deviations of the rate, for several seeds; 0 and 1 are
// exact.
func TestFaultRateIsRespected(t *testing.T) {
	const n = 4000
	for _, rate := range []float64{0, 0.01, 0.1, 0.3, 0.5, 0.9, 1} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("rate=%v/seed=%d", rate, seed), func(t *testing.T) {
				f := mustFaults(t, seed, rt.Rate(rate, rt.FaultConflict))
				c := f.Wrap(newFake(t, configMap("ns", "cm")))
				for range n {
					_ = c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "cm"}, &corev1.ConfigMap{})
				}
				got := len(f.Injected())
				if f.Matched() != n {
					t.Errorf("Matched() = %d, want %d", f.Matched(), n)
				}
				mean, sd := rate*n, math.Sqrt(n*rate*(1-rate))
				if math.Abs(float64(got)-mean) > 5*sd {
					t.Errorf("injected %d of %d, want %v ± %.0f", got, n, mean, 5*sd)
				}
			})
		}
	}
}

// TestFaultErrorsLookLikeTheServers: each fault is the error a caller's
// classification code must recognize.
func TestFaultErrorsLookLikeTheServers(t *testing.T) {
	tests := []struct {
		fault rt.Fault
		check func(error) bool
	}{
		{rt.FaultConflict, func(err error) bool {
			var se *apierrors.StatusError
			return apierrors.IsConflict(err) && errors.As(err, &se) && se.ErrStatus.Details.Kind == "configmaps"
		}},
		{rt.FaultThrottle, func(err error) bool {
			d, ok := apierrors.SuggestsClientDelay(err)
			return apierrors.IsTooManyRequests(err) && ok && d == 3
		}},
		{rt.FaultServerError, apierrors.IsInternalError},
		{rt.FaultTimeout, func(err error) bool {
			d, ok := apierrors.SuggestsClientDelay(err)
			return apierrors.IsTimeout(err) && ok && d == 3
		}},
		{rt.FaultDeadlineExceeded, func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	}
	for _, tt := range tests {
		t.Run(string(tt.fault), func(t *testing.T) {
			f := mustFaults(t, 1, rt.Sequence(tt.fault), rt.ThrottleDelay(2500*time.Millisecond))
			c := f.Wrap(newFake(t))
			err := c.Create(t.Context(), configMap("ns", "cm"))
			if !tt.check(err) {
				t.Errorf("err = %#v: not a %s", err, tt.fault)
			}
		})
	}
}

// TestFaultRetryAfterDefaultsToOneSecond: without RetryAfter, throttling
// and server timeouts suggest a one-second delay.
func TestFaultRetryAfterDefaultsToOneSecond(t *testing.T) {
	for _, fault := range []rt.Fault{rt.FaultThrottle, rt.FaultTimeout} {
		c := mustFaults(t, 1, rt.Sequence(fault)).Wrap(newFake(t))
		err := c.List(t.Context(), &corev1.ConfigMapList{})
		if d, ok := apierrors.SuggestsClientDelay(err); !ok || d != 1 {
			t.Errorf("%s: SuggestsClientDelay = %d, %v; want 1, true", fault, d, ok)
		}
	}
}

// TestFaultSequenceAndFilters: a sequence applies in order to the requests
// the filters select, others pass without advancing it, and a failed write
// never reaches the server.
func TestFaultSequenceAndFilters(t *testing.T) {
	f := mustFaults(t, 1, rt.Sequence(rt.FaultConflict, rt.FaultNone, rt.FaultServerError), rt.OnlyVerbs(rt.VerbCreate), rt.OnlyKinds("ConfigMap"))
	base := newFake(t)
	c := f.Wrap(base)
	ctx := t.Context()

	var got []string
	try := func(name string, err error) { got = append(got, fmt.Sprintf("%s: %v", name, err != nil)) }
	try("get cm", client.IgnoreNotFound(c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "a"}, &corev1.ConfigMap{})))
	try("create widget", c.Create(ctx, widget("ns", "w", "")))
	try("create cm a", c.Create(ctx, configMap("ns", "a")))
	try("create cm b", c.Create(ctx, configMap("ns", "b")))
	try("create cm c", c.Create(ctx, configMap("ns", "c")))
	try("create cm d", c.Create(ctx, configMap("ns", "d")))
	want := []string{"get cm: false", "create widget: false", "create cm a: true", "create cm b: false", "create cm c: true", "create cm d: false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	var faults []string
	for _, in := range f.Injected() {
		faults = append(faults, string(in.Fault)+" "+in.Request.Name)
	}
	if diff := cmp.Diff([]string{"conflict a", "server-error c"}, faults); diff != "" {
		t.Errorf("Injected() (-want +got):\n%s", diff)
	}
	if f.Matched() != 4 {
		t.Errorf("Matched() = %d, want 4 (the ConfigMap creates)", f.Matched())
	}
	for _, name := range []string{"a", "c"} {
		if err := base.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("config map %q after an injected failure: err = %v, want NotFound (never sent)", name, err)
		}
	}
}

// TestNewFaultInjectorRejectsBadOptions: options that cannot work are
// errors wrapping ErrInvalidFaultOption, not panics.
func TestNewFaultInjectorRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []rt.FaultOption
	}{
		{"negative rate", []rt.FaultOption{rt.Rate(-0.1)}},
		{"rate above one", []rt.FaultOption{rt.Rate(1.5)}},
		{"NaN rate", []rt.FaultOption{rt.Rate(math.NaN())}},
		{"rate and sequence", []rt.FaultOption{rt.Rate(0.1), rt.Sequence(rt.FaultConflict)}},
		{"unknown fault in rate", []rt.FaultOption{rt.Rate(0.1, "explode")}},
		{"unknown fault in sequence", []rt.FaultOption{rt.Sequence(rt.FaultConflict, "")}},
		{"zero throttle delay", []rt.FaultOption{rt.Rate(0.1), rt.ThrottleDelay(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := rt.NewFaultInjector(1, tt.opts...)
			if !errors.Is(err, rt.ErrInvalidFaultOption) || f != nil {
				t.Errorf("NewFaultInjector = %v, %v; want nil and ErrInvalidFaultOption", f, err)
			}
		})
	}
}

// TestFaultInjectorWithoutRateOrSequenceInjectsNothing: the zero
// configuration is valid and lets everything through, while still counting
// the requests it saw.
func TestFaultInjectorWithoutRateOrSequenceInjectsNothing(t *testing.T) {
	got := outcomes(t, 1, 20)
	want := make([]rt.Fault, 20)
	for i := range want {
		want[i] = rt.FaultNone
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	f := mustFaults(t, 1)
	c := f.Wrap(newFake(t))
	_ = c.List(t.Context(), &corev1.ConfigMapList{})
	if f.Matched() != 1 || len(f.Injected()) != 0 {
		t.Errorf("Matched() = %d, Injected() = %v; want 1 and none", f.Matched(), f.Injected())
	}
}

// TestFaultInjectionConcurrentUse: concurrent requests share one stream of
// decisions, so the number of faults over n requests is the same as when
// they are sent one by one (run with -race).
func TestFaultInjectionConcurrentUse(t *testing.T) {
	const goroutines, each = 8, 100
	sequential := outcomes(t, 9, goroutines*each, rt.Rate(0.25))
	wantInjected := 0
	for _, f := range sequential {
		if f != rt.FaultNone {
			wantInjected++
		}
	}

	f := mustFaults(t, 9, rt.Rate(0.25))
	var counter rt.Counter
	c := counter.Wrap(f.Wrap(newFake(t, configMap("ns", "cm"))))
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for range goroutines {
		wg.Go(func() {
			for range each {
				if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "cm"}, &corev1.ConfigMap{}); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
				_ = f.Injected()
			}
		})
	}
	wg.Wait()
	if got := len(f.Injected()); got != wantInjected || failed != wantInjected {
		t.Errorf("injected %d, callers saw %d failures; want %d, as sequentially", got, failed, wantInjected)
	}
	failedRecorded := 0
	for _, r := range counter.Requests() {
		if r.Err != nil {
			failedRecorded++
		}
	}
	if failedRecorded != wantInjected {
		t.Errorf("counter recorded %d failed requests, want %d", failedRecorded, wantInjected)
	}
}

// FuzzNewFaultInjector: any rate and seed either gives a clear error (rate
// outside 0..1) or an injector whose rate-0 and rate-1 edges are exact; it
// never panics.
func FuzzNewFaultInjector(f *testing.F) {
	f.Add(0.0, uint64(0))
	f.Add(1.0, uint64(1))
	f.Add(0.5, uint64(42))
	f.Add(-1e-300, uint64(7))
	f.Add(math.Inf(1), uint64(7))
	f.Add(math.NaN(), uint64(7))
	c := newFake(f, configMap("ns", "cm"))
	f.Fuzz(func(t *testing.T, rate float64, seed uint64) {
		inj, err := rt.NewFaultInjector(seed, rt.Rate(rate))
		valid := rate >= 0 && rate <= 1
		if !valid {
			if !errors.Is(err, rt.ErrInvalidFaultOption) {
				t.Fatalf("rate %v: err = %v, want ErrInvalidFaultOption", rate, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("rate %v: %v", rate, err)
		}
		w := inj.Wrap(c)
		const n = 20
		for range n {
			_ = w.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "cm"}, &corev1.ConfigMap{})
		}
		got := len(inj.Injected())
		if (rate == 0 && got != 0) || (rate == 1 && got != n) || got > n {
			t.Fatalf("rate %v: injected %d of %d", rate, got, n)
		}
	})
}
