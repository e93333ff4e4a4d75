//go:build !cachetrace

package cache

func dumpTrace(*engine, string) {}
