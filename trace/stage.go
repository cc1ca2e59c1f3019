package trace

import (
	"strconv"
	"strings"
)

// Stage is what a trace needs to know about a stage: what it is called and
// what it calls the parts of its operator, as its lab's diagrams do.
type Stage struct {
	// Number is the stage's; a day-two module's is its base stage's, whose
	// operator it runs or extends.
	Number int
	// ID is what make targets call it: "2" in make trace-2, "A1".
	ID  string
	Dir string // "02-raw-watch", "advanced/A1-admission-policies"
	// Operator is the folder of the operator that runs, when it is not
	// Dir's own: a module with no Go runs its base's.
	Operator string
	// Names of the participants that differ from stage to stage.
	Watch, Queue, Worker string
	// Handoff is where the operator's log says an event goes: the sync (02),
	// the event handlers (03), the queue (04). Stages 05 and 06 do not say.
	Handoff string
	// LoggerStored and LoggerOther are the Logger's two versions where it
	// has two (module A3: stored as v2, served as v1 too, converted by the
	// operator's webhook); empty where it has one. The trace reads Loggers
	// in LoggerStored, so that its own reads need no conversion, and has
	// kubectl read the traced Logger in LoggerOther, which needs one.
	LoggerStored, LoggerOther string
}

// Stages are the course's stages, 1 to 6, then the day-two modules.
var Stages = []Stage{
	{Number: 1, ID: "1", Dir: "01-crd-yaml"},
	{Number: 2, ID: "2", Dir: "02-raw-watch", Watch: "watch (one loop)", Worker: "sync (the same loop)", Handoff: Worker},
	{Number: 3, ID: "3", Dir: "03-informer-cache", Watch: "informer (reflector + cache)", Worker: "event handlers", Handoff: Worker},
	{Number: 4, ID: "4", Dir: "04-workqueue", Watch: "informers (cache)", Queue: "queue of keys", Worker: "workers", Handoff: Queue},
	{Number: 5, ID: "5", Dir: "05-controller-runtime", Watch: "Manager cache (informers)", Queue: "queue of keys", Worker: "Reconcile"},
	{Number: 6, ID: "6", Dir: "06-status-and-owners", Watch: "Manager cache", Queue: "queue of keys", Worker: "Reconcile"},
	{Number: 6, ID: "A1", Dir: "advanced/A1-admission-policies", Operator: "06-status-and-owners", Watch: "Manager cache", Queue: "queue of keys", Worker: "Reconcile"},
	{Number: 6, ID: "A2", Dir: "advanced/A2-admission-webhook", Watch: "Manager cache", Queue: "queue of keys", Worker: "Reconcile"},
	{Number: 6, ID: "A3", Dir: "advanced/A3-api-versions", Watch: "Manager cache", Queue: "queue of keys", Worker: "Reconcile",
		LoggerStored: "v2", LoggerOther: "v1"},
}

// Converts reports whether the stage's operator converts o between two
// versions: a Logger, where the Logger has two.
func (s Stage) Converts(o Object) bool { return o.IsLogger() && s.LoggerStored != "" }

// OperatorDir is the folder whose operator runs for the stage.
func (s Stage) OperatorDir() string {
	if s.Operator != "" {
		return s.Operator
	}
	return s.Dir
}

// StageNumber returns stage n, or false.
func StageNumber(n int) (Stage, bool) {
	if n < 1 || n > 6 {
		return Stage{}, false
	}
	return Stages[n-1], true
}

// StageID returns the stage or module make targets call id ("3", "03",
// "A1", "a1"), or false.
func StageID(id string) (Stage, bool) {
	if n, err := strconv.Atoi(id); err == nil {
		return StageNumber(n)
	}
	for _, s := range Stages {
		if strings.EqualFold(s.ID, id) {
			return s, true
		}
	}
	return Stage{}, false
}

// participants in the order a diagram lists them, with their aliases.
var participantOrder = []struct{ key, alias, name string }{
	{Kubectl, "K", "kubectl"},
	{APIServer, "A", "kube-apiserver"},
	{Etcd, "E", "etcd"},
	{Webhook, "H", "webhook (in the operator)"},
	{Watch, "W", ""},
	{Queue, "Q", ""},
	{Worker, "R", ""},
	{KCM, "C", "kube-controller-manager"},
	{Scheduler, "S", "kube-scheduler"},
	{Kwok, "N", "kwok (the simulated node)"},
	{GC, "G", "garbage collector"},
}

// Name is what the stage calls a participant.
func (s Stage) Name(key string) string {
	switch key {
	case Watch:
		return s.Watch
	case Queue:
		return s.Queue
	case Worker:
		return s.Worker
	}
	for _, p := range participantOrder {
		if p.key == key {
			return p.name
		}
	}
	return key
}
