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
  // screen readers hear the change. The list marks the words: data-announce.
  document.addEventListener("htmx:afterSettle", function (event) {
    var status = document.getElementById("list-status");
    var target = event.detail && event.detail.target;
    if (!status || !target || !target.querySelector) {
      return;
    }
    var source = target.matches("[data-announce]") ? target : target.querySelector("[data-announce]");
    if (source) {
      status.textContent = source.getAttribute("data-announce");
    }
  });
})();
