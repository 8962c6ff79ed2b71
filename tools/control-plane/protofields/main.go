// Command protofields writes how kube-apiserver encodes every Kubernetes API type the fake API
// server answers with as protobuf, read from the `protobuf` struct tags that go-to-protobuf
// generated on the pinned Go types, beside the shape of each Go field. The fake API server reads
// the result (fake-apiserver/src/http/protobuf/go_protobuf.json) to read and write
// `application/vnd.kubernetes.protobuf` with the same bytes as kube-apiserver.
//
// The Go shape matters for the bytes: the generated marshallers write a value field (a string, a
// number, a struct) even when it is empty, a pointer field only when it is set, and a slice or a
// map only when it has entries (a map's keys sorted).
//
// A field is [number, JSON name, type]. A type is a scalar (string, bool, int32, int64, uint32,
// uint64, float64, bytes), a struct's name, or one of the types with their own encoding, named
// with "@" (Time, MicroTime, Duration, Quantity, IntOrString, FieldsV1, RawExtension, JSON,
// PropsOrBool, PropsOrArray, PropsOrStringArray). Before it, "?" marks a pointer, "[]" a slice
// and "{string}" a map with string keys (of the type after it); "@items" a named slice that is
// its own message, its entries in field 1. An empty JSON name is a struct inlined in JSON but a
// field of its own in protobuf.
//
// Regenerate with `cargo run -p control-plane --bin control-plane -- protobuf-fields`.
package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"tollgate.dev/tools/control-plane/internal/apitypes"
)

// The types whose protobuf or JSON form is written by hand in apimachinery, by their symbol.
var special = map[reflect.Type]string{
	reflect.TypeFor[metav1.Time]():                                  "@Time",
	reflect.TypeFor[metav1.MicroTime]():                             "@MicroTime",
	reflect.TypeFor[metav1.Duration]():                              "@Duration",
	reflect.TypeFor[resource.Quantity]():                            "@Quantity",
	reflect.TypeFor[intstr.IntOrString]():                           "@IntOrString",
	reflect.TypeFor[metav1.FieldsV1]():                              "@FieldsV1",
	reflect.TypeFor[runtime.RawExtension]():                         "@RawExtension",
	reflect.TypeFor[apiextensionsv1.JSON]():                         "@JSON",
	reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrBool]():        "@PropsOrBool",
	reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrArray]():       "@PropsOrArray",
	reflect.TypeFor[apiextensionsv1.JSONSchemaPropsOrStringArray](): "@PropsOrStringArray",
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
	protoMessage  = reflect.TypeFor[interface{ Marshal() ([]byte, error) }]()
	types         = map[string][][3]any{}
)

// The JSON schema types the apiextensions special types refer to must be walked too.
func init() {
	walk(reflect.TypeFor[apiextensionsv1.JSONSchemaProps]())
}

func hasOwnJSON(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

// typeOf names how a field of Go type t is encoded. The wire kind follows from the Go kind, as in
// the generated .proto files; the tags' first part is not always right (JSONSchemaProps' float64
// and bool fields say "bytes").
func typeOf(t reflect.Type, where string) string {
	prefix := ""
	if t.Kind() == reflect.Pointer {
		prefix = "?"
		t = t.Elem()
	}
	if s, ok := special[t]; ok {
		return prefix + s
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return prefix + "bytes"
		}
		inner := typeOf(t.Elem(), where)
		if t.Name() != "" && reflect.PointerTo(t).Implements(protoMessage) {
			// A named slice with its own marshaller (metav1.Verbs, ExtraValue): a message
			// holding the entries in field 1.
			return prefix + "@items[]" + inner
		}
		return prefix + "[]" + inner
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("%s: a map with %s keys", where, t.Key()))
		}
		// A map is a repeated entry message; its value's encoding is the entry's field 2.
		return prefix + "{string}" + typeOf(t.Elem(), where)
	case reflect.Struct:
		if hasOwnJSON(t) {
			panic(fmt.Sprintf("%s: %s writes its own JSON; name its encoding in `special`", where, t))
		}
		return prefix + walk(t)
	case reflect.String:
		return prefix + "string"
	case reflect.Bool:
		return prefix + "bool"
	case reflect.Int32:
		return prefix + "int32"
	case reflect.Int64:
		return prefix + "int64"
	case reflect.Uint32:
		return prefix + "uint32"
	case reflect.Uint64:
		return prefix + "uint64"
	case reflect.Float64:
		return prefix + "float64"
	}
	panic(fmt.Sprintf("%s: no protobuf encoding for %s", where, t))
}

