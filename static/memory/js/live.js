// Live pages: while a save is followed (manage.py follow_omnia), poll GET /live/ every two
// seconds with the last ETag; the server answers 304 with no body while nothing changed.
// When the version moves, every region marked [data-live-refresh] reloads in place: through
// htmx when it has its own URL (hx-get, hx-trigger="live-changed"), else from a fresh copy
// of this page, region by region. A region with the focus in it (someone is typing) waits
// for the next change. Rows that are new after a refresh are marked .live-new, and a new
// leak is announced. Plain short requests: gunicorn's sync workers serve them.
(function () {
  "use strict";

  var POLL_MS = 2000;
  var marker = document.querySelector("[data-live-url]");
  if (!marker || !window.fetch) return;
  var url = marker.getAttribute("data-live-url");
  var text = marker.querySelector("[data-live-text]");
  var pause = marker.querySelector("[data-live-pause]");
  var announcer = document.querySelector("[data-live-announce]");
  var etag = null;
  var state = null;
  var receivedAt = 0;
  var paused = false;
  var timer = null;

  function ago(seconds) {
    if (seconds < 60) return Math.max(0, Math.round(seconds)) + " s ago";
    if (seconds < 3600) return Math.round(seconds / 60) + " min ago";
    return Math.round(seconds / 3600) + " h ago";
  }

  function render() {
    // Only a page of a followed save shows the marker; pages over every save just refresh.
    if (!state || !state.follows || !marker.hasAttribute("data-live-save")) { marker.hidden = true; return; }
    marker.hidden = false;
    var age = state.age_s === null ? null : state.age_s + (Date.now() - receivedAt) / 1000;
    var when = age === null ? "nothing applied yet" : (state.live || paused ? "updated " : "last update ") + ago(age);
    // The follower beats every 2 s; silent for longer than the server allows, it has stopped.
    var word = paused ? "paused" : (state.live ? "live" : "stopped");
    text.textContent = word + " · " + when;
    marker.classList.toggle("is-live", state.live && !paused);
    marker.classList.toggle("is-paused", paused);
  }

  function rowKeys(region) {
    var keys = {};
    region.querySelectorAll("li[id], tr[id]").forEach(function (row) { keys[row.id] = true; });
    return keys;
  }

  function markNew(region, before) {
    var fresh = [];
    region.querySelectorAll("li[id], tr[id]").forEach(function (row) {
      if (!before[row.id]) { row.classList.add("live-new"); fresh.push(row); }
    });
    var leaks = fresh.filter(function (row) { return row.classList.contains("leak-row"); });
    if (leaks.length && announcer) {
      var said = leaks.slice(0, 3).map(function (row) {
        var mark = row.querySelector(".snippet mark");
        return (mark ? mark.textContent : "") + " (" + (row.getAttribute("data-viewer") || "") + ")";
      }).join(", ");
      announcer.textContent = (leaks.length === 1 ? "New leak: " : leaks.length + " new leaks: ") + said;
    }
  }

  var remembered = {};
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.hasAttribute && target.hasAttribute("data-live-refresh")) {
      remembered[target.id] = rowKeys(target);
    }
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    var region = event.target;
    if (region && region.id && remembered[region.id]) {
      markNew(region, remembered[region.id]);
      delete remembered[region.id];
    }
  });

  function refreshFromPage(regions) {
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (body) {
        if (!body) return;
        var doc = new DOMParser().parseFromString(body, "text/html");
        regions.forEach(function (region) {
          var fresh = doc.getElementById(region.id);
          if (!fresh || !region.isConnected) return;
          var before = rowKeys(region);
          region.replaceWith(fresh);
          if (window.htmx) htmx.process(fresh);
          markNew(fresh, before);
        });
      })
      .catch(function () { /* the next change tries again */ });
  }

  function refresh() {
    var byPage = [];
    document.querySelectorAll("[data-live-refresh]").forEach(function (region) {
      if (region.contains(document.activeElement) && document.activeElement !== region) return;
      if (region.hasAttribute("hx-get") && window.htmx) htmx.trigger(region, "live-changed");
      else if (region.id) byPage.push(region);
    });
    if (byPage.length) refreshFromPage(byPage);
  }

  function poll() {
    timer = null;
    if (paused) return;
    if (document.hidden) { schedule(); return; }
    var headers = etag ? { "If-None-Match": etag } : {};
    fetch(url, { credentials: "same-origin", cache: "no-store", headers: headers })
      .then(function (response) {
        if (response.status === 304) return null;
        if (!response.ok) throw new Error(String(response.status));
        var tag = response.headers.get("ETag");
        return response.json().then(function (data) { return { tag: tag, data: data }; });
      })
      .then(function (answer) {
        if (answer) {
          var moved = state !== null && state.version !== answer.data.version;
          etag = answer.tag;
          state = answer.data;
          receivedAt = Date.now();
          if (moved) refresh();
        }
        render();
      })
      .catch(function () { /* a missed poll: the next one asks again */ })
      .then(schedule);
  }

  function schedule() {
    if (!paused && timer === null) timer = window.setTimeout(poll, POLL_MS);
  }

  pause.addEventListener("click", function () {
    paused = !paused;
    pause.setAttribute("aria-pressed", paused ? "true" : "false");
    pause.textContent = paused ? "Resume" : "Pause";
    render();
    if (!paused) { if (timer !== null) { window.clearTimeout(timer); timer = null; } poll(); }
  });

  window.setInterval(render, 1000);
  poll();
})();
