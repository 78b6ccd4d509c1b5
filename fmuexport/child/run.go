package child

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"beamconnect/coupling"
	"beamconnect/fmuexport"
	"beamconnect/ports"
)

// run is one coupling: from initialization to termination (or a reset).
type run struct {
	sess     *coupling.Session
	plan     *ports.Plan
	bridge   *bridge
	cancel   context.CancelFunc
	done     chan error // Run's end
	closeRec func()
	record   string
	connect  time.Duration // 0: wait for ever
	silence  time.Duration // 0: wait for ever
	asked    time.Time     // when the step in progress was asked for
}

// isString says whether a value reference is a parameter or an input,
// and whether it carries text.
func (s *server) isString(vr uint32) (text, ok bool) {
	if int(vr) >= len(s.iface.Vars) {
		return false, false
	}
	if c := s.iface.Vars[vr].Causality; c != fmuexport.Input && c != fmuexport.Parameter {
		return false, false
	}
	return s.iface.Vars[vr].Type == fmuexport.String, true
}

// seconds reads a timeout parameter.
func seconds(name string, v float64) (time.Duration, error) {
	if v < 0 || v != v || v > 1e6 {
		return 0, fmt.Errorf("parameter %s %v: expected seconds from 0 (for ever) to 1e6", name, v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// initialize starts the coupling with the master's parameters and waits
// for BeamNG's first message: its data are the outputs at the FMU's start.
func (s *server) initialize(body []byte) []byte {
	switch {
	case s.failed:
		return s.fail("the FMU failed before: reset or free it")
	case s.current() != nil:
		return s.fail("the FMU is initialized already")
	}
	q, err := decodeInit(body, s.isString)
	if err != nil {
		return s.fail("%v", err)
	}
	exp, err := newExperiment(q.Start, q.StopDefined, q.Stop)
	if err != nil {
		return s.failFor(err)
	}
	plan := *s.plan
	plan.Vehicles = slices.Clone(plan.Vehicles)
	type address struct {
		ip   [2]string  // local, remote
		port [2]float64 // local, remote
		name [4]string
	}
	addrs := make([]address, len(plan.Vehicles))
	r := &run{plan: &plan, connect: fmuexport.DefaultConnectTimeout * time.Second, silence: fmuexport.DefaultSilenceTimeout * time.Second}
	for i, v := range plan.Vehicles {
		addrs[i] = address{ip: [2]string{v.Local.Addr().String(), v.Remote.Addr().String()}, port: [2]float64{float64(v.Local.Port()), float64(v.Remote.Port())}}
	}
	for _, val := range q.Values {
		v := &s.iface.Vars[val.VR]
		a := &addrs[v.Vehicle]
		switch {
		case v.Causality == fmuexport.Input:
			s.values[slices.Index(s.ins, int(val.VR))] = val.Num
		case v.Param == fmuexport.LocalIP:
			a.ip[0], a.name[0] = val.Text, v.Name
		case v.Param == fmuexport.RemoteIP:
			a.ip[1], a.name[1] = val.Text, v.Name
		case v.Param == fmuexport.LocalPort:
			a.port[0], a.name[2] = val.Num, v.Name
		case v.Param == fmuexport.RemotePort:
			a.port[1], a.name[3] = val.Num, v.Name
		case v.Param == fmuexport.RecordFile:
			r.record = strings.TrimSpace(val.Text)
		case v.Param == fmuexport.ConnectTimeout:
			r.connect, err = seconds(v.Name, val.Num)
		case v.Param == fmuexport.SilenceTimeout:
			r.silence, err = seconds(v.Name, val.Num)
		case v.Param == fmuexport.ProcessTimeout:
			// The shim's, which it reads itself: checked here.
			if _, err = seconds(v.Name, val.Num); err == nil && val.Num > 0 && val.Num < 1 {
				err = fmt.Errorf("parameter %s %v: expected 0 (for ever) or at least 1 s: the coupling's process beats every %v", v.Name, val.Num, beatEvery)
			}
		}
		if err != nil {
			return s.failFor(err)
		}
	}
	for i, a := range addrs {
		local, err := addr(a.ip[0], a.port[0], a.name[0], a.name[2])
		if err != nil {
			return s.failFor(err)
		}
		remote, err := addr(a.ip[1], a.port[1], a.name[1], a.name[3])
		if err == nil && remote.Port() == 0 {
			err = fmt.Errorf("parameter %s 0: BeamNG's port is a port from 1 to 65535", a.name[3])
		}
		if err != nil {
			return s.failFor(err)
		}
		plan.Vehicles[i].Local, plan.Vehicles[i].Remote = local, remote
	}
	var rec *coupling.Recorder
	r.closeRec = func() {}
	if r.record != "" {
		if rec, r.closeRec, err = openRecording(r.record, &plan, s.log); err != nil {
			return s.failFor(err)
		}
	}
	r.bridge = newBridge(plan.Period, s.elements(s.outs), s.elements(s.ins), s.log)
	// BeamNG may have run on since a reset: the coupling goes on where the
	// run before let go, its socket and reply ids, rather than start again
	// (coupling.Handover); and it leaves them so for the next reset.
	r.sess, err = coupling.New(coupling.Options{Plan: &plan, Model: r.bridge, ModelName: "the master", Log: s.log, Record: rec, Listen: s.listen,
		HandOver: true, Resume: s.handover})
	if err == nil {
		s.handover = nil // the session's now
		err = r.sess.Bind()
	}
	if err != nil {
		if r.sess != nil {
			r.sess.Close() // the vehicles that did bind
		}
		if rec != nil {
			rec.Close()
		}
		r.closeRec()
		return s.failFor(fmt.Errorf("the coupling cannot start: %w", err))
	}
	var ctx context.Context
	ctx, r.cancel = runContext()
	r.done = make(chan error, 1)
	go func() { r.done <- r.sess.Run(ctx) }()
	s.mu.Lock()
	s.run = r
	s.mu.Unlock()
	s.exp, s.n = exp, 0
	s.startLines(r)
	var deadline time.Time
	if r.connect > 0 {
		deadline = time.Now().Add(r.connect)
	}
	s.op = func(wait time.Duration) (bool, []byte) {
		if !deadline.IsZero() {
			wait = min(wait, max(time.Until(deadline), 0))
		}
		defer s.timer.Stop()
		select {
		case <-r.bridge.ended:
			return true, s.answer(statusOK, s.outputs(r.bridge))
		case err := <-r.done:
			return true, s.failFor(fmt.Errorf("the coupling ended before BeamNG's first message: %v", err))
		case <-s.gone:
			return true, s.failFor(errors.New("the master's process ended"))
		case <-s.wait(wait):
		}
		if err := mismatch(r.sess); err != nil {
			return true, s.failFor(err)
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return true, s.failFor(fmt.Errorf("BeamNG sent no message in %v (parameter connectTimeout): start BeamNG's coupling as logged above, once the FMU waits for it; BeamNG started first loses its first message and waits 2 s", r.connect))
		}
		return false, nil
	}
	return s.progress()
}

// mismatch is a fatal mismatch the coupling diagnosed before BeamNG's
// first message could be coupled: datagrams from BeamNG of a length this
// config's protocol does not send (a Gen 2 BeamNG against a Gen 1 FMU, or
// another CSV), or messages that lack fields the FMU reads (a Gen 1
// BeamNG against a Gen 2 FMU). No message of that BeamNG will ever
// couple: initialization fails at once, saying why, rather than wait
// for connectTimeout.
func mismatch(sess *coupling.Session) error {
	for _, vd := range sess.Diagnoses(time.Now()) {
		if vd.Kind != "size" && vd.Kind != "short" {
			continue
		}
		who := ""
		if len(sess.Links()) > 1 {
			who = fmt.Sprintf(" (vehicle %q)", vd.Vehicle)
		}
		return fmt.Errorf("BeamNG%s speaks another protocol than the FMU's config: %s; no message of it can be coupled: fix the config and export the FMU again (initialization fails now, not after connectTimeout)", who, vd.Line())
	}
	return nil
}

// startLines say where the coupling waits and how to start BeamNG's side.
func (s *server) startLines(r *run) {
	shown := *r.plan
	shown.Vehicles = slices.Clone(shown.Vehicles)
	for i, l := range r.sess.Links() {
		shown.Vehicles[i].Local = l.LocalAddr() // a free port (localPort 0) is known once bound
	}
	for i, v := range shown.Vehicles {
		who := ""
		if len(shown.Vehicles) > 1 {
			who = fmt.Sprintf(" (vehicle %q)", v.Name)
		}
		s.log.Info("waiting for BeamNG's first message"+who, "bound", v.Local, "beamng", v.Remote,
			"start_beamng_with", shown.StartCommand(i))
	}
	if r.record != "" {
		s.log.Info("recording every BeamNG message", "file", r.record)
	}
}

// elements are the port elements of the variables vrs.
func (s *server) elements(vrs []int) []ports.Element {
	out := make([]ports.Element, len(vrs))
	for i, vr := range vrs {
		out[i] = s.iface.Vars[vr].Elem
	}
	return out
}

// failFor fails the call for good: the run (if any) ends, its summary
// said, and no more steps are taken.
func (s *server) failFor(err error) []byte {
	s.failed = true
	s.logs.say(statusError, "%v", err)
	if r := s.current(); r != nil {
		r.bridge.lose(err) // any message BeamNG still sends gets neutral controls
	}
	return s.answer(statusError, nil)
}

func (s *server) current() *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run
}

// doStep couples BeamNG's messages of [t, t+h).
func (s *server) doStep(body []byte) []byte {
	r := s.current()
	switch {
	case s.failed:
		return s.fail("the FMU failed before: it takes no more steps (reset or free it)")
	case r == nil:
		return s.fail("a step before initialization")
	}
	if err := decodeStep(body, len(s.ins), &s.step); err != nil {
		return s.fail("%v", err)
	}
	p := r.plan.Period
	at := s.exp.time(s.n, p)
	sp, err := s.exp.span(s.step.T, s.step.H, s.n, p)
	if err != nil {
		return s.failFor(err)
	}
	copy(s.values, s.step.Inputs)
	end := sp.end
	r.asked = time.Now()
	select {
	case r.bridge.orders <- order{end: end, tail: sp.tail, inputs: s.values}:
	case err := <-r.done:
		return s.failFor(fmt.Errorf("the coupling ended: %v", err))
	case <-s.gone:
		return s.failFor(errors.New("the master's process ended"))
	}
	s.op = func(wait time.Duration) (bool, []byte) {
		defer s.timer.Stop()
		select {
		case <-r.bridge.ended:
			if sp.tail {
				s.log.Info(tailNote(at, s.exp.stop, s.n, end, s.exp.start, p))
				s.exp.atStop = true
			}
			s.n = end
			return true, s.answer(statusOK, s.outputs(r.bridge))
		case err := <-r.done:
			return true, s.failFor(fmt.Errorf("the coupling ended: %v", err))
		case <-s.gone:
			return true, s.failFor(errors.New("the master's process ended"))
		case <-s.wait(wait):
		}
		last := time.Unix(0, r.bridge.arrived.Load())
		if r.asked.After(last) {
			last = r.asked
		}
		if r.silence > 0 && time.Since(last) > r.silence {
			return true, s.failFor(s.lost(r, at, end))
		}
		return false, nil
	}
	return s.progress()
}

// lost says BeamNG is lost in the middle of a step.
func (s *server) lost(r *run, from float64, end int64) error {
	p := r.plan.Period
	var silent []string
	if len(r.plan.Vehicles) > 1 {
		for _, l := range r.sess.Links() {
			if l.Status() != ports.Connected {
				silent = append(silent, strconv.Quote(l.Name()))
			}
		}
	}
	who := "BeamNG"
	if len(silent) > 0 {
		who = "BeamNG (vehicle " + strings.Join(silent, ", ") + ")"
	}
	return fmt.Errorf("BeamNG lost: %s sent no message for %v (parameter silenceTimeout) while the step from t = %s s waited for its message of %s s: its coupling stopped, it paused, or it is gone. The step fails; from now on BeamNG gets neutral controls (pedals released, wheel torques 0), never the master's last inputs",
		who, r.silence, sec(from), sec(s.exp.start+float64(end)*p))
}

// terminate ends the coupling: BeamNG gets neutral controls, the
// recording is closed, and the run's summary is said. Warning when the
// run was not healthy, as `beamconnect run` exits 1.
func (s *server) terminate() []byte {
	why := fmt.Errorf("the master ended the simulation at t = %s s", sec(s.exp.time(s.n, s.planPeriod())))
	var healthy bool
	s.beating(func() { healthy = s.endRun(why, false) })
	if !healthy {
		return s.answer(statusWarning, nil)
	}
	return s.answer(statusOK, nil)
}

func (s *server) planPeriod() float64 {
	if s.plan == nil {
		return 0
	}
	return s.plan.Period
}

// endRun stops the run in progress, if any, and says its summary; it
// reports whether the run was healthy. BeamNG gets neutral controls; with
// again (a reset: the FMU may be initialized again while BeamNG runs on)
// the run's sockets stay bound, its hold on BeamNG kept for the next run,
// otherwise they are released.
func (s *server) endRun(why error, again bool) bool {
	s.mu.Lock()
	r := s.run
	s.run = nil
	s.mu.Unlock()
	s.op = nil
	if r == nil {
		if !again {
			s.release()
		}
		return true
	}
	r.bridge.finish(why)
	r.cancel()
	err := <-r.done
	s.release()
	s.handover = r.sess.Handovers()
	if !again {
		s.release()
	}
	r.closeRec()
	v := r.sess.Values()
	var simS float64
	for _, l := range r.sess.Links() {
		simS = max(simS, l.SimTime())
	}
	s.log.Info("the coupling ended", "why", why.Error(), "messages", v[coupling.Messages], "replies", v[coupling.Replies],
		"beamng_time_s", fmt.Sprintf("%.3f", simS))
	if r.record != "" {
		s.log.Info("recorded", "file", r.record, "rows", v[coupling.RecordRows], "lost", v[coupling.RecordLost])
	}
	for _, n := range r.sess.Notes() {
		s.log.Info(n)
	}
	faults := r.sess.Faults()
	if err != nil {
		faults = append(faults, err.Error())
	}
	for _, f := range faults {
		s.log.Warn("the run was not healthy: " + f)
	}
	if len(faults) == 0 {
		s.log.Info("the run was healthy: BeamNG coupled in lockstep all along")
	}
	return len(faults) == 0
}

// release closes the sockets of a handover no run took.
func (s *server) release() {
	for _, h := range s.handover {
		h.Close()
	}
	s.handover = nil
}

// sec writes seconds as they read best.
func sec(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
