// Package envtest runs controller-runtime's envtest as a Go controller's tests run it: Start()
// starts the kube-apiserver and etcd of KUBEBUILDER_ASSETS (the fake API server's links from
// `cargo xtask envtest-assets`, or the reference control plane's binaries), installs a CRD and a
// mutating webhook served by controller-runtime's webhook server, and a manager's controller
// reconciles what a client-go clientset writes as protobuf.
//
// fake-apiserver/tests/api/envtest_go.rs builds this test and runs it on both.
package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const namespace = "envtest-check"

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.tollgate.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "tollgate.dev",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte("3")}},
							}},
						},
					},
				},
			}},
		},
	}
}

// A mutating webhook on ConfigMaps of the test's namespace, which envtest points at its local
// webhook server (it fills in the URL and the CA bundle).
func mutatingWebhook() *admissionv1.MutatingWebhookConfiguration {
	path := "/label-configmaps"
	fail := admissionv1.Fail
	none := admissionv1.SideEffectClassNone
	return &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label-configmaps"},
		TypeMeta:   metav1.TypeMeta{Kind: "MutatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "label-configmaps.tollgate.dev",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			ClientConfig: admissionv1.WebhookClientConfig{
				Service: &admissionv1.ServiceReference{Name: "unused", Namespace: "unused", Path: &path},
			},
			NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": namespace},
			},
			Rules: []admissionv1.RuleWithOperations{{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule: admissionv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
				},
			}},
		}},
	}
}

type labeller struct{}

func (labeller) Handle(_ context.Context, req admission.Request) admission.Response {
	return admission.Patched("labelled",
		jsonPatch("add", "/metadata/labels", map[string]string{"mutated-by": req.UserInfo.Username}))
}

func jsonPatch(op, path string, value any) webhook.JSONPatchOp {
	return webhook.JSONPatchOp{Operation: op, Path: path, Value: value}
}

// Sets data.reconciled on every ConfigMap of the namespace.
type reconciler struct{ client.Client }

func (r reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cm corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Data["reconciled"] == "yes" {
		return ctrl.Result{}, nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["reconciled"] = "yes"
	return ctrl.Result{}, r.Update(ctx, &cm)
}

func TestEnvtestStartsAndHostsAController(t *testing.T) {
	env := &envtest.Environment{
		CRDs:                  []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks: []*admissionv1.MutatingWebhookConfiguration{mutatingWebhook()},
		},
	}
	began := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest did not start: %v", err)
	}
	started := time.Since(began)
	t.Logf("envtest Start() took %v", started)
	defer func() {
		if err := env.Stop(); err != nil {
			t.Errorf("envtest did not stop: %v", err)
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wh := env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics: server.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wh.LocalServingHost, Port: wh.LocalServingPort, CertDir: wh.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	mgr.GetWebhookServer().Register("/label-configmaps", &webhook.Admission{Handler: labeller{}})
	err = ctrl.NewControllerManagedBy(mgr).For(&corev1.ConfigMap{}).
		WithEventFilter(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == namespace
		})).Complete(reconciler{mgr.GetClient()})
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager stopped: %v", err)
		}
	}()
	waitFor(t, "the webhook server", func() error {
		return mgr.GetWebhookServer().StartedChecker()(&http.Request{})
	})

	// client-go's clientset, asked for protobuf as Go controllers' clients are.
	proto := rest.CopyConfig(cfg)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	clientset := kubernetes.NewForConfigOrDie(proto)
	_, err = clientset.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("namespace: %v", err)
	}
	created, err := clientset.CoreV1().ConfigMaps(namespace).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"a": "1"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("ConfigMap through the webhook: %v", err)
	}
	// envtest's admin is the user the webhook saw.
	if got := created.Labels["mutated-by"]; got != "admin" {
		t.Fatalf("the webhook's label: got %q, want %q (labels %v)", got, "admin", created.Labels)
	}
	waitFor(t, "the controller's reconcile", func() error {
		cm, err := clientset.CoreV1().ConfigMaps(namespace).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data["reconciled"] != "yes" {
			return fmt.Errorf("data is %v", cm.Data)
		}
		return nil
	})

	// The CRD envtest installed serves, with its schema's default.
	widgets := schema.GroupVersionKind{Group: "tollgate.dev", Version: "v1", Kind: "Widget"}
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgets)
	w.SetNamespace(namespace)
	w.SetName("w1")
	w.Object["spec"] = map[string]any{}
	if err := mgr.GetClient().Create(ctx, w); err != nil {
		t.Fatalf("Widget: %v", err)
	}
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	if size != 3 {
		t.Fatalf("the Widget's defaulted size: got %d, want 3 (%v)", size, w.Object)
	}

	if path := os.Getenv("ENVTEST_REPORT"); path != "" {
		report, _ := json.Marshal(map[string]int64{"start_micros": started.Microseconds()})
		if err := os.WriteFile(path, report, 0o644); err != nil {
			t.Fatalf("report: %v", err)
		}
	}
}

// waitFor retries check for up to 30 s: what a controller does happens a little later.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v after 30s", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
