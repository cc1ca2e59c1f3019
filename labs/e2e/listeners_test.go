package e2e

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-flow/operator-flow/harness"
)

// checkLoopbackOnly: the lab operator of stage n listens on each of ports,
// and on loopback only. A learner's laptop is often on a shared network, and
// the endpoints are for their own curl.
func checkLoopbackOnly(t *testing.T, n, pid int, ports ...uint16) {
	t.Helper()
	var listening []netip.AddrPort
	harness.Eventually(t, 30*time.Second, fmt.Sprintf("the stage %02d lab operator (pid %d) to listen on ports %v", n, pid, ports), func(context.Context) (bool, string, error) {
		var err error
		if listening, err = tcpListeners(pid); err != nil {
			return false, "", err
		}
		for _, p := range ports {
			if !slices.ContainsFunc(listening, func(a netip.AddrPort) bool { return a.Port() == p }) {
				return false, fmt.Sprintf("it listens on %v", listening), nil
			}
		}
		return true, "", nil
	})
	for _, a := range listening {
		if !a.Addr().IsLoopback() {
			t.Errorf("the stage %02d lab operator listens on %s, which every network interface reaches; want 127.0.0.1 only", n, a)
		}
	}
}

// tcpListeners is where process pid listens for TCP connections: the
// listening sockets of /proc/PID/net/tcp{,6} whose inode is one of its open
// files.
func tcpListeners(pid int) ([]netip.AddrPort, error) {
	proc := fmt.Sprintf("/proc/%d", pid)
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, _ := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(proc, "net", table))
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			// sl local_address rem_address st ... inode: st 0A is LISTEN.
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			a, err := procAddr(f[1])
			if err != nil {
				return nil, fmt.Errorf("%s/net/%s: %q: %v", proc, table, line, err)
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// procAddr parses an address of /proc/net/tcp{,6}: ADDR:PORT in hex, ADDR
// as 32-bit words each printed in the machine's byte order.
func procAddr(s string) (netip.AddrPort, error) {
	addr, port, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(addr)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("not an address: %q", addr)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, err
	}
	ip, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip.Unmap(), uint16(p)), nil
}
