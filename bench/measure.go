package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/operator-flow/operator-flow/apicount"
)

// Requests are API request counts by verb and resource, from either side:
// the API server's apiserver_request_total, or an operator's own apicount.
type Requests map[apicount.Key]int

// Sub returns r minus before.
func (r Requests) Sub(before Requests) Requests {
	out := Requests{}
	for k, v := range r {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Sum adds the counts whose key satisfies keep.
func (r Requests) Sum(keep func(apicount.Key) bool) int {
	n := 0
	for k, v := range r {
		if keep(k) {
			n += v
		}
	}
	return n
}

// isWrite: a write to the workload's objects or to what the operator keeps
// for them. Events are counted apart (isEvent): they are a report to people,
// not work on the objects, and an operator may record as many as it likes.
func isWrite(k apicount.Key) bool { return k.IsWrite() && !isEvent(k) }

// isEvent: an Event recorded (core or events.k8s.io).
func isEvent(k apicount.Key) bool { return k.IsWrite() && k.Resource == "events" }

// isGet: a GET of one object (not discovery, not /version and the like).
func isGet(k apicount.Key) bool {
	return k.Verb == "GET" && k.Resource != "(discovery)" && !strings.HasPrefix(k.Resource, "/")
}

// The resources the workload touches; requests for anything else (leases,
// events of other components, discovery) are left out of the server's count.
var benchResources = map[string]bool{"flighttickets": true, "loggers": true, "deployments": true, "configmaps": true, "events": true}

var metricLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\S+)$`)
var labelPair = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// serverRequests reads apiserver_request_total from the API server's /metrics
// and sums it by verb and resource (with "/status" for the subresource).
func serverRequests(ctx context.Context, kube kubernetes.Interface) (Requests, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	out := Requests{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := metricLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, p := range labelPair.FindAllStringSubmatch(m[1], -1) {
			labels[p[1]] = p[2]
		}
		if !benchResources[labels["resource"]] {
			continue
		}
		res := labels["resource"]
		if labels["subresource"] != "" {
			res += "/" + labels["subresource"]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		out[apicount.Key{Verb: labels["verb"], Resource: res}] += int(v)
	}
	return out, sc.Err()
}

// operator is one stage's operator process, with its output in a log file.
type operator struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

func startOperator(bin, logPath string, args ...string) (*operator, error) {
	return startOperatorEnv(nil, bin, logPath, args...)
}

// startOperatorEnv starts the operator with extra environment variables
// (e.g. GOMEMLIMIT) on top of the bench's own.
func startOperatorEnv(env []string, bin, logPath string, args ...string) (*operator, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close() // the start's error is the one to report
		return nil, err
	}
	o := &operator{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	// The operator is stopped with SIGTERM, which it catches to shut down,
	// so Wait returns nil or its exit status (or "signal: killed" when stop
	// had to kill it); nothing needs that error: the log is read from logPath.
	go func() { _ = cmd.Wait(); _ = f.Close(); close(o.done) }()
	return o, nil
}

// context is parent, cancelled when the operator exits, with what it last
// logged as the cause: a wait on an operator that has died (say, its metrics
// port was taken) fails at once instead of sitting out its timeout.
func (o *operator) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-o.done:
			cancel(fmt.Errorf("the operator exited (%v); its last lines:\n%s", o.cmd.ProcessState, tail(o.log(), 10)))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}

func (o *operator) log() string {
	b, _ := os.ReadFile(o.logPath)
	return string(b)
}

// counts asks the operator for its apicount summary (SIGUSR1) and waits until
// a new one appears in its log. Until the operator has called apicount.New
// (just after it starts), Go ignores SIGUSR1, so the signal is sent again
// every second until a summary comes. Call it only on an operator that has
// logged something: in the first instants after exec, before the Go runtime
// has installed its signal handlers, SIGUSR1 still has the kernel's default
// action and kills the process without a word.
func (o *operator) counts() (Requests, error) {
	before := strings.Count(o.log(), "api-requests total=")
	deadline := time.Now().Add(10 * time.Second)
	var signalled time.Time
	for time.Now().Before(deadline) {
		if time.Since(signalled) >= time.Second {
			if err := o.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
				return nil, fmt.Errorf("signalling the operator: %w", err)
			}
			signalled = time.Now()
		}
		out := o.log()
		if strings.Count(out, "api-requests total=") > before {
			counts, _ := apicount.ParseSummary(out)
			return Requests(counts), nil
		}
		time.Sleep(20 * time.Millisecond) // waiting for a file write of our own request, not for the cluster
	}
	return nil, fmt.Errorf("the operator printed no request summary within 10s of SIGUSR1 (is apicount.New used?)")
}

// residentFileMiB is how much of the process's resident memory, now, is
// pages of files: its own executable, mapped. The rest (RssAnon) is what
// the Go runtime allocated: heap, stacks, its own bookkeeping.
func (o *operator) residentFileMiB() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "RssFile:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// usage reads the process's peak resident memory (MiB) and CPU time so far.
func (o *operator) usage() (peakMiB float64, cpu time.Duration) {
	pid := o.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				peakMiB = kb / 1024
			}
		}
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command name (which is in parentheses and may hold
		// spaces): utime and stime are the 14th and 15th fields overall.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
		}
	}
	return peakMiB, cpu
}

// stop sends SIGTERM and waits up to 20 s, then kills.
func (o *operator) stop() {
	select {
	case <-o.done:
		return
	default:
	}
	_ = o.cmd.Process.Signal(syscall.SIGTERM) // it may have exited already: done tells
	select {
	case <-o.done:
	case <-time.After(20 * time.Second):
		_ = o.cmd.Process.Kill()
		<-o.done
	}
}
