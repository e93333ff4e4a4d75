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
//	/login, /logout   the digest identity a browser acts as for writes
//	                  (auth.go; not verified, except the super digest)
//	/write            create, set, delete (POST, CSRF-checked)
//	/events           server-sent events that refresh a page (sse.go)
//
// The console reads as a ZooKeeper client (package zk) through one shared
// anonymous session; it never reads the server's memory. With Config.Dial
// (the server's ForServer passes in-process connections) each session
// carries the HTTP client's address for the ip scheme, and the shared one
// an address no ip ACL matches, never the server's own.
//
// Safety (docs/SECURITY.md): a "login" is a digest identity the browser
// acts as, shown as "acting as digest:alice (password not verified)",
// because ZooKeeper never refuses digest credentials; only a password
// that matches Config.SuperDigest shows as the super user. Config.ReadOnly
// turns identities and writes off. No page shows a digest hash. Memory and
// time are bounded per page: a concurrency limit per page kind, a tree
// page of at most PageSize names and 256 KiB of them, child lists read
// once per version and kept in a 64 MiB cache (kids.go). The Host check
// against DNS rebinding is the server's (it wraps the whole admin port).
//
// Recipes are recognised from node names by a bounded scan (Scan,
// RecognizeChildren: pure functions over a TreeReader).
//
// Files: console.go (Config, New, routing, the shared session), pages.go
// (templates and formatting), browse.go (the tree page, paging), kids.go
// (the child list cache), overview.go (overview and recipes pages, the
// scan cache), sessions.go, auth.go (logins, CSRF), write.go, sse.go (streams and the
// overview feed), recognize.go and scan.go (recipe recognition), render.go
// (data views), status.go (StatusSource, FakeStatus).
//
// Lock order: no two of the package's locks are held together —
// loginStore.mu, childCache.mu, scanCache.mu, feed.mu, FakeStatus.mu and
// the shared session's slot each guard their own fields, and only the slot
// is held across a ZooKeeper call (while connecting). Tokens of the
// semaphores (childCache.reads, the page slots, streams) are taken with no
// lock held.
package console
