package monitor

import "testing"

// Which Host headers the page answers: this machine's addresses in any
// spelling, localhost, the names given; nothing else.
func TestHostCheck(t *testing.T) {
	h := newHostCheck([]string{"Rig-PC.lab", "10.9.8.7:8080"})
	h.add("192.0.2.10") // the address it is bound to
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.2", true},
		{"[::1]:8080", true},
		{"localhost", true},
		{"LOCALHOST:8080", true},
		{"app.localhost:8080", true},
		{"rig-pc.lab", true},
		{"rig-pc.lab.:8080", true},
		{"10.9.8.7", true},
		{"192.0.2.10:8080", true},
		{"[::ffff:192.0.2.10]:8080", true},
		{"attacker.example", false},
		{"attacker.example:8080", false},
		{"rig-pc.lab.attacker.example", false},
		{"localhost.attacker.example", false},
		{"192.0.2.11", false},
		{"", false},
	} {
		t.Run(tt.host, func(t *testing.T) {
			if got := h.allowed(tt.host); got != tt.ok {
				t.Errorf("%v, want %v", got, tt.ok)
			}
		})
	}
}
