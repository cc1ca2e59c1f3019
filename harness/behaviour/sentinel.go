package behaviour

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/operator-flow/operator-flow/harness"
)

// startInOrder starts the operator so that it handles Logger events one
// after the other, in the order they came: stages 02 and 03 always do (02's
// loop, 03's handler); stages with a queue (Stage.Retries, 04 on) take
// --workers, and with one worker they take keys in the order they were
// queued (client-go's workqueue is first in, first out; controller-runtime's
// priority queue too, for keys of equal priority, which events after the
// first sync all have).
func (f *fixture) startInOrder(t *testing.T) *harness.Operator {
	t.Helper()
	if f.stage.Retries {
		return f.start(t, "--workers=1")
	}
	return f.start(t)
}

// sentinels show that an operator started with startInOrder has handled
// every Logger event so far, when what it did with them leaves nothing to
// wait for (it left an object alone). handled creates a new Logger and waits
// for its Deployment: the operator got to the new Logger only after the
// events before it.
type sentinels struct {
	f *fixture
	n int
}

func (s *sentinels) handled(t *testing.T) {
	t.Helper()
	s.n++
	name := fmt.Sprintf("sentinel-%d", s.n)
	s.f.Create(t, loggerGVR, newLogger(name, name, 5, 0))
	s.f.waitDeployment(t, deploymentName(name), func(*appsv1.Deployment) (bool, string) { return true, "" })
}
