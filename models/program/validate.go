package program

import (
	"beamconnect/models"
	"beamconnect/ports"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Validate checks what exec needs beyond the parameters' types: a
// command at all, a deadline inside the model timeout, and (a warning only,
// since the run may happen on another machine) a program that can be found.
func Validate(p models.Params, plan *ports.Plan) []models.Finding {
	var out []models.Finding
	cmd, ok := p["command"]
	if !ok {
		return []models.Finding{{Param: "command", Msg: "missing: exec needs the program to run, e.g. \"command\": [\"python3\", \"model.py\"]"}}
	}
	out = append(out, models.CheckDeadline(p, plan)...)
	if args := models.Argv(cmd); len(args) > 0 {
		prog := args[0]
		if strings.ContainsRune(prog, filepath.Separator) && !filepath.IsAbs(prog) && plan.Source != "" {
			prog = filepath.Join(filepath.Dir(plan.Source), prog)
		}
		if _, err := exec.LookPath(prog); err != nil {
			out = append(out, models.Finding{Param: "command", Warning: true,
				Msg: fmt.Sprintf("%q is not a program found on this machine (%v); run will fail to start it unless it exists where run runs", args[0], err)})
		}
	}
	return out
}

// models.Params are exec's parameters.
var Params = []models.Param{{Name: "command", Kind: models.Command}, {Name: "deadlineMs", Kind: models.Positive}, {Name: "restart", Kind: models.Boolean},
	{Name: "reset", Check: checkReset}}
