package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/tree"
	"github.com/zkgo/zkgo/zkdata"
)

// Moving in and out: zkgo import (an Apache ZooKeeper data directory into
// a zkgo one), zkgo export (the way back: a ZooKeeper snapshot), and zkgo
// snapshot status/restore (ZooKeeper-format snapshot files, as export and
// Apache ZooKeeper write them).

// targetFlags are the flags that name a zkgo data directory: the
// member's zoo.cfg (its dataDir/dataLogDir, server.N lines and myid), or
// a standalone server's directory.
type targetFlags struct {
	config, dataDir, dataLogDir *string
}

func addTargetFlags(fs *flag.FlagSet, verb string) targetFlags {
	return targetFlags{
		config:     fs.String("config", "", "the zkgo member's `zoo.cfg`: "+verb+" its dataDir/dataLogDir, as that member (server.N lines and myid)"),
		dataDir:    fs.String("data-dir", "", "a standalone server's data `directory` (instead of -config)"),
		dataLogDir: fs.String("data-log-dir", "", "with -data-dir: the dataLogDir, if set apart"),
	}
}

// options returns the server options naming the data directory.
func (t targetFlags) options() (server.Options, *config.Config, error) {
	switch {
	case *t.config != "" && *t.dataDir != "":
		return server.Options{}, nil, errors.New("-config and -data-dir exclude each other")
	case *t.config != "":
		cfg, _, err := config.Load(*t.config)
		if err != nil {
			return server.Options{}, nil, err
		}
		return memberOptions(cfg), cfg, nil
	case *t.dataDir != "":
		return server.Options{DataDir: *t.dataDir, DataLogDir: *t.dataLogDir}, nil, nil
	}
	return server.Options{}, nil, errors.New("name the zkgo data directory with -config zoo.cfg or -data-dir DIR")
}

// memberOptions are the options of the member cfg describes that say
// where its data lives and which ensemble it belongs to.
func memberOptions(cfg *config.Config) server.Options {
	opts := server.Options{DataDir: cfg.DataDir, DataLogDir: cfg.DataLogDir, MaxBuffer: cfg.MaxBuffer}
	if opts.DataLogDir == cfg.DataDir {
		opts.DataLogDir = ""
	}
	if cfg.Distributed() {
		opts.ServerID = max(cfg.MyID, 0)
		for _, sv := range cfg.Servers {
			opts.Peers = append(opts.Peers, server.Peer{
				ID:       sv.ID,
				Addr:     net.JoinHostPort(sv.Host, strconv.Itoa(sv.PeerPort)),
				Observer: sv.Role == config.Observer,
			})
		}
		opts.DisableStandalone = !cfg.StandaloneEnabled
	}
	return opts
}

func runImport(args []string) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	target := addTargetFlags(fs, "import into")
	verify := fs.Bool("verify", false, "after writing, read the new data directory back and compare its tree with the input by ZooKeeper's digest")
	dry := fs.Bool("n", false, "dry run: read and check the ZooKeeper data, print the summary, write nothing")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo import [flags] [ZK_DATA_DIR [ZK_DATA_LOG_DIR]]

Reads an Apache ZooKeeper 3.4–3.9 data directory (version-2/: the newest
valid snapshot, plain, .gz or .snappy, and the transaction logs after it,
replayed as ZooKeeper's recovery does: a torn last transaction is
dropped, a checksum failure in the middle stops with the file and offset)
and writes a zkgo data directory with the same tree: data, stats (so
sequential names continue where they were), ACLs, quotas, containers, TTL
nodes, and sessions with their ephemerals (they start anew, each with its
whole timeout, as after a ZooKeeper restart; clients can resume them).

Without ZK_DATA_DIR it reads the ZooKeeper data where -config's zoo.cfg
keeps it (its dataDir and dataLogDir): zkgo's data goes beside it, in
the zkgo/ subdirectory, so the same zoo.cfg starts zkgo afterwards.

