package controller

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Both kinds build their status the same way, in pure functions that tests
// call without a cluster (bookedStatus, loggerStatus): start from the
// current status, set observedGeneration, and set each condition with
// setConditions.

// condition builds a condition; status true means metav1.ConditionTrue.
func condition(typ string, status bool, reason, format string, args ...any) metav1.Condition {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
	if status {
		c.Status = metav1.ConditionTrue
	}
	return c
}

// setConditions sets conds in *conditions, each marked with the generation
// it was observed at. meta.SetStatusCondition keeps a condition's
// lastTransitionTime unless its status flips, so setting the same
// conditions again changes nothing, and nothing is written.
func setConditions(conditions *[]metav1.Condition, generation int64, conds ...metav1.Condition) {
	for _, c := range conds {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(conditions, c)
	}
}

// sameFailure is c, a condition that says a failure, with the message of
// the condition of its type in conds when that one says the same failure
// already: the same status and reason, at generation. A failure's words can
// change from one retry to the next (a quota's "used:", a request ID); a new
// message would be a status write each time, and its event a reconcile at
// once, past the backoff. So the condition keeps the first try's words, and
// each try's are in its Warning Event (recordFailure).
func sameFailure(conds []metav1.Condition, generation int64, c metav1.Condition) metav1.Condition {
	if old := meta.FindStatusCondition(conds, c.Type); old != nil && old.Status == c.Status && old.Reason == c.Reason && old.ObservedGeneration == generation {
		c.Message = old.Message
	}
	return c
}

// maxTicketMessage is status.message's maxLength in the CRD. A booking
// message is at most 155 characters; an error quoted in it can be longer.
const maxTicketMessage = 256

// truncateBytes shortens s to at most n bytes, marking the cut with "...",
// and never cuts a character in two.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// truncate shortens s to at most n characters, marking the cut with "...".
// A CRD's maxLength counts characters (Unicode code points), not bytes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-len("...")]) + "..."
}
