package main

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/internal/atomicfile"
	"github.com/zkgo/zkgo/internal/boundedfile"
)

// writeDynamicConfig records a membership changed by reconfig as
// ZooKeeper does: the server lines go into zoo.cfg.dynamic.<version hex>
// beside the zoo.cfg, and the zoo.cfg names that file in dynamicConfigFile
// (its own server.N and version lines removed), so a restart comes back
// with the current membership. Both files are replaced atomically and
// synced.
func writeDynamicConfig(cfgPath, text string, version int64) error {
	var servers []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "server.") {
			servers = append(servers, l)
		}
	}
	dynName := filepath.Base(cfgPath) + ".dynamic." + strconv.FormatInt(version, 16)
	dynPath := filepath.Join(filepath.Dir(cfgPath), dynName)
	if err := atomicfile.Write(dynPath, []byte(strings.Join(servers, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	old, err := boundedfile.ReadFile(cfgPath, "configuration file", config.MaxConfigFileSize)
	if err != nil {
		return err
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "server.") || strings.HasPrefix(t, "version=") || strings.HasPrefix(t, "dynamicConfigFile=") {
			continue
		}
		out = append(out, l)
	}
	out = append(out, "dynamicConfigFile="+dynPath)
	return atomicfile.Write(cfgPath, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}
