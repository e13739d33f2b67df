/* Presence and autosave on the admin's change forms (issue 37; docs/editing.md).
 *
 * The panel at the top of the form (#editing-panel, admin/editing/change_form.html) names the
 * item's two endpoints in data- attributes; this file is the page's only script for them (the
 * Content-Security-Policy allows no inline script).
 *
 * - Presence: a beat every data-heartbeat-seconds lists who else has the item open; the tab says
 *   it is leaving on pagehide.
 * - Autosave: the form's fields, at most every data-autosave-seconds while the editor types, when
 *   the tab is hidden or closed (sendBeacon), and before a save is sent. Kept on the server per
 *   editor and item; offered back ("restore / discard") when the form is opened again.
 * - A session that ended: the server refuses the text (403 "signed_out"), so it is kept in this
 *   browser, marked with the editor's id, and sent to the server once the same editor is signed in
 *   again and opens the form; it is then offered back like any autosave. Nothing is ever applied to
 *   the item but by the editor's own save, signed in, with its CSRF token.
 */
"use strict";
(function () {
  const NOT_KEPT = new Set(["csrfmiddlewaretoken"]);

  function csrfToken(form) {
    // The cookie's token, not the page's: signing in again (in another tab) rotates it.
    const cookie = document.cookie.split("; ").find((part) => part.startsWith("csrftoken="));
    return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : form.elements.csrfmiddlewaretoken.value;
  }

  function serialise(form) {
    const pairs = [];
    for (const [name, value] of new FormData(form)) {
      if (typeof value === "string" && !NOT_KEPT.has(name)) pairs.push([name, value]);
    }
    return JSON.stringify(pairs);
  }

  function addInlineRows(form, pairs) {
    // Rows the editor added with "Add another" are not on a fresh page: add them before filling them.
    for (const [name, value] of pairs) {
      if (!name.endsWith("-TOTAL_FORMS") || !form.elements[name]) continue;
      const prefix = name.slice(0, -"-TOTAL_FORMS".length);
      const add = document.querySelector(`#${CSS.escape(prefix)}-group .add-row a`);
      for (let count = Number(form.elements[name].value); add && count < Number(value); count++) add.click();
    }
  }

  function fill(form, pairs) {
    addInlineRows(form, pairs);
    const values = new Map();
    for (const [name, value] of pairs) values.set(name, [...(values.get(name) || []), value]);
    const used = new Map();
    for (const element of form.elements) {
      const name = element.name;
      if (!name || NOT_KEPT.has(name) || ["file", "submit", "button", "reset"].includes(element.type)) continue;
      const saved = values.get(name) || [];
      if (element.type === "checkbox" || element.type === "radio") {
        element.checked = saved.includes(element.value);
      } else if (element.tagName === "SELECT") {
        for (const value of saved) {  // an autocomplete shows only the options chosen when the page was made
          if (![...element.options].some((option) => option.value === value)) element.add(new Option(value, value));
        }
        for (const option of element.options) option.selected = saved.includes(option.value);
      } else {
        const index = used.get(name) || 0;
        used.set(name, index + 1);
        if (index < saved.length) element.value = saved[index];
      }
      element.dispatchEvent(new Event("change", {bubbles: true}));
    }
  }

  function start(panel) {
    const form = panel.closest("form");
    const presenceUrl = panel.dataset.presenceUrl;
    const autosaveUrl = panel.dataset.autosaveUrl;
    const user = panel.dataset.user;
    const localKey = `repojournal.editing:${autosaveUrl}`;
    const offer = panel.querySelector(".editing-autosave");
    const status = panel.querySelector(".editing-status");
    let lastSent = serialise(form);
    let lastAt = 0;
    let timer = null;
    let paused = false;  // an offer is open: typing must not replace what is offered
    let submitting = false;
    let signedOut = false;

    function say(text) {
      status.textContent = text;
      status.hidden = !text;
    }

    function post(url, fields, options = {}) {
      const body = new URLSearchParams({...fields, csrfmiddlewaretoken: csrfToken(form)});
      return fetch(url, {method: "POST", body, credentials: "same-origin", headers: {"X-CSRFToken": csrfToken(form)},
                         ...options});
    }

    async function refused(response) {
      if (response.status === 403 && (await response.json().catch(() => ({}))).error === "signed_out") {
        signedOut = true;
        say("Your session has ended. What you type is kept in this browser: sign in again (saving takes you " +
            "there), and it is offered back here.");
        return true;
      }
      return false;
    }

    function keepLocally(text) {
      try {
        localStorage.setItem(localKey, JSON.stringify({user, fields: text}));
      } catch (error) { /* storage full or refused: the server still has the last autosave */ }
    }

    async function send() {
      const text = serialise(form);
      if (paused || text === lastSent) return "unchanged";
      lastAt = Date.now();
      try {
        const response = await post(autosaveUrl, {fields: text});
        if (response.ok) {
          lastSent = text;
          localStorage.removeItem(localKey);
          say(`Unsaved changes kept at ${(await response.json()).shown}.`);
          return "kept";
        }
        if (await refused(response)) {
          keepLocally(text);
          return "signed_out";
        }
        if (response.status === 413) say("Too long to keep as unsaved changes: save the form to keep it.");
      } catch (error) { /* offline: the next change or beat tries again */ }
      return "failed";
    }

    function schedule() {
      if (paused || submitting || timer) return;
      const wait = Math.max(1000, lastAt + Number(panel.dataset.autosaveSeconds) * 1000 - Date.now());
      timer = setTimeout(() => { timer = null; send(); }, wait);
    }

    function sendNow() {
      // The tab is hidden or going: a beacon outlives the page (up to 64 KiB; the timed autosaves keep more).
      const text = serialise(form);
      if (paused || submitting || text === lastSent) return;
      const body = new URLSearchParams({fields: text, csrfmiddlewaretoken: csrfToken(form)});
      if (signedOut) keepLocally(text);
      else if (navigator.sendBeacon(autosaveUrl, body)) lastSent = text;
    }

    function showOthers(others) {
      const list = panel.querySelector(".editing-presence");
      list.replaceChildren(...others.map((other) => {
        const item = document.createElement("li");
        item.className = "warning";
        item.textContent = `${other.name} is editing this ${panel.dataset.kind}, since ${other.since}`;
        return item;
      }));
      list.hidden = !others.length;
    }

    async function beat() {
      try {
        const response = await post(presenceUrl, {});
        if (response.ok) {
          showOthers((await response.json()).others);
          if (signedOut) {  // signed in again meanwhile (in another tab): the text goes to the server
            signedOut = false;
            say("");
            lastSent = null;
            send();
          }
        } else {
          await refused(response);
        }
      } catch (error) { /* offline: the next beat tries again */ }
    }

    function offerBack(shown) {
      paused = true;
      panel.querySelector(".editing-saved-at").textContent = shown;
      offer.hidden = false;
    }

    async function restore() {
      const response = await fetch(autosaveUrl, {credentials: "same-origin"});
      if (!response.ok) {
        if (!(await refused(response))) say("Those unsaved changes are gone (saved or discarded elsewhere).");
        offer.hidden = true;
        paused = false;
        return;
      }
      const kept = await response.json();
      fill(form, kept.fields);
      offer.hidden = true;
      paused = false;
      lastSent = serialise(form);
      say(`Restored your unsaved changes from ${kept.shown}: save to apply them.`);
    }

    async function discard() {
      const response = await fetch(autosaveUrl, {method: "DELETE", credentials: "same-origin",
                                                 headers: {"X-CSRFToken": csrfToken(form)}});
      if (response.ok) {
        offer.hidden = true;
        paused = false;
        say("Unsaved changes discarded.");
      } else {
        await refused(response);
      }
    }

    async function arrive() {
      // Text kept in this browser while signed out, by this editor: to the server, then offered back.
      let local = null;
      try { local = JSON.parse(localStorage.getItem(localKey) || "null"); } catch (error) { local = null; }
      if (local && local.user === user) {
        try {
          const response = await post(autosaveUrl, {fields: local.fields});
          if (response.ok) {
            localStorage.removeItem(localKey);
            offerBack((await response.json()).shown);
            return;
          }
        } catch (error) { /* kept locally for the next visit */ }
      }
      if (panel.dataset.savedAt) offerBack(panel.dataset.savedAt);
    }

    async function beforeSave(event) {
      // The text goes to the server before the save is sent: a save refused (conflict, invalid input, a
      // session that ended) then loses nothing, and a save that succeeds removes it on the server.
      if (submitting) return;
      event.preventDefault();
      submitting = true;
      clearTimeout(timer);
      const wasPaused = paused;
      paused = false;
      if (!wasPaused) await Promise.race([send(), new Promise((resolve) => setTimeout(resolve, 3000))]);
      form.elements.csrfmiddlewaretoken.value = csrfToken(form);  // signed in again elsewhere: the new token
      // A task later, not a microtask: while this submit event is still being dispatched, a new one is ignored.
      setTimeout(() => form.requestSubmit(event.submitter));
    }

    offer.querySelector(".editing-restore").addEventListener("click", restore);
    offer.querySelector(".editing-discard").addEventListener("click", discard);
    form.addEventListener("input", schedule);
    form.addEventListener("change", schedule);
    form.addEventListener("submit", beforeSave);
    document.addEventListener("visibilitychange", () => {
      // Hidden: keep the text now. Visible again: beat now (a browser slows a hidden tab's timers).
      if (document.visibilityState === "hidden") sendNow();
      else beat();
    });
    window.addEventListener("pagehide", () => {
      sendNow();
      navigator.sendBeacon(presenceUrl, new URLSearchParams({leaving: "1", csrfmiddlewaretoken: csrfToken(form)}));
    });
    window.addEventListener("pageshow", (event) => { if (event.persisted) { submitting = false; beat(); } });
    setInterval(beat, Number(panel.dataset.heartbeatSeconds) * 1000);
    beat();
    arrive();
  }

  function ready() {
    const panel = document.getElementById("editing-panel");
    if (panel) start(panel);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", ready);
  else ready();
})();
