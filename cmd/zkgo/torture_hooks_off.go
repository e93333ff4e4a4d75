//go:build !zkgofaults

package main

// faultHooks: built without the fault controls; zkgo torture refuses to
// run.
const faultHooks = false
