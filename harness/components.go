package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PrivateCluster reports whether Main created a cluster for this test binary
// alone. Only then may a test stop and start its components: on a shared
// cluster that would break every other package's tests.
func PrivateCluster() bool { return privateCluster != "" }

// RestartComponent kills one control-plane process of the private kwok
// cluster (e.g. "kube-apiserver" or "etcd") with SIGKILL, as a crash or an
// OOM kill would (a graceful SIGTERM makes kube-apiserver drain its watches
// for up to a minute first), calls whileDown,
// and starts the process again with the same command line, environment and
// log file. kwokctl's pid file is updated, so `kwokctl delete cluster` still
// stops the new process.
func RestartComponent(t testing.TB, component string, whileDown func()) {
	t.Helper()
	if !PrivateCluster() {
		t.Fatalf("RestartComponent(%s) needs a private cluster: use harness.MainPrivate", component)
	}
	if os.Getenv("CLUSTER") == "kind" {
		restartKindStaticPod(t, component, whileDown)
		return
	}
	dir := filepath.Join(RepoPath(".state", "kwok", "clusters", privateCluster))
	pidFile := filepath.Join(dir, "pids", component+".pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("reading %s: %v", pidFile, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	args, env, cwd := processSpec(t, pid)

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %s (pid %d): %v", component, pid, err)
	}
	waitGone(t, pid, 10*time.Second)
	if whileDown != nil {
		whileDown()
	}

	logFile, err := os.OpenFile(filepath.Join(dir, "logs", component+".log"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := logFile.Close(); err != nil {
			t.Error(err)
		}
	}()
	port, err := listenPort(args)
	if err != nil {
		t.Fatalf("%s: %v", component, err)
	}
	// Rarely, the port of the killed process is not free yet when the new
	// one starts (seen once in CI: kube-apiserver exited at once with "bind:
	// address already in use"). A process that exits before it listens is
	// started again once the port is free, up to restartAttempts times.
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = env, cwd, logFile, logFile
		// A session of its own, as kwokctl starts it: the component must
		// outlive neither more nor less than the cluster, not this test
		// process.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s again: %v", component, err)
		}
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
		// Reap it if it exits while the tests run; kwokctl stops it at the end.
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		// Up once it accepts connections on its port; callers then wait
		// for what they need of it (the API server's /readyz).
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, startupTimeout, true, func(context.Context) (bool, error) {
			select {
			case <-exited:
				return false, errExited
			default:
			}
			return accepts(port), nil
		})
		if err == nil {
			return
		}
		if !errors.Is(err, errExited) {
			t.Fatalf("%s did not listen on port %s within %s of its restart; the last lines of its log:\n%s", component, port, startupTimeout, ComponentLog(component, 10))
		}
		if attempt == restartAttempts {
			t.Fatalf("%s exited right after each of %d starts; the last lines of its log:\n%s", component, attempt, ComponentLog(component, 10))
		}
		t.Logf("%s exited right after its restart (attempt %d of %d); starting it again once port %s is free", component, attempt, restartAttempts, port)
		waitPortFree(t, port, startupTimeout)
	}
}

// A restarted component must listen within startupTimeout; one that exits
// before it does is started again, at most restartAttempts times in all.
const (
	startupTimeout  = 30 * time.Second
	restartAttempts = 5
)

var errExited = errors.New("exited")

// listenPort finds the port a component serves on in its command line:
// kube-apiserver's --secure-port, etcd's first --listen-client-urls.
func listenPort(args []string) (string, error) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			return v, nil
		}
		if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
			u, err := url.Parse(strings.Split(v, ",")[0])
			if err != nil {
				return "", err
			}
			return u.Port(), nil
		}
	}
	return "", fmt.Errorf("no --secure-port or --listen-client-urls in its command line %q", args)
}

// accepts reports whether something accepts connections on port.
func accepts(port string) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", port), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // only the dial mattered
	return true
}

// waitPortFree waits until port can be bound again on loopback.
func waitPortFree(t testing.TB, port string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return false, nil
		}
		return l.Close() == nil, nil
	})
	if err != nil {
		t.Fatalf("port %s still taken %s after the process exited", port, timeout)
	}
}

// restartKindStaticPod kills a control-plane container inside the kind node;
// the node's kubelet starts its static pod again on its own, after the
// restart backoff that cluster/kind.yaml caps at 1s. whileDown therefore runs
// while the kubelet may already be starting the component again, unlike on
// kwok, where the component stays down until whileDown returns.
func restartKindStaticPod(t testing.TB, component string, whileDown func()) {
	t.Helper()
	node := kindNode(privateCluster)
	out, err := exec.Command("docker", "exec", node, "pkill", "-KILL", "-x", component).CombinedOutput()
	if err != nil {
		t.Fatalf("killing %s in kind node %s: %v\n%s", component, node, err, out)
	}
	if whileDown != nil {
		whileDown()
	}
}

// processSpec reads a running process's command line, environment and
// working directory from /proc.
func processSpec(t testing.TB, pid int) (args, env []string, cwd string) {
	t.Helper()
	read := func(name string) []string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
		if err != nil {
			t.Fatalf("reading /proc/%d/%s: %v", pid, name, err)
		}
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	args, env = read("cmdline"), read("environ")
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return args, env, cwd
}

func waitGone(t testing.TB, pid int, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if syscall.Kill(pid, 0) != nil {
			return true, nil
		}
		// A zombie still answers kill(0); its /proc state says Z. But the
		// main thread of a multi-threaded process turns Z as soon as it
		// exits itself, while its other threads still run and its files
		// (the listening socket among them) are still open: a restart
		// then fails with "address already in use". Gone means no thread
		// but the zombie main thread is left.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return err == nil && strings.Contains(string(b), ") Z ") && threads(pid) <= 1, nil
	})
	if err != nil {
		t.Fatalf("pid %d did not exit within %s of SIGKILL", pid, timeout)
	}
}

// ComponentLog returns the last lines of a private cluster component's log:
// what to show when a restarted component does not come back. On kwok it is
// the component's log file; on kind, the container runtime's log of its
// latest container in the node.
func ComponentLog(component string, lines int) string {
	if !PrivateCluster() {
		return "(no component log: not a private cluster)"
	}
	if os.Getenv("CLUSTER") == "kind" {
		node := kindNode(privateCluster)
		script := fmt.Sprintf("crictl logs --tail %d \"$(crictl ps -a -q --latest --name '^%s$')\"", lines, component)
		out, err := exec.Command("docker", "exec", node, "sh", "-c", script).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("(crictl logs of %s in kind node %s: %v) %s", component, node, err, out)
		}
		return string(out)
	}
	b, err := os.ReadFile(RepoPath(".state", "kwok", "clusters", privateCluster, "logs", component+".log"))
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), lines)
}

// threads counts a process's threads (its entries in /proc/PID/task); 0 when
// the process is gone.
func threads(pid int) int {
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	return len(entries)
}
