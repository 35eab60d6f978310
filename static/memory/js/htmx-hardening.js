// htmx, hardened: every request shows it is busy, a failed one says so in the panel it was
// for (with a Retry), an inline edit gives focus back to its row, a [data-confirm] button asks
// first. The expired-session redirect is the server's (HX-Redirect, memory/web/htmx_login.py);
// a write refused for an ended session or a stale CSRF token keeps what was typed and offers
// to sign in (here or in a new tab) and send it again.
// No inline script anywhere (the CSP forbids it).
(function () {
  "use strict";

  var ERROR_CLASS = "htmx-error";
  var focusMemo = null;

  function panelOf(detail) {
    var target = detail.target || detail.elt;
    if (!target || !target.closest) return null;
    return target.closest(".panel, section, main") || target;
  }

  // --- busy: aria-busy on the panel being replaced, the triggering control disabled ---------
  document.addEventListener("htmx:beforeRequest", function (event) {
    var panel = panelOf(event.detail);
    if (panel) panel.setAttribute("aria-busy", "true");
    // Kept with the request: after an outerHTML swap the target is detached and its panel
    // can no longer be found from it.
    if (event.detail.xhr) event.detail.xhr.omniaBusy = panel;
    var elt = event.detail.elt;
    var controls = elt.tagName === "FORM" ? elt.querySelectorAll("button") : [elt];
    Array.prototype.forEach.call(controls, function (control) {
      if (control.tagName === "BUTTON") { control.disabled = true; control.setAttribute("data-busy-disabled", ""); }
    });
    // Remember the row an inline edit came from (see htmx:afterSettle). Requests from outside
    // a row (the buffer re-reading itself after an alias edit) leave the memo alone.
    var row = elt.closest && elt.closest("tr[id]");
    if (row) {
      var active = document.activeElement;
      focusMemo = { row: row.id, active: active && active.id && row.contains(active) ? active.id : null };
    }
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var panel = (event.detail.xhr && event.detail.xhr.omniaBusy) || panelOf(event.detail);
    if (panel) panel.removeAttribute("aria-busy");
    document.querySelectorAll("[data-busy-disabled]").forEach(function (control) {
      control.disabled = false;
      control.removeAttribute("data-busy-disabled");
    });
  });

  // --- errors: a failed request says so inside its panel, with Retry ---------------------------
  function showError(detail, message) {
    var panel = panelOf(detail);
    if (!panel) return;
    var box = panel.querySelector(":scope > ." + ERROR_CLASS);
    if (!box) {
      box = document.createElement("div");
      box.className = ERROR_CLASS;
      box.setAttribute("role", "alert");
      var heading = panel.querySelector(":scope > h2, :scope > h1");
      panel.insertBefore(box, heading ? heading.nextSibling : panel.firstChild);
    }
    box.textContent = "";
    var text = document.createElement("span");
    text.textContent = message + " ";
    box.appendChild(text);
    var retry = document.createElement("button");
    retry.type = "button";
    retry.textContent = "Retry";
    var elt = detail.elt;
    var config = detail.requestConfig || {};
    var submitter = config.triggeringEvent && config.triggeringEvent.submitter;
    var values = {};
    if (submitter && submitter.name) values[submitter.name] = submitter.value;
    retry.addEventListener("click", function () {
      box.remove();
      if (elt && elt.isConnected) {
        // The same request again, from the element that made it: same target, swap and
        // values, and the button that sent it (Save and Forget post to one address).
        htmx.ajax(config.verb || "get", config.path || detail.pathInfo.requestPath, { source: elt, target: detail.target, values: values });
      } else {
        window.location.reload();
      }
    });
    box.appendChild(retry);
    retry.focus();
  }

  function shortReason(xhr) {
    var body = (xhr && xhr.responseText) || "";
    var type = (xhr && xhr.getResponseHeader("Content-Type")) || "";
    if (type.indexOf("application/json") === 0) {
      try { return JSON.parse(body).detail || ""; } catch (e) { return ""; }
    }
    if (type.indexOf("text/plain") === 0 && body.length < 300) return body.trim();
    if (type.indexOf("text/html") === 0) {
      // A styled error page: its one message, if it marks one.
      var doc = new DOMParser().parseFromString(body, "text/html");
      var marked = doc.querySelector("[data-error-message]") || doc.querySelector("main h1");
      if (marked) return marked.textContent.trim().slice(0, 300);
    }
    return "";
  }

  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    var reauth = xhr.getResponseHeader("X-Omnia-Reauth");
    if (reauth) { showReauth(event.detail, reauth, xhr.getResponseHeader("X-Omnia-Login") || "/accounts/login/"); return; }
    var reason = shortReason(xhr);
    showError(event.detail, "That request failed (" + xhr.status + (xhr.statusText ? " " + xhr.statusText : "") + ")" + (reason ? ": " + reason : "") + ".");
  });

  document.addEventListener("htmx:sendError", function (event) {
    showError(event.detail, "The server could not be reached.");
  });

  document.addEventListener("htmx:timeout", function (event) {
    showError(event.detail, "The server took too long to answer.");
  });

  // --- expiry: nothing typed is lost --------------------------------------------------------------
  // The server swapped nothing (401 for an ended session, 403 for a stale token), so the form
  // still holds what was typed. The person signs in in a new tab and comes back to "Send it
  // again", or signs in here: the edit waits in sessionStorage (this tab only) and is put back
  // into its form when the page comes back, to be sent with one click.
  var PENDING = "omnia-pending-edit";
  var CSRF_COOKIE = "csrftoken";  // Django's default name; settings.py keeps it

  function readCookie(name) {
    var found = null;
    document.cookie.split(";").forEach(function (part) {
      var eq = part.indexOf("=");
      if (part.slice(0, eq).trim() === name) found = decodeURIComponent(part.slice(eq + 1).trim());
    });
    return found;
  }

  // The token the server will accept now (signing in elsewhere rotates it; a cleared cookie is
  // set again by any page read), written where htmx and the forms send it from.
  function refreshToken() {
    var have = readCookie(CSRF_COOKIE);
    var ready = have ? Promise.resolve(have) : fetch(window.location.href, { credentials: "same-origin" }).then(function () { return readCookie(CSRF_COOKIE); });
    return ready.then(function (token) {
      if (!token) return;
      document.body.setAttribute("hx-headers", JSON.stringify({ "X-CSRFToken": token }));
      // A form's own field wins over the header on the server, so it is renewed too.
      document.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(function (input) { input.value = token; });
    });
  }

  function formOf(elt) {
    if (!elt) return null;
    return elt.tagName === "FORM" ? elt : (elt.form || (elt.closest && elt.closest("form")));
  }

  function typedIn(form) {
    var fields = {};
    if (!form) return fields;
    Array.prototype.forEach.call(form.elements, function (field) {
      if (field.id && (field.tagName === "TEXTAREA" || /^(text|search)$/.test(field.type))) fields[field.id] = field.value;
    });
    return fields;
  }

  function submitterValues(config) {
    var submitter = config && config.triggeringEvent && config.triggeringEvent.submitter;
    var values = {};
    if (submitter && submitter.name) values[submitter.name] = submitter.value;
    return values;
  }

  function replay(edit, source, target, box) {
    refreshToken().then(function () {
      if (box) box.remove();
      htmx.ajax(edit.verb, edit.path, { source: source, target: target, values: edit.values });
    });
  }

  function reauthBox(panel) {
    var box = panel.querySelector(":scope > .reauth");
    if (!box) {
      box = document.createElement("div");
      box.className = ERROR_CLASS + " reauth";
      box.setAttribute("role", "alert");
      var heading = panel.querySelector(":scope > h2, :scope > h1");
      panel.insertBefore(box, heading ? heading.nextSibling : panel.firstChild);
    }
    box.textContent = "";
    return box;
  }

  function addButton(box, text, onClick) {
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = text;
    button.addEventListener("click", onClick);
    box.appendChild(button);
    return button;
  }

  function showReauth(detail, reason, loginUrl) {
    var panel = panelOf(detail);
    if (!panel) return;
    var config = detail.requestConfig || {};
    var source = detail.elt;
    var form = formOf(source);
    var edit = {
      page: window.location.pathname + window.location.search,
      verb: config.verb || "post",
      path: config.path || detail.pathInfo.requestPath,
      target: detail.target && detail.target.id,
      values: submitterValues(config),
      fields: typedIn(form),
    };
    var box = reauthBox(panel);
    var text = document.createElement("p");
    text.textContent = (reason === "csrf"
      ? "This page's security token went stale (you signed in or out in another tab, or cookies were cleared), so your change was not saved."
      : "Your session has ended, so your change was not saved.") + " What you typed is kept here.";
    box.appendChild(text);
    var elsewhere = document.createElement("a");
    elsewhere.href = loginUrl;
    elsewhere.target = "_blank";
    elsewhere.rel = "noopener";
    elsewhere.textContent = "Sign in in a new tab";
    box.appendChild(elsewhere);
    box.appendChild(document.createTextNode(", then "));
    addButton(box, "Send it again", function () { replay(edit, source, detail.target, box); });
    box.appendChild(document.createTextNode(" · or "));
    var here = document.createElement("a");
    here.href = loginUrl;
    here.textContent = "sign in here";
    here.addEventListener("click", function () {
      try { window.sessionStorage.setItem(PENDING, JSON.stringify(edit)); } catch (e) { /* private mode: the new tab still works */ }
    });
    box.appendChild(here);
    box.appendChild(document.createTextNode(" (your change comes back with you)."));
    elsewhere.focus();
  }

  // Back from signing in here: the typed text goes back into its form, to be sent again.
  function restorePending() {
    var raw = null;
    try { raw = window.sessionStorage.getItem(PENDING); } catch (e) { return; }
    if (!raw) return;
    var edit;
    try { edit = JSON.parse(raw); } catch (e) { window.sessionStorage.removeItem(PENDING); return; }
    if (!edit || edit.page !== window.location.pathname + window.location.search) return;
    window.sessionStorage.removeItem(PENDING);
    var form = null;
    Object.keys(edit.fields || {}).forEach(function (id) {
      var field = document.getElementById(id);
      if (!field) return;
      field.value = edit.fields[id];
      form = form || formOf(field);
    });
    var target = edit.target && document.getElementById(edit.target);
    if (!form || !target) return;
    var panel = target.closest(".panel, section, main") || target;
    var box = reauthBox(panel);
    box.classList.add("restored");
    var text = document.createElement("p");
    text.textContent = "You are signed in again. What you typed before is back in its field and not saved yet.";
    box.appendChild(text);
    var send = addButton(box, "Save it now", function () { replay(edit, form, target, box); });
    box.appendChild(document.createTextNode(" "));
    addButton(box, "Discard", function () {
      Object.keys(edit.fields || {}).forEach(function (id) {
        var field = document.getElementById(id);
        if (field) field.value = field.defaultValue;
      });
      box.remove();
    });
    send.focus();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", restorePending);
  else restorePending();

  // --- focus: back to the row that was edited, not to <body> ------------------------------------
  document.addEventListener("htmx:afterSettle", function (event) {
    if (!focusMemo) return;
    var row = document.getElementById(focusMemo.row);
    // Dispatched on each element the swap put in (the old target is detached by then).
    var settled = event.target;
    if (!row || !settled || !settled.contains || !settled.contains(row)) return;
    var memo = focusMemo;
    focusMemo = null;
    var invalid = row.querySelector("[aria-invalid=true]");
    var again = memo.active && document.getElementById(memo.active);
    var target = invalid || (again && !again.disabled ? again : null) || row.querySelector("input:not([type=hidden]), button");
    if (target) target.focus();
  });

  // --- confirm: a button with data-confirm asks before its form is sent --------------------------
  document.addEventListener("htmx:confirm", function (event) {
    var trigger = event.detail.triggeringEvent;
    var submitter = trigger && trigger.submitter;
    var question = submitter && submitter.getAttribute("data-confirm");
    if (!question) return;
    event.preventDefault();
    if (window.confirm(question)) event.detail.issueRequest(true);
  });

  // When htmx did not load (the form then posts plainly), the browser asks the same question.
  document.addEventListener("submit", function (event) {
    var submitter = event.submitter;
    var question = submitter && submitter.getAttribute("data-confirm");
    if (!question || typeof window.htmx !== "undefined") return;
    if (!window.confirm(question)) event.preventDefault();
  });
})();
