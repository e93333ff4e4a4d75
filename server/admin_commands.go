package server

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"

	"github.com/zkgo/zkgo/tree"

	"github.com/zkgo/zkgo/config"
	"github.com/zkgo/zkgo/raftnode"
)

// The AdminServer's commands: ZooKeeper 3.8's names, aliases and JSON
// shapes (field names, types and nesting of its Commands.java as its
// Jackson mapper writes them: snake_case fields, session ids and zxids
// as numbers, maps keyed by decimal strings). The numbers come from the
// reports of report.go, which the four-letter words print as text.

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
	run      func(s *Server, r *cmdResponse, args map[string]string)
}

// adminCommands are ZooKeeper 3.8's commands.
var adminCommands = []*adminCommand{
	{names: []string{"connection_stat_reset", "crst"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		s.resetConnectionStats()
	}},
	{names: []string{"configuration", "conf", "config"}, serverRequired: true, run: (*Server).adminConf},
	{names: []string{"connections", "cons"}, serverRequired: true, heavy: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		plain, secure := s.connInfos(false)
		r.put("connections", plain)
		r.put("secure_connections", secure)
	}},
	{names: []string{"hash"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		digests := []any{}
		for _, d := range s.digestLog() {
			// ZooKeeper's ZxidDigest as Jackson writes its getters.
			digests = append(digests, jsonObject{{"zxid", d.Zxid}, {"digestVersion", tree.DigestVersion}, {"digest", int64(d.Digest)}})
		}
		r.put("digests", digests)
	}},
	{names: []string{"dirs"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		data, log := s.dirSizes()
		r.put("datadir_size", data)
		r.put("logdir_size", log)
	}},
	{names: []string{"dump"}, serverRequired: true, heavy: true, run: (*Server).adminDump},
	{names: []string{"environment", "env", "envi"}, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		for _, e := range s.environment() {
			r.put(e.key, e.value)
		}
	}},
	{names: []string{"get_trace_mask", "gtmk"}, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		r.put("tracemask", s.trace.v.Load())
	}},
	{names: []string{"initial_configuration", "icfg"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		r.put("initial_configuration", s.opts.InitialConfig)
	}},
	{names: []string{"is_read_only", "isro"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		r.put("read_only", s.readOnly.Load())
	}},
	{names: []string{"last_snapshot", "lsnp"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		zxid, at := s.lastSnapshot()
		r.put("zxid", strconv.FormatUint(uint64(zxid), 16)) // Long.toHexString
		r.put("timestamp", at)
	}},
	{names: []string{"leader", "lead"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		if !s.clustered() {
			r.put("error", "server is not initialized")
			return
		}
		v := s.leaderView()
		r.put("is_leader", v.isLeader)
		r.put("leader_id", v.leaderID)
		r.put("leader_ip", v.leaderIP)
	}},
	{names: []string{"monitor", "mntr"}, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		for _, m := range s.monitorValues() {
			v := m.value
			if f, ok := v.(float64); ok {
				v = javaFloat(f)
			}
			r.put(m.key, v)
		}
	}},
	{names: []string{"observer_connection_stat_reset", "orst"}, serverRequired: true, run: func(*Server, *cmdResponse, map[string]string) {
		// zkgo keeps no per-observer packet counts: nothing to reset.
	}},
	{names: []string{"ruok"}, serverRequired: true, run: func(*Server, *cmdResponse, map[string]string) {}},
	{names: []string{"set_trace_mask", "stmk"}, run: func(s *Server, r *cmdResponse, args map[string]string) {
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
		s.trace.v.Store(mask)
		r.put("tracemask", mask)
	}},
	{names: []string{"server_stats", "srvr"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		s.adminServerStats(r)
	}},
	{names: []string{"stats", "stat"}, serverRequired: true, heavy: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		s.adminServerStats(r)
		plain, secure := s.connInfos(true)
		r.put("connections", plain)
		r.put("secure_connections", secure)
	}},
	{names: []string{"stat_reset", "srst"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		s.resetServerStats()
	}},
	{names: []string{"observers", "obsr"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		obs := s.observers()
		list := make([]any, 0, len(obs))
		for _, o := range obs {
			list = append(list, jsonObject{{"remote_socket_address", o.addr}, {"sid", o.sid}, {"last_zxid", o.lastZxid}})
		}
		r.put("synced_observers", len(obs))
		r.put("observers", list)
	}},
	{names: []string{"system_properties", "sysp"}, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		// The Java system properties that mean something in a Go
		// process, sorted as ZooKeeper sorts them.
		wd, _ := os.Getwd()
		props := map[string]string{
			"file.separator": string(filepath.Separator), "line.separator": "\n",
			"os.arch": runtime.GOARCH, "os.name": runtime.GOOS, "os.version": osVersion(),
			"path.separator": string(filepath.ListSeparator), "user.dir": wd,
		}
		for _, e := range s.environment() {
			if e.key == "user.name" || e.key == "user.home" {
				props[e.key] = e.value
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
	{names: []string{"voting_view"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		view := jsonObject{}
		for _, sv := range s.votingMembers() {
			view = append(view, jsonField{strconv.FormatInt(sv.ID, 10), quorumServerView(sv)})
		}
		r.put("current_config", view)
	}},
	{names: []string{"watches", "wchc"}, serverRequired: true, heavy: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		bySess := s.watches.BySession()
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
	{names: []string{"watches_by_path", "wchp"}, serverRequired: true, heavy: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		byPath := s.watches.ByPath()
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
	{names: []string{"watch_summary", "wchs"}, serverRequired: true, run: func(s *Server, r *cmdResponse, _ map[string]string) {
		st := s.watches.Stats()
		r.put("num_connections", st.Connections)
		r.put("num_paths", st.Paths)
		r.put("num_total_watches", st.Watches)
	}},
	{names: []string{"zabstate"}, run: (*Server).adminZabState},
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

// adminPrimaryNames returns the commands' primary names, sorted.
func adminPrimaryNames() []string {
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

// runAdminCommand runs the command called name and returns its JSON. As
// in ZooKeeper, an unknown name and a server that is not running are
// answered with the name as given in "command" and the reason in "error";
// otherwise "command" is the primary name.
func (s *Server) runAdminCommand(name string, args map[string]string) []byte {
	c := adminByName[name]
	switch {
	case c == nil:
		return (&cmdResponse{command: name, err: "Unknown command: " + name}).json()
	case c.serverRequired && !s.running():
		return (&cmdResponse{command: name, err: notServingError}).json()
	}
	run := func() []byte {
		r := &cmdResponse{command: c.names[0]}
		c.run(s, r, args)
		return r.json()
	}
	if c.heavy {
		return []byte(s.heavyOutput("admin:"+c.names[0], func() string { return string(run()) }))
	}
	return run()
}

// AdminCommand returns the JSON the AdminServer answers for the command
// called name (args are its query parameters); for tools and tests.
func (s *Server) AdminCommand(name string, args map[string]string) []byte {
	return s.runAdminCommand(name, args)
}

func (s *Server) adminServerStats(r *cmdResponse) {
	v := s.serverStatsView()
	g := s.gauges()
	data, log := s.dirSizes()
	resp := jsonObject{{"last_buffer_size", v.response.Last}, {"min_buffer_size", v.response.Min}, {"max_buffer_size", v.response.Max}}
	r.put("version", v.version)
	r.put("read_only", v.readOnly)
	// ServerStats as Jackson writes its getters. zkgo counts no fsyncs
	// over a threshold: that is 0.
	r.put("server_stats", jsonObject{
		{"packets_sent", v.sent},
		{"packets_received", v.received},
		{"fsync_threshold_exceed_count", 0},
		{"client_response_stats", resp},
		{"data_dir_size", data},
		{"log_dir_size", log},
		{"provider_null", false},
		{"server_state", v.mode},
		{"last_processed_zxid", v.lastZxid},
		{"outstanding_requests", v.outstanding},
		{"avg_latency", javaFloat(v.avgLat)},
		{"max_latency", v.maxLat},
		{"min_latency", v.minLat},
		{"num_alive_client_connections", v.connections},
		{"uptime", v.uptime.Milliseconds()},
		{"auth_failed_count", g.AuthFailed},
		{"non_mtlsremote_conn_count", g.NonMTLSRemote},
		{"non_mtlslocal_conn_count", g.NonMTLSLocal},
	})
	r.put("client_response", resp)
	r.put("node_count", v.nodeCount)
}

// connInfos returns the connections of the plaintext and of the TLS
// client ports, brief (stat) or full (cons).
func (s *Server) connInfos(brief bool) (plain, secure []any) {
	plain, secure = []any{}, []any{}
	for _, c := range s.connList() {
		ci := c.info()
		o := jsonObject{
			{"remote_socket_address", ci.remote},
			{"interest_ops", ci.interestOps},
			{"outstanding_requests", ci.outstanding},
			{"packets_received", ci.received},
			{"packets_sent", ci.sent},
		}
		if !brief {
			o = append(o, jsonObject{
				{"session_id", ci.sessionID},
				{"last_operation", ci.lastOp},
				{"established", ci.established},
				{"session_timeout", ci.timeout},
				{"last_cxid", ci.lastCxid},
				{"last_zxid", ci.lastZxid},
				{"last_response_time", ci.lastResp},
				{"last_latency", ci.lastLat},
				{"min_latency", ci.minLat},
				{"avg_latency", ci.avgLat},
				{"max_latency", ci.maxLat},
			}...)
		}
		if ci.secure {
			secure = append(secure, o)
		} else {
			plain = append(plain, o)
		}
	}
	return plain, secure
}

func (s *Server) adminConf(r *cmdResponse, _ map[string]string) {
	v := s.confView()
	r.put("client_port", v.clientPort)
	r.put("data_dir", v.dataDir)
	r.put("data_log_dir", v.dataLogDir)
	r.put("tick_time", v.tickTime)
	r.put("max_client_cnxns", v.maxClientCnxns)
	r.put("min_session_timeout", v.minSessionTimeout)
	r.put("max_session_timeout", v.maxSessionTimeout)
	r.put("server_id", v.serverID)
	r.put("client_port_listen_backlog", -1)
}

func (s *Server) adminDump(r *cmdResponse, _ map[string]string) {
	d := s.sessionDump()
	times := make([]int64, 0, len(d.expiry))
	for t := range d.expiry {
		times = append(times, t)
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	exp := make(jsonObject, 0, len(times))
	for _, t := range times {
		exp = append(exp, jsonField{strconv.FormatInt(t, 10), d.expiry[t]})
	}
	eph := make(jsonObject, 0, len(d.withEph))
	for _, id := range d.withEph {
		eph = append(eph, jsonField{strconv.FormatInt(id, 10), d.ephemerals[id]})
	}
	r.put("expiry_time_to_session_ids", exp)
	r.put("session_id_to_ephemeral_paths", eph)
}

// adminZabState is zabstate in raft's terms: a member with a leader
// "broadcast"s, one without is in "election"; zxids are raft indexes, so
// the epoch is 0 until an index passes 2^32.
func (s *Server) adminZabState(r *cmdResponse, _ map[string]string) {
	if !s.clustered() {
		r.put("voting", false)
		r.put("zabstate", "")
		return
	}
	me, _ := s.currentMembership().server(s.opts.ServerID)
	var quorum, election string
	if me.Host != "" {
		quorum = net.JoinHostPort(me.Host, strconv.Itoa(me.PeerPort))
		election = net.JoinHostPort(me.Host, strconv.Itoa(me.ElectionPort))
	}
	state := "election"
	if s.hasQuorum() {
		state = "broadcast"
	}
	zxid := s.lastZxid()
	st, _, _, _, _ := s.raft.status()
	r.put("myid", s.opts.ServerID)
	r.put("is_leader", s.isLeader())
	r.put("quorum_address", quorum)
	r.put("election_address", election)
	r.put("client_address", clientAddress(me))
	r.put("voting", st.Role != raftnode.RoleLearner && me.Role == config.Participant)
	r.put("last_zxid", "0x"+strconv.FormatUint(uint64(zxid), 16))
	r.put("zab_epoch", zxid>>32)
	r.put("zab_counter", zxid&0xffffffff)
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
		{"client_address", clientAddress(sv)},
		{"learner_type", sv.Role.String()},
	}
}

// clientAddress is a server's client address as ZooKeeper writes it
// ("0.0.0.0:2181" for a port given alone), or "" without one.
func clientAddress(sv config.Server) string {
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
func (f javaFloat) MarshalJSON() ([]byte, error) { return []byte(javaDouble(float64(f))), nil }
