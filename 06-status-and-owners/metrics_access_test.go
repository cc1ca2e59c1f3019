package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestMetricsAccess runs the /metrics filter against a fake API server that
// knows one token ("scraper-token", user "scraper"), fails to review the
// token "crash", and allows only the user "scraper" to GET /metrics. The
// end-to-end version, with real ServiceAccount tokens and RBAC, is
// e2e/endpoints_test.go.
func TestMetricsAccess(t *testing.T) {
	for _, tc := range []struct {
		name       string
		method     string // GET when empty
		header     string
		authorizer string // "allow", "deny", "fail"
		want       int
		reviews    int // API requests the filter should make
	}{
		{"no header", "", "", "allow", http.StatusUnauthorized, 0},
		{"not a bearer token", "", "Basic c2NyYXBlcjpzZWNyZXQ=", "allow", http.StatusUnauthorized, 0},
		{"empty bearer token", "", "Bearer ", "allow", http.StatusUnauthorized, 0},
		{"two spaces before the token", "", "Bearer  scraper-token", "allow", http.StatusUnauthorized, 0},
		{"unknown token", "", "Bearer forged", "allow", http.StatusUnauthorized, 1},
		{"API server cannot authenticate", "", "Bearer crash", "allow", http.StatusInternalServerError, 1},
		{"known token, no right", "", "Bearer scraper-token", "deny", http.StatusForbidden, 2},
		{"known token, allowed", "", "Bearer scraper-token", "allow", http.StatusOK, 2},
		{"scheme in lower case", "", "bearer scraper-token", "allow", http.StatusOK, 2},
		{"allowed to GET, not to POST", http.MethodPost, "Bearer scraper-token", "allow", http.StatusForbidden, 2},
		{"API server cannot authorize", "", "Bearer scraper-token", "fail", http.StatusInternalServerError, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := fake.NewClientset()
			var asked *authorizationv1.SubjectAccessReviewSpec
			api.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
				switch tr.Spec.Token {
				case "crash":
					return true, nil, errors.New("connection refused")
				case "scraper-token":
					tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
						Username: "scraper", UID: "u-1", Groups: []string{"monitoring"},
						Extra: map[string]authenticationv1.ExtraValue{"pod": {"prometheus-0"}},
					}}
				default:
					tr.Status.Error = "invalid bearer token"
				}
				return true, tr, nil
			})
			api.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				asked = sar.Spec.DeepCopy()
				switch tc.authorizer {
				case "fail":
					return true, nil, errors.New("connection refused")
				case "allow":
					sar.Status.Allowed = sar.Spec.User == "scraper" &&
						sar.Spec.NonResourceAttributes.Verb == "get" && sar.Spec.NonResourceAttributes.Path == "/metrics"
				}
				return true, sar, nil
			})

			filter := accessFilter(api.AuthenticationV1(), api.AuthorizationV1())
			var tokenPassedOn bool
			metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tokenPassedOn = r.Header.Get("Authorization") != ""
				_, _ = w.Write([]byte("metrics"))
			})
			handler, err := filter(logr.Discard(), metrics)
			if err != nil {
				t.Fatal(err)
			}
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, "/metrics", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)

			if rec.Code != tc.want {
				t.Errorf("status = %d (%q), want %d", rec.Code, rec.Body.String(), tc.want)
			}
			if got := len(api.Actions()); got != tc.reviews {
				t.Errorf("the filter made %d API requests, want %d", got, tc.reviews)
			}
			if (rec.Code == http.StatusOK) != (rec.Body.String() == "metrics") {
				t.Errorf("body = %q: the metrics must be served exactly when the answer is 200", rec.Body.String())
			}
			if tokenPassedOn {
				t.Errorf("the metrics handler saw the Authorization header; the filter must remove it")
			}
			if tc.reviews == 2 {
				want := authorizationv1.SubjectAccessReviewSpec{
					User: "scraper", UID: "u-1", Groups: []string{"monitoring"},
					Extra:                 map[string]authorizationv1.ExtraValue{"pod": {"prometheus-0"}},
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: strings.ToLower(method)},
				}
				if !reflect.DeepEqual(*asked, want) {
					t.Errorf("SubjectAccessReview asked\n%+v\nwant\n%+v", *asked, want)
				}
			}
		})
	}
}
