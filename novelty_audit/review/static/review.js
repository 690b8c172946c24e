// The review page's keyboard shortcuts and in-place decisions. The page reads fine without it: the forms post
// to the server and come back, this only saves the round trip and keeps your place.
(function () {
  "use strict";
  var WHO_KEY = "novelty-audit-review-who";
  var current = -1;

  function changes() { return Array.prototype.slice.call(document.querySelectorAll("article.change")); }

  function select(i) {
    var all = changes();
    if (!all.length) { current = -1; return; }
    current = Math.max(0, Math.min(i, all.length - 1));
    all.forEach(function (el, j) { el.classList.toggle("current", j === current); });
    all[current].focus({ preventScroll: true });
    all[current].scrollIntoView({ block: "nearest" });
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

  function showError(form, doc) {
    var out = form.querySelector(".form-error");
    out.textContent = doc.error + (doc.hint ? " (hint: " + doc.hint + ")" : "");
    form.classList.add("has-error");
  }

  function refresh(keep, notice) {
    return fetch(window.location.href, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.getElementById("audit").innerHTML = doc.getElementById("audit").innerHTML;
        var p = document.createElement("p");
        p.className = "notice"; p.setAttribute("role", "status"); p.id = "live-notice"; p.textContent = notice;
        document.getElementById("audit").prepend(p);
        wire();
        var all = changes(), i = all.findIndex(function (el) { return el.dataset.change === keep; });
        if (i >= 0) { select(i); }
      });
  }

  function submit(form, decision) {
    var data = new FormData(form);
    data.set("decision", decision);
    // Keep the place: the decided change, or (for a group) the change that was current.
    var card = form.closest("article.change") || changes()[current];
    var keep = card ? card.dataset.change : null;
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    return fetch("/adjudicate", { method: "POST", body: new URLSearchParams(data), headers: { Accept: "application/json" } })
      .then(function (r) { return r.json().then(function (doc) { return { ok: r.ok, doc: doc }; }); })
      .then(function (res) {
        if (!res.ok) {
          form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
          showError(form, res.doc);
          return;
        }
        return refresh(keep, "decision recorded: " + decision);
      })
      .catch(function (err) {
        form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
        showError(form, { error: "could not reach the review server (" + err + ")" });
      });
  }

  function wire() {
    document.querySelectorAll("form.decide").forEach(function (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var who = form.querySelector("input.who");
        if (!who.value.trim()) { showError(form, { error: "enter your name before deciding" }); who.focus(); return; }
        submit(form, ev.submitter ? ev.submitter.value : "unclear");
      });
    });
    changes().forEach(function (el, j) { el.addEventListener("click", function () { current = j; changes().forEach(function (o, k) { o.classList.toggle("current", k === j); }); }); });
    rememberWho();
  }

  document.addEventListener("keydown", function (ev) {
    var tag = (ev.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea" || ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    if (ev.key === "j" || ev.key === "ArrowDown") { select(current + 1); ev.preventDefault(); }
    else if (ev.key === "k" || ev.key === "ArrowUp") { select(current - 1); ev.preventDefault(); }
    else if (ev.key === "/") { document.getElementById("filter-dataset").focus(); ev.preventDefault(); }
    else if (ev.key === "c" || ev.key === "x" || ev.key === "u") {
      var card = changes()[current];
      var form = card && card.querySelector("form.decide");
      if (!form) { return; }
      ev.preventDefault();
      var decision = { c: "correct", x: "incorrect", u: "unclear" }[ev.key];
      var who = form.querySelector("input.who");
      if (!who.value.trim()) { showError(form, { error: "enter your name before deciding" }); who.focus(); return; }
      if (decision !== "correct" && !form.querySelector("input.reason").value.trim()) {
        form.querySelector("input.reason").focus();
        showError(form, { error: "give a reason, then press Enter on the button you mean" });
        return;
      }
      submit(form, decision);
    }
  });

  wire();
  if (changes().length) { select(0); }
})();
