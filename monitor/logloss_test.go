package monitor

import (
	"testing"

	"beamconnect/coupling"
)

// The log output lost to a stuck or vanished stderr shows in /metrics.
func TestMetricsLogLoss(t *testing.T) {
	_, url := loggingServerWith(t, nil, func(o *coupling.Options) { o.LogLoss = func() (uint64, uint64) { return 7, 2 } })
	fams, err := parseMetrics(get(t, url+"/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"beamconnect_log_records_dropped_total": 7, "beamconnect_log_writes_failed_total": 2,
		"beamconnect_live_page_streams": 0, "beamconnect_live_page_connections": 1,
	} {
		if got, ok := fams.value(name, ""); !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
}
