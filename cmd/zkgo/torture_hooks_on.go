//go:build zkgofaults

package main

// faultHooks: this binary reads the fault controls (ZKGO_FAULT_*) that
// zkgo torture sets for its members.
const faultHooks = true
