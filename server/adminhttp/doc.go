// Package adminhttp is the AdminServer: ZooKeeper's commands over HTTP
// (its JettyAdminServer), on Config.Addr; over HTTPS, or both on one
// port, with Config.TLS (tls.go).
//
//	GET <url>             the commands, as links (url: Config.URL)
//	GET <url>/<name>      runs one, answering ZooKeeper's JSON (package report)
//	GET /metrics          Prometheus metrics, when they are served (Config.Metrics)
//	GET /debug/pprof/...  Go's profiler, with Config.Pprof
//	/ (everything else)   the web console, with Config.Console
//
// Like ZooKeeper's, every command answers 200 with a JSON object that has
// "command" and "error" fields, also an unknown command or one that needs
// a running server on a member without a quorum (then "error" says why).
// Other methods than GET and HEAD are answered 405, other paths 404.
//
// Every request, the console's too, must name this machine in its Host
// header (hosts.go: a DNS-rebinding defence; 421 otherwise).
//
// The endpoint is hardened as the metrics endpoint is: bounded header
// size and read, write and idle times, and at most adminMaxConcurrent
// requests at a time (more are answered 503 at once). A command takes
// the same locks as its four-letter word, each briefly; the heavy ones
// (stat, cons, dump, wchc, wchp) are computed at most once a second
// whoever asks, as the four-letter words are. Nothing here is on the
// request path of clients.
package adminhttp
