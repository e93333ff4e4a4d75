package report

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/tree"
)

// The AdminServer's commands: ZooKeeper 3.8's names, aliases and JSON
// shapes (field names, types and nesting of its Commands.java as its
// Jackson mapper writes them: snake_case fields, session ids and zxids
// as numbers, maps keyed by decimal strings). The numbers come from the
// same views (Source) the four-letter words print as text.

// adminCommand is one command.
type adminCommand struct {
	names []string // the primary name first, then the aliases
	// serverRequired: answered "not currently serving" unless the
	// server runs (running), as ZooKeeper's CommandBase.serverRequired.
	serverRequired bool
	// heavy: the output is reused for heavyTTL (see heavyWords).
	heavy bool
	// operator: the command changes what the member does (leadership,
	// snapshots): it needs the identity the snapshot command needs
	// (operatorAllowed).
	operator bool
	run      func(src Source, r *cmdResponse, args map[string]string)
}

// adminCommands are ZooKeeper 3.8's commands, then ClickHouse Keeper's
// operator words.
var adminCommands = []*adminCommand{
	{names: []string{"connection_stat_reset", "crst"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		src.ResetConnectionStats()
	}},
	{names: []string{"configuration", "conf", "config"}, serverRequired: true, run: adminConf},
	{names: []string{"connections", "cons"}, serverRequired: true, heavy: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		plain, secure := connInfos(src, false)
		r.put("connections", plain)
		r.put("secure_connections", secure)
	}},
	{names: []string{"hash"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		digests := []any{}
		for _, d := range src.DigestLog() {
			// ZooKeeper's ZxidDigest as its AdminServer writes it (3.8:
			// snake_case, in this order).
			digests = append(digests, jsonObject{{"zxid", d.Zxid}, {"digest", int64(d.Digest)}, {"digest_version", tree.DigestVersion}})
		}
		r.put("digests", digests)
	}},
	{names: []string{"dirs"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		data, log := src.DirSizes()
		r.put("datadir_size", data)
		r.put("logdir_size", log)
	}},
	{names: []string{"dump"}, serverRequired: true, heavy: true, run: adminDump},
	{names: []string{"environment", "env", "envi"}, run: func(src Source, r *cmdResponse, _ map[string]string) {
		for _, e := range src.Environment() {
			r.put(e.Key, e.Value)
		}
	}},
	{names: []string{"get_trace_mask", "gtmk"}, run: func(src Source, r *cmdResponse, _ map[string]string) {
		r.put("tracemask", src.TraceMask())
	}},
	{names: []string{"initial_configuration", "icfg"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		r.put("initial_configuration", src.InitialConfig())
	}},
	{names: []string{"is_read_only", "isro"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		r.put("read_only", src.ReadOnly())
	}},
	{names: []string{"last_snapshot", "lsnp"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		zxid, at := src.LastSnapshot()
		r.put("zxid", strconv.FormatUint(uint64(zxid), 16)) // Long.toHexString
		r.put("timestamp", at)
	}},
	{names: []string{"leader", "lead"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		if !src.Clustered() {
			r.put("error", "server is not initialized")
			return
		}
		v := src.Leader()
		r.put("is_leader", v.IsLeader)
		r.put("leader_id", v.LeaderID)
		r.put("leader_ip", v.LeaderIP)
	}},
	{names: []string{"monitor", "mntr"}, run: func(src Source, r *cmdResponse, _ map[string]string) {
		for _, m := range src.Monitor() {
			v := m.Value
			if f, ok := v.(float64); ok {
				v = javaFloat(f)
			}
			r.put(m.Key, v)
		}
	}},
	{names: []string{"observer_connection_stat_reset", "orst"}, serverRequired: true, run: func(Source, *cmdResponse, map[string]string) {
		// zkgo keeps no per-observer packet counts: nothing to reset.
	}},
	{names: []string{"ruok"}, serverRequired: true, run: func(Source, *cmdResponse, map[string]string) {}},
	{names: []string{"set_trace_mask", "stmk"}, run: func(src Source, r *cmdResponse, args map[string]string) {
		v, ok := args["traceMask"]
		if !ok {
			r.put("error", "setTraceMask requires long traceMask argument")
			return
		}
		mask, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			r.put("error", "setTraceMask requires long traceMask argument, got "+v)
			return
		}
		src.SetTraceMask(mask)
		r.put("tracemask", mask)
	}},
	{names: []string{"server_stats", "srvr"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		adminServerStats(src, r)
	}},
	{names: []string{"stats", "stat"}, serverRequired: true, heavy: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		adminServerStats(src, r)
		plain, secure := connInfos(src, true)
		r.put("connections", plain)
		r.put("secure_connections", secure)
	}},
	{names: []string{"stat_reset", "srst"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		src.ResetServerStats()
	}},
	{names: []string{"observers", "obsr"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		obs := src.Observers()
		list := make([]any, 0, len(obs))
		for _, o := range obs {
			list = append(list, jsonObject{{"remote_socket_address", o.Addr}, {"sid", o.SID}, {"last_zxid", o.LastZxid}})
		}
		r.put("synced_observers", len(obs))
		r.put("observers", list)
	}},
	{names: []string{"system_properties", "sysp"}, run: func(src Source, r *cmdResponse, _ map[string]string) {
		// The Java system properties that mean something in a Go
		// process, sorted as ZooKeeper sorts them.
		wd, _ := os.Getwd()
		props := map[string]string{
			"file.separator": string(filepath.Separator), "line.separator": "\n",
			"os.arch": runtime.GOARCH, "os.name": runtime.GOOS, "os.version": OSVersion(),
			"path.separator": string(filepath.ListSeparator), "user.dir": wd,
		}
		for _, e := range src.Environment() {
			if e.Key == "user.name" || e.Key == "user.home" {
				props[e.Key] = e.Value
			}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r.put(k, props[k])
		}
	}},
	{names: []string{"voting_view"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		view := jsonObject{}
		for _, sv := range src.VotingMembers() {
			view = append(view, jsonField{strconv.FormatInt(sv.ID, 10), quorumServerView(sv)})
		}
		r.put("current_config", view)
	}},
	{names: []string{"watches", "wchc"}, serverRequired: true, heavy: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		bySess := src.Watches().BySession()
		ids := make([]int64, 0, len(bySess))
		for id := range bySess {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		m := make(jsonObject, 0, len(ids))
		for _, id := range ids {
			m = append(m, jsonField{strconv.FormatInt(id, 10), bySess[id]})
		}
		r.put("session_id_to_watched_paths", m)
	}},
	{names: []string{"watches_by_path", "wchp"}, serverRequired: true, heavy: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		byPath := src.Watches().ByPath()
		paths := make([]string, 0, len(byPath))
		for p := range byPath {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		m := make(jsonObject, 0, len(paths))
		for _, p := range paths {
			m = append(m, jsonField{p, byPath[p]})
		}
		r.put("path_to_session_ids", m)
	}},
	{names: []string{"watch_summary", "wchs"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		st := src.Watches().Stats()
		r.put("num_connections", st.Connections)
		r.put("num_paths", st.Paths)
		r.put("num_total_watches", st.Watches)
	}},
	{names: []string{"zabstate"}, run: adminZabState},
	// ClickHouse Keeper's operator words as commands.
	{names: []string{"yield_leadership", "ydld"}, serverRequired: true, operator: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		to, err := src.YieldLeadership()
		if err != nil {
			r.put("error", err.Error())
			return
		}
		r.put("leader", to)
	}},
	{names: []string{"request_leadership", "rqld"}, serverRequired: true, operator: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		id, err := src.RequestLeadership()
		if err != nil {
			r.put("error", err.Error())
			return
		}
		r.put("leader", id)
	}},
	{names: []string{"create_snapshot", "csnp"}, serverRequired: true, operator: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		idx, err := src.CreateSnapshot()
		if err != nil {
			r.put("error", err.Error())
			return
		}
		r.put("last_committed_log_idx", idx)
	}},
	{names: []string{"log_info", "lgif"}, serverRequired: true, run: func(src Source, r *cmdResponse, _ map[string]string) {
		li, err := src.LogInfo()
		if err != nil {
			r.put("error", err.Error())
			return
		}
		for _, kv := range li {
			r.put(kv.Key, kv.Value)
		}
	}},
}

