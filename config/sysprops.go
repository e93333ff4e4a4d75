package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// JVM system properties against zoo.cfg.
//
// ZooKeeper 3.8 reads a setting either from zoo.cfg (the keys
// QuorumPeerConfig parses itself: dataDir, clientPort, tickTime, server.N,
// sslQuorum, ...) or from a system property. Every other zoo.cfg key K is
// turned into the system property "zookeeper."+K by
// System.setProperty once the JVM is up, so:
//
//   - -Dzookeeper.K and zoo.cfg's K set the same thing, and zoo.cfg wins
//     (it overwrites the property from the command line). zkgo applies
//     -Dzookeeper.K as the zoo.cfg key K unless zoo.cfg has K.
//   - -Dzookeeper.K for a key QuorumPeerConfig parses itself does nothing
//     in ZooKeeper (except multiAddress.*, whose defaults come from the
//     property): a warning says to put K in zoo.cfg.
//   - Properties without the prefix that ZooKeeper reads (jute.maxbuffer,
//     readonlymode.enabled, znode.container.checkIntervalMs, and
//     java.security.auth.login.config, the JAAS file) cannot be set from
//     zoo.cfg in ZooKeeper; zkgo also takes them from zoo.cfg (its own
//     extension, zkgo.sasl.jaasConfig for the JAAS file), and the property
//     wins, because it is what ZooKeeper would use.
//
// A property is applied through the same parser path as its zoo.cfg key,
// so a bad value gets the same error, with "SERVER_JVMFLAGS:
// -Djute.maxbuffer" where a zoo.cfg key has "zoo.cfg:3: jute.maxbuffer".
// Properties ZooKeeper has and zkgo ignores get one warning each; flags and
// properties without a ZooKeeper meaning (-Xmx, -XX:..., -Dlog4j...,
// -Dzookeeper.log.dir, ...) are summed up in one line.

// sysKind is what a system property means to zkgo.
type sysKind int

const (
	sysQuiet      sysKind = iota // no ZooKeeper meaning (logging, the JVM): the summary line
	sysConfig                    // the zoo.cfg key; zoo.cfg's value wins
	sysWins                      // the zoo.cfg key (zkgo's extension); the property wins
	sysZooCfgOnly                // ZooKeeper reads the key only from zoo.cfg
	sysMisspelt                  // zookeeper.K for a property ZooKeeper reads as K
	sysIgnored                   // ZooKeeper reads it; zkgo does not need it
)

// jaasProperty is Java's name of the JAAS login configuration file.
const jaasProperty = "java.security.auth.login.config"

// systemOnly are the properties without the "zookeeper." prefix that
// ZooKeeper reads and zkgo honours, with their zoo.cfg keys in zkgo.
var systemOnly = map[string]string{
	"jute.maxbuffer":                  "jute.maxbuffer",
	"readonlymode.enabled":            "readonlymode.enabled",
	"znode.container.checkIntervalMs": "znode.container.checkIntervalMs",
	jaasProperty:                      "zkgo.sasl.jaasConfig",
	krb5ConfProperty:                  "zkgo.krb5.conf",
	"java.security.krb5.realm":        "zkgo.krb5.realm",
	"java.security.krb5.kdc":          "zkgo.krb5.kdc",
}

// krb5ConfProperty is Java's name of the Kerberos configuration file.
const krb5ConfProperty = "java.security.krb5.conf"

// systemIgnored are properties without the prefix that ZooKeeper's server
// reads and zkgo does not need.
var systemIgnored = setOf(
	"znode.container.maxPerMinute", "znode.container.maxNeverUsedIntervalMs",
	"follower.nodelay", "leader.nodelay", "learner.closeSocketAsync",
	"leader.closeSocketAsync", "learner.asyncSending", "sun.security.jgss.native",
	// Kerberos settings of the JVM without a meaning for zkgo (Go's
	// Kerberos never uses native GSS nor needs the Subject switch).
	"javax.security.auth.useSubjectCredsOnly", "sun.security.krb5.debug",
)

// zooCfgOnlyKeys are the keys QuorumPeerConfig (3.8) parses itself.
var zooCfgOnlyKeys = setOf(
	"dataDir", "dataLogDir", "clientPort", "localSessionsEnabled",
	"localSessionsUpgradingEnabled", "clientPortAddress", "secureClientPort",
	"secureClientPortAddress", "observerMasterPort", "clientPortListenBacklog",
	"tickTime", "maxClientCnxns", "minSessionTimeout", "maxSessionTimeout",
	"initLimit", "syncLimit", "connectToLearnerMasterLimit", "electionAlg",
	"quorumListenOnAllIPs", "peerType", "syncEnabled", "dynamicConfigFile",
	"autopurge.snapRetainCount", "autopurge.purgeInterval", "standaloneEnabled",
	"reconfigEnabled", "sslQuorum", "portUnification", "sslQuorumReloadCertFiles",
	"quorum.cnxn.threads.size", "oraclePath", "metricsProvider.className",
)

var zooCfgOnlyPrefixes = []string{"server.", "group.", "weight.", "metricsProvider.", "quorum.auth."}

