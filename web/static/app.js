// orch's web view works without this script; with it, a run's page follows the run live — its timeline, and the
// agent's tool calls while it works — and the forms that abort or cancel ask before they do.
(function () {
  "use strict";
  // A page that is sending a form is on its way to the answer's page: reloading it now would cancel that, and the
  // person would never see whether their answer was taken (the answer's own "resolution" event races the form).
  var leaving = false;
  document.addEventListener("submit", function (ev) {
    var msg = ev.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) ev.preventDefault();
    if (!ev.defaultPrevented) leaving = true;
  });
  var list = document.getElementById("events");
  if (!list || list.getAttribute("data-live") !== "yes" || !window.EventSource) return;
  var run = list.getAttribute("data-run");
  var after = list.getAttribute("data-after") || "";
  var all = list.getAttribute("data-all") === "yes";
  var live = document.getElementById("live");
  var attempt = document.getElementById("live-attempt");
  var calls = document.getElementById("live-calls");
  var maxCalls = 20; // as the server renders them: the agent's latest calls
  var src = new EventSource("/runs/" + encodeURIComponent(run) + "/events?after=" + encodeURIComponent(after));
  var reloading = false;

  function line(e) {
    var li = document.createElement("li");
    li.setAttribute("data-id", e.ID || "");
    li.className = "ev-" + (e.Kind || "");
    var t = document.createElement("time");
    t.textContent = e.Time || "";
    li.appendChild(t);
    li.appendChild(document.createTextNode(" "));
    if (e.Task) {
      var task = document.createElement("span");
      task.className = "task";
      task.textContent = e.Task;
      li.appendChild(task);
      li.appendChild(document.createTextNode(" "));
    }
    var k = document.createElement("span");
    k.className = "kind";
    k.textContent = e.Kind || "";
    li.appendChild(k);
    li.appendChild(document.createTextNode(" " + (e.Text || "")));
    return li;
  }

  // The live panel: an attempt's start clears it, the agent's calls fill it, the attempt's end hides it.
  function follow(e) {
    if (!live) return;
    if (e.Begin) {
      attempt.textContent = (e.Text || "") + " · since " + (e.Time || "");
      while (calls.firstChild) calls.removeChild(calls.firstChild);
      live.hidden = false;
    } else if (e.Idle) {
      live.hidden = true;
    }
    (e.Calls || []).forEach(function (c) {
      var li = document.createElement("li");
      li.textContent = c;
      calls.appendChild(li);
      live.hidden = false;
    });
    while (calls.children.length > maxCalls) calls.removeChild(calls.firstChild);
  }

  src.addEventListener("orch", function (ev) {
    var e;
    try { e = JSON.parse(ev.data); } catch (_) { return; }
    follow(e);
    if (all || e.Notable) list.appendChild(line(e));
    // The server marks the events after which what the page shows (status, question, tasks) has changed.
    if (e.Reload && !reloading && !leaving) {
      reloading = true;
      src.close();
      // Keep the reader where they were: the page comes back at the same place.
      setTimeout(function () { if (!leaving) window.location.reload(); }, 150);
    }
  });
})();
