package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// waterfall prints the spans of one trace as a text waterfall: each span
// on a line, indented under its parent, with when it started (from the
// trace's first span), how long it took, a bar on a time scale, and what
// it carries that a reader wants (the decision, the wait, the status code,
// the links).
func waterfall(w io.Writer, spans tracetest.SpanStubs, id trace.TraceID) {
	var in []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanContext.TraceID() == id {
			in = append(in, s)
		}
	}
	if len(in) == 0 {
		fmt.Fprintln(w, "  (no spans)")
		return
	}
	slices.SortStableFunc(in, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
	start, end := in[0].StartTime, in[0].EndTime
	byID := map[trace.SpanID]bool{}
	for _, s := range in {
		byID[s.SpanContext.SpanID()] = true
		if s.EndTime.After(end) {
			end = s.EndTime
		}
	}
	children := map[trace.SpanID][]tracetest.SpanStub{}
	var roots []tracetest.SpanStub
	for _, s := range in {
		if p := s.Parent.SpanID(); s.Parent.IsValid() && byID[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	total := end.Sub(start)
	const width = 40
	fmt.Fprintf(w, "  trace %s: %d spans over %s\n", id, len(in), total.Round(time.Millisecond))
	fmt.Fprintf(w, "  %9s %9s  %-*s  %s\n", "start", "took", width, "", "span")
	var walk func(s tracetest.SpanStub, depth int)
	walk = func(s tracetest.SpanStub, depth int) {
		from, took := s.StartTime.Sub(start), s.EndTime.Sub(s.StartTime)
		bar := []byte(strings.Repeat(" ", width))
		a, b := scale(from, total, width), scale(from+took, total, width)
		for i := a; i <= b && i < width; i++ {
			bar[i] = '='
		}
		fmt.Fprintf(w, "  %9s %9s  %s  %s%s%s\n", ms(from), ms(took), bar, strings.Repeat("  ", depth), s.Name, details(s))
		for _, c := range children[s.SpanContext.SpanID()] {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
}

func scale(d, total time.Duration, width int) int {
	if total <= 0 {
		return 0
	}
	return int(int64(d) * int64(width-1) / int64(total))
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
}

// details are the attributes of a span worth a glance.
func details(s tracetest.SpanStub) string {
	a := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		a[kv.Key] = kv.Value.Emit()
	}
	var out []string
	for _, k := range []attribute.Key{"reconcilekit.operation", "reconcilekit.drift.write", "http.response.status_code",
		"reconcilekit.decision.class", "reconcilekit.decision.reason", "reconcilekit.decision.requeue_after",
		"reconcilekit.decision.done", "reconcilekit.wait.planned", "reconcilekit.wait.reason", "reconcilekit.freshness.outcome"} {
		if v, ok := a[k]; ok && v != "" {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(string(k), "reconcilekit."), "http.response.")+"="+v)
		}
	}
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			if kv.Key == "reconcilekit.link.object" {
				out = append(out, "linked to "+kv.Value.Emit()+"'s change")
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "  [" + strings.Join(out, " ") + "]"
}
