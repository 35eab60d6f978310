// htmx, hardened: every request shows it is busy, a failed one says so in the panel it was
// for (with a Retry), an inline edit gives focus back to its row, a [data-confirm] button asks
// first. The expired-session redirect is the server's (HX-Redirect, memory/web/htmx_login.py).
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
    var reason = shortReason(xhr);
    showError(event.detail, "That request failed (" + xhr.status + (xhr.statusText ? " " + xhr.statusText : "") + ")" + (reason ? ": " + reason : "") + ".");
  });

  document.addEventListener("htmx:sendError", function (event) {
    showError(event.detail, "The server could not be reached.");
  });

  document.addEventListener("htmx:timeout", function (event) {
    showError(event.detail, "The server took too long to answer.");
  });

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
