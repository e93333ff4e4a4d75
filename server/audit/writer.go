package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	DefaultQueue      = 10000
	DefaultMaxSize    = 10 << 20 // logback.xml's RFAAUDIT MaxFileSize 10MB
	DefaultMaxBackups = 10       // its FixedWindowRollingPolicy maxIndex
)

// LoggerName is what the file's lines name as their logger: %c{2} of
// org.apache.zookeeper.audit.Slf4jAuditLogger.
const LoggerName = "audit.Slf4jAuditLogger"

// Config configures a Writer.
type Config struct {
	// File is the audit file, opened for appending (created 0640). ""
	// writes the events to Log instead, one record each (message
	// "audit", the line in attribute "event").
	File string
	// Log is the server's log: drops are reported there, and the events
	// too when File is "". Default slog.Default().
	Log *slog.Logger
	// Queue bounds the events waiting to be written. Default DefaultQueue.
	Queue int
	// MaxSize rotates the file when a line would take it past this many
	// bytes: File.1 … File.MaxBackups, as logback's
	// FixedWindowRollingPolicy. Default DefaultMaxSize; negative: never.
	MaxSize int64
	// MaxBackups is how many rotated files are kept. Default
	// DefaultMaxBackups.
	MaxBackups int
}

// Writer writes audit events in the background. Its methods are safe for
// concurrent use; Log never blocks.
type Writer struct {
	cfg  Config
	log  *slog.Logger
	ch   chan Event
	stop chan struct{}
	done chan struct{}
	once sync.Once

	stopped atomic.Bool
	dropped atomic.Int64
	written atomic.Int64

	// The writing goroutine's.
	f        *os.File
	bw       *bufio.Writer
	size     int64
	line     []byte
	reported int64 // drops already reported
	lastErr  time.Time
}

// Open opens the audit file (if any) and starts the writer.
func Open(cfg Config) (*Writer, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.MaxSize == 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.MaxBackups <= 0 {
		cfg.MaxBackups = DefaultMaxBackups
	}
	w := &Writer{cfg: cfg, log: cfg.Log, ch: make(chan Event, cfg.Queue),
		stop: make(chan struct{}), done: make(chan struct{})}
	if cfg.File != "" {
		if err := w.openFile(); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
	}
	go w.run()
	return w, nil
}

func (w *Writer) openFile() error {
	f, err := os.OpenFile(w.cfg.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.f, w.size = f, st.Size()
	if w.bw == nil {
		w.bw = bufio.NewWriterSize(f, 64<<10)
	} else {
		w.bw.Reset(f)
	}
	return nil
}

// Log queues e. It returns false, and counts the event as dropped, when
// the queue is full (or the writer is closed): it never waits.
func (w *Writer) Log(e Event) bool {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if !w.stopped.Load() {
		select {
		case w.ch <- e:
			return true
		default:
		}
	}
	w.dropped.Add(1)
	return false
}

// Dropped is the number of events dropped because the queue was full.
func (w *Writer) Dropped() int64 { return w.dropped.Load() }

// Written is the number of events written.
func (w *Writer) Written() int64 { return w.written.Load() }

// Close writes the queued events, reports drops not yet reported, and
// closes the file. Events logged after Close are dropped.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.stopped.Store(true)
		close(w.stop)
	})
	<-w.done
	return nil
}

func (w *Writer) run() {
	defer close(w.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case e := <-w.ch:
			w.write(&e)
			// Write what else is queued, then flush once.
			for more := true; more; {
				select {
				case e := <-w.ch:
					w.write(&e)
				default:
					more = false
				}
			}
			w.flush()
		case <-tick.C:
			w.reportDrops()
		case <-w.stop:
			for more := true; more; {
				select {
				case e := <-w.ch:
					w.write(&e)
				default:
					more = false
				}
			}
			w.flush()
			w.reportDrops()
			if w.f != nil {
				if err := w.f.Close(); err != nil {
					w.log.Error("audit log: closing the file", "file", w.cfg.File, "err", err)
				}
			}
			return
		}
	}
}

