//go:build !cachetrace

package cache

// tracing is set by the cachetrace build tag: the engine then records what
// it reads and decides (trace_on.go), for debugging tests. Off, the calls
// compile away.
const tracing = false

func trace(e *engine, format string, a ...any) {}