For an ensemble: stop writes (stop the ZooKeeper ensemble), copy one
member's ZooKeeper data directory, and import that same copy on every
member with its own zoo.cfg (-config) before starting any of them.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	opts, cfg, err := target.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo import:", err)
		return 2
	}
	src, srcLog := fs.Arg(0), fs.Arg(1)
	if src == "" {
		if cfg == nil {
			fmt.Fprintln(os.Stderr, "zkgo import: name the ZooKeeper data directory (or use -config, whose dataDir holds it)")
			return 2
		}
		src, srcLog = cfg.DataDir, cfg.DataLogDir
	}
	fmt.Fprintf(os.Stderr, "reading Apache ZooKeeper data in %s ...\n", src)
	ropts := zkdata.ReadOptions{MaxBuffer: opts.MaxBuffer}
	bar := newProgressBar(os.Stderr)
	if bar != nil {
		ropts.Progress = bar.show
	}
	im, err := zkdata.ReadDir(src, srcLog, ropts)
	bar.done()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo import:", err)
		return 1
	}
	printSummary(os.Stdout, im.Summary())
	if *dry {
		fmt.Println("dry run: nothing written")
		return 0
	}
	var b bytes.Buffer
	if err := im.WriteZkgoSnapshot(&b); err != nil {
		fmt.Fprintln(os.Stderr, "zkgo import:", err)
		return 1
	}
	if err := server.SeedDataDir(opts, &b); err != nil {
		fmt.Fprintln(os.Stderr, "zkgo import:", err)
		return 1
	}
	fmt.Printf("wrote the zkgo data directory %s\n", filepath.Join(dataHome(opts), "zkgo"))
	if *verify {
		t, err := server.LoadDataDir(opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zkgo import: verify:", err)
			return 1
		}
		got, want := zkdata.FromTree(t).Digest(), im.Digest()
		if got != want {
			fmt.Fprintf(os.Stderr, "zkgo import: verify: the written tree's digest %#x differs from the input's %#x\n", got, want)
			return 1
		}
		fmt.Printf("verified: the written tree has the input's digest %#x\n", uint64(got))
	}
	return 0
}

// dataHome is the directory whose zkgo/ subdirectory holds the data.
func dataHome(o server.Options) string {
	if o.DataLogDir != "" {
		return o.DataLogDir
	}
	return o.DataDir
}

func printSummary(w io.Writer, s zkdata.Summary) {
	fmt.Fprintf(w, "znodes:    %d (%d bytes of data)\n", s.Znodes, s.DataBytes)
	fmt.Fprintf(w, "sessions:  %d\n", s.Sessions)
	fmt.Fprintf(w, "last zxid: %#x\n", s.LastZxid)
	if s.Snapshot != "" {
		fmt.Fprintf(w, "snapshot:  %s (zxid %#x)\n", s.Snapshot, s.SnapshotZxid)
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(w, "skipped:   %s\n", sk)
	}
	if len(s.Logs) > 0 {
		fmt.Fprintf(w, "logs:      %s (%d transactions replayed)\n", strings.Join(s.Logs, ", "), s.Txns)
	}
	for _, tt := range s.TornTails {
		fmt.Fprintf(w, "torn tail: %s (dropped, as ZooKeeper does)\n", tt)
	}
	if s.DigestChecks > 0 || len(s.DigestMismatches) > 0 {
		fmt.Fprintf(w, "digests:   %d checked, %d mismatched\n", s.DigestChecks, len(s.DigestMismatches))
	}
	for _, m := range s.DigestMismatches {
		fmt.Fprintf(w, "mismatch:  %s\n", m)
	}
	if s.DeadSessionNodes > 0 {
		fmt.Fprintf(w, "dropped:   %d ephemerals of sessions the data no longer has (as ZooKeeper does at start)\n", s.DeadSessionNodes)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note:      %s\n", n)
	}
}

