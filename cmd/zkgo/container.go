package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/boundedfile"
)

// zooEnv maps the official Apache ZooKeeper image's variables
// (docker-library/zookeeper's docker-entrypoint.sh) to the zoo.cfg keys
// they set.
var zooEnv = []struct{ env, key string }{
	{"ZOO_DATA_DIR", "dataDir"},
	{"ZOO_DATA_LOG_DIR", "dataLogDir"},
	{"ZOO_TICK_TIME", "tickTime"},
	{"ZOO_INIT_LIMIT", "initLimit"},
	{"ZOO_SYNC_LIMIT", "syncLimit"},
	{"ZOO_AUTOPURGE_SNAPRETAINCOUNT", "autopurge.snapRetainCount"},
	{"ZOO_AUTOPURGE_PURGEINTERVAL", "autopurge.purgeInterval"},
	{"ZOO_MAX_CLIENT_CNXNS", "maxClientCnxns"},
	{"ZOO_STANDALONE_ENABLED", "standaloneEnabled"},
	{"ZOO_ADMINSERVER_ENABLED", "admin.enableServer"},
	{"ZOO_4LW_COMMANDS_WHITELIST", "4lw.commands.whitelist"},
}

// zooEnvIgnored are the official image's variables that configure the JVM
// or log4j: they mean nothing to zkgo, which logs to stderr.
var zooEnvIgnored = []string{"ZOO_LOG_DIR", "ZOO_LOG4J_PROP", "JVMFLAGS", "SERVER_JVMFLAGS"}

// runContainer is "zkgo container", the container image's entrypoint. It
// does what the official image's docker-entrypoint.sh does, without a
// shell (the image has none), then runs the server in this process:
//
//   - $ZOO_CONF_DIR/zoo.cfg (default /conf/zoo.cfg) is used unchanged if it
//     exists (mounted by the user, or written at an earlier start of the
//     same container); otherwise it is written from the template (the
//     image's /etc/zkgo/zoo.cfg) with the ZOO_* variables applied:
//     the keys of zooEnv, ZOO_SERVERS (whitespace-separated server.N
//     lines) and ZOO_CFG_EXTRA (whitespace-separated key=value lines).
//   - $dataDir/myid is written from ZOO_MY_ID if it does not exist.
//
// The configuration directory must be writable: reconfig rewrites zoo.cfg
// and writes zoo.cfg.dynamic.<version> beside it.
func runContainer(args []string) int {
	fs := flag.NewFlagSet("container", flag.ContinueOnError)
	template := fs.String("template", "/etc/zkgo/zoo.cfg", "zoo.cfg to start from when $ZOO_CONF_DIR/zoo.cfg does not exist")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: zkgo container [-template FILE] [-- SERVER FLAGS]

The container image's entrypoint. Uses $ZOO_CONF_DIR/zoo.cfg (default
/conf/zoo.cfg) if it exists; otherwise writes it from the template with the
official ZooKeeper image's variables applied: ZOO_SERVERS (server.N lines,
separated by spaces), ZOO_MY_ID (written to dataDir/myid if that file does
not exist), ZOO_DATA_DIR, ZOO_DATA_LOG_DIR, ZOO_TICK_TIME, ZOO_INIT_LIMIT,
ZOO_SYNC_LIMIT, ZOO_MAX_CLIENT_CNXNS, ZOO_STANDALONE_ENABLED,
ZOO_ADMINSERVER_ENABLED, ZOO_AUTOPURGE_*, ZOO_4LW_COMMANDS_WHITELIST and
ZOO_CFG_EXTRA (key=value entries separated by spaces). Then runs
"zkgo server [SERVER FLAGS] $ZOO_CONF_DIR/zoo.cfg".

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, 0); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfgPath, err := containerConfig(*template, os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "zkgo container: %v\n", err)
		return 1
	}
	return runServer(append(fs.Args(), cfgPath))
}

