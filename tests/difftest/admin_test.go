package difftest

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// TestAdminServerShapes compares the AdminServer's JSON of zkgo and
// Apache ZooKeeper 3.8 (Jetty from Debian's jars, started by TestMain):
// for every command, the same set of keys, the same JSON type for each,
// and the same keys in the nested objects (server_stats, connections,
// …). Values differ (ports, ids, times) and are not compared.
//
// Not run against Apache: connection_stat_reset, stat_reset and
// observer_connection_stat_reset (their answers are "command" and "error"
// only, checked in server's tests; running them would reset the shared
// server's statistics), and set_trace_mask with a mask.
func TestAdminServerShapes(t *testing.T) {
	requireServers(t)
	ctx := t.Context()
	// A session with an ephemeral node and a watch on each server, so
	// that connections, dump and the watch commands have entries.
	for _, addr := range []string{apache.Addr(), zkgo.Addr()} {
		c, err := zk.Connect(ctx, addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Create(ctx, "/admin-shapes", nil, zk.OpenACLUnsafe, zk.ModeEphemeral); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := c.GetW(ctx, "/admin-shapes"); err != nil {
			t.Fatal(err)
		}
		// Both servers log a digest every 128 zxids: write past one, so
		// that hash's list has an entry to compare.
		for i := range 130 {
			if _, err := c.Set(ctx, "/admin-shapes", []byte{byte(i)}, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	zkgoAdmin := "http://" + zkgo.AdminAddr().String() + "/commands/"
	apacheAdmin := "http://" + apache.AdminAddr() + "/commands/"

	// The command list: the same primary names.
	names := func(base string) []string {
		body := get(t, strings.TrimSuffix(base, "/"))
		var out []string
		for _, l := range strings.Split(string(body), "\n") {
			if _, rest, ok := strings.Cut(l, `">`); ok {
				out = append(out, strings.TrimSuffix(rest, "</a>"))
			}
		}
		return out
	}
	// zkgo's own operator commands (ClickHouse Keeper's words; server's
	// leadership.go) are the documented extra ones.
	zkgoOnly := []string{"create_snapshot", "log_info", "request_leadership", "yield_leadership"}
	zn, an := names(zkgoAdmin), names(apacheAdmin)
	zn = slices.DeleteFunc(zn, func(n string) bool { return slices.Contains(zkgoOnly, n) })
	if !slices.Equal(zn, an) {
		t.Errorf("commands:\nzkgo   %q\napache %q", zn, an)
	}

	// Keys Apache has that zkgo does not, and keys zkgo has that Apache
	// does not, per command (path "cmd" or "cmd.field"): the documented
	// differences (docs/DESIGN.md, "AdminServer").
	missing := map[string][]string{
		// java.* and the JVM's memory maximum have no Go counterpart.
		"environment": {"java.version", "java.vendor", "java.home", "java.class.path", "java.library.path", "java.io.tmpdir", "java.compiler", "os.memory.max"},
	}
	extra := map[string][]string{
		"environment": {"go.version", "go.compiler", "os.procs"},
	}
	// monitor: ZooKeeper's dumps every metric of its provider (hundreds);
	// zkgo's keys must be among them, apart from its own zkgo_ keys.
	// system_properties: zkgo's are a subset of the JVM's.
	subset := map[string]bool{"monitor": true, "system_properties": true}

	for _, name := range an {
		switch name {
		case "connection_stat_reset", "stat_reset", "observer_connection_stat_reset":
			continue
		}
		z := decode(t, "zkgo "+name, get(t, zkgoAdmin+name))
		a := decode(t, "apache "+name, get(t, apacheAdmin+name))
		if subset[name] {
			for k := range z {
				if _, ok := a[k]; !ok && !strings.HasPrefix(k, "zkgo_") {
					t.Errorf("%s: zkgo has %q, Apache does not", name, k)
				}
			}
			continue
		}
		compareShapes(t, name, z, a, missing, extra)
	}
}

// compareShapes compares the keys of z and a, and the JSON types of
// their values, recursing into objects and into the first element of
// arrays of objects.
func compareShapes(t *testing.T, path string, z, a map[string]any, missing, extra map[string][]string) {
	t.Helper()
	for _, k := range sortedKeys(a) {
		zv, ok := z[k]
		if !ok {
			if !slices.Contains(missing[path], k) {
				t.Errorf("%s: zkgo lacks %q (Apache: %v)", path, k, a[k])
			}
			continue
		}
		if zt, at := jsonType(zv), jsonType(a[k]); zt != at && a[k] != nil && zv != nil {
			t.Errorf("%s.%s: zkgo %s %v, Apache %s %v", path, k, zt, zv, at, a[k])
			continue
		}
		switch av := a[k].(type) {
		case map[string]any:
			zm := zv.(map[string]any)
			if isIDMap(av) || isIDMap(zm) {
				// Keyed by session id, path or time: compare one entry.
				for _, ak := range sortedKeys(av) {
					for _, zk := range sortedKeys(zm) {
						compareValue(t, path+"."+k+"[]", zm[zk], av[ak], missing, extra)
						break
					}
					break
				}
				continue
			}
			compareShapes(t, path+"."+k, zm, av, missing, extra)
		case []any:
			zl := zv.([]any)
			if len(av) > 0 && len(zl) > 0 {
				compareValue(t, path+"."+k+"[]", zl[0], av[0], missing, extra)
			}
		}
	}
	for _, k := range sortedKeys(z) {
		if _, ok := a[k]; !ok && !slices.Contains(extra[path], k) {
			t.Errorf("%s: zkgo has %q, Apache does not", path, k)
		}
	}
}

func compareValue(t *testing.T, path string, z, a any, missing, extra map[string][]string) {
	t.Helper()
	if zt, at := jsonType(z), jsonType(a); zt != at {
		t.Errorf("%s: zkgo %s %v, Apache %s %v", path, zt, z, at, a)
		return
	}
	if am, ok := a.(map[string]any); ok {
		compareShapes(t, path, z.(map[string]any), am, missing, extra)
	}
}

// isIDMap reports whether m is keyed by data (numbers or paths) rather
// than by field names.
func isIDMap(m map[string]any) bool {
	for k := range m {
		if k == "" || k[0] == '/' || (k[0] >= '0' && k[0] <= '9') || k[0] == '-' {
			return true
		}
	}
	return false
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "double"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "?"
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return body
}

func decode(t *testing.T, what string, body []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(string(body)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, body)
	}
	return m
}
