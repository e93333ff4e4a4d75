package server_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/server"
	"github.com/zkgo/zkgo/zktest"
)

// versionRE is how tools read "Zookeeper version:": go-zookeeper's FLWSrvr
// (flw.go's zrVer, then time.Parse("01/02/2006 15:04 MST")), and the
// scripts that take the part before the first "-" or the comma.
var versionRE = regexp.MustCompile(`^(\d+\.\d+\.\d+)-([A-Za-z0-9\.\-]+), built on (\d\d/\d\d/\d\d\d\d \d\d:\d\d [A-Za-z0-9:\+\-]+)$`)

func TestFullVersion(t *testing.T) {
	commit := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	for _, tt := range []struct {
		name     string
		version  string
		revision string
		modified bool
		built    time.Time
		want     string
	}{
		{"default", "dev", "", false, time.Time{}, "3.8.0-zkgo-dev, built on 01/01/1970 00:00 GMT"},
		{"release", "v1.2.0", "0123456789abcdef0123456789abcdef01234567", false, commit, "3.8.0-zkgo-1.2.0-0123456789ab, built on 03/04/2026 04:06 GMT"},
		{"release, changed tree", "v1.2.0", "0123456789abcdef", true, commit, "3.8.0-zkgo-1.2.0-0123456789ab-dirty, built on 03/04/2026 04:06 GMT"},
		{"pseudo-version", "v0.0.0-20260304040607-0123456789ab", "0123456789abcdef0123", false, commit, "3.8.0-zkgo-0.0.0-20260304040607-0123456789ab, built on 03/04/2026 04:06 GMT"},
		{"pseudo-version, dirty", "v0.0.0-20260304040607-0123456789ab+dirty", "0123456789abcdef0123", true, commit, "3.8.0-zkgo-0.0.0-20260304040607-0123456789ab-dirty, built on 03/04/2026 04:06 GMT"},
		{"go run", "(devel)", "", false, time.Time{}, "3.8.0-zkgo-dev, built on 01/01/1970 00:00 GMT"},
		{"odd characters", "v1.0.0+incompatible_x", "", false, commit, "3.8.0-zkgo-1.0.0-incompatible-x, built on 03/04/2026 04:06 GMT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := server.FullVersion(tt.version, tt.revision, tt.modified, tt.built)
			if got != tt.want {
				t.Fatalf("FullVersion = %q, want %q", got, tt.want)
			}
			m := versionRE.FindStringSubmatch(got)
			if m == nil || m[1] != server.ProtocolVersion {
				t.Fatalf("%q does not parse as ZooKeeper's full version", got)
			}
			if _, err := time.Parse("01/02/2006 15:04 MST", m[3]); err != nil {
				t.Fatalf("build date of %q: %v", got, err)
			}
		})
	}
}

// TestVersionReported: srvr, stat, mntr and envi all print Version().
func TestVersionReported(t *testing.T) {
	srv := zktest.Start(t, func(o *server.Options) { o.FourLetterWords = []string{"*"} })
	v := server.Version()
	if !versionRE.MatchString(v) {
		t.Fatalf("Version() = %q", v)
	}
	for word, line := range map[string]string{
		"srvr": "Zookeeper version: " + v + "\n",
		"stat": "Zookeeper version: " + v + "\n",
		"mntr": "zk_version\t" + v + "\n",
		"envi": "zookeeper.version=" + v + "\n",
	} {
		if out := srv.FourLetterWord(word); !strings.Contains(out, line) {
			t.Errorf("%s does not print %q:\n%s", word, line, out)
		}
	}
}
