//go:build !unix

package server

func maxFDs() int64 { return -1 }