func runExport(args []string) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	target := addTargetFlags(fs, "export from")
	compression := fs.String("compression", "", "write the snapshot compressed: gz or snappy (as snapshot.compression.method)")
	noDigest := fs.Bool("no-digest", false, "leave out the tree digest (for ZooKeeper before 3.6, which stops reading at the first seal anyway)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo export [flags] OUT_DIR

Writes the tree of a stopped zkgo member (its newest snapshot and the
committed log after it) as an Apache ZooKeeper snapshot,
OUT_DIR/version-2/snapshot.<zxid>, with its checksum and digest, which
Apache ZooKeeper 3.8 loads and serves unchanged: point its dataDir at
OUT_DIR. For an ensemble, export one member and give every ZooKeeper
member a copy. Sessions and their ephemerals come along; clients cannot
resume them on ZooKeeper (it derives session passwords its own way), so
the ephemerals go once their sessions expire.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	opts, _, err := target.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo export:", err)
		return 2
	}
	t, err := server.LoadDataDir(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo export:", err)
		return 1
	}
	path, err := writeZKSnapshot(fs.Arg(0), t, zkdata.WriteOptions{Compression: *compression, NoDigest: *noDigest})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo export:", err)
		return 1
	}
	printSummary(os.Stdout, zkdata.FromTree(t).Summary())
	fmt.Printf("wrote %s\n", path)
	return 0
}

