package plan_test

import (
	"slices"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// TestTargetNamesAgree: the spec's per-target section keys are the plan's
// targets, in order (spec cannot import plan, so the names stand twice).
func TestTargetNamesAgree(t *testing.T) {
	var names []string
	for _, tg := range plan.Targets {
		names = append(names, tg.Name)
		if got, err := plan.TargetNamed(tg.Name); err != nil || got != tg {
			t.Errorf("TargetNamed(%q) = %v, %v", tg.Name, got.Name, err)
		}
	}
	if !slices.Equal(names, spec.TargetNames) {
		t.Errorf("plan.Targets %v, spec.TargetNames %v", names, spec.TargetNames)
	}
	if _, err := plan.TargetNamed("sm70"); err == nil {
		t.Error("TargetNamed(sm70) found a target")
	}
}
