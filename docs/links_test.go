package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linkRE is a Markdown link: [text](target).
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve fails on a relative link whose file does not exist, or
// whose #anchor is not a heading of that file (GitHub's anchors: lower case,
// spaces to dashes, punctuation dropped).
func TestLinksResolve(t *testing.T) {
	for _, p := range allDocs(t) {
		d := readDoc(t, p)
		for _, line := range d.prose {
			for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
				if problem := checkLink(p, m[1]); problem != "" {
					t.Errorf("%s: (%s): %s", p, m[1], problem)
				}
			}
		}
	}
}

func checkLink(doc, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	path := doc
	if file != "" {
		path = filepath.ToSlash(filepath.Join(filepath.Dir(doc), file))
	}
	info, err := os.Stat(filepath.Join(root, path))
	if err != nil {
		return "no such file"
	}
	if anchor == "" || info.IsDir() || !strings.HasSuffix(path, ".md") {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "#") && slug(strings.TrimLeft(l, "# ")) == anchor {
			return ""
		}
	}
	return "no heading " + path + "#" + anchor
}

var slugDropRE = regexp.MustCompile(`[^\p{L}\p{N} _-]`)

// slug is GitHub's anchor of a heading.
func slug(heading string) string {
	s := strings.ToLower(strings.TrimSpace(heading))
	s = slugDropRE.ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}
