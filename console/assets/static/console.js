// zkgo console: live updates, ages that count up, keyboard shortcuts.
// No dependencies, no build step.
(function () {
  "use strict";

  // Ages: elements with data-since (ms since the epoch) show the time
  // since then and count up every second.
  function human(ms) {
    if (ms < 0) ms = 0;
    var s = ms / 1000;
    if (s < 1) return Math.round(ms) + "ms";
    if (s < 60) return (Math.round(s * 10) / 10) + "s";
    var m = Math.floor(s / 60);
    if (m < 60) return m + "m" + String(Math.floor(s % 60)).padStart(2, "0") + "s";
    var h = Math.floor(m / 60);
    if (h < 48) return h + "h" + String(m % 60).padStart(2, "0") + "m";
    return Math.floor(h / 24) + "d" + String(h % 24).padStart(2, "0") + "h";
  }
  function tickAges() {
    var now = Date.now();
    document.querySelectorAll("[data-since]").forEach(function (el) {
      el.textContent = human(now - Number(el.getAttribute("data-since")));
    });
  }
  setInterval(tickAges, 1000);

  // Live updates: on each "change" event, fetch this page again and swap
  // its #live part. One refresh at a time; a change during a refresh
  // causes one more.
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store", headers: { "X-Console-Refresh": "1" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("live"), cur = document.getElementById("live");
        if (fresh && cur) {
          var focused = document.activeElement && cur.contains(document.activeElement) ? document.activeElement.getAttribute("href") : null;
          cur.replaceWith(fresh);
          if (focused) {
            var again2 = fresh.querySelector('a[href="' + CSS.escape(focused) + '"]');
            if (again2) again2.focus();
          }
          tickAges();
          document.body.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {})
      .finally(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  var url = document.body.getAttribute("data-events");
  var state = document.getElementById("live-state");
  function setState(text, cls) {
    if (!state) return;
    state.textContent = text;
    state.className = "live " + cls;
  }
  if (url && window.EventSource) {
    var es = new EventSource(url);
    es.addEventListener("open", function () { setState("live", "on"); });
    es.addEventListener("error", function () { setState("offline", "off"); });
    es.addEventListener("change", refresh);
    es.addEventListener("ended", function () { es.close(); setState("node gone", "off"); refresh(); });
    window.addEventListener("pagehide", function () { es.close(); });
  }

  // Keyboard: "g" then o/t/r/s goes to a page, "/" focuses the path box,
  // j/k move through the current list (children, recipes, sessions),
  // Enter follows the selected row's first link.
  var pending = false, sel = -1;
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll(".children-list li, tr.recipe, table.sessions tbody tr, section.recipe tbody tr"));
  }
  function select(i) {
    var rs = rows();
    if (!rs.length) return;
    sel = Math.max(0, Math.min(rs.length - 1, i));
    rs.forEach(function (r) { r.classList.remove("sel"); });
    rs[sel].classList.add("sel");
    var a = rs[sel].querySelector("a");
    if (a) a.focus();
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (pending) {
      pending = false;
      var nav = { o: "overview", t: "tree", r: "recipes", s: "sessions" }[e.key];
      var link = nav && document.querySelector('header nav a[accesskey="' + e.key + '"]');
      if (link) { e.preventDefault(); link.click(); }
      return;
    }
    switch (e.key) {
      case "g": pending = true; setTimeout(function () { pending = false; }, 1500); break;
      case "/":
        var box = document.getElementById("path");
        if (box) { e.preventDefault(); box.focus(); box.select(); }
        break;
      case "j": e.preventDefault(); select(sel + 1); break;
      case "k": e.preventDefault(); select(sel - 1); break;
    }
  });
})();
