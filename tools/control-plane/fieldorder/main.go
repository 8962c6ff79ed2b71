// Command fieldorder writes the JSON field order of every Kubernetes API type that the fake API
// server answers with, as Go's encoding/json writes them (struct declaration order, embedded structs
// inlined). The fake API server's encoder reads the result (fake-apiserver/src/http/go_field_order.json)
// to write its responses with the same bytes as kube-apiserver.
//
// Regenerate with `cargo run -p control-plane --bin control-plane -- field-order`.
package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"

	"tollgate.dev/tools/control-plane/internal/apitypes"
)

// A field's type reference: "" is a leaf written with sorted map keys, "*" an embedded object
// (runtime.RawExtension) written as its own kind, a type name a struct, and "[]" or "{}" before
// another reference a slice or a map of it. Wrappers are only written around non-leaves.
type ref = string

var (
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	types         = map[string][][2]string{}
)

// Types with their own MarshalJSON that still write a struct: their shape, by name.
var custom map[reflect.Type]func() ref

func init() {
	custom = map[reflect.Type]func() ref{
		reflect.TypeFor[runtime.RawExtension](): func() ref { return "*" },
		reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrBool](): func() ref {
			return walk(reflect.TypeFor[apiextensionsv1.JSONSchemaProps]())
		},
		reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrArray](): func() ref {
			return walk(reflect.TypeFor[apiextensionsv1.JSONSchemaProps]())
		},
		reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrStringArray](): func() ref {
			return walk(reflect.TypeFor[apiextensionsv1.JSONSchemaProps]())
		},
	}
}

func walk(t reflect.Type) ref {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if f, ok := custom[t]; ok {
		return f()
	}
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return ""
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return ""
		}
		if inner := walk(t.Elem()); inner != "" {
			return "[]" + inner
		}
		return ""
	case reflect.Map:
		if inner := walk(t.Elem()); inner != "" {
			return "{}" + inner
		}
		return ""
	case reflect.Struct:
		n := apitypes.Name(t)
		if _, seen := types[n]; !seen {
			types[n] = nil // breaks recursion (JSONSchemaProps holds itself)
			types[n] = fields(t)
		}
		return n
	default:
		return ""
	}
}

type field struct {
	name   string
	depth  int
	tagged bool
	ref    ref
}

// fields lists a struct's JSON fields in encoding/json's order: declaration order, embedded
// structs without a JSON name inlined, and of two fields with one name the shallower (or the
// tagged one) winning, both dropped when neither dominates.
func fields(t reflect.Type) [][2]string {
	var all []field
	var visit func(t reflect.Type, depth int)
	visit = func(t reflect.Type, depth int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			jsonName, _, _ := strings.Cut(tag, ",")
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && jsonName == "" && ft.Kind() == reflect.Struct {
				visit(ft, depth+1)
				continue
			}
			if !f.IsExported() {
				continue
			}
			n := jsonName
			if n == "" {
				n = f.Name
			}
			all = append(all, field{name: n, depth: depth, tagged: jsonName != "", ref: walk(f.Type)})
		}
	}
	visit(t, 0)
	var out [][2]string
	for i, f := range all {
		keep := true
		for j, g := range all {
			if i == j || g.name != f.name {
				continue
			}
			if g.depth < f.depth || (g.depth == f.depth && g.tagged && !f.tagged) ||
				(g.depth == f.depth && g.tagged == f.tagged) {
				keep = false
			}
		}
		if keep {
			out = append(out, [2]string{f.name, f.ref})
		}
	}
	return out
}

func main() {
	kinds := map[string]string{}
	for k, t := range apitypes.Kinds() {
		kinds[k] = walk(t)
	}
	// Written outside the scheme: /version, and the watch event frame.
	kinds["version.Info"] = walk(reflect.TypeFor[version.Info]())
	kinds["WatchEvent"] = walk(reflect.TypeFor[metav1.WatchEvent]())

	out := os.Stdout
	keys := func(m map[string]string) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	// One line per entry, so a regeneration's diff shows what changed.
	fmt.Fprintln(out, "{")
	fmt.Fprintf(out, "%s\n", `"generated": "Go field order of the Kubernetes API types (k8s.io/kubernetes `+apitypes.KubernetesVersion+`), by tools/control-plane/fieldorder. Regenerate: cargo run -p control-plane --bin control-plane -- field-order",`)
	fmt.Fprintln(out, `"kinds": {`)
	for i, k := range keys(kinds) {
		sep := ","
		if i == len(kinds)-1 {
			sep = ""
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(kinds[k])
		fmt.Fprintf(out, "%s: %s%s\n", kb, vb, sep)
	}
	fmt.Fprintln(out, "},")
	fmt.Fprintln(out, `"types": {`)
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		sep := ","
		if i == len(names)-1 {
			sep = ""
		}
		nb, _ := json.Marshal(n)
		fs := types[n]
		if fs == nil {
			fs = [][2]string{}
		}
		fb, _ := json.Marshal(fs)
		fmt.Fprintf(out, "%s: %s%s\n", nb, fb, sep)
	}
	fmt.Fprintln(out, "}")
	fmt.Fprintln(out, "}")
}
