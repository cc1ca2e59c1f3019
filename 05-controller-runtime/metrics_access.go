package main

// Who may read /metrics. Metrics say a lot about a cluster (object names in
// labels, request rates), so the endpoint answers only callers the API
// server vouches for, the way kube-controller-manager guards its own: the
// caller sends a bearer token (a ServiceAccount token, for Prometheus), and
// for every request the operator asks the API server two questions.
//
//	1. Who is this?      a TokenReview:         the token -> a user and groups
//	2. May they do this? a SubjectAccessReview: user, GET, /metrics -> yes/no
//
// The second one is answered by RBAC: config/rbac/metrics_reader_role.yaml
// grants GET on the non-resource URL /metrics. The operator itself needs the
// right to create both reviews (the +kubebuilder:rbac markers in main.go).
//
// controller-runtime ships this check as filters.WithAuthenticationAndAuthorization
// (what kubebuilder scaffolds). It asks the same two questions, but it
// builds them from k8s.io/apiserver, which brings a CEL interpreter, gRPC and
// OpenTelemetry along: linked in, they made the executable 77 MB instead of
// 47, and their package initialisers run at every start. What that cost in
// memory is in 05-controller-runtime/README.md ("The metrics check, and what
// it costs"). Here are the two calls, with client-go's typed clients. What
// this check does not do that the library's does:
//
//   - cache answers (the library keeps who a token belongs to for a minute,
//     an allow for five, a deny for 30 s): a scrape every 30 s costs two
//     small requests here;
//   - retry a review that failed: the scrape gets a 500 and the next scrape
//     asks again.
//
// And one answer differs: a token the API server rejects gets 401 here; the
// library answers 500, as it treats the rejection as an error.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// reviewTimeout bounds the two reviews of one request, so that a slow API
// server makes a scrape fail instead of piling requests up.
const reviewTimeout = 10 * time.Second

// metricsAccess is the metrics server's FilterProvider: the Manager calls it
// once, with its own configuration, and puts the filter it returns in front
// of /metrics.
func metricsAccess(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return accessFilter(authn, authz), nil
}

// accessFilter answers a request only if its bearer token authenticates and
// its user may use the request's verb on its path: 401 without a token or
// with one the API server does not accept, 403 for a user without the
// right, 500 if the API server could not be asked.
func accessFilter(authn authenticationclient.TokenReviewsGetter, authz authorizationclient.SubjectAccessReviewsGetter) metricsserver.Filter {
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			// 1. No bearer token: refused without asking anyone.
			token, ok := bearerToken(req)
			if !ok {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
			defer cancel()

			// 2. Who is this? The API server checks the token as it would
			// one sent to itself, and says which user it belongs to.
			tr, err := authn.TokenReviews().Create(ctx, &authenticationv1.TokenReview{
				Spec: authenticationv1.TokenReviewSpec{Token: token},
			}, metav1.CreateOptions{})
			if err != nil {
				log.Error(err, "TokenReview failed")
				http.Error(w, "Authentication failed", http.StatusInternalServerError)
				return
			}
			if !tr.Status.Authenticated {
				log.V(4).Info("token not authenticated", "error", tr.Status.Error)
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}

			// 3. May they? A request to a path that is not an API resource
			// is authorized by its path and its HTTP method, lower-cased:
			// "get" on "/metrics".
			user := tr.Status.User
			sar, err := authz.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User:   user.Username,
					UID:    user.UID,
					Groups: user.Groups,
					Extra:  extraOf(user),
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{
						Path: req.URL.Path,
						Verb: strings.ToLower(req.Method),
					},
				},
			}, metav1.CreateOptions{})
			if err != nil {
				log.Error(err, "SubjectAccessReview failed", "user", user.Username)
				http.Error(w, fmt.Sprintf("Authorization for user %s failed", user.Username), http.StatusInternalServerError)
				return
			}
			if !sar.Status.Allowed {
				log.V(4).Info("access denied", "user", user.Username, "reason", sar.Status.Reason)
				http.Error(w, fmt.Sprintf("Authorization denied for user %s", user.Username), http.StatusForbidden)
				return
			}

			// 4. Allowed: the metrics. The token has done its job; the
			// handler behind us has no use for it.
			req.Header.Del("Authorization")
			next.ServeHTTP(w, req)
		}), nil
	}
}

// bearerToken returns the token of an "Authorization: Bearer TOKEN" header,
// read the way the API server reads its own: the scheme in any case, then
// exactly one space, then the token up to the next space.
func bearerToken(req *http.Request) (string, bool) {
	fields := strings.SplitN(strings.TrimSpace(req.Header.Get("Authorization")), " ", 3)
	if len(fields) < 2 || !strings.EqualFold(fields[0], "Bearer") || fields[1] == "" {
		return "", false
	}
	return fields[1], true
}

// extraOf carries the authenticator's extra user attributes (a
// ServiceAccount token's pod name, for example) over to the access review:
// the same data, in the other API group's type.
func extraOf(user authenticationv1.UserInfo) map[string]authorizationv1.ExtraValue {
	if len(user.Extra) == 0 {
		return nil
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	return extra
}