// quietZooKeeper are zookeeper.* properties of the logging and JMX set up
// that zkServer.sh passes; they mean nothing to zkgo, which logs to stderr.
var quietZooKeeper = setOf(
	"log.dir", "log.file", "root.logger", "console.threshold", "log.threshold",
	"tracelog.dir", "tracelog.file", "log.maxfilesize", "log.maxbackupindex",
	"jmx.log4j.disable", "jmx.log4j.mbean",
)

// classifySystemProperty returns what the property key means and, for
// sysConfig and sysWins, the zoo.cfg key that sets the same in zkgo.
func classifySystemProperty(key string) (cfgKey string, kind sysKind) {
	if k, ok := systemOnly[key]; ok {
		return k, sysWins
	}
	switch {
	case systemIgnored[key]:
		return "", sysIgnored
	case strings.HasPrefix(key, "zkgo."):
		return key, sysConfig
	}
	k, ok := strings.CutPrefix(key, "zookeeper.")
	switch {
	case !ok || k == "":
		return "", sysQuiet
	case quietZooKeeper[k]:
		return "", sysQuiet
	case systemOnly[k] != "" && k != jaasProperty:
		return k, sysMisspelt
	case zooCfgOnlyKeys[k] || hasAnyPrefix(k, zooCfgOnlyPrefixes):
		return k, sysZooCfgOnly
	}
	return k, sysConfig
}

// systemProperties turns the JVM's -D flags into properties for the
// parser, merged with the file's (whose keys are trimmed) by ZooKeeper's
// precedence. It warns about conflicts and about what it ignores.
func (p *parser) systemProperties(j *JVM, file []property) []property {
	p.warnings = append(p.warnings, j.Warnings...)
	last := make(map[string]int, len(j.Properties))
	for i, sp := range j.Properties {
		last[sp.Key] = i
	}
	inFile := make(map[string]int, len(file))
	for i, pr := range file {
		inFile[pr.key] = i
	}
	drop := map[int]bool{}
	var sys []property
	quiet := append([]string(nil), j.Flags...)
	for i, sp := range j.Properties {
		flag := "-D" + sp.Key
		if l := j.Properties[last[sp.Key]]; l.Value != sp.Value && last[sp.Key] != i {
			p.warnings = append(p.warnings, fmt.Sprintf("%s: %s: given again in %s with another value; the last one wins, as in Java", sp.Source, flag, l.Source))
		}
		if last[sp.Key] != i {
			continue
		}
		at := sp.Source + ": " + flag
		warn := func(format string, args ...any) {
			p.warnings = append(p.warnings, at+": "+fmt.Sprintf(format, args...))
		}
		k, kind := classifySystemProperty(sp.Key)
		switch kind {
		case sysQuiet:
			quiet = append(quiet, flag)
			continue
		case sysZooCfgOnly:
			warn("ZooKeeper reads %s only from zoo.cfg, not as a system property; ignored (set it in zoo.cfg)", k)
			continue
		case sysMisspelt:
			warn("ZooKeeper reads -D%s, without the zookeeper. prefix; ignored", k)
			continue
		case sysIgnored:
			warn("setting of the Java server; ignored")
			continue
		case sysConfig:
			if n, ok := inFile[k]; ok {
				if file[n].value != strings.TrimSpace(sp.Value) {
					warn("zoo.cfg's %s (%s:%d) wins, as in ZooKeeper, which sets the property from zoo.cfg after the JVM starts", k, p.name, file[n].line)
				}
				continue
			}
			if n, ok := inFile["zookeeper."+k]; ok {
				drop[n] = true
				warn("overrides %s:%d (%s in zoo.cfg is a zkgo spelling; ZooKeeper reads the property)", p.name, file[n].line, file[n].key)
			}
		case sysWins:
			if n, ok := inFile[k]; ok {
				drop[n] = true
				warn("overrides %s:%d (%s), as ZooKeeper reads only the system property", p.name, file[n].line, k)
			}
		}
		value := strings.TrimSpace(sp.Value)
		if sp.Key == jaasProperty || sp.Key == krb5ConfProperty {
			value = jaasPath(value)
		}
		sys = append(sys, property{key: k, value: value, origin: at})
		p.c.SystemProperties = append(p.c.SystemProperties, flag+" ("+sp.Source+")")
	}
	if len(quiet) > 0 {
		shown := quiet
		if len(shown) > 4 {
			shown = shown[:4]
		}
		more := ""
		if len(quiet) > len(shown) {
			more = fmt.Sprintf(", and %d more", len(quiet)-len(shown))
		}
		p.warnings = append(p.warnings, fmt.Sprintf("JVM flags: %d without a meaning for zkgo ignored (%s%s)", len(quiet), strings.Join(shown, " "), more))
	}
	out := sys
	for i, pr := range file {
		if !drop[i] {
			out = append(out, pr)
		}
	}
	return out
}

// jaasPath is the file named by java.security.auth.login.config: a path
// or a file: URL, a leading '=' (replace rather than add to the JDK's
// files) dropped, relative to the working directory as in Java.
func jaasPath(v string) string {
	v = strings.TrimPrefix(v, "=")
	if strings.HasPrefix(v, "file:") {
		if u, err := url.Parse(v); err == nil && u.Path != "" {
			v = u.Path
		}
	}
	if v != "" && !filepath.IsAbs(v) {
		if abs, err := filepath.Abs(v); err == nil {
			v = abs
		}
	}
	return v
}
