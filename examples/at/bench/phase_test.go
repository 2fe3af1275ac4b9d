package bench_test

import (
	"testing"
	"time"
)

// TestAlignedStartStartsEveryRunAtTheSamePointOfASecond: wherever in a
// second measure is ready to create its Ats, it starts at creationPhase
// past a whole second, within the next second, so that the API server's
// creationTimestamps (whole seconds) split the Ats of every run alike.
func TestAlignedStartStartsEveryRunAtTheSamePointOfASecond(t *testing.T) {
	second := time.Date(2026, 11, 29, 4, 30, 17, 0, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{"on a whole second", second, second.Add(creationPhase)},
		{"just before the phase", second.Add(creationPhase - time.Nanosecond), second.Add(creationPhase)},
		{"on the phase", second.Add(creationPhase), second.Add(creationPhase)},
		{"just after the phase", second.Add(creationPhase + time.Nanosecond), second.Add(time.Second + creationPhase)},
		{"late in the second", second.Add(999 * time.Millisecond), second.Add(time.Second + creationPhase)},
		{"in another zone", second.Add(100 * time.Millisecond).In(time.FixedZone("UTC+5:30", 5*3600+1800)), second.Add(creationPhase)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := alignedStart(tc.now)
			if !got.Equal(tc.want) {
				t.Errorf("alignedStart(%s) = %s, want %s", tc.now.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), tc.want.Format(time.RFC3339Nano))
			}
			if got.Before(tc.now) || got.Sub(tc.now) >= time.Second {
				t.Errorf("alignedStart(%s) = %s: not within the second after", tc.now.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
			}
			if frac := got.Sub(got.Truncate(time.Second)); frac != creationPhase {
				t.Errorf("alignedStart(%s) is %s past a whole second, want %s", tc.now.Format(time.RFC3339Nano), frac, creationPhase)
			}
		})
	}
}