// adminByName maps every name and alias to its command.
var adminByName = func() map[string]*adminCommand {
	m := make(map[string]*adminCommand)
	for _, c := range adminCommands {
		for _, n := range c.names {
			m[n] = c
		}
	}
	return m
}()

// PrimaryNames returns the commands' primary names, sorted.
func PrimaryNames() []string {
	out := make([]string, 0, len(adminCommands))
	for _, c := range adminCommands {
		out = append(out, c.names[0])
	}
	sort.Strings(out)
	return out
}

// notServingError is ZooKeeper's error for a command that needs a
// running server.
const notServingError = "This ZooKeeper instance is not currently serving requests"

// Run runs the AdminServer command called name (args are its query
// parameters) and returns its JSON. As in ZooKeeper, an unknown name and
// a server that is not running are answered with the name as given in
// "command" and the reason in "error"; otherwise "command" is the
// primary name.
func Run(src Source, name string, args map[string]string) []byte {
	c := adminByName[name]
	switch {
	case c == nil:
		return (&cmdResponse{command: name, err: "Unknown command: " + name}).json()
	case c.serverRequired && !src.Running():
		return (&cmdResponse{command: name, err: notServingError}).json()
	}
	run := func() []byte {
		r := &cmdResponse{command: c.names[0]}
		c.run(src, r, args)
		return r.json()
	}
	if c.heavy {
		return []byte(src.Heavy("admin:"+c.names[0], func() string { return string(run()) }))
	}
	return run()
}

