//go:build tools

// Package pin pins Kueue's module for `go mod download`: the suites run from a copy of it, built
// with its own go.mod, so nothing here is compiled.
package pin

import _ "sigs.k8s.io/kueue/apis/kueue/v1beta2"
