package scene

import (
	"context"
	"net/netip"
	"testing"

	"beamconnect/beamng/emulator"
	"beamconnect/config"
	"beamconnect/coupling"
	"beamconnect/models"
)

// Three vehicles of one scene, each sending on another step of the period
// (controllers loaded in different frames), all answered in lockstep: every
// message each vehicle's BeamNG sent was answered and accepted, and each
// has its own summary. (The config's ports are not bound: the session binds
// free loopback ones.)
func TestSceneOfThreeVehicles(t *testing.T) {
	cfg, err := config.Parse("three.json", []byte(`{"version": 2,
	  "outputs": [
	    {"remoteObject": "a", "updatePeriodMs": 5, "ports": [[{"propertyName": "groundspeed"}]]},
	    {"remoteObject": "b", "updatePeriodMs": 5, "ports": [[{"propertyName": "groundspeed"}]]},
	    {"remoteObject": "c", "updatePeriodMs": 5, "ports": [[{"propertyName": "groundspeed"}]]}],
	  "inputs": [
	    {"remoteObject": "a", "ports": [[{"propertyName": "throttle"}]]},
	    {"remoteObject": "b", "ports": [[{"propertyName": "throttle"}]]},
	    {"remoteObject": "c", "ports": [[{"propertyName": "throttle"}]]}],
	  "beamng": {"vehicles": {"a": {"localPort": 41000, "remotePort": 41001}, "b": {"localPort": 41002, "remotePort": 41003}, "c": {"localPort": 41004, "remotePort": 41005}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := config.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := coupling.New(coupling.Options{Plan: plan, Model: models.Hold{}, Local: netip.MustParseAddrPort("127.0.0.1:0")})
	if err != nil {
		t.Fatal(err)
	}
	var starts []int64
	scene, err := Start(sess, plan, Options{FreeRunning: true, Tune: func(v int, c *emulator.Config) {
		c.Steps = 2000
		starts = append(starts, c.StartStep)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer scene.Close()
	if scene.Summary(0) != nil {
		t.Error("a summary before the run")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sess.Run(ctx); close(done) }()
	scene.Run(ctx)
	cancel()
	<-done
	if len(starts) != 3 || starts[0] == starts[1] || starts[1] == starts[2] || starts[0] == starts[2] {
		t.Errorf("the vehicles send on steps %v of the period: want three different ones", starts)
	}
	for v := range 3 {
		s := scene.Summary(v)
		if s == nil || s.Sent < 50 || s.Accepted < s.Sent-1 || s.Stalls != 0 {
			t.Errorf("vehicle %d: %+v", v, s)
		}
	}
	if scene.Summary(3) != nil {
		t.Error("a summary of a fourth vehicle")
	}
}