// Operator reports whether the command called name changes what the
// member does (leadership, snapshots), and its primary name: the
// AdminServer asks such requests for an operator's identity.
func Operator(name string) (primary string, ok bool) {
	c := adminByName[name]
	if c == nil || !c.operator {
		return "", false
	}
	return c.names[0], true
}

func adminServerStats(src Source, r *cmdResponse) {
	v := src.ServerStats()
	g := src.Gauges()
	data, log := src.DirSizes()
	resp := jsonObject{{"last_buffer_size", v.Response.Last}, {"min_buffer_size", v.Response.Min}, {"max_buffer_size", v.Response.Max}}
	r.put("version", v.Version)
	r.put("read_only", v.ReadOnly)
	// ServerStats as Jackson writes its getters. zkgo counts no fsyncs
	// over a threshold: that is 0.
	r.put("server_stats", jsonObject{
		{"packets_sent", v.Sent},
		{"packets_received", v.Received},
		{"fsync_threshold_exceed_count", 0},
		{"client_response_stats", resp},
		{"data_dir_size", data},
		{"log_dir_size", log},
		{"provider_null", false},
		{"server_state", v.Mode},
		{"last_processed_zxid", v.LastZxid},
		{"outstanding_requests", v.Outstanding},
		{"avg_latency", javaFloat(v.AvgLat)},
		{"max_latency", v.MaxLat},
		{"min_latency", v.MinLat},
		{"num_alive_client_connections", v.Connections},
		{"uptime", v.Uptime.Milliseconds()},
		{"auth_failed_count", g.AuthFailed},
		{"non_mtlsremote_conn_count", g.NonMTLSRemote},
		{"non_mtlslocal_conn_count", g.NonMTLSLocal},
	})
	r.put("client_response", resp)
	r.put("node_count", v.NodeCount)
}

// connInfos returns the connections of the plaintext and of the TLS
// client ports, brief (stat) or full (cons).
func connInfos(src Source, brief bool) (plain, secure []any) {
	plain, secure = []any{}, []any{}
	for _, ci := range src.Conns() {
		o := jsonObject{
			{"remote_socket_address", ci.Remote},
			{"interest_ops", ci.InterestOps},
			{"outstanding_requests", ci.Outstanding},
			{"packets_received", ci.Received},
			{"packets_sent", ci.Sent},
		}
		if !brief {
			o = append(o, jsonObject{
				{"session_id", ci.SessionID},
				{"last_operation", ci.LastOp},
				{"established", ci.Established},
				{"session_timeout", ci.Timeout},
				{"last_cxid", ci.LastCxid},
				{"last_zxid", ci.LastZxid},
				{"last_response_time", ci.LastResp},
				{"last_latency", ci.LastLat},
				{"min_latency", ci.MinLat},
				{"avg_latency", ci.AvgLat},
				{"max_latency", ci.MaxLat},
			}...)
		}
		if ci.Secure {
			secure = append(secure, o)
		} else {
			plain = append(plain, o)
		}
	}
	return plain, secure
}

func adminConf(src Source, r *cmdResponse, _ map[string]string) {
	v := src.Conf()
	r.put("client_port", v.ClientPort)
	r.put("data_dir", v.DataDir)
	r.put("data_log_dir", v.DataLogDir)
	r.put("tick_time", v.TickTime)
	r.put("max_client_cnxns", v.MaxClientCnxns)
	r.put("min_session_timeout", v.MinSessionTimeout)
	r.put("max_session_timeout", v.MaxSessionTimeout)
	r.put("server_id", v.ServerID)
	r.put("client_port_listen_backlog", -1)
}