func walk(t reflect.Type) string {
	n := apitypes.Name(t)
	if _, seen := types[n]; seen {
		return n
	}
	types[n] = nil // breaks recursion (JSONSchemaProps holds itself)
	types[n] = fieldsOf(t, n)
	return n
}

// walkFields walks a special type's struct as it is tagged, under the special type's own name.
func walkFields(t reflect.Type) string {
	n := apitypes.Name(t)
	if _, seen := types[n]; !seen {
		types[n] = fieldsOf(t, n)
	}
	return n
}

// quantity is resource.Quantity's message: its canonical string in field 1 (its fields are
// unexported, so no tag says so).
func quantity() string {
	n := "api/resource.Quantity"
	types[n] = [][3]any{{1, "string", "string"}}
	return n
}

func fieldsOf(t reflect.Type, n string) [][3]any {
	var fields [][3]any
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("protobuf")
		if !ok || tag == "-" {
			continue
		}
		parts := strings.Split(tag, ",")
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			panic(fmt.Sprintf("%s.%s: protobuf tag %q", n, f.Name, tag))
		}
		jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if jsonName == "-" || (jsonName == "" && !f.Anonymous) {
			// Not in JSON (runtime.Unknown's fields): named as in protobuf.
			for _, p := range parts {
				if name, ok := strings.CutPrefix(p, "name="); ok {
					jsonName = name
				}
			}
		}
		where := n + "." + f.Name
		ty := typeOf(f.Type, where)
		fields = append(fields, [3]any{num, jsonName, ty})
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i][0].(int) < fields[j][0].(int) })
	if fields == nil {
		fields = [][3]any{}
	}
	return fields
}

func main() {
	kinds := map[string]string{}
	for k, t := range apitypes.Kinds() {
		// Kinds without a generated marshaller (the options kinds' protobuf forms are, too)
		// are not served as protobuf.
		if !reflect.PointerTo(t).Implements(protoMessage) {
			continue
		}
		kinds[k] = walk(t)
	}
	kinds["WatchEvent"] = walk(reflect.TypeFor[metav1.WatchEvent]())
	kinds["Unknown"] = walk(reflect.TypeFor[runtime.Unknown]())
	// The special types' own messages, as their marshallers write them.
	shapes := map[string]string{
		"@Time":        walk(reflect.TypeFor[metav1.Timestamp]()),
		"@MicroTime":   walk(reflect.TypeFor[metav1.Timestamp]()),
		"@Quantity":    quantity(),
		"@Duration":    walk(reflect.TypeFor[metav1.Duration]()),
		"@IntOrString": walk(reflect.TypeFor[intstr.IntOrString]()),
	}
	for t, s := range special {
		if _, done := shapes[s]; !done {
			shapes[s] = walkFields(t)
		}
	}

	out := os.Stdout
	// One line per entry, so a regeneration's diff shows what changed.
	fmt.Fprintln(out, "{")
	fmt.Fprintf(out, "%s\n", `"generated": "protobuf fields of the Kubernetes API types (k8s.io/kubernetes `+apitypes.KubernetesVersion+`), by tools/control-plane/protofields. Regenerate: cargo run -p control-plane --bin control-plane -- protobuf-fields",`)
	quoted := func(v string) []byte { b, _ := json.Marshal(v); return b }
	writeMap(out, "kinds", kinds, quoted, ",")
	writeMap(out, "specials", shapes, quoted, ",")
	typed := map[string]string{}
	for n := range types {
		typed[n] = n
	}
	writeMap(out, "types", typed, func(n string) []byte { b, _ := json.Marshal(types[n]); return b }, "")
	fmt.Fprintln(out, "}")
}

func writeMap(out *os.File, name string, m map[string]string, value func(string) []byte, after string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(out, "%q: {\n", name)
	for i, k := range keys {
		sep := ","
		if i == len(keys)-1 {
			sep = ""
		}
		kb, _ := json.Marshal(k)
		fmt.Fprintf(out, "%s: %s%s\n", kb, value(m[k]), sep)
	}
	fmt.Fprintf(out, "}%s\n", after)
}
