package errors

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Reason returns a short, stable CamelCase word for err, fit for
// metav1.Condition.Reason: "" for nil; the reason given with [WithReason]
// when err carries one; otherwise the most specific cause
// found, even beneath a marker: the API status reason ("Conflict",
// "Invalid", "Forbidden", "NotFound", "TooManyRequests", ...), then a
// network or context cause ("ConnectionRefused", "ConnectionReset",
// "Timeout", "DeadlineExceeded", "Canceled", "UnexpectedEOF"); failing that
// the marker's word ("PermanentError", "TransientError", "RetryAfter"), and
// failing that the class's ("PermanentError" for a reconcile.TerminalError,
// "TransientError" for an unknown error). For a joined error it is the
// reason of the first branch with the deciding class.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	budget := maxNodes
	if r, ok := explicitReason(err, &budget); ok {
		return r
	}
	budget = maxNodes
	v := walk(err, &budget, true)
	if v.reason != "" {
		return v.reason
	}
	if v.fallback != "" {
		return v.fallback
	}
	switch v.class {
	case ClassPermanent:
		return "PermanentError"
	case ClassConflict:
		return "Conflict"
	case ClassThrottled:
		return "Throttled"
	case ClassCanceled:
		return "Canceled"
	}
	return "TransientError"
}

// MessageLimit is the longest [Message] returns, in bytes. The API server
// accepts condition messages up to 32768 bytes; 1024 keeps `kubectl get`,
// `kubectl describe` and events readable and status objects small, and is
// ample for the first lines of any error.
const MessageLimit = 1024

// volatile lists the parts of error texts that change between two attempts
// of the same failing operation, with what replaces them. Order matters:
// timestamps before bare numbers, UIDs before generic IDs.
// Each pattern is tried only when its hint, a substring every match
// contains, occurs in the lowercased text: most messages skip most patterns.
var volatile = []struct {
	hint string
	re   *regexp.Regexp
	with string
}{
	// RFC 3339 / Go time.Time.String timestamps, with optional fraction and zone.
	{"-", regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|\s?[+-]\d{2}:?\d{2})?(?:\s[A-Z]{2,5}\b)?`), "<time>"},
	// Go monotonic clock readings from time.Time.String.
	{"m=", regexp.MustCompile(`\bm=[+-]\d+\.\d+`), "m=<mono>"},
	// UUIDs: object UIDs, request IDs, trace IDs.
	{"-", regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uid>"},
	// resourceVersion=123, "resourceVersion":"123", resource version: 123.
	{"version", regexp.MustCompile(`(?i)(resource[ _-]?version"?\s*[:=]?\s*"?)\d+`), "${1}<rv>"},
	// request-id: abc123, traceID=..., X-Request-Id: ..., correlation id ...
	{"id", regexp.MustCompile(`(?i)((?:x-)?(?:request|trace|span|correlation|reconcile)[ _-]?id\b"?\s*[:=]?\s*"?)[A-Za-z0-9][A-Za-z0-9._:/+-]*`), "${1}<id>"},
	// The ephemeral local port of a connection ("10.0.0.1:54321->10.0.0.2:443").
	{"->", regexp.MustCompile(`(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]):\d+->`), "${1}:<port>->"},
	// Memory addresses.
	{"0x", regexp.MustCompile(`\b0x[0-9a-fA-F]{6,}\b`), "<addr>"},
}

// Message returns err's text in a form that is the same on every retry of
// the same failure, for condition messages and events: timestamps, UIDs and
// other UUIDs, resourceVersions, request and trace IDs, ephemeral local ports
// and memory addresses are replaced by placeholders ("<time>", "<uid>",
// "<rv>", "<id>", "<port>", "<addr>"); the lines of a joined error are joined
// with "; "; runs of white space become one space; invalid UTF-8 is replaced;
// and the result is cut at a rune boundary to at most [MessageLimit]
// bytes, ending in "..." when cut. Message(nil) is "".
func Message(err error) string {
	if err == nil {
		return ""
	}
	// fmt, unlike err.Error(), survives a nil receiver or a panicking Error.
	s := strings.ToValidUTF8(fmt.Sprint(err), "\uFFFD")
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")
	lower := strings.ToLower(s)
	for _, v := range volatile {
		if strings.Contains(lower, v.hint) {
			s = v.re.ReplaceAllString(s, v.with)
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	return truncate(s, MessageLimit)
}

// truncate cuts s to at most n bytes at a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
