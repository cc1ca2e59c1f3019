package webhook

import (
	"bytes"
	"encoding/json"
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

// logConversions logs, for each object the API server sent, its name, the
// version it came in and the version asked for, and whether the handler
// converted it (else its message). The request and the answer pass through
// unchanged.
func logConversions(next http.Handler) http.Handler {
	log := ctrl.Log.WithName("conversion-webhook")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
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