// reportDrops logs the drops since the last report (at most once a second:
// the ticker).
func (w *Writer) reportDrops() {
	n := w.dropped.Load()
	if n == w.reported {
		return
	}
	w.log.Warn("audit log: events dropped, the queue was full (the writer could not keep up)",
		"dropped", n-w.reported, "droppedTotal", n, "queue", w.cfg.Queue)
	w.reported = n
}

func (w *Writer) write(e *Event) {
	level := slog.LevelInfo
	if e.Result == Failure {
		level = slog.LevelError // Slf4jAuditLogger: LOG.error for failures
	}
	if w.f == nil && w.cfg.File == "" {
		w.log.LogAttrs(context.Background(), level, "audit", slog.String("event", e.String()))
		w.written.Add(1)
		return
	}
	b := w.line[:0]
	b = appendLogbackTime(b, e.Time)
	if level == slog.LevelError {
		b = append(b, " ERROR "...)
	} else {
		b = append(b, " INFO "...)
	}
	b = append(b, LoggerName...)
	b = append(b, ": "...)
	b = e.AppendTo(b)
	b = append(b, '\n')
	w.line = b
	if w.f == nil {
		w.dropped.Add(1) // the file could not be reopened after rotating
		return
	}
	if w.cfg.MaxSize > 0 && w.size > 0 && w.size+int64(len(b)) > w.cfg.MaxSize {
		if w.rotate(); w.f == nil {
			w.dropped.Add(1)
			return
		}
	}
	n, err := w.bw.Write(b)
	w.size += int64(n)
	if err != nil {
		w.writeFailed(err)
		return
	}
	w.written.Add(1)
}

func (w *Writer) flush() {
	if w.bw == nil || w.f == nil {
		return
	}
	if err := w.bw.Flush(); err != nil {
		w.writeFailed(err)
	}
}

// writeFailed logs a write error (at most once a minute) and starts a
// fresh buffer: the lines in the failed one are lost, and counted.
func (w *Writer) writeFailed(err error) {
	w.dropped.Add(int64(w.bw.Buffered()/128 + 1)) // an estimate: lines are ~128 bytes
	w.bw.Reset(w.f)
	if time.Since(w.lastErr) >= time.Minute {
		w.lastErr = time.Now()
		w.log.Error("audit log: cannot write the file", "file", w.cfg.File, "err", err)
	}
}

// rotate renames File to File.1, File.1 to File.2, … dropping the oldest,
// and opens a new File.
func (w *Writer) rotate() {
	w.flush()
	if err := w.f.Close(); err != nil {
		w.log.Warn("audit log: closing the file to rotate it", "file", w.cfg.File, "err", err)
	}
	w.f = nil
	name := w.cfg.File
	if err := os.Remove(name + "." + strconv.Itoa(w.cfg.MaxBackups)); err != nil && !errors.Is(err, os.ErrNotExist) {
		w.log.Warn("audit log: removing the oldest file", "err", err)
	}
	for i := w.cfg.MaxBackups - 1; i >= 1; i-- {
		from := name + "." + strconv.Itoa(i)
		if err := os.Rename(from, name+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("audit log: rotating", "file", from, "err", err)
		}
	}
	if err := os.Rename(name, name+".1"); err != nil {
		w.log.Warn("audit log: rotating", "file", name, "err", err)
	}
	if err := w.openFile(); err != nil {
		w.log.Error("audit log: cannot reopen the file after rotating it; audit events are dropped", "file", name, "err", err)
	}
}

// appendLogbackTime appends t as logback's %d{ISO8601}:
// "2006-01-02 15:04:05,000" in the local time zone.
func appendLogbackTime(b []byte, t time.Time) []byte {
	b = t.AppendFormat(b, "2006-01-02 15:04:05.000")
	b[len(b)-4] = ','
	return b
}
