// The dashboard's own behaviour, kept out of the markup so the Content
// Security Policy can forbid inline script and style.
(function () {
  "use strict";

  // <form data-confirm="…">: ask before a destructive submit.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  }, true);

  // After htmx swaps in a new list, say how many results it holds in the
  // page's live region (#list-status), which stays put across swaps so
  // screen readers hear the change. The list marks the words: data-announce
  // (an outerHTML swap reports the old element, so it is looked up anew).
  document.addEventListener("htmx:afterSettle", function () {
    var status = document.getElementById("list-status");
    var source = document.querySelector("[data-announce]");
    if (status && source) {
      status.textContent = source.getAttribute("data-announce");
    }
  });
})();
