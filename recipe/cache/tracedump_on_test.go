//go:build cachetrace

package cache

import "os"

// dumpTrace writes what e recorded (cachetrace builds).
func dumpTrace(e *engine, file string) { os.WriteFile(file, []byte(traceDump(e)), 0o644) }
