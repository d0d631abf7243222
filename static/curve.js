// Progressive enhancement for the curve editor: re-draw the plot and the implied
// reserve prices as the operator types, without saving. Without JavaScript the
// Preview button does the same with a page load. Previews are POSTs with the
// form's CSRF token in the body, never in a URL.
(function () {
  var form = document.getElementById("curve-form");
  if (!form || !window.fetch) return;
  var timer;
  form.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var params = new URLSearchParams(new FormData(form));
      params.set("action", "preview");
      fetch(form.getAttribute("action"), {
        method: "POST", credentials: "same-origin", body: params,
        headers: { "Content-Type": "application/x-www-form-urlencoded" }
      })
        .then(function (r) { return r.text(); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, "text/html");
          ["curve-plot"].forEach(function (id) {
            var fresh = doc.getElementById(id);
            if (fresh) document.getElementById(id).replaceWith(fresh);
          });
          var implied = doc.querySelector("[data-testid=implied]");
          if (implied) document.querySelector("[data-testid=implied]").replaceWith(implied);
        });
    }, 250);
  });
})();
