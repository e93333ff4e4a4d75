package zkcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/chzyer/readline"
)

func isTerminal(f *os.File) bool { return readline.IsTerminal(int(f.Fd())) }

// completer adapts Shell.Complete to readline: it completes the word
// before the cursor and returns the suffixes to insert.
type completer struct{ s *Shell }

func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	if c.s == nil || pos > len(line) {
		return nil, 0
	}
	start := pos
	for start > 0 && !unicode.IsSpace(line[start-1]) {
		start--
	}
	word := string(line[start:pos])
	first := strings.TrimSpace(string(line[:start])) == ""
	n := pos - start
	var out [][]rune
	for _, cand := range c.s.Complete(context.Background(), word, first) {
		r := []rune(cand)
		if len(r) >= n {
			out = append(out, r[n:])
		}
	}
	return out, n
}

// promptWriter writes around the line being edited: readline's writer
// erases the prompt, writes, and draws it again, but only once its reader
// goroutine has started on the line, a moment after the prompt is shown.
// Output from watch events that arrives in that moment waits for it
// (briefly), so that the prompt is not lost under the event.
type promptWriter struct {
	rl      *readline.Instance
	reading *atomic.Bool // the main loop is in Readline
	w       io.Writer
}

func (p *promptWriter) Write(b []byte) (int, error) {
	if p.reading.Load() {
		for i := 0; i < 200 && p.reading.Load() && !p.rl.Terminal.IsReading(); i++ {
			time.Sleep(250 * time.Microsecond)
		}
	}
	return p.w.Write(b)
}

// interactive runs the shell on a terminal: zkCli's banner and prompt,
// line editing, a history kept in historyFile(), and completion. Ctrl-C
// abandons the line being typed, or interrupts the running command;
// Ctrl-D on an empty line or "quit" leaves.
func interactive(ctx context.Context, cfg Config, server string, stdin *os.File, stdout, stderr io.Writer) int {
	comp := &completer{}
	rl, err := readline.NewEx(&readline.Config{
		HistoryFile:       historyFile(),
		HistorySearchFold: true,
		AutoComplete:      comp,
		Stdin:             readline.NewCancelableStdin(stdin),
		Stdout:            stdout,
		Stderr:            stderr,
		FuncIsTerminal:    func() bool { return true },
		InterruptPrompt:   "^C",
		EOFPrompt:         "\n",
	})
	if err != nil {
		fmt.Fprintf(stderr, "zkgo cli: %v\n", err)
		return 1
	}
	defer rl.Close()
	var reading atomic.Bool
	cfg.Stdout = &promptWriter{rl: rl, reading: &reading, w: rl.Stdout()}
	cfg.Stderr = &promptWriter{rl: rl, reading: &reading, w: rl.Stderr()}
	s := NewShell(cfg)
	defer s.Close()
	comp.s = s
	s.onState = func() {
		rl.SetPrompt(s.Prompt())
		rl.Refresh()
	}
	fmt.Fprintf(cfg.Stdout, "Connecting to %s\nWelcome to ZooKeeper!\n", server)
	if err := s.Connect(ctx, server); err != nil {
		// Stay in the shell: "connect" may be tried again.
		fmt.Fprintf(cfg.Stderr, "%v\n", err)
	}
	for {
		rl.SetPrompt(s.Prompt())
		reading.Store(true)
		line, err := rl.Readline()
		reading.Store(false)
		if errors.Is(err, readline.ErrInterrupt) {
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			return 0
		}
		cctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		err = s.Exec(cctx, line)
		stop()
		if errors.Is(err, ErrQuit) {
			return 0
		}
	}
}