// containerConfig writes zoo.cfg and myid as runContainer describes and
// returns zoo.cfg's path.
func containerConfig(template string, getenv func(string) string) (string, error) {
	for _, v := range zooEnvIgnored {
		if getenv(v) != "" {
			fmt.Fprintf(os.Stderr, "zkgo container: %s is ignored (it configures Java or log4j; zkgo logs to stderr)\n", v)
		}
	}
	confDir := getenv("ZOO_CONF_DIR")
	if confDir == "" {
		confDir = "/conf"
	}
	cfgPath := filepath.Join(confDir, "zoo.cfg")
	text, err := boundedfile.ReadFile(cfgPath, "configuration file", config.MaxConfigFileSize)
	switch {
	case err == nil:
		fmt.Fprintf(os.Stderr, "zkgo container: using %s as it is (ZOO_* variables apply only when it does not exist)\n", cfgPath)
	case errors.Is(err, os.ErrNotExist):
		t, err := boundedfile.ReadFile(template, "configuration template", config.MaxConfigFileSize)
		if err != nil {
			return "", fmt.Errorf("template: %w", err)
		}
		text = []byte(applyZooEnv(string(t), getenv))
		if err := os.MkdirAll(confDir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(cfgPath, text, 0o644); err != nil {
			return "", err
		}
		fmt.Fprintf(os.Stderr, "zkgo container: wrote %s from %s and the ZOO_* variables\n", cfgPath, template)
	default:
		return "", err
	}
	id := strings.TrimSpace(getenv("ZOO_MY_ID"))
	if id == "" {
		return cfgPath, nil
	}
	if n, err := strconv.ParseInt(id, 10, 64); err != nil || n < 0 {
		return "", fmt.Errorf("ZOO_MY_ID=%q: not a server id", id)
	}
	dataDir := cfgValue(string(text), "dataDir")
	if dataDir == "" {
		return "", fmt.Errorf("ZOO_MY_ID is set but %s has no dataDir for the myid file", cfgPath)
	}
	if !filepath.IsAbs(dataDir) {
		dataDir = filepath.Join(confDir, dataDir)
	}
	myid := filepath.Join(dataDir, "myid")
	old, err := boundedfile.ReadFile(myid, "myid file", boundedfile.Small)
	switch {
	case err == nil:
		if strings.TrimSpace(string(old)) != id {
			fmt.Fprintf(os.Stderr, "zkgo container: %s holds %s, not ZOO_MY_ID=%s; it is kept, as the official image does\n", myid, strings.TrimSpace(string(old)), id)
		}
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dataDir, 0o750); err != nil {
			return "", err
		}
		if err := os.WriteFile(myid, []byte(id+"\n"), 0o644); err != nil {
			return "", err
		}
	default:
		return "", err
	}
	return cfgPath, nil
}

// applyZooEnv returns the zoo.cfg text with the ZOO_* variables applied:
// a key that is set replaces its line, or is added at the end.
func applyZooEnv(text string, getenv func(string) string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	set := func(key, value string) {
		for i, l := range lines {
			if k, _, ok := cfgLine(l); ok && k == key {
				lines[i] = key + "=" + value
				return
			}
		}
		lines = append(lines, key+"="+value)
	}
	for _, e := range zooEnv {
		if v := getenv(e.env); v != "" {
			set(e.key, v)
		}
	}
	if servers := strings.Fields(getenv("ZOO_SERVERS")); len(servers) > 0 {
		kept := lines[:0]
		clientAddrGiven := false
		for _, s := range servers {
			clientAddrGiven = clientAddrGiven || strings.Contains(s, ";")
		}
		for _, l := range lines {
			k, _, ok := cfgLine(l)
			// The server lines name the client address (";2181", as in
			// the official image's examples): a clientPort of the
			// template would have to agree with it, so it goes.
			if ok && (strings.HasPrefix(k, "server.") || clientAddrGiven && (k == "clientPort" || k == "clientPortAddress")) {
				continue
			}
			kept = append(kept, l)
		}
		lines = append(kept, servers...)
	}
	for _, kv := range strings.Fields(getenv("ZOO_CFG_EXTRA")) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// cfgLine splits a key=value line; comments and blank lines are not ones.
func cfgLine(l string) (key, value string, ok bool) {
	l = strings.TrimSpace(l)
	if l == "" || l[0] == '#' || l[0] == '!' {
		return "", "", false
	}
	k, v, ok := strings.Cut(l, "=")
	return strings.TrimSpace(k), strings.TrimSpace(v), ok
}

// cfgValue is the last value of key in a zoo.cfg text, or "".
func cfgValue(text, key string) string {
	value := ""
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := cfgLine(l); ok && k == key {
			value = v
		}
	}
	return value
}
