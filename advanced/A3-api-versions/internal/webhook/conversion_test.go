package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// countingReader is a body of n zero bytes that counts how many were read.
type countingReader struct{ n, read int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), c.n-c.read)
	clear(p[:k])
	c.read += k
	return int(k), nil
}

// TestConversionBodyCap: logConversions refuses a body over 7 MiB, the cap
// of controller-runtime's admission handler, with 413 and without reading
// the rest of it or calling the conversion handler.
func TestConversionBodyCap(t *testing.T) {
	called := false
	h := logConversions(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	body := &countingReader{n: 8 << 20}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, body))
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("want 413, got %d: %s", rec.Code, rec.Body)
	}
	if called {
		t.Error("the conversion handler was called")
	}
	// 7 MiB and at most one read's buffer more.
	if limit := int64(7<<20 + 64<<10); body.read > limit {
		t.Errorf("read %d bytes of the body, want at most %d", body.read, limit)
	}
}

// TestConversionBodyUnderCap: a body under the cap reaches the handler
// whole.
func TestConversionBodyUnderCap(t *testing.T) {
	var got int
	h := logConversions(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = len(b)
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, bytes.NewReader(make([]byte, 1<<20))))
	if got != 1<<20 {
		t.Errorf("the handler read %d bytes, want %d", got, 1<<20)
	}
}
