package trace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// Tracer runs one trace: it removes the object if it exists, starts
// reading the sources, applies the object with kubectl, and waits until it
// has converged and nothing more happens to it; where the object's kind has
// two versions, it has kubectl read it in the one it is not stored in and
// waits again; on request it deletes it and waits again.
type Tracer struct {
	Stage      Stage
	Object     Object
	Manifest   []byte // what kubectl applies
	Kubectl    string // the kubectl binary
	Kubeconfig string
	Audit      Source
	Record     Source // the operator's recording (APICOUNT_RECORD); nil for none
	Log        Source // the operator's log; nil for none
	Delete     bool
	// Cascade is kubectl delete's --cascade: background (the default),
	// foreground (the object stays until the garbage collector has deleted
	// what it owns) or orphan.
	Cascade string
	// Quiet is how long nothing must happen to the object before a phase
	// counts as over (the operator's last write, its echo, the last pod).
	Quiet time.Duration
	// Progress, when set, hears what the tracer is waiting for.
	Progress func(string)

	client   dynamic.Interface
	offsets  [3]int64
	cacheDir string // kubectl's --cache-dir
}

var gvrs = map[string]schema.GroupVersionResource{
	"loggers":       {Group: "example.com", Version: "v1", Resource: "loggers"},
	"flighttickets": {Group: "flights.com", Version: "v1", Resource: "flighttickets"},
	"deployments":   {Group: "apps", Version: "v1", Resource: "deployments"},
}

func (t *Tracer) say(format string, args ...any) {
	if t.Progress != nil {
		t.Progress(fmt.Sprintf(format, args...))
	}
}

// Run traces the object and returns its timeline.
func (t *Tracer) Run(ctx context.Context) (Timeline, error) {
	if err := t.connect(); err != nil {
		return Timeline{}, err
	}
	// kubectl keeps what discovery said for 6 hours, per server address
	// (k8s.io/cli-runtime's ConfigFlags), so after a CRD has lost a
	// version, "kubectl delete loggers" could be sent to a version the API
	// server serves no more, and after it gained one, to the old preferred
	// version, which then needs a conversion (module A3's Logger: v2 comes
	// and goes with its lab). The trace's kubectl asks afresh.
	dir, err := os.MkdirTemp("", "trace-kubectl-cache-")
	if err != nil {
		return Timeline{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary folder: nothing to report
	t.cacheDir = dir
	if t.Quiet == 0 {
		t.Quiet = 2 * time.Second
	}
	if err := t.mark(); err != nil {
		return Timeline{}, err
	}
	if removed, err := t.remove(ctx, "removing it first, so that its whole life is traced"); err != nil {
		return Timeline{}, err
	} else if removed {
		// The garbage collector may still be removing what it owned.
		if err := t.settle(ctx, time.Now()); err != nil {
			return Timeline{}, err
		}
	}
	if err := t.mark(); err != nil {
		return Timeline{}, err
	}
	start := time.Now()
	t.say("kubectl apply -f - (%s)", t.Object)
	if err := t.kubectl(t.Manifest, "apply", "-n", t.Object.Namespace, "-f", "-"); err != nil {
		return Timeline{}, err
	}
	if err := t.poll(ctx, 60*time.Second, "the object to converge ("+t.convergedMeans()+")", t.converged); err != nil {
		return Timeline{}, err
	}
	if err := t.settle(ctx, start); err != nil {
		return Timeline{}, err
	}
	if t.Stage.Converts(t.Object) {
		if err := t.readOther(ctx, start); err != nil {
			return Timeline{}, err
		}
	}
	if t.Delete {
		cascade := t.Cascade
		if cascade == "" {
			cascade = "background"
		}
		t.say("kubectl delete %s %s --cascade=%s", t.Object.Resource, t.Object.Name, cascade)
		if err := t.kubectl(nil, "delete", "-n", t.Object.Namespace, t.Object.Resource, t.Object.Name, "--wait=false", "--cascade="+cascade); err != nil {
			return Timeline{}, err
		}
		if err := t.poll(ctx, 60*time.Second, "the object and what it owns to be gone", t.gone); err != nil {
			return Timeline{}, err
		}
		if err := t.settle(ctx, start); err != nil {
			return Timeline{}, err
		}
	}
	hops, err := t.collect(start)
	if err != nil {
		return Timeline{}, err
	}
	return Build(t.Stage, t.Object, start, time.Now(), hops...), nil
}

// readOther has kubectl get the object in the version it is not stored in
// (module A3: v1, stored as v2), and waits until that has settled. A GET
// without a resourceVersion, as kubectl's, is served from etcd, not from the
// watch cache (k8s.io/apiserver's CacheDelegator.Get): the API server decodes
// the stored object and converts it, through the webhook, each time.
func (t *Tracer) readOther(ctx context.Context, start time.Time) error {
	gvr := t.gvr(t.Object.Resource)
	res := t.Object.Resource + "." + t.Stage.LoggerOther + "." + gvr.Group
	t.say("kubectl get %s %s (stored in %s, read in %s)", res, t.Object.Name, t.Stage.LoggerStored, t.Stage.LoggerOther)
	if err := t.kubectl(nil, "get", "-n", t.Object.Namespace, res, t.Object.Name); err != nil {
		return err
	}
	return t.settle(ctx, start)
}

// gvr is the resource the trace reads and deletes through: a Logger in the
// version it is stored in, where it has two, so that the trace's reads
// need no conversion (a delete still causes one: the API server's watch
// cache of the other version decodes the deleted object).
func (s Stage) gvr(resource string) schema.GroupVersionResource {
	g := gvrs[resource]
	if resource == "loggers" && s.LoggerStored != "" {
		g.Version = s.LoggerStored
	}
	return g
}

func (t *Tracer) gvr(resource string) schema.GroupVersionResource { return t.Stage.gvr(resource) }

// mark makes the sources' present ends the start of what collect reads.
func (t *Tracer) mark() error {
	for i, s := range t.sources() {
		if s != nil {
			n, err := s.Size()
			if err != nil {
				return err
			}
			t.offsets[i] = n
		}
	}
	return nil
}

func (t *Tracer) sources() [3]Source { return [3]Source{t.Audit, t.Record, t.Log} }

func (t *Tracer) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", t.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = ToolUserAgent // left out of the trace
	t.client, err = dynamic.NewForConfig(cfg)
	return err
}

func (t *Tracer) kubectl(stdin []byte, args ...string) error {
	cmd := exec.Command(t.Kubectl, append([]string{"--kubeconfig", t.Kubeconfig, "--cache-dir", t.cacheDir}, args...)...)
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out.String())
	}
	return nil
}