// writeZKSnapshot writes t as OUT_DIR/version-2/snapshot.<zxid>, fsynced,
// through a temporary file renamed into place. It refuses a version-2
// that holds ZooKeeper data already.
func writeZKSnapshot(out string, t *tree.Tree, wo zkdata.WriteOptions) (string, error) {
	dir := filepath.Join(out, "version-2")
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if n := e.Name(); strings.HasPrefix(n, "snapshot.") || strings.HasPrefix(n, "log.") {
				return "", fmt.Errorf("%s holds ZooKeeper data already (%s): export into an empty directory", dir, n)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, zkdata.SnapshotName(t.LastZxid(), wo.Compression))
	f, err := os.CreateTemp(dir, ".export-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	err = zkdata.WriteSnapshot(f, t, wo)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	return path, err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func runSnapshot(args []string) int {
	usage := func() {
		fmt.Fprint(os.Stderr, `Usage:
  zkgo snapshot save -server HOST:ADMINPORT -auth USER:PASSWORD [DIR]
                                                      a running member's tree, as DIR/snapshot.<zxid>
  zkgo snapshot status FILE                           what a snapshot file holds
  zkgo snapshot restore [-config zoo.cfg | -data-dir DIR] FILE
                                                      a new zkgo data directory from it

FILE is an Apache ZooKeeper snapshot (snapshot.<hex zxid>, optionally .gz
or .snappy), as zkgo export and Apache ZooKeeper write them. Restored
members form a new ensemble (a new formation), so they never mix with the
members of the one the snapshot came from; restore every member of an
ensemble from the same file before starting any.
`)
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "save":
		return snapshotSave(args[1:])
	case "status":
		return snapshotStatus(args[1:])
	case "restore":
		return snapshotRestore(args[1:])
	case "help", "-h", "-help", "--help":
		usage()
		return 0
	}
	fmt.Fprintf(os.Stderr, "zkgo snapshot: unknown subcommand %q\n", args[0])
	usage()
	return 2
}

// snapshotSave fetches a snapshot from a running member's AdminServer
// (its snapshot command, as ZooKeeper 3.9's) into DIR/snapshot.<zxid>,
// checked and fsynced before it is renamed into place.
func snapshotSave(args []string) int {
	fs := flag.NewFlagSet("snapshot save", flag.ContinueOnError)
	addr := fs.String("server", "127.0.0.1:8080", "the member's AdminServer `host:port`")
	urlPath := fs.String("command-url", "/commands", "the AdminServer's admin.commandURL")
	auth := fs.String("auth", "", "`user:password` of a digest identity with every permission on / (or the super user)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 1 || *auth == "" {
		fmt.Fprintln(os.Stderr, "usage: zkgo snapshot save -server HOST:ADMINPORT -auth USER:PASSWORD [DIR]")
		return 2
	}
	dir := "."
	if fs.NArg() == 1 {
		dir = fs.Arg(0)
	}
	path, n, err := fetchSnapshot(*addr, *urlPath, *auth, dir, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot save:", err)
		return 1
	}
	fmt.Printf("saved %s (%d bytes, checksums good)\n", path, n)
	return 0
}

func fetchSnapshot(addr, urlPath, auth, dir string, timeout time.Duration) (string, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	u := "http://" + addr + "/" + strings.Trim(urlPath, "/") + "/snapshot?streaming=true"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Authorization", "digest "+auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", 0, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	zxid, err := strconv.ParseInt(strings.TrimPrefix(resp.Header.Get("last_zxid"), "0x"), 16, 64)
	if err != nil {
		return "", 0, fmt.Errorf("the answer has no last_zxid header (%q): is %s a zkgo or ZooKeeper 3.9 AdminServer?", resp.Header.Get("last_zxid"), addr)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	f, err := os.CreateTemp(dir, ".snapshot-save-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(f.Name())
	n, err := io.Copy(f, resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("received %d of %d bytes", n, resp.ContentLength)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, err
	}
	path := filepath.Join(dir, zkdata.SnapshotName(zxid, ""))
	// Check it whole (checksum seals, digest) before it takes the name.
	rf, err := os.Open(f.Name())
	if err != nil {
		return "", 0, err
	}
	_, err = zkdata.ReadSnapshot(bufio.NewReaderSize(rf, 1<<16), zxid, zkdata.ReadOptions{})
	rf.Close()
	if err != nil {
		return "", 0, fmt.Errorf("the received snapshot does not read back: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", 0, err
	}
	return path, n, syncDir(dir)
}

func snapshotStatus(args []string) int {
	// No flags; parsed all the same for -help and "--" (a FILE named -x).
	fs := flag.NewFlagSet("snapshot status", flag.ContinueOnError)
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zkgo snapshot status FILE")
		return 2
	}
	im, err := zkdata.ReadSnapshotFile(fs.Arg(0), zkdata.ReadOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot status:", err)
		return 1
	}
	st, err := os.Stat(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot status:", err)
		return 1
	}
	printSummary(os.Stdout, im.Summary())
	fmt.Printf("file:      %d bytes, checksums good\n", st.Size())
	fmt.Printf("digest:    %#x\n", uint64(im.Digest()))
	return 0
}

func snapshotRestore(args []string) int {
	fs := flag.NewFlagSet("snapshot restore", flag.ContinueOnError)
	target := addTargetFlags(fs, "restore into")
	if err := parseArgs(fs, args, 0); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zkgo snapshot restore [-config zoo.cfg | -data-dir DIR] FILE")
		return 2
	}
	opts, _, err := target.options()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot restore:", err)
		return 2
	}
	im, err := zkdata.ReadSnapshotFile(fs.Arg(0), zkdata.ReadOptions{MaxBuffer: opts.MaxBuffer})
	if err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot restore:", err)
		return 1
	}
	var b bytes.Buffer
	if err := im.WriteZkgoSnapshot(&b); err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot restore:", err)
		return 1
	}
	if err := server.SeedDataDir(opts, &b); err != nil {
		fmt.Fprintln(os.Stderr, "zkgo snapshot restore:", err)
		return 1
	}
	printSummary(os.Stdout, im.Summary())
	fmt.Printf("wrote the zkgo data directory %s\n", filepath.Join(dataHome(opts), "zkgo"))
	return 0
}

// flagExit is the exit status after a flag parsing error: 0 for -help.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// progressBar draws "file: 45% (12.3 of 27.0 MB)" on one terminal line
// while zkdata reads files; nil when stderr is not a terminal.
type progressBar struct {
	w     *os.File
	shown bool
}

func newProgressBar(w *os.File) *progressBar {
	if !isTerminal(w) {
		return nil
	}
	return &progressBar{w: w}
}

// isTerminal reports whether f is a terminal (a character device).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (b *progressBar) show(file string, done, size int64) {
	pct := 100.0
	if size > 0 {
		pct = 100 * float64(done) / float64(size)
	}
	const width = 30
	fill := min(int(pct*width/100), width)
	fmt.Fprintf(b.w, "\r%-28s [%s%s] %3.0f%% (%.1f of %.1f MB)", file, strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		pct, float64(done)/1e6, float64(size)/1e6)
	b.shown = true
}

// done ends the bar's line.
func (b *progressBar) done() {
	if b != nil && b.shown {
		fmt.Fprintln(b.w)
	}
}
