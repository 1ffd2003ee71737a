// orch's web view works without this script; with it, a run's page follows the run live and the abort form asks
// before it aborts.
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
  var src = new EventSource("/runs/" + encodeURIComponent(run) + "/events?after=" + encodeURIComponent(after));
  var reloading = false;
  src.addEventListener("orch", function (ev) {
    var e;
    try { e = JSON.parse(ev.data); } catch (_) { return; }
    var li = document.createElement("li");
    li.setAttribute("data-id", e.ID || "");
    var t = document.createElement("time");
    t.textContent = e.Time || "";
    li.appendChild(t);
    li.appendChild(document.createTextNode(" " + (e.Task ? e.Task + " " : "")));
    var k = document.createElement("span");
    k.className = "kind";
    k.textContent = e.Kind || "";
    li.appendChild(k);
    li.appendChild(document.createTextNode(" " + (e.Text || "")));
    list.appendChild(li);
    // The server marks the events after which what the page shows (status, question, tasks) has changed.
    if (e.Reload && !reloading && !leaving) {
      reloading = true;
      src.close();
      // Keep the reader where they were: the page comes back at the same place.
      setTimeout(function () { if (!leaving) window.location.reload(); }, 150);
    }
  });
})();
