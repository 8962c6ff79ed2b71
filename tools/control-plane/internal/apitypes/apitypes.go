// Package apitypes is the set of Kubernetes API kinds the fake API server answers with, as the
// generators under tools/control-plane read them from the pinned Go types.
package apitypes

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// The Kubernetes version the pinned modules are; the generated files say so.
const KubernetesVersion = "v1.37.2"

var stable = regexp.MustCompile(`^v[0-9]+$`)

// Kinds maps "apiVersion/Kind" to its Go type, for every kind of a stable version (and aggregated
// discovery's beta, which the fake still answers).
func Kinds() map[string]reflect.Type {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme,
		apidiscoveryv2.AddToScheme,
		apidiscoveryv2beta1.AddToScheme,
		metav1.AddMetaToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	kinds := map[string]reflect.Type{}
	for gvk, t := range s.AllKnownTypes() {
		if !stable.MatchString(gvk.Version) && gvk.Group != "apidiscovery.k8s.io" {
			continue
		}
		kinds[gvk.GroupVersion().String()+"/"+gvk.Kind] = t
	}
	return kinds
}

var pkgOf = map[string]string{}

// Name is a Go type's name in the generated tables: its package path's last two parts and its
// name (`core/v1.Pod`), unique among the types walked.
func Name(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	short := t.Name()
	if len(parts) >= 2 {
		short = parts[len(parts)-2] + "/" + parts[len(parts)-1] + "." + t.Name()
	}
	if prev, ok := pkgOf[short]; ok && prev != t.PkgPath() {
		panic(fmt.Sprintf("two types named %s: %s and %s", short, prev, t.PkgPath()))
	}
	pkgOf[short] = t.PkgPath()
	return short
}
