// The review page's keyboard shortcuts and in-place decisions. The page reads fine without it: the forms post
// to the server and come back, this only saves the round trip and keeps your place.
//
// A decision is always named: a button, or the key c/x/u. Enter in the reason or name box sends the decision of
// the key pressed before (the form's "pending" decision) and never picks one itself: the form's first button, which
// Enter presses, carries no decision.
(function () {
  "use strict";
  var WHO_KEY = "novelty-audit-review-who";
  var KEYS = { c: "correct", x: "incorrect", u: "unclear" };
  var current = -1;

  function changes() { return Array.prototype.slice.call(document.querySelectorAll("#audit article.change")); }

  // The sticky bar's height, for the browser's scroll padding: a card scrolled to is never under the bar.
  function trackBar() {
    var bar = document.getElementById("bar");
    if (!bar) { return; }
    var set = function () { document.documentElement.style.setProperty("--bar-h", bar.offsetHeight + "px"); };
    set();
    if (window.ResizeObserver) { new ResizeObserver(set).observe(bar); } else { window.addEventListener("resize", set); }
  }

  function select(i, scroll) {
    var all = changes();
    if (!all.length) { current = -1; return; }
    current = Math.max(0, Math.min(i, all.length - 1));
    all.forEach(function (el, j) { el.classList.toggle("current", j === current); });
    all[current].focus({ preventScroll: true });
    if (scroll) { all[current].scrollIntoView({ block: "start" }); }
  }

  function go(rel, anchor) {
    var link = document.querySelector("#pager a[rel=" + rel + "]");
    if (link) { window.location.href = link.href + anchor; }
    return !!link;
  }

  function move(step) {
    var all = changes();
    if (step > 0 && current >= all.length - 1) { if (go("next", "#first")) { return; } }
    if (step < 0 && current <= 0) { if (go("prev", "#last")) { return; } }
    select(current + step, true);
  }

  function rememberWho() {
    var who = "";
    try { who = localStorage.getItem(WHO_KEY) || ""; } catch (e) { /* storage off: type the name each time */ }
    document.querySelectorAll("input.who").forEach(function (el) {
      if (!el.value) { el.value = who; }
      el.addEventListener("change", function () {
        try { localStorage.setItem(WHO_KEY, el.value); } catch (e) { /* ignore */ }
        document.querySelectorAll("input.who").forEach(function (o) { if (!o.value) { o.value = el.value; } });
      });
    });
  }

  function say(form, text, isError) {
    var out = form.querySelector(".form-error");
    out.textContent = text;
    form.classList.toggle("has-error", !!isError);
  }

  function showError(form, doc) { say(form, doc.error + (doc.hint ? " (hint: " + doc.hint + ")" : ""), true); }

  function setPending(form, decision) {
    form.dataset.pending = decision || "";
    form.querySelectorAll("button.decision").forEach(function (b) {
      var on = b.value === decision;
      b.classList.toggle("pending", on);
      b.setAttribute("aria-pressed", on ? "true" : "false");
    });
  }

  function refresh(keep, index, notice) {
    return fetch(window.location.pathname + window.location.search, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["audit", "pager"].forEach(function (id) {
          var fresh = doc.getElementById(id), here = document.getElementById(id);
          if (fresh && here) { here.innerHTML = fresh.innerHTML; }
        });
        var p = document.createElement("p");
        p.className = "notice"; p.setAttribute("role", "status"); p.id = "live-notice"; p.textContent = notice;
        var summary = document.getElementById("summary");
        if (summary) { summary.before(p); } else { document.getElementById("audit").prepend(p); }
        wire();
        var all = changes(), i = all.findIndex(function (el) { return el.dataset.change === keep; });
        select(i >= 0 ? i : index, false);
      });
  }

  function submit(form, decision) {
    var data = new FormData(form);
    data.set("decision", decision);
    // Keep the place: the decided change, or (for a group) the change that was current.
    var card = form.closest("article.change") || changes()[current];
    var keep = card ? card.dataset.change : null;
    var index = current;
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    return fetch("/adjudicate", { method: "POST", body: new URLSearchParams(data), headers: { Accept: "application/json" } })
      .then(function (r) { return r.json().then(function (doc) { return { ok: r.ok, doc: doc }; }); })
      .then(function (res) {
        if (!res.ok) {
          form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
          showError(form, res.doc);
          return;
        }
        setPending(form, null);
        return refresh(keep, index, "decision recorded: " + decision);
      })
      .catch(function (err) {
        form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        showError(form, { error: "could not reach the review server (" + err + ")" });
      });
  }

  // What a form still needs before `decision` can be sent; focuses that box and says so. True when complete.
  function ready(form, decision, needReason) {
    var who = form.querySelector("input.who"), reason = form.querySelector("input.reason");
    if (!who.value.trim()) {
      say(form, "enter your name, then press Enter to record " + decision, true);
      who.focus();
      return false;
    }
    if (needReason && !reason.value.trim()) {
      say(form, decision + ": type a reason, then press Enter to record it (Esc cancels)", false);
      reason.focus();
      return false;
    }
    return true;
  }

  function wire() {
    document.querySelectorAll("form.decide").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var named = ev.submitter && ev.submitter.name === "decision";
        // A button names its decision; Enter (the guard button, or no submitter) sends the pending one only.
        var decision = named ? ev.submitter.value : form.dataset.pending;
        if (!decision) {
          say(form, "choose a decision: press c, x or u (or click a button); Enter alone does not pick one", true);
          return;
        }
        if (!named) { setPending(form, decision); }
        if (ready(form, decision, !named && decision !== "correct")) { submit(form, decision); }
      });
      form.addEventListener("keydown", function (ev) {
        if (ev.key === "Escape") { setPending(form, null); say(form, "", false); ev.target.blur(); }
      });
    });
    changes().forEach(function (el, j) {
      el.addEventListener("click", function () {
        current = j;
        changes().forEach(function (o, k) { o.classList.toggle("current", k === j); });
      });
    });
    rememberWho();
  }

  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    if (ev.key === "j" || ev.key === "ArrowDown") { move(1); ev.preventDefault(); }
    else if (ev.key === "k" || ev.key === "ArrowUp") { move(-1); ev.preventDefault(); }
    else if (ev.key === "/") { document.getElementById("filter-dataset").focus(); ev.preventDefault(); }
    else if (KEYS[ev.key]) {
      var card = changes()[current];
      var form = card && card.querySelector("form.decide");
      if (!form) { return; }
      ev.preventDefault();
      var decision = KEYS[ev.key];
      setPending(form, decision);
      if (ready(form, decision, decision !== "correct")) { submit(form, decision); }
    }
  });

  trackBar();
  wire();
  var all = changes();
  if (all.length) {
    // Arriving by j/k from another page: continue at its first or last card; otherwise mark the first card
    // without scrolling, so the summary stays in view.
    if (window.location.hash === "#last") { select(all.length - 1, true); }
    else if (window.location.hash === "#first") { select(0, true); }
    else { select(0, false); }
  }
})();
