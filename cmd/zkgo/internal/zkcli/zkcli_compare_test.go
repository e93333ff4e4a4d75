package zkcli

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zktest"
)

const zkCliPath = "/usr/share/zookeeper/bin/zkCli.sh"

// compareScript is run by Apache ZooKeeper's zkCli.sh and by zkgo cli, each
// against a fresh server; their output must match. It avoids what differs
// on purpose (version, the usage header, watch timing, empty ACL lists).
const compareScript = `create /a hello
create /a x
ls /
ls -s /a
get -s /a
stat /nope
stat /a
getAcl /a
set -v 7 /a z
set -s /a z
create /a/b
delete /a
ls
create /n
get /n
create /q "hello world"
get /q
create /m ''
get /m
whoami
sync /a
getEphemerals
getAllChildrenNumber /
setquota -n 5 /a
listquota /a
get /zookeeper/quota/a/zookeeper_limits
get /zookeeper/quota/a/zookeeper_stats
create -c /c
create -s /a/s
history
printwatches
create -e /a/e1
create -e -s /a/es
ls -R /a
getEphemerals /a
setAcl /a/b world:anyone:cdr
getAcl -s /a/b
get a
get /a/
setquota -n 5 /nope
setquota -N 5 /a/b
setquota /a
setquota -n 1 -b 2 /a
listquota /nope
delquota /nope
setquota -b 10 /a
setquota -B 100 /a
listquota /a
delquota -b /a
listquota /a
delquota /a
listquota /a
ls /zookeeper/quota
set /a
getAllChildrenNumber
addWatch -m bogus /a
removewatches /nope
create -c -e /cc
create -t 100 /ttl
create -t abc /ttl
create x
redo 3
redo 99
create /x x bad,world:anyone:cdrwa
getAcl /x
setAcl /x world:anyone:q
sync nope
delete /
config -c
get /n extra
ls -x /
deleteall /a/b
ls /a
deleteall /nope
create /eph
create -e /eph2
create /eph2/child
addauth digest bob:pw
whoami
`

func TestCompareWithZkCli(t *testing.T) {
	if _, err := os.Stat(zkCliPath); err != nil {
		t.Skipf("Apache ZooKeeper's zkCli.sh is not installed (%s): apt-get install zookeeper", zkCliPath)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java on PATH for zkCli.sh")
	}
	srvJava, srvGo := zktest.Start(t), zktest.Start(t)

	cmd := exec.Command(zkCliPath, "-server", srvJava.Addr())
	cmd.Stdin = strings.NewReader(compareScript)
	var jout, jerr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &jout, &jerr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("zkCli.sh: %v\n%s", err, jerr.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("zkCli.sh did not finish")
	}

	var gout, gerr bytes.Buffer
	if code := Main([]string{"-server", srvGo.Addr()}, strings.NewReader(compareScript), &gout, &gerr, "test"); code != 0 {
		t.Errorf("zkgo cli: exit %d", code)
	}

	times := regexp.MustCompile(`(?m)^([cm]time = ).*$`)
	javaOut := jout.String()
	// zkCli's banner and its connection event.
	const connected = "WatchedEvent state:SyncConnected type:None path:null\n"
	if i := strings.Index(javaOut, connected); i >= 0 {
		javaOut = javaOut[i+len(connected):]
	}
	javaOut = times.ReplaceAllString(javaOut, "${1}T")
	goOut := times.ReplaceAllString(gout.String(), "${1}T")

	var javaErr []string
	for _, l := range strings.SplitAfter(jerr.String(), "\n") {
		if strings.HasPrefix(l, "SLF4J:") || strings.HasPrefix(strings.TrimSpace(l), "at ") {
			continue
		}
		// Parse errors carry the commons-cli class name in zkCli.
		l = regexp.MustCompile(`^org\.apache\.commons\.cli\.\w+: `).ReplaceAllString(l, "")
		// zkCli prints null where the path is unknown to it.
		l = strings.Replace(l, "KeeperErrorCode = InvalidACL\n", "KeeperErrorCode = InvalidACL for /x\n", 1)
		javaErr = append(javaErr, l)
	}
	t.Logf("compared %d bytes of stdout, %d lines of stderr", len(goOut), len(javaErr))
	if goOut != javaOut {
		t.Errorf("stdout differs\nzkCli.sh:\n%s\nzkgo cli:\n%s", javaOut, goOut)
	}
	if je := strings.Join(javaErr, ""); gerr.String() != je {
		t.Errorf("stderr differs\nzkCli.sh:\n%s\nzkgo cli:\n%s", je, gerr.String())
	}
}