// poll checks cond every 100 ms until it holds or the timeout passes.
func (t *Tracer) poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	t.say("waiting for %s", what)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, cond)
	if wait.Interrupted(err) {
		return fmt.Errorf("waited %s for %s in vain (is stage %s's operator running? make lab-%s starts it; its log is in .state/logs/)", timeout, what, t.Stage.Dir, t.Stage.ID)
	}
	return err
}

func (t *Tracer) get(ctx context.Context, resource, name string) (*unstructured.Unstructured, error) {
	return t.client.Resource(t.gvr(resource)).Namespace(t.Object.Namespace).Get(ctx, name, metav1.GetOptions{})
}

// remove deletes the object if it exists and waits until it and what it
// owns are gone. It reports whether there was one.
func (t *Tracer) remove(ctx context.Context, why string) (bool, error) {
	_, err := t.get(ctx, t.Object.Resource, t.Object.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	t.say("%s exists: %s", t.Object, why)
	err = t.client.Resource(t.gvr(t.Object.Resource)).Namespace(t.Object.Namespace).Delete(ctx, t.Object.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return true, err
	}
	return true, t.poll(ctx, 60*time.Second, "the object and what it owns to be gone", func(ctx context.Context) (bool, error) {
		if err := t.releaseForeignFinalizers(ctx); err != nil {
			return false, err
		}
		return t.gone(ctx)
	})
}

// releaseForeignFinalizers removes the finalizers of an object that an
// earlier lab's operator left and this stage's operator does not know
// (stage 06's on a ticket, traced again on stage 01 to 05): nobody else
// would ever remove them, and the object could not go. Its seat hold stays
// in stage 06's ledger. Only in the removal before a trace, never in one.
func (t *Tracer) releaseForeignFinalizers(ctx context.Context) error {
	u, err := t.get(ctx, t.Object.Resource, t.Object.Name)
	if err != nil || t.Stage.Number >= 6 || len(u.GetFinalizers()) == 0 || u.GetDeletionTimestamp() == nil {
		return client(err)
	}
	t.say("%s waits for finalizers %v, which no operator of stage %s removes: removing them by hand", t.Object, u.GetFinalizers(), t.Stage.Dir)
	_, err = t.client.Resource(t.gvr(t.Object.Resource)).Namespace(t.Object.Namespace).Patch(ctx, t.Object.Name,
		types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	return client(err)
}

// gone: the object is gone, and so is a Logger's Deployment where an
// operator deletes it (stages 02 to 05) or the garbage collector does (06).
func (t *Tracer) gone(ctx context.Context) (bool, error) {
	if _, err := t.get(ctx, t.Object.Resource, t.Object.Name); !apierrors.IsNotFound(err) {
		return false, client(err)
	}
	if !t.Object.IsLogger() || t.Stage.Number < 2 {
		return true, nil
	}
	_, err := t.get(ctx, "deployments", t.Object.Deployment())
	return apierrors.IsNotFound(err), client(err)
}

// client passes on errors other than NotFound.
func client(err error) error {
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (t *Tracer) convergedMeans() string {
	switch {
	case t.Stage.Number < 2:
		return "stored: stage 01 has no operator"
	case t.Object.Resource == "flighttickets" && t.Stage.Number >= 6:
		return "condition Booked, observed at its generation"
	case t.Object.Resource == "flighttickets":
		return "status.phase Booked"
	case t.Stage.Number >= 6:
		return "condition Available, observed at its generation"
	default:
		return "status.state Available"
	}
}

// converged: the operator has done its work on the object, as
// convergedMeans says.
func (t *Tracer) converged(ctx context.Context) (bool, error) {
	u, err := t.get(ctx, t.Object.Resource, t.Object.Name)
	if err != nil {
		return false, client(err)
	}
	if t.Stage.Number < 2 {
		return true, nil
	}
	if t.Stage.Number >= 6 {
		want := map[string]string{"flighttickets": "Booked", "loggers": "Available"}[t.Object.Resource]
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			og, _ := m["observedGeneration"].(int64)
			if m["type"] == want && m["status"] == "True" && og == u.GetGeneration() {
				return true, nil
			}
		}
		return false, nil
	}
	if t.Object.Resource == "flighttickets" {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Booked", nil
	}
	state, _, _ := unstructured.NestedString(u.Object, "status", "state")
	return state == "Available", nil
}

// settle waits until no hop of the object has been added for Quiet: the
// last write's echo, the last pod's status, a last "in sync".
func (t *Tracer) settle(ctx context.Context, start time.Time) error {
	last, since := -1, time.Now()
	return t.poll(ctx, 30*time.Second, fmt.Sprintf("%s in which nothing more happens to it", t.Quiet), func(context.Context) (bool, error) {
		hops, err := t.collect(start)
		if err != nil {
			return false, err
		}
		n := 0
		for _, h := range hops {
			n += len(h)
		}
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= t.Quiet, nil
	})
}

// collect reads the sources from where the trace started.
func (t *Tracer) collect(start time.Time) ([][]Hop, error) {
	var out [][]Hop
	src := t.sources()
	read := func(i int) ([]byte, error) {
		if src[i] == nil {
			return nil, nil
		}
		return src[i].ReadFrom(t.offsets[i])
	}
	audit, err := read(0)
	if err != nil {
		return nil, err
	}
	rec, err := read(1)
	if err != nil {
		return nil, err
	}
	log, err := read(2)
	if err != nil {
		return nil, err
	}
	events := ParseAudit(audit)
	out = append(out, AuditHops(events, t.Object, t.Record != nil))
	out = append(out, RecordHops(ParseRecord(rec), t.Object, AuditVersions(events, t.Object)))
	handoff := t.Stage.Handoff
	if handoff == "" {
		handoff = Worker
	}
	out = append(out, LogHops(log, t.Object, start, handoff))
	return out, nil
}
