package config

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Loop is one controlled quantity of beamng.quality: a measured field and
// its setpoint, by name as the config wrote them (Compile resolves
// them against the fields, models against the model's parameters).
type Loop struct {
	Ptr      string // its JSON Pointer, for findings: /beamng/quality or /beamng/quality/1
	Name     string // "" for the measured field's name
	Measured string
	// Setpoint is the number given, or SetpointName the field or model
	// parameter named ("" for a number).
	Setpoint     float64
	SetpointName string
	Band         float64 // 0: the default rule
}

type rawLoop struct {
	Name     *string  `json:"name"`
	Measured string   `json:"measured"`
	Setpoint any      `json:"setpoint"`
	Band     *float64 `json:"band"`
}

// quality reads beamng.quality: one loop, or an array of them. The schema
// reported what does not fit; what it let through is read here.
func (p *parser) quality(cfg *Config, bn *rawBeamNG) {
	cfg.FailOnControl = slices.Contains(bn.FailOn, "control") // the schema takes no other value
	if cfg.FailOnControl && (len(bn.Quality) == 0 || string(bn.Quality) == "null") && (cfg.Model == "exec" || cfg.Model == "fmu" || cfg.Model == "hold") {
		p.at(Warning, "/beamng/failOn", "\"control\" with no beamng.quality: model %s judges no loop of its own, so every run ends without a control verdict and exits 4; name the loop in beamng.quality", cfg.Model)
	}
	if len(bn.Quality) == 0 || string(bn.Quality) == "null" {
		return
	}
	var one rawLoop
	var many []rawLoop
	ptr := "/beamng/quality"
	if json.Unmarshal(bn.Quality, &many) != nil {
		if json.Unmarshal(bn.Quality, &one) != nil {
			return // the schema said what is wrong with it
		}
		many = []rawLoop{one}
	} else {
		ptr += "/"
	}
	seen := map[string]string{}
	for i, r := range many {
		lp := Loop{Ptr: ptr, Measured: r.Measured}
		if ptr != "/beamng/quality" {
			lp.Ptr = fmt.Sprintf("%s%d", ptr, i)
		}
		if r.Name != nil {
			lp.Name = *r.Name
		}
		switch v := r.Setpoint.(type) {
		case float64:
			lp.Setpoint = v
			if v == 0 && r.Band == nil {
				p.at(Warning, lp.Ptr+"/setpoint", "a setpoint of 0 and no band: the default band, 2 %% of the step, may be too narrow to settle in; give \"band\" in the measured value's unit")
			}
		case string:
			lp.SetpointName = v
		default:
			continue // not a number or a name: the schema said so
		}
		if r.Band != nil {
			lp.Band = *r.Band
		}
		name := lp.Name
		if name == "" {
			name = lp.Measured
		}
		if first, dup := seen[name]; dup {
			p.at(Error, lp.Ptr, "a second loop named %q (the first is %s): expected each loop once, or a \"name\" to tell them apart", name, first)
			continue
		}
		pos, _ := p.ix.value(lp.Ptr)
		seen[name] = "at " + pos.String()
		cfg.Quality = append(cfg.Quality, lp)
	}
}
