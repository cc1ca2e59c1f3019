// Command trim-stored-versions guards the last step of a storage migration
// of your own: setting the Logger CRD's status.storedVersions to the storage
// version alone. It takes the migrator's rule (k8s.io/kubernetes@v1.36.3
// pkg/controller/storageversionmigrator): a checkpoint, a list
// resourceVersion taken before the pass, then a trim only when every Logger's
// resourceVersion is newer, that is, every Logger has been written since,
// and so stored in the storage version.
//
//	since=$(go run ./advanced/A3-api-versions/hack/trim-stored-versions checkpoint)
//	... write every Logger (a no-op update each) ...
//	go run ./advanced/A3-api-versions/hack/trim-stored-versions trim $since
//
// resourceVersions are opaque to clients by the API's contract. What this
// relies on is what the migrator relies on: on etcd they are decimal
// integers that grow with every write, compared by apimachinery's
// resourceversion.CompareResourceVersion, which refuses any other form (then
// so does this command). A change of the CRD's spec after the checkpoint (a
// new storage version) also refuses: the checkpoint carries the CRD's
// generation.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const crdName = "loggers.example.com"

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: trim-stored-versions checkpoint | trim RESOURCEVERSION/GENERATION")
	}
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	switch args := flag.Args(); {
	case len(args) == 1 && args[0] == "checkpoint":
		since, err := Checkpoint(ctx, cfg)
		if err != nil {
			fail(err)
		}
		fmt.Println(since)
	case len(args) == 2 && args[0] == "trim":
		if err := Trim(ctx, cfg, args[1]); err != nil {
			fail(err)
		}
		fmt.Printf("%s: status.storedVersions trimmed to the storage version\n", crdName)
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}

// Checkpoint returns "<resourceVersion>/<generation>": the resourceVersion
// of a list of Loggers, which every later write exceeds, taken as the
// migrator takes it (a metadata list, limit 1, in a namespace that does not
// exist, so that no Logger is read), and the CRD's metadata.generation.
func Checkpoint(ctx context.Context, cfg *rest.Config) (string, error) {
	crd, gvr, err := loggerCRD(ctx, cfg)
	if err != nil {
		return "", err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	list, err := mc.Resource(gvr).Namespace("trim-stored-versions-checkpoint").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s/%d", list.GetResourceVersion(), crd.Generation), nil
}

// Trim sets status.storedVersions to the storage version alone, provided
// the CRD's spec is as at the checkpoint since and every Logger has a
// resourceVersion newer than since's; otherwise it names the Loggers not
// written since and changes nothing.
func Trim(ctx context.Context, cfg *rest.Config, since string) error {
	rv, gen, ok := strings.Cut(since, "/")
	generation, err := strconv.ParseInt(gen, 10, 64)
	if !ok || err != nil {
		return fmt.Errorf("checkpoint %q: want RESOURCEVERSION/GENERATION, as checkpoint prints it", since)
	}
	crd, gvr, err := loggerCRD(ctx, cfg)
	if err != nil {
		return err
	}
	if crd.Generation != generation {
		return fmt.Errorf("%s's spec changed since the checkpoint (generation %d, now %d): take a new checkpoint and write every Logger again", crdName, generation, crd.Generation)
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var old []string
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := mc.Resource(gvr).List(ctx, opts)
		if err != nil {
			return err
		}
		for _, o := range list.Items {
			cmp, err := resourceversion.CompareResourceVersion(o.ResourceVersion, rv)
			if err != nil {
				return fmt.Errorf("the resourceVersion of Logger %s/%s: %w", o.Namespace, o.Name, err)
			}
			if cmp <= 0 {
				old = append(old, o.Namespace+"/"+o.Name+" (resourceVersion "+o.ResourceVersion+")")
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	if len(old) > 0 {
		return fmt.Errorf("not trimmed: %d Logger(s) not written since resourceVersion %s, and so perhaps stored in another version: %s", len(old), rv, strings.Join(old, ", "))
	}
	// The CRD as read above: its resourceVersion makes the update fail with
	// a conflict if the CRD changed since.
	crd.Status.StoredVersions = []string{gvr.Version}
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = c.ApiextensionsV1().CustomResourceDefinitions().UpdateStatus(ctx, crd, metav1.UpdateOptions{})
	return err
}

// loggerCRD reads the CRD and the resource of its storage version.
func loggerCRD(ctx context.Context, cfg *rest.Config) (*apiextensionsv1.CustomResourceDefinition, schema.GroupVersionResource, error) {
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		return nil, schema.GroupVersionResource{}, err
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return crd, schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}, nil
		}
	}
	return nil, schema.GroupVersionResource{}, errors.New(crdName + " has no storage version")
}
