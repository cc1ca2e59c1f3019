package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// ConversionPath is where the API server sends the Logger CRD's
// ConversionReviews (config/crd-patches/conversion.yaml).
const ConversionPath = "/convert"

// SetupConversionWithManager registers the conversion webhook with the
// Manager's webhook server: controller-runtime's handler, which decodes each
// object in a ConversionReview and converts it through the hub (v2's Hub,
// v1's ConvertTo and ConvertFrom), wrapped to log one line per object for
// the log and for `make trace-A3`. Call it before the admission webhooks'
// SetupWithManager: their builder, seeing that Logger has convertible
// versions, registers the same handler unwrapped at /convert unless a
// handler is there already.
func SetupConversionWithManager(mgr ctrl.Manager) {
	mgr.GetWebhookServer().Register(ConversionPath, logConversions(conversion.NewWebhookHandler(mgr.GetScheme(), mgr.GetConverterRegistry())))
}

// maxRequestSize caps the body of a ConversionReview as controller-runtime
// caps an AdmissionReview's (pkg/webhook/admission/http.go, 7 MiB); its
// conversion handler reads whatever it is sent. The server asks no client
// certificate, so anything that reaches the port can post; the cap keeps
// such a post from growing the operator's memory without bound.
const maxRequestSize = 7 << 20

// logConversions logs, for each object the API server sent, its name, the
// version it came in and the version asked for, and whether the handler
// converted it (else its message): `make trace-A3` follows one object
// through these lines. The request and the answer pass through unchanged; a
// body over maxRequestSize is refused with 413 after reading no more than
// the cap.
func logConversions(next http.Handler) http.Handler {
	log := ctrl.Log.WithName("conversion-webhook")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestSize))
		if err != nil {
			code := http.StatusBadRequest
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				code = http.StatusRequestEntityTooLarge
			}
			http.Error(w, err.Error(), code)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		// The answer is recorded (net/http/httptest's recorder, a plain
		// http.ResponseWriter in memory) to be read before it is sent.
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)

		var req, resp apiextensionsv1.ConversionReview
		if json.Unmarshal(body, &req) == nil && req.Request != nil && json.Unmarshal(rec.Body.Bytes(), &resp) == nil && resp.Response != nil {
			converted := resp.Response.Result.Status == metav1.StatusSuccess
			for _, o := range req.Request.Objects {
				var m struct {
					APIVersion string            `json:"apiVersion"`
					Metadata   metav1.ObjectMeta `json:"metadata"`
				}
				if json.Unmarshal(o.Raw, &m) != nil {
					continue
				}
				kv := []any{"namespace", m.Metadata.Namespace, "name", m.Metadata.Name, "from", m.APIVersion, "to", req.Request.DesiredAPIVersion, "converted", converted}
				if !converted {
					kv = append(kv, "reason", resp.Response.Result.Message)
				}
				log.Info("conversion", kv...)
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes()) // the API server has gone if this fails
	})
}
