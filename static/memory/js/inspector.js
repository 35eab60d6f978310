// Keyboard help for the inspector: j/k walk the buffer lines, / searches, ? toggles help.
// No inline script anywhere (the CSP forbids it); this file is the page's only behaviour
// besides htmx.
(function () {
  "use strict";

  function typing(target) {
    var tag = target && target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable);
  }

  function toggleHelp(force) {
    var help = document.getElementById("help");
    if (!help) return;
    var show = typeof force === "boolean" ? force : help.hidden;
    help.hidden = !show;
    document.querySelectorAll("[data-help-toggle]").forEach(function (b) {
      b.setAttribute("aria-expanded", show ? "true" : "false");
    });
  }

  function moveLine(step) {
    var lines = Array.prototype.slice.call(document.querySelectorAll(".buffer-line"));
    if (!lines.length) return;
    var at = lines.indexOf(document.activeElement);
    var next = at === -1 ? (step > 0 ? 0 : lines.length - 1) : Math.min(Math.max(at + step, 0), lines.length - 1);
    lines[next].focus();
    lines[next].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape") { toggleHelp(false); return; }
    if (typing(event.target)) return;
    if (event.key === "j") { moveLine(1); event.preventDefault(); }
    else if (event.key === "k") { moveLine(-1); event.preventDefault(); }
    else if (event.key === "/") {
      var search = document.querySelector("main [data-search]") || document.querySelector("[data-search]");
      if (search) { search.focus(); event.preventDefault(); }
    } else if (event.key === "?") { toggleHelp(); event.preventDefault(); }
  });

  // An alias row's Save is offered once its label is edited (then Enter in the box saves
  // too): a row at rest is one Tab stop shorter, and a hundred rows a hundred. Without this
  // file every Save stays as the server printed it.
  function syncSave(form) {
    var input = form.querySelector("input[name=label]");
    var save = form.querySelector("button[value=set]");
    if (input && save) save.disabled = input.value === input.defaultValue;
  }
  function saveWhenEdited(root) {
    (root.querySelectorAll ? root : document).querySelectorAll("form.alias-form").forEach(syncSave);
  }
  document.addEventListener("input", function (event) {
    var form = event.target.form;
    if (form && form.classList.contains("alias-form")) syncSave(form);
  });
  document.addEventListener("DOMContentLoaded", function () { saveWhenEdited(document); });
  document.addEventListener("htmx:afterSettle", function () { saveWhenEdited(document); });

  function copyFrom(button) {
    var source = document.querySelector(button.getAttribute("data-copy"));
    var status = button.parentNode.querySelector(".copy-status");
    if (!source) return;
    var text = source.textContent;
    function done(message) { if (status) status.textContent = message; }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { done("Copied."); },
        function () { done("Copy refused by the browser; select the text instead."); }
      );
    } else {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      done("Selected: press Ctrl+C to copy.");
    }
  }

  // ==== Panel focus (ui: issue 15 item 2) ====
  // A panel's own URL (/viewers/<id>/faces/) marks its panel data-focus: bring it into view
  // and move focus there, so keyboard and screen-reader users land where the link pointed.
  // A selected buffer line (?line=) is brought into view the same way.
  function marked(root, selector) {
    if (root.matches && root.matches(selector)) return root;
    return root.querySelector(selector);
  }
  function focusMarked(root, withLine) {
    var target = marked(root, "[data-focus]") || (withLine && marked(root, ".buffer-line.selected"));
    if (!target) return;
    target.scrollIntoView({ block: "start" });
    target.focus({ preventScroll: true });
  }
  // The buffer's two readings (issue 30): omnia's lines by default, the corrected ones on
  // request; the choice outlives the panel's htmx re-reads for this tab.
  var READING_KEY = "omnia-reading";
  function applyReading(root) {
    var corrected = sessionStorage.getItem(READING_KEY) === "corrected";
    (root || document).querySelectorAll("[data-reading-toggle]").forEach(function (button) {
      var panel = button.closest(".panel");
      if (panel) panel.classList.toggle("reading-corrected", corrected);
      button.setAttribute("aria-pressed", corrected ? "true" : "false");
      button.textContent = corrected ? "Lines: corrected" : "Lines: as omnia wrote them";
    });
  }
  document.addEventListener("DOMContentLoaded", function () { applyReading(document); });
  // On the swap itself, not after htmx's settle delay: a panel re-read never shows the other
  // reading for a moment (nor does a test that looks right after the swap see it).
  document.addEventListener("htmx:afterSwap", function () { applyReading(document); });
  document.addEventListener("DOMContentLoaded", function () { focusMarked(document, true); });
  // htmx settles each swapped-in element with this event (event.target: the new element).
  document.addEventListener("htmx:afterSettle", function (event) {
    var swapped = event.target;
    // A selected line takes focus when it was just chosen (the whole page swapped), not when
    // the buffer re-reads itself after an alias edit.
    if (swapped && swapped.querySelector && swapped.isConnected) {
      focusMarked(swapped, swapped.id === "viewer-panels");
    }
  });

  document.addEventListener("click", function (event) {
    if (!event.target.closest) return;
    if (event.target.closest("[data-help-toggle]")) toggleHelp();
    if (event.target.closest("[data-reading-toggle]")) {
      var now = sessionStorage.getItem(READING_KEY) === "corrected";
      sessionStorage.setItem(READING_KEY, now ? "omnia" : "corrected");
      applyReading(document);
    }
    var copy = event.target.closest("[data-copy]");
    if (copy) copyFrom(copy);
  });
  // --- wide tables on a narrow screen say that they scroll --------------------------------------
  // A table wider than its scroller (the matrix at 390 px shows 3 of 6 columns) gets a hint
  // above it, and its scroller a tab stop so the keyboard can scroll it too; both go away when
  // the table fits again. Checked on load, on resize and after each swap.
  function scrollerOf(table) {
    for (var node = table.parentElement; node && node !== document.body; node = node.parentElement) {
      var overflow = window.getComputedStyle(node).overflowX;
      if (overflow === "auto" || overflow === "scroll") return node;
    }
    return null;
  }
  function markWideTables(root) {
    (root.querySelectorAll ? root : document).querySelectorAll("table").forEach(function (table) {
      var scroller = scrollerOf(table);
      if (!scroller) return;
      var hint = table.previousElementSibling;
      var hinted = hint && hint.classList.contains("scroll-hint");
      var wide = table.scrollWidth > scroller.clientWidth + 1;
      if (wide && !hinted) {
        hint = document.createElement("p");
        hint.className = "scroll-hint small";
        hint.textContent = "Scroll sideways for more columns →";
        table.parentElement.insertBefore(hint, table);
        if (!scroller.hasAttribute("tabindex")) { scroller.setAttribute("tabindex", "0"); scroller.setAttribute("data-scroll-stop", ""); }
      } else if (!wide && hinted) {
        hint.remove();
        if (scroller.hasAttribute("data-scroll-stop")) { scroller.removeAttribute("tabindex"); scroller.removeAttribute("data-scroll-stop"); }
      }
    });
  }
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { markWideTables(document); }, 100);
  });
  document.addEventListener("DOMContentLoaded", function () { markWideTables(document); });
  document.addEventListener("htmx:afterSettle", function () { markWideTables(document); });
})();