func adminDump(src Source, r *cmdResponse, _ map[string]string) {
	d := src.SessionDump()
	times := make([]int64, 0, len(d.Expiry))
	for t := range d.Expiry {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	exp := make(jsonObject, 0, len(times))
	for _, t := range times {
		exp = append(exp, jsonField{strconv.FormatInt(t, 10), d.Expiry[t]})
	}
	eph := make(jsonObject, 0, len(d.WithEph))
	for _, id := range d.WithEph {
		eph = append(eph, jsonField{strconv.FormatInt(id, 10), d.Ephemerals[id]})
	}
	r.put("expiry_time_to_session_ids", exp)
	r.put("session_id_to_ephemeral_paths", eph)
}

// adminZabState is zabstate (see ZabState).
func adminZabState(src Source, r *cmdResponse, _ map[string]string) {
	z := src.ZabState()
	if !z.Clustered {
		r.put("voting", false)
		r.put("zabstate", "")
		return
	}
	state := "election"
	if z.Broadcast {
		state = "broadcast"
	}
	r.put("myid", z.MyID)
	r.put("is_leader", z.IsLeader)
	r.put("quorum_address", z.QuorumAddress)
	r.put("election_address", z.ElectionAddr)
	r.put("client_address", z.ClientAddress)
	r.put("voting", z.Voting)
	r.put("last_zxid", "0x"+strconv.FormatUint(uint64(z.LastZxid), 16))
	r.put("zab_epoch", z.LastZxid>>32)
	r.put("zab_counter", z.LastZxid&0xffffffff)
	r.put("zabstate", state)
}

// quorumServerView is a server of voting_view, as ZooKeeper's
// QuorumServerView.
func quorumServerView(sv config.Server) jsonObject {
	var peers, elections []string
	for _, a := range sv.Addrs {
		peers = append(peers, net.JoinHostPort(a.Host, strconv.Itoa(a.PeerPort)))
		elections = append(elections, net.JoinHostPort(a.Host, strconv.Itoa(a.ElectionPort)))
	}
	if len(sv.Addrs) == 0 {
		peers = []string{net.JoinHostPort(sv.Host, strconv.Itoa(sv.PeerPort))}
		elections = []string{net.JoinHostPort(sv.Host, strconv.Itoa(sv.ElectionPort))}
	}
	return jsonObject{
		{"server_addresses", peers},
		{"election_addresses", elections},
		{"client_address", ClientAddress(sv)},
		{"learner_type", sv.Role.String()},
	}
}

// ClientAddress is a server's client address as ZooKeeper writes it
// ("0.0.0.0:2181" for a port given alone), or "" without one.
func ClientAddress(sv config.Server) string {
	if sv.ClientPort == 0 {
		return ""
	}
	host := sv.ClientAddr
	if host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(sv.ClientPort))
}

// cmdResponse is ZooKeeper's CommandResponse: the command's fields in
// order, then "command" and "error" (an "error" the command set itself
// keeps its place).
type cmdResponse struct {
	command string
	err     any // nil (JSON null) or a string
	data    jsonObject
}

func (r *cmdResponse) put(k string, v any) {
	for i := range r.data {
		if r.data[i].key == k {
			r.data[i].value = v
			return
		}
	}
	r.data = append(r.data, jsonField{k, v})
}

// json returns the response as ZooKeeper's JsonOutputter writes it
// (indented).
func (r *cmdResponse) json() []byte {
	o := append(jsonObject(nil), r.data...)
	o = append(o, jsonField{"command", r.command})
	hasErr := false
	for _, f := range r.data {
		hasErr = hasErr || f.key == "error"
	}
	if !hasErr {
		o = append(o, jsonField{"error", r.err})
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return []byte(`{"error": "Exception writing command response to JSON"}`)
	}
	var b bytes.Buffer
	json.Indent(&b, raw, "", "  ")
	return b.Bytes()
}

// jsonObject is a JSON object whose fields keep their order.
type jsonObject []jsonField

type jsonField struct {
	key   string
	value any
}

// MarshalJSON implements json.Marshaler.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// javaFloat is a double written as Jackson writes it ("3.0", not "3").
type javaFloat float64

// MarshalJSON implements json.Marshaler.
func (f javaFloat) MarshalJSON() ([]byte, error) { return []byte(JavaDouble(float64(f))), nil }

// OSVersion is the kernel release (Java's os.version), or "" where there
// is no uname.
func OSVersion() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return string(b)
}
