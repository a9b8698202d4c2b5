// faultgate-stream's HTML report: the filters, and opening a run when a link points into
// it. The page reads the same without this script; it only hides and opens rows.
(function () {
  "use strict";
  var check = document.getElementById("filter-check");
  var verdict = document.getElementById("filter-verdict");
  var shown = document.getElementById("shown");
  var runs = Array.prototype.slice.call(document.querySelectorAll("details.run"));

  function apply() {
    var c = check.value, v = verdict.value, n = 0;
    runs.forEach(function (run) {
      var fired = run.dataset.fired ? run.dataset.fired.split(" ") : [];
      var keep = (!c || fired.indexOf(c) >= 0) && (!v || run.dataset.verdict === v);
      run.hidden = !keep;
      if (keep) { n += 1; }
    });
    shown.textContent = n + " of " + runs.length + " runs shown";
  }

  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    var run = el && el.closest("details.run");
    if (run) { run.hidden = false; run.open = true; el.scrollIntoView({block: "center"}); }
  }

  check.addEventListener("change", apply);
  verdict.addEventListener("change", apply);
  window.addEventListener("hashchange", openTarget);
  apply();
  openTarget();
})();
