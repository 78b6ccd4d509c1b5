package coupling

import (
	"math"

	"beamconnect/models"
	"beamconnect/ports"
	"beamconnect/recording"
)

// variables are the model's own values the recording and the scope show
// (models.Sampler): the list the layout was made for, and each message's
// values. Under the stage's lock.
type variables struct {
	sampler models.Sampler // nil: the model has none
	late    models.LateSampler
	list    []models.Variable
	values  []float64 // one per variable, as Sample writes them
	sampled []int     // the variables with columns of their own (recording.Layout.Sampled)
}

// useVariables takes the model's variables as they are now, for plan.
// Not on the message path: it allocates.
func (st *stage) useVariables(plan *ports.Plan) {
	v := &st.vars
	if v.sampler == nil {
		return
	}
	v.list = v.sampler.Variables()
	v.values = make([]float64, len(v.list))
	for i := range v.values {
		v.values[i] = math.NaN()
	}
	v.sampled = recording.LayoutOf(plan, v.list).Sampled
	st.modelVals = make([]float64, len(v.sampled))
	st.modelGroup = [][]float64{st.modelVals}
}

// sample reads the model's variables after a message's step into
// modelVals. When the model's variables changed, the recording and the
// scope are laid out again first (allocating, once per change). Under the
// stage's lock; otherwise it allocates nothing.
func (st *stage) sample() {
	v := &st.vars
	if v.sampler == nil {
		return
	}
	if list := v.sampler.Variables(); !models.SameVariables(list, v.list) {
		st.useVariables(st.plan)
		if st.onLayout != nil {
			st.onLayout(st.plan, v.list)
		}
	}
	v.sampler.Sample(v.values)
	for k, i := range v.sampled {
		st.modelVals[k] = v.values[i]
	}
}

// pending says the model has not named its variables yet.
func (v *variables) pending() bool { return v.late != nil && v.late.VariablesPending() }
