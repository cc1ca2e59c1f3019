package tools

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Workshop attendees run the scripts and the Makefile's recipes on macOS too,
// whose /bin/bash is 3.2 (2007) and whose sed, date, stat, readlink and xargs
// are BSD's. These tests fail when a script uses something that is missing or
// different there. Each rule names what to write instead.
var nonPortable = []struct {
	re      *regexp.Regexp
	problem string
}{
	// bash 4 and later
	{regexp.MustCompile(`\b(mapfile|readarray)\b`), "mapfile/readarray need bash 4; read lines with a while-read loop"},
	{regexp.MustCompile(`\b(declare|local|typeset)\s+-[a-zA-Z]*[Ang]`), "declare -A (bash 4), -n (4.3) and -g (4.2) are missing in bash 3.2"},
	{regexp.MustCompile(`\$\{[#!]?[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?(\^\^?|,,?)[^}]*\}`), "${x,,} and ${x^^} need bash 4; use tr '[:upper:]' '[:lower:]'"},
	{regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?@[QEPAKUuLa]\}`), "${x@Q} and friends need bash 4.4"},
	{regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\[-[0-9]+\]\}`), "negative array indexes need bash 4.3"},
	{regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:[^}:]*:-[0-9]`), "a negative substring length needs bash 4.2"},
	{regexp.MustCompile(`\bwait\s+-n\b`), "wait -n needs bash 4.3; wait for each pid"},
	{regexp.MustCompile(`\bcoproc\b`), "coproc needs bash 4"},
	{regexp.MustCompile(`&>>|\|&`), "&>> and |& need bash 4; write >>f 2>&1 and 2>&1 |"},
	{regexp.MustCompile(`;;&|;&\s*$`), "case fall-through (;& and ;;&) needs bash 4"},
	{regexp.MustCompile(`\[\[\s+-v\s`), "[[ -v name ]] needs bash 4.2; use [[ -n ${name+set} ]]"},
	{regexp.MustCompile(`\bshopt\s+-s\s+(globstar|lastpipe|autocd|checkjobs|direxpand)\b`), "this shopt option needs bash 4"},
	{regexp.MustCompile(`\{-?[0-9]+\.\.-?[0-9]+\.\.-?[0-9]+\}`), "a brace range with a step needs bash 4"},
	{regexp.MustCompile(`\$\{?(EPOCHSECONDS|EPOCHREALTIME|BASHPID|SRANDOM)\b`), "this variable needs bash 4 or 5; $SECONDS and $$ exist in 3.2"},
	{regexp.MustCompile(`%\([^)]*\)T`), "printf '%(...)T' needs bash 4.2; use date"},
	// Linux only
	{regexp.MustCompile(`/proc/`), "macOS has no /proc; use ps -p PID -o command= / -o stat=, or kill -0"},
	// GNU only, or different in BSD
	{regexp.MustCompile(`\bsed\b(\s+-[A-Za-z]+)*\s+-[A-Za-z]*i|\bsed\b.*--in-place`), "sed -i differs (BSD needs a suffix argument); write to a temporary file and mv it"},
	{regexp.MustCompile(`\bsed\b(\s+-[A-Za-z]+)*\s+-[A-Za-z]*r\b`), "sed -r is GNU; use sed -E"},
	{regexp.MustCompile(`\breadlink\s+-[a-zA-Z]*[fem]|\brealpath\b`), "readlink -f and realpath are missing on macOS; use $(cd DIR && pwd)"},
	{regexp.MustCompile(`(^|[\s;&|(!])timeout\s`), "timeout(1) is GNU coreutils, missing on macOS; use a background sleep and kill"},
	{regexp.MustCompile(`\bxargs\b[^|;]*(\s-[a-zA-Z]*r\b|--no-run-if-empty)`), "xargs -r is GNU; loop over the words instead"},
	{regexp.MustCompile(`\bgrep\b(\s+-[a-zA-Z]+)*\s+-[a-zA-Z]*P`), "grep -P is GNU; use grep -E"},
	{regexp.MustCompile(`\bdate\b[^|;]*(\s-d\s|--date)`), "date -d is GNU (BSD: date -j -f); avoid parsing dates in scripts"},
	{regexp.MustCompile(`\bstat\b(\s+-[a-zA-Z]+)*\s+(-c\b|--format)`), "stat -c is GNU (BSD: stat -f)"},
	{regexp.MustCompile(`\bfind\b.*\s-printf\b`), "find -printf is GNU"},
	{regexp.MustCompile(`\bbase64\b[^|;]*\s-w`), "base64 -w is GNU"},
	{regexp.MustCompile(`\bhead\b[^|;]*\s-n\s*-[0-9]`), "head -n -N is GNU"},
	{regexp.MustCompile(`\bmktemp\b[^|;]*--tmpdir`), "mktemp --tmpdir is GNU; write mktemp \"${TMPDIR:-/tmp}/name.XXXXXX\""},
	{regexp.MustCompile(`(^|[\s;&|(]|\$\()(nproc|tac|sha256sum|md5sum|numfmt|install\s+-D)\b`), "this command is GNU coreutils, missing on macOS (nproc: getconf _NPROCESSORS_ONLN)"},
}

// portabilityExempt lists files the rules do not apply to, each with why.
// It is empty: every script must run on macOS.
var portabilityExempt = map[string]string{}

// scripts lists, relative to the repository root, every shell script (by
// extension or shebang) and every makefile.
func scripts(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", path)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", ".state", "workspace", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".sh") || name == "Makefile" || strings.HasSuffix(name, ".mk") || hasShellShebang(path) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d scripts and makefiles: %v", len(out), out)
	}
	return out
}

func hasShellShebang(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only
	line, _ := bufio.NewReader(f).ReadString('\n')
	return regexp.MustCompile(`^#!\s*/(usr/)?bin/(env\s+)?(ba)?sh\b`).MatchString(line)
}

// problems returns one message per non-portable line of a script or makefile
// (comments are skipped).
func problems(name, text string) []string {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, rule := range nonPortable {
			if rule.re.MatchString(line) {
				out = append(out, name+":"+strconv.Itoa(i+1)+": "+rule.problem+"\n\t"+strings.TrimSpace(line))
			}
		}
	}
	return out
}

// TestScriptsArePortable runs the rules over every script and makefile.
func TestScriptsArePortable(t *testing.T) {
	for _, name := range scripts(t) {
		if why, ok := portabilityExempt[name]; ok {
			t.Logf("%s: not checked (%s)", name, why)
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems(name, string(b)) {
			t.Error(p)
		}
	}
}

// TestPortabilityRulesCatch feeds each rule a line it must reject, and lines
// that are fine, so that a rule that stops matching fails here.
func TestPortabilityRulesCatch(t *testing.T) {
	bad := []string{
		`mapfile -t lines < f`, `declare -A seen`, `local -n ref=$1`, `echo "${name,,}"`, `echo "${x^^}"`,
		`echo "${x@Q}"`, `echo "${a[-1]}"`, `echo "${x:0:-1}"`, `wait -n`, `coproc cat`, `cmd &>> log`, `cmd |& tee`,
		`[[ -v FOO ]]`, `shopt -s globstar`, `echo {1..9..2}`, `echo $EPOCHSECONDS`, `printf '%(%s)T'`,
		`grep -q x /proc/$pid/cmdline`, `sed -i 's/a/b/' f`, `sed -E -i 's/a/b/' f`, `sed -r 's/a+/b/'`,
		`d=$(readlink -f "$0")`, `realpath .`, `timeout 10 docker info`, `if ! out=$(timeout 5 x); then`,
		`ls | xargs -r rm`, `grep -oP '\d+'`, `date -d yesterday`, `stat -c %s f`, `find . -printf '%p'`,
		`base64 -w0 f`, `head -n -1 f`, `mktemp --tmpdir x`, `echo $(nproc)`, `tac f`, `sha256sum f`,
	}
	for _, line := range bad {
		if len(problems("t", line)) == 0 {
			t.Errorf("no rule rejects %q", line)
		}
	}
	good := []string{
		`go test -count=1 -timeout 40m ./...`, `out=$(with_timeout 10 docker info)`, `sed 's/a/b/' f >f.tmp && mv f.tmp f`,
		`sed -n 's/x/y/p' f`, `declare -a list`, `echo "${#list[@]}" "${list[@]}" "${x:-default}" "${x%%-*}"`,
		`ps -p "$pid" -o stat=`, `# /proc is Linux only`, `grep -rl --include='*_test.go' x .`, `mktemp -d`,
		`echo $(getconf _NPROCESSORS_ONLN)`, `case $x in a) ;; esac`,
	}
	for _, line := range good {
		if p := problems("t", line); len(p) != 0 {
			t.Errorf("a portable line is rejected: %v", p)
		}
	}
}

// TestShellcheck runs shellcheck, when installed (Debian: apt-get install
// shellcheck), over every shell script at severity warning.
func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		if os.Getenv("CI") != "" {
			// .ci/run installs it: in CI a missing shellcheck is a broken
			// setup, not a reason to check less.
			t.Fatal("shellcheck is not installed, and CI is set; .ci/run installs it from Debian's packages")
		}
		t.Skip("shellcheck is not installed (apt-get install shellcheck / brew install shellcheck); the portability rules above still ran")
	}
	var files []string
	for _, name := range scripts(t) {
		if name != "Makefile" && !strings.HasSuffix(name, ".mk") {
			files = append(files, name)
		}
	}
	cmd := exec.Command("shellcheck", append([]string{"--severity=warning"}, files...)...)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
