package console

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/zkgo/zkgo/zk"
)

// pageNames are the templates under assets/, each rendered inside
// layout.html.
var pageNames = []string{"overview", "tree", "recipes", "sessions", "session", "login", "error"}

// parsePages parses every page with the layout; base is Config.BasePath.
func parsePages(base string) (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"u":       func(p string) string { return base + p },
		"treeURL": func(p string) string { return base + "/tree?path=" + url.QueryEscape(p) },
		// treeq is treeURL with one more parameter (key=value).
		"treeq": func(p, key, value string) string {
			return base + "/tree?path=" + url.QueryEscape(p) + "&" + key + "=" + url.QueryEscape(value)
		},
		"sessURL":  func(id int64) string { return base + "/sessions?id=" + hexID(id) },
		"hexid":    hexID,
		"zxid":     func(z int64) string { return fmt.Sprintf("0x%x", z) },
		"dur":      humanDuration,
		"ts":       func(t time.Time) string { return fmtTime(t) },
		"ms":       func(t time.Time) int64 { return t.UnixMilli() },
		"bytes":    humanBytes,
		"idtext":   participantText,
		"add":      func(a, b int) int { return a + b },
		"parentOf": parentPath,
		"crumbs":   crumbs,
		"msTime":   func(ms int64) time.Time { return time.UnixMilli(ms) },
		"perms":    permString,
	}
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/partials.html", "assets/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// refreshHeader marks the page fetches of console.js's live refresh.
const refreshHeader = "X-Console-Refresh"

// page is what every template receives.
type page struct {
	Title string
	Nav   string // which tab is current
	Login *loginView
	// ReadOnly: the console has no write actions (Config.ReadOnly).
	ReadOnly bool
	Flash    string
	Events   string // URL of the live-update stream, "" for none
	Data     any
}

// loginView is the identity a browser acts as, as the templates see it:
// a digest user name (not verified), the super user (verified), or a
// client certificate's x509 identity (verified).
type loginView struct {
	User  string
	Super bool
	Cert  bool // User is a verified client certificate's subject
	CSRF  string
}

// render writes a page (buffered, so a template error becomes a 500 and
// not half a page).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.ReadOnly = c.cfg.ReadOnly
	if l := c.identity(r); l != nil {
		p.Login = &loginView{User: l.user, Super: l.super, Cert: l.cert, CSRF: l.csrf}
		if r.Header.Get(refreshHeader) == "" {
			// A live refresh only swaps the live part: the flash is
			// for the next full page.
			p.Flash = c.logins.takeFlash(l)
		}
	}
	var b bytes.Buffer
	if err := c.pages[name].Execute(&b, p); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// fail renders the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, status, "error", page{Title: http.StatusText(status), Data: msg})
}

func hexID(id int64) string { return "0x" + strconv.FormatUint(uint64(id), 16) }

// parseHexID parses a session id as hexID writes it (or decimal).
func parseHexID(s string) (int64, bool) {
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		v, err := strconv.ParseUint(s[2:], 16, 64)
		return int64(v), err == nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// humanDuration rounds a duration for people: 412µs, 950ms, 12.3s, 4m05s,
// 3h02m, 2d04h. Only a duration that is not positive shows as 0s (a scan
// of a small tree takes less than a millisecond).
func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return max(d.Round(time.Microsecond), time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

// participantText shows a participant's data (Curator's participant id or
// client address) on one line, made visible, at most 80 characters.
func participantText(b []byte) string {
	s := []rune(visibleText(b))
	for i, r := range s {
		if r == '\n' || r == '\t' {
			s[i] = ' '
		}
	}
	if len(s) > 80 {
		return string(s[:80]) + "…"
	}
	return string(s)
}

// crumb is one link of the breadcrumb trail.
type crumb struct{ Name, Path string }

// crumbs splits a path into its ancestors, root first.
func crumbs(p string) []crumb {
	out := []crumb{{Name: "/", Path: "/"}}
	if p == "/" {
		return out
	}
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			j := 1 + lastSlash(p[:i])
			out = append(out, crumb{Name: p[j:i], Path: p[:i]})
		}
	}
	return out
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}

func parentPath(p string) string {
	i := lastSlash(p)
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// permString writes ACL permissions as ZooKeeper's shell does ("cdrwa").
func permString(p zk.Perm) string {
	var b []byte
	for _, x := range []struct {
		bit zk.Perm
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b = append(b, x.c)
		}
	}
	return string(b)
}
