// The dashboard's own behaviour, kept out of the markup so the Content
// Security Policy can forbid inline script and style.
(function () {
  "use strict";

  // A page rendered in answer to a form's POST names its own address: show that one,
  // so a reload or a bookmark never posts the change again.
  var canonical = document.body && document.body.getAttribute("data-canonical-url");
  if (canonical && window.history && window.history.replaceState) {
    window.history.replaceState(null, "", canonical);
  }

  // <form data-confirm="…">: ask before a destructive submit.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var question = form.getAttribute && form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  }, true);

  // Escape closes an open <details class="switcher"> and gives focus back to its summary.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") {
      return;
    }
    var open = document.querySelectorAll("details.switcher[open]");
    for (var i = 0; i < open.length; i++) {
      open[i].open = false;
      var summary = open[i].querySelector("summary");
      if (summary && open[i].contains(document.activeElement)) {
        summary.focus();
      }
    }
  });

  // <button data-copy="#id">: copy that element's text. The clipboard API needs a
  // secure context (https or localhost); elsewhere the text is selected and copied
  // the old way, and failing that left selected with a hint.
  function copied(button, status, ok) {
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = ok ? "Copied" : label;
    if (ok) {
      button.classList.add("copied");
    }
    if (status) {
      status.textContent = ok ? "Copied to the clipboard." : "Select the key and copy it (Ctrl+C).";
    }
  }

  function copyBySelection(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      return document.execCommand("copy");
    } catch (e) {
      return false;
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) {
      return;
    }
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) {
      return;
    }
    var status = document.getElementById(button.getAttribute("aria-describedby") || "");
    var text = source.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { copied(button, status, true); },
        function () { copied(button, status, copyBySelection(source)); }
      );
    } else {
      copied(button, status, copyBySelection(source));
    }
  });

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
