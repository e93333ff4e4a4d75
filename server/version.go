package server

import (
	"strings"
	"sync/atomic"
	"time"
)

// The version string srvr, stat, mntr, envi, the AdminServer and the
// console report. It has the shape of Apache ZooKeeper's
// Version.getFullVersion(), "<version>-<revision>, built on <date>", so
// that tools keep parsing it:
//
//	3.8.0-zkgo-<zkgo version>[-<revision>][-dirty], built on MM/dd/yyyy HH:mm GMT
//
// The leading "3.8.0" is the protocol zkgo speaks; tools that compare
// versions read it from the part before the first "-". The part before
// the comma holds only letters, digits, dots and dashes, and the date is
// ZooKeeper 3.4's "MM/dd/yyyy HH:mm zone" (3.5+ print "yyyy-MM-dd HH:mm
// UTC"): go-zookeeper's FLWSrvr parses exactly that and fails on the
// newer form, and no tool we know of needs the newer one.

// ProtocolVersion is the Apache ZooKeeper release whose wire protocol and
// behaviour zkgo implements; it leads the reported version.
const ProtocolVersion = "3.8.0"

var version atomic.Pointer[string]

func init() { SetVersion("dev", "", false, time.Time{}) }

// SetVersion sets the version the server reports from then on: zkgo's own
// version (a release such as "v1.2.0", or Go's pseudo-version of a build
// from a repository), the VCS revision ("" if unknown; the first 12
// characters are shown), whether the working tree had local changes, and
// the build (or commit) time (zero: unknown, shown as the Unix epoch).
// The zkgo binary calls it once at start, before New; the default, for
// tests and other programs embedding the server, is "dev". Safe for
// concurrent use.
func SetVersion(zkgoVersion, revision string, modified bool, built time.Time) {
	s := FullVersion(zkgoVersion, revision, modified, built)
	version.Store(&s)
}

// Version returns the version string the server reports (see SetVersion).
func Version() string { return *version.Load() }

// FullVersion formats a version as SetVersion stores it.
func FullVersion(zkgoVersion, revision string, modified bool, built time.Time) string {
	v := strings.TrimPrefix(zkgoVersion, "v")
	dirty := strings.HasSuffix(v, "+dirty")
	v = strings.TrimSuffix(v, "+dirty")
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	// Go's pseudo-versions (v0.0.0-20260101120000-abcdef123456) already
	// end with the revision.
	if revision != "" && !strings.HasSuffix(v, revision) {
		v += "-" + revision
	}
	if modified || dirty {
		v += "-dirty"
	}
	if built.IsZero() {
		built = time.Unix(0, 0)
	}
	return ProtocolVersion + "-zkgo-" + versionSafe(v) + ", built on " + built.UTC().Format("01/02/2006 15:04") + " GMT"
}

// versionSafe replaces what tools do not expect before the comma (go-
// zookeeper accepts [A-Za-z0-9.-]) with dashes: "+incompatible", a
// release name with an underscore.
func versionSafe(v string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			return r
		}
		return '-'
	}, v)
}
