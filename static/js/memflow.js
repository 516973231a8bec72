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
})();
