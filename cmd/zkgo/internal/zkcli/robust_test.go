package zkcli

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGarbageInput runs lines made of command names, options and odd
// words: every one must end with a result, never a panic.
func TestGarbageInput(t *testing.T) {
	h := newHarness(t)
	words := []string{
		"/", "/a", "/a/b", "a", "", `""`, "''", `"x y"`, "-", "--", "-s", "-w", "-R", "-v", "-v5", "-v=x", "-1",
		"-t", "-e", "-c", "-b", "-n", "-N", "-B", "-m", "-x", "-file", "-members", "-add", "-remove",
		"world:anyone:cdrwa", "digest:u:p:r", "ip:1.2.3.4:rw", "x:y", ":::", ",,", "persistent", "PERSISTENT_RECURSIVE",
		"0", "99", "0x10", "#1", "-99999999999", "9999999999999999999", "/zookeeper", "/zookeeper/quota",
		"/a//b", "/.", "/..", "/\x01", "/\u00e9", "/\U0001F600", "on", "off", "\t", "127.0.0.1:1",
	}
	var names []string
	for _, c := range commands {
		// watch runs until interrupted (cachewatch_test.go tests it).
		if c.name != "quit" && c.name != "close" && c.name != "connect" && c.name != "watch" {
			names = append(names, c.name)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	h.exec("create /a x")
	codes := map[int]int{}
	defer func() { t.Logf("exit codes: %v", codes) }()
	for i := 0; i < 600; i++ {
		parts := []string{names[r.IntN(len(names))]}
		for n := r.IntN(5); n > 0; n-- {
			parts = append(parts, words[r.IntN(len(words))])
		}
		line := strings.Join(parts, " ")
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("%q panicked: %v", line, p)
				}
			}()
			codes[ExitCode(h.s.Exec(ctx, line))]++
		}()
	}
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{"ls -s /a", `set /a "x y" -v 3`, "setquota -n 5 /a", "-sv5", "count=1,bytes=2=;x=3",
		"server.1=h:1:2;3\nversion=1", "world:anyone:cdrwa,bad", "/a/./b", "-v=", "\"'\"'"} {
		f.Add(s)
	}
	defs := []optDef{{"s", false, ""}, {"v", true, ""}, {"file", true, ""}}
	f.Fuzz(func(t *testing.T, s string) {
		words := splitLine(s)
		if len(words) > 0 {
			parseOpts(words, defs, []string{"s", "v"})
		}
		validatePath(s, false)
		validatePath(s, true)
		parseStatsTrack(s)
		clientConfigString(s)
		parseTimeout(s)
		sh := NewShell(Config{})
		defer sh.Close()
		sh.parseACL(s)
		sh.Complete(context.Background(), s, true)
		c := &completer{s: sh}
		rs := []rune(s)
		c.Do(rs, len(rs))
	})
}
