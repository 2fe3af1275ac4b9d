package yardstick

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(*options) bool
		wantErr string
	}{
		{name: "the At operator's defaults", args: nil, check: func(o *options) bool {
			return o.workers == 1 && o.leaderElect && o.leaseDuration == 15*time.Second && o.renewDeadline == 10*time.Second &&
				o.retryPeriod == 2*time.Second && o.pprofAddr == "0" && o.metricsAddr == "127.0.0.1:8080"
		}},
		{name: "workers and pprof", args: []string{"--workers", "4", "--pprof-bind-address", "127.0.0.1:6060", "--leader-election-namespace", "x"},
			check: func(o *options) bool {
				return o.workers == 4 && o.pprofAddr == "127.0.0.1:6060" && o.leaderElectionNamespace == "x"
			}},
		{name: "no workers", args: []string{"--workers", "0"}, wantErr: "--workers must be at least 1"},
		{name: "an argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "an unknown flag", args: []string{"--sync-period", "1m"}, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Command{Name: "classic", DefaultWorkers: 1}.parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o) {
				t.Errorf("options = %+v", o)
			}
		})
	}
}
