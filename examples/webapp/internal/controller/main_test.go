package controller_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "github.com/reconcilekit/reconcilekit/examples/webapp/api/v1alpha1"
	"github.com/reconcilekit/reconcilekit/reconcile/reconciletest/testenv"
)

// env is the package's control plane: a kube-apiserver whose validating
// webhook, served by this test process, refuses the delete of an object
// labelled ProtectedLabel; kube-controller-manager and kwok, so that the
// WebApps' Deployments roll out as in a cluster.
var env *testenv.Env

// ProtectedLabel marks an object whose deletion the test's webhook
// refuses, as a policy engine (Kyverno, Gatekeeper) would.
const ProtectedLabel = "webapp.test/protected"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	assets, err := testenv.FindAssets()
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "tests that need an API server will be skipped:", err)
		return m.Run()
	}
	te := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{"../../config/crd"},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		WebhookInstallOptions:    envtest.WebhookInstallOptions{ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{protectWebhook()}},
	}
	if _, err := te.Start(); err != nil {
		_ = te.Stop()
		fmt.Fprintln(os.Stderr, "FAIL: starting the control plane:", err)
		return 1
	}
	defer func() { _ = te.Stop() }()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served, err := serveWebhook(ctx, te.WebhookInstallOptions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: the webhook server:", err)
		return 1
	}
	env, err = testenv.Attach(te, testenv.Options{
		AddToScheme:       []func(*runtime.Scheme) error{webappv1.AddToScheme, apiextensionsv1.AddToScheme},
		ControllerManager: true,
		Kwok:              true,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	stop()
	if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "the webhook server:", err)
	}
	return code
}

// protectWebhook is the validating webhook that refuses the delete of a
// ConfigMap or PodDisruptionBudget labelled ProtectedLabel. envtest
// points it at this process.
func protectWebhook() *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "protect-delete"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "protect.webapp.test",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "webhook", Path: ptr.To("/protect")},
			},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ProtectedLabel: "true"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"", "policy"}, APIVersions: []string{"v1"},
					Resources: []string{"configmaps", "poddisruptionbudgets"},
				},
			}},
		}},
	}
}

// serveWebhook serves the protect webhook where envtest told the API
// server to find it, until ctx ends.
func serveWebhook(ctx context.Context, o envtest.WebhookInstallOptions) (<-chan error, error) {
	srv := webhook.NewServer(webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir})
	srv.Register("/protect", &webhook.Admission{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		if req.Operation == admissionv1.Delete {
			return admission.Denied(fmt.Sprintf("%s %s/%s is protected: remove the label %s first", req.Kind.Kind, req.Namespace, req.Name, ProtectedLabel))
		}
		return admission.Allowed("")
	})})
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	// Ready once it answers TLS on its port.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := srv.StartedChecker()(&http.Request{}); err == nil {
			return done, nil
		}
		if time.Now().After(deadline) {
			return nil, errors.New("the webhook server did not start within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
