package controller

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
	flightsv1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/flights/v1"
)

// The fuzz tests feed the pure functions every Logger and FlightTicket the
// CRD schema can let through (and more), and check that the output is always
// something the API server would accept and that means what the spec says.
// `go test` runs the seeds below; `go test -fuzz=FuzzDesiredDeployment`
// explores further; `make fuzz` runs a short pass of each (make test includes it).

// FuzzDesiredDeployment: any valid Logger gives a valid Deployment that
// carries spec.name only as data (never in the shell script), and that a
// second look finds in sync.
func FuzzDesiredDeployment(f *testing.F) {
	f.Add("heartbeat", "heartbeat", int32(5000), int32(2), true)
	f.Add("a", "$(rm -rf /); echo pwned", int32(100), int32(0), true)
	f.Add(strings.Repeat("x", 56), `"quoted" 'and' \back\slashed`, int32(3600000), int32(10), false)
	f.Add("audit", "ünïcödé ✈", int32(1500), int32(1), false)
	f.Fuzz(func(t *testing.T, name, printed string, millis, replicas int32, setReplicas bool) {
		// Only what the CRD admits: the schema rejects the rest at the door.
		if len(validation.IsDNS1123Subdomain(name)) > 0 || len(name) > 56 ||
			printed == "" || len(printed) > 64 || !utf8.ValidString(printed) ||
			millis < 100 || millis > 3600000 || replicas < 0 || replicas > 10 {
			t.Skip()
		}
		l := &examplev2.Logger{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec:       examplev2.LoggerSpec{Name: printed, Interval: strconv.Itoa(int(millis)) + "ms"},
		}
		wantReplicas := int32(1)
		if setReplicas {
			l.Spec.Replicas, wantReplicas = &replicas, replicas
		}
		d := desiredDeployment(l.Namespace, l.Name, l.Spec, "busybox:1.37")

		if msgs := validation.IsDNS1123Subdomain(d.Name); len(msgs) > 0 || d.Name != "logger-"+name {
			t.Fatalf("Deployment name %q: %v", d.Name, msgs)
		}
		for k, v := range d.Spec.Template.Labels {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				t.Fatalf("pod label %s=%q is not a valid label value: %v", k, v, msgs)
			}
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Fatalf("the selector %v does not select the pod template's labels %v (%v)", d.Spec.Selector, d.Spec.Template.Labels, err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != wantReplicas {
			t.Fatalf("replicas = %v, want %d", d.Spec.Replicas, wantReplicas)
		}
		if len(d.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("containers = %v, want the logger container only", d.Spec.Template.Spec.Containers)
		}
		c := d.Spec.Template.Spec.Containers[0]
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if secs, err := strconv.ParseFloat(env["TIME_INTERVAL"], 64); env["LOGGER_NAME"] != printed || err != nil || secs != float64(millis)/1000 {
			t.Fatalf("env = %v, want LOGGER_NAME=%q TIME_INTERVAL=%g", env, printed, float64(millis)/1000)
		}
		// The script is fixed: spec.name reaches the shell only through
		// the environment, whatever it contains.
		if got, want := append(slices.Clone(c.Command), c.Args...), []string{"/bin/sh", "-c", loggerScript}; !slices.Equal(got, want) {
			t.Fatalf("command %q, want %q", got, want)
		}
		if deploymentDrifted(d, d.DeepCopy()) {
			t.Fatal("a Deployment is reported drifted from an exact copy of itself")
		}
	})
}

// FuzzBookingStatus: any valid ticket is booked with a message that names its
// spec and fits status.message's 256 characters, with conditions the API
// server accepts, and its seat hold has a valid name.
func FuzzBookingStatus(f *testing.F) {
	f.Add("lab", "amsterdam-lisbon", "Amsterdam", "Lisbon", int32(2))
	f.Add("a", strings.Repeat("n", 253), strings.Repeat("f", 64), strings.Repeat("t", 64), int32(10))
	f.Add(strings.Repeat("n", 63), "x.y.z", "%d %s %v", "{{.}}", int32(1))
	f.Add("lab", "t", strings.Repeat("✈", 64), strings.Repeat("ü", 64), int32(3))
	f.Fuzz(func(t *testing.T, ns, name, from, to string, number int32) {
		// Only what the API server admits.
		if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 ||
			from == "" || to == "" || from == to || !utf8.ValidString(from) || !utf8.ValidString(to) ||
			utf8.RuneCountInString(from) > 64 || utf8.RuneCountInString(to) > 64 || number < 1 || number > 10 {
			t.Skip()
		}
		tk := &flightsv1.FlightTicket{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 3},
			Spec:       flightsv1.FlightTicketSpec{From: from, To: to, Number: number},
		}
		s := bookedStatus(tk)
		if s.Phase != flightsv1.PhaseBooked || s.ObservedGeneration != 3 {
			t.Fatalf("phase = %q, observedGeneration = %d", s.Phase, s.ObservedGeneration)
		}
		want := "Booked " + strconv.Itoa(int(number)) + " seat(s) from " + from + " to " + to
		if s.Message != want || utf8.RuneCountInString(s.Message) > 256 {
			t.Fatalf("message = %q (%d characters), want %q within 256", s.Message, utf8.RuneCountInString(s.Message), want)
		}
		if errs := metav1validation.ValidateConditions(s.Conditions, field.NewPath("status", "conditions")); len(errs) > 0 {
			t.Fatalf("conditions %+v are invalid: %v", s.Conditions, errs)
		}
		if msgs := validation.IsDNS1123Subdomain(holdName(client.ObjectKeyFromObject(tk))); len(msgs) > 0 {
			t.Fatalf("seat hold name %q: %v", holdName(client.ObjectKeyFromObject(tk)), msgs)
		}
	})
}
