/* The edit bar's accessibility check (staff only: templates/editbar/bar.html).
 *
 * axe-core is loaded from this site (static/vendor/axe-core/) on the first click, run on the
 * page with the bar left out, and its violations are listed in the bar, one per rule with a
 * "Show" button per element, as Wagtail's userbar does. No inline script or style: what is
 * shown is built with DOM methods and classes, so the Content-Security-Policy stays 'self'.
 */
(function () {
  "use strict";

  var bar = document.getElementById("editbar");
  if (!bar) {
    return;
  }
  var button = bar.querySelector(".editbar-check");
  var panel = bar.querySelector(".editbar-a11y");
  var heading = panel.querySelector("h2");
  var summary = panel.querySelector(".editbar-a11y-summary");
  var list = panel.querySelector(".editbar-a11y-list");
  var loading = null;

  /* The site's own copy of axe-core, fetched once. */
  function loadAxe() {
    if (window.axe) {
      return Promise.resolve(window.axe);
    }
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = button.getAttribute("data-axe-src");
        script.onload = function () { resolve(window.axe); };
        script.onerror = function () {
          loading = null;
          reject(new Error("axe-core did not load"));
        };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  function open() {
    panel.hidden = false;
    button.setAttribute("aria-expanded", "true");
  }

  function close() {
    panel.hidden = true;
    button.setAttribute("aria-expanded", "false");
    clearHighlight();
    button.focus();
  }

  function check() {
    open();
    list.replaceChildren();
    summary.textContent = "Checking…";
    button.disabled = true;
    loadAxe()
      .then(function (axe) {
        return axe.run({ exclude: [["#editbar"]] }, { resultTypes: ["violations"] });
      })
      .then(show, function (error) {
        summary.textContent = "The check could not run: " + error.message;
      })
      .then(function () {
        button.disabled = false;
        heading.focus();
      });
  }

  function show(results) {
    var violations = results.violations;
    var count = violations.length;
    summary.textContent = count === 0
      ? "No accessibility issues found."
      : count + (count === 1 ? " rule" : " rules") + " broken on this page.";
    violations.forEach(function (violation) {
      list.appendChild(violationItem(violation));
    });
  }

  function element(name, className, text) {
    var node = document.createElement(name);
    if (className) {
      node.className = className;
    }
    if (text) {
      node.textContent = text;
    }
    return node;
  }

  /* One broken rule: its impact, what it asks, a link to its explanation, and the elements breaking it. */
  function violationItem(violation) {
    var item = element("li", "editbar-violation");
    item.appendChild(element("strong", "editbar-impact", violation.impact || "issue"));
    item.appendChild(document.createTextNode(" " + violation.help + " "));
    var rule = element("a", "", violation.id);
    rule.href = violation.helpUrl;
    item.appendChild(rule);
    var nodes = element("ul", "editbar-nodes");
    violation.nodes.forEach(function (node) {
      nodes.appendChild(nodeItem(node.target));
    });
    item.appendChild(nodes);
    return item;
  }

  function nodeItem(target) {
    var selector = target.map(function (part) { return Array.isArray(part) ? part.join(" ") : part; }).join(" ");
    var item = element("li");
    var reveal = element("button", "editbar-show", "Show");
    reveal.type = "button";
    reveal.setAttribute("aria-label", "Show " + selector);
    reveal.addEventListener("click", function () { highlight(target); });
    item.appendChild(reveal);
    item.appendChild(document.createTextNode(" "));
    item.appendChild(element("code", "", selector));
    return item;
  }

  /* Scroll to the element, outline it and move focus to it (focusable for the moment if it is not). */
  function highlight(target) {
    var found = target.length === 1 && typeof target[0] === "string" ? document.querySelector(target[0]) : null;
    clearHighlight();
    if (!found) {
      return;
    }
    found.classList.add("editbar-highlight");
    if (found.tabIndex < 0 && !found.hasAttribute("tabindex")) {
      found.setAttribute("tabindex", "-1");
      found.setAttribute("data-editbar-tabindex", "");
    }
    found.scrollIntoView({ block: "center" });
    found.focus({ preventScroll: true });
  }

  function clearHighlight() {
    document.querySelectorAll(".editbar-highlight").forEach(function (node) {
      node.classList.remove("editbar-highlight");
      if (node.hasAttribute("data-editbar-tabindex")) {
        node.removeAttribute("tabindex");
        node.removeAttribute("data-editbar-tabindex");
      }
    });
  }

  button.addEventListener("click", check);
  panel.querySelector(".editbar-a11y-close").addEventListener("click", close);
  panel.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      close();
    }
  });
}());
