package behaviour

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// sentinels show that the operator has handled every Logger event so far,
// when what it did with them leaves nothing to wait for (it left an object
// alone). handled creates a new Logger and waits for its Deployment: the
// operator got to the new Logger only after the events before it.
//
// That holds for an operator that handles Logger events one after the other,
// in the order they came, which startInOrder makes sure of: stages 02 and 03
// always do (02's loop, 03's handler); stages with a queue (Stage.Retries, 04
// on) take --workers, and one worker takes keys in the order they were
// queued. client-go's workqueue is first in, first out. controller-runtime's
// priority queue is for keys of equal priority only: an object the first LIST
// brings is queued at low priority, behind every later event. So startInOrder
// returns only once the first sentinel is handled: that LIST is done, and
// every Logger the check creates after it arrives as an event.
type sentinels struct {
	f *fixture
	n int
}

func (s *sentinels) startInOrder(t *testing.T) {
	t.Helper()
	if s.f.stage.Retries {
		s.f.start(t, "--workers=1")
	} else {
		s.f.start(t)
	}
	s.handled(t)
}

func (s *sentinels) handled(t *testing.T) {
	t.Helper()
	s.n++
	name := fmt.Sprintf("sentinel-%d", s.n)
	s.f.Create(t, loggerGVR, newLogger(name, name, 5, 0))
	s.f.waitDeployment(t, deploymentName(name), exists)
}

// exists accepts any Deployment, for waitDeployment: the wait is for the
// Deployment to be there.
func exists(*appsv1.Deployment) (bool, string) { return true, "" }
