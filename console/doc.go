// Package console is zkgo's web console: a read-mostly view of an
// ensemble for people, served by the member's admin HTTP port (the server
// mounts a Console at "/").
//
//	c, err := console.New(console.Config{Servers: "127.0.0.1:2181", Status: srv})
//	http.Handle("/", c)
//
// Pages (plain HTML from html/template, a little vanilla JavaScript, all
// embedded; no build step, nothing fetched from elsewhere):
//
//	/                 overview: this member and the ensemble (StatusSource),
//	                  every lock queue and election found, holder and waiters
//	/tree?path=P      a znode: children (sorted, paged), data (text, JSON,
//	                  hex), stat, ACL, its ephemeral owner's session
//	/recipes          each recognised recipe with its whole queue
//	/sessions[?id=X]  sessions with their ephemerals and watches
//	/login, /logout   digest identities for writes (auth.go)
//	/write            create, set, delete (POST, CSRF-checked)
//	/events           server-sent events that refresh a page (sse.go)
//
// The console reads as a ZooKeeper client (package zk) through one shared
// anonymous session; it never reads the server's memory. Recipes are
// recognised from node names by a bounded scan (Scan, RecognizeChildren:
// pure functions over a TreeReader).
//
// Files: console.go (Config, New, routing, the shared session), pages.go
// (templates and formatting), browse.go (the tree page, paging, the child
// list cache), overview.go (overview and recipes pages, the scan cache),
// sessions.go, auth.go (logins, CSRF), write.go, sse.go (streams and the
// overview feed), recognize.go and scan.go (recipe recognition), render.go
// (data views), status.go (StatusSource, FakeStatus).
//
// Lock order: no two of the package's locks are held together —
// loginStore.mu, childCache.mu, scanCache.mu, feed.mu, FakeStatus.mu and
// the shared session's slot each guard their own fields, and only the slot
// is held across a ZooKeeper call (while connecting).
package console
