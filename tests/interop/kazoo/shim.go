package kazoo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// QuorumPeerMain is the class kazoo's test harness (kazoo/testing/common.py)
// asks java to run, followed by the path of the zoo.cfg it wrote.
const QuorumPeerMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// javaShim is the script installed as "java" first on PATH. It accepts
// exactly the command lines the harness builds,
//
//	java [-cp|-classpath X] [-Dk=v ...] [-X.../-server/...] QuorumPeerMain CFG
//
// and runs "zkgo server CFG" with the -D flags in SERVER_JVMFLAGS (each one
// single-quoted, so a value may hold a space), the way zkServer.sh hands
// them to java. The class path and the JVM's own flags are dropped.
// Anything else (another class, a jar, a missing or extra argument, java
// -version) is refused with exit status 2 and a message on stderr, so a
// harness that starts servers some other way fails loudly instead of
// running something unexpected.
//
// Placeholders: @ZKGO@ (the zkgo binary), @LOGDIR@ (where each server's
// output goes, one file per zoo.cfg directory), @PDEATHSIG@ (a command
// prefix making the kernel kill zkgo if the harness dies, or empty).
const javaShim = `#!/bin/sh
# java shim for kazoo's test harness: runs zkgo instead of Apache ZooKeeper.
# Written by github.com/zkgo/zkgo/tests/interop/kazoo; see shim.go there.
set -eu
die() {
	echo "zkgo java shim: $*" >&2
	echo "zkgo java shim: expected: java [-cp X] [-Dk=v ...] [-X...] @CLASS@ zoo.cfg" >&2
	exit 2
}
flags=
while [ $# -gt 0 ]; do
	case "$1" in
	-cp | -classpath | --class-path)
		[ $# -ge 2 ] || die "$1 without a value"
		shift 2
		;;
	-D?*)
		q=$(printf '%s' "$1" | sed "s/'/'\\\\''/g")
		flags="$flags '$q'"
		shift
		;;
	-X* | -server | -client | -ea | -da | -esa | -dsa | -d64)
		shift
		;;
	@CLASS@)
		shift
		[ $# -eq 1 ] || die "want exactly one argument (zoo.cfg) after the class, got $#"
		[ -f "$1" ] || die "no configuration file $1"
		log="@LOGDIR@/$(basename "$(dirname "$1")").log"
		echo "zkgo java shim: SERVER_JVMFLAGS=$flags zkgo server $1" >>"$log"
		unset JVMFLAGS ZOOCFGDIR
		SERVER_JVMFLAGS="$flags"
		export SERVER_JVMFLAGS
		exec @PDEATHSIG@ "@ZKGO@" server "$1" >>"$log" 2>&1
		;;
	*)
		die "unexpected argument: $1"
		;;
	esac
done
die "no main class"
`

// WriteJavaShim writes the java shim (javaShim) into dir as dir/java,
// running zkgo (an absolute path) and appending each server's output to a
// file in logDir. pdeathsig, when true, runs zkgo under
// "setpriv --pdeathsig KILL" so that a harness killed mid-run leaves no
// server behind.
func WriteJavaShim(dir, zkgo, logDir string, pdeathsig bool) (string, error) {
	for _, p := range []string{zkgo, logDir} {
		if !filepath.IsAbs(p) || strings.ContainsAny(p, "\"$`\\\n") {
			return "", fmt.Errorf("java shim: %q must be an absolute path without shell quoting characters", p)
		}
	}
	prefix := ""
	if pdeathsig {
		prefix = "setpriv --pdeathsig KILL --"
	}
	script := strings.NewReplacer("@ZKGO@", zkgo, "@LOGDIR@", logDir, "@PDEATHSIG@", prefix, "@CLASS@", QuorumPeerMain).Replace(javaShim)
	path := filepath.Join(dir, "java")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", err
	}
	return path, nil
}
