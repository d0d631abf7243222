// Progressive enhancement for the reservation form: once the request is changed
// after a quote, Reserve waits for a new quote (the server refuses it anyway).
// The value is not part of the quote: changing it keeps Reserve enabled.
(function () {
  var form = document.querySelector("[data-testid=reservation-form]");
  if (!form) return;
  var reserve = form.querySelector("[data-testid=reservation-submit]");
  var note = form.querySelector("[data-testid=quote-note]");
  function changed(e) {
    if (!e.target.name || e.target.name === "value" || reserve.disabled) return;
    reserve.disabled = true;
    note.textContent = "You changed the request: get a new quote, then Reserve.";
    var quote = form.querySelector("[data-testid=quote]");
    if (quote) quote.classList.add("muted");
  }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
})();
