package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/zkgo/zkgo/server"
)

// Release builds set these with the linker (scripts/release.sh, the
// Dockerfile):
//
//	go build -ldflags "-X main.buildVersion=v1.2.0 -X main.buildRevision=<commit> -X main.buildTime=<RFC 3339>"
//
// Each one that is set wins over what Go stamped into the binary
// (runtime/debug.ReadBuildInfo: the main module's version, and with
// -buildvcs the commit, its time and whether the tree had local changes).
// They must stay uninitialized string variables for -X to work. Go does
// not stamp the commit into builds made in a git worktree (a checkout
// whose .git is a file): there only -X gives the revision.
var buildVersion, buildRevision, buildTime string

// buildInfo is what "zkgo version" prints and the server reports.
type buildInfo struct {
	Version   string    // "v1.2.0", Go's pseudo-version, or "dev"
	Revision  string    // the VCS commit, or ""
	Time      time.Time // the commit's time (or -X main.buildTime), or zero
	Modified  bool      // the working tree had local changes
	GoVersion string
	Platform  string // GOOS/GOARCH
}

// version is zkgo's own version, printed by "zkgo version", the usage text
// and the server's first lines.
var version = currentBuild().Version

func init() {
	b := currentBuild()
	server.SetVersion(b.Version, b.Revision, b.Modified, b.Time)
}

func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return makeBuildInfo(bi, buildVersion, buildRevision, buildTime)
}

// makeBuildInfo reads what Go stamped (bi may be nil), then applies the
// linker's values that are set. A revision ending in "-dirty" (git
// describe --dirty's habit) marks a modified tree.
func makeBuildInfo(bi *debug.BuildInfo, ldVersion, ldRevision, ldTime string) buildInfo {
	b := buildInfo{Version: "dev", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time, _ = time.Parse(time.RFC3339, s.Value)
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if ldVersion != "" {
		b.Version = ldVersion
	}
	if ldRevision != "" {
		b.Revision = strings.TrimSuffix(ldRevision, "-dirty")
		b.Modified = strings.HasSuffix(ldRevision, "-dirty")
	}
	if ldTime != "" {
		if t, err := time.Parse(time.RFC3339, ldTime); err == nil {
			b.Time = t
		}
	}
	return b
}

func runVersion(args []string) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	short := fs.Bool("short", false, "print only the version")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: zkgo version [-short]\n\nPrints zkgo's version, the commit it was built from and the version string\nsrvr, stat and mntr report.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	b := currentBuild()
	if *short {
		fmt.Println(b.Version)
		return 0
	}
	w := os.Stdout
	fmt.Fprintf(w, "zkgo %s\n", b.Version)
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(w, "revision:  %s\n", rev)
	if !b.Time.IsZero() {
		fmt.Fprintf(w, "time:      %s\n", b.Time.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "modified:  %t\n", b.Modified)
	fmt.Fprintf(w, "go:        %s %s\n", b.GoVersion, b.Platform)
	fmt.Fprintf(w, "reports:   %s\n", server.Version())
	return 0
}
