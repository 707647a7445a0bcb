// The dashboard's behaviours, each bound to a data attribute (the Content-Security-Policy allows no inline
// script or handler). No framework, no build step.
//
//   form[data-api]        submitted with fetch (CSRF header); a JSON error is shown next to its `field`,
//                         success follows the answer's `location`, the form's `data-then`, or reloads.
//   [data-sse]            an EventSource on its URL: each event's `data` (HTML the server escaped) is appended,
//                         or replaces the content for `event: replace`; `data-sse-max` caps the children kept.
//   button[data-post]     POSTs to its URL (CSRF header, `data-body` JSON as form fields), then reloads or
//                         follows `data-then`.
//   [data-confirm]        asks before a data-post button or a form goes ahead.
//   select[data-autosubmit] submits its form when changed.
"use strict";

(function () {
  const meta = document.querySelector('meta[name="csrf-token"]');
  const csrf = meta ? meta.getAttribute("content") : "";

  function flash(message) {
    const box = document.querySelector("[data-flash]");
    if (!box) {
      window.alert(message);
      return;
    }
    box.textContent = message;
    box.hidden = false;
  }

  function confirmed(element) {
    const question = element.getAttribute("data-confirm");
    return !question || window.confirm(question);
  }

  async function readError(response) {
    try {
      const body = await response.json();
      return { message: body.error || response.statusText, field: body.field || null };
    } catch (_) {
      return { message: response.status + " " + response.statusText, field: null };
    }
  }

  function go(then, answer) {
    const target = (answer && answer.location) || then;
    if (target) {
      window.location.assign(target);
    } else {
      window.location.reload();
    }
  }

  async function post(url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf, Accept: "application/json" },
      body: body,
    });
  }

  async function answerOf(response) {
    // A form route that answered with a redirect: fetch followed it, so go where it led.
    if (response.redirected) return { location: response.url };
    const type = response.headers.get("content-type") || "";
    return type.includes("json") ? response.json() : null;
  }

  function clearErrors(form) {
    form.querySelectorAll("[data-error-for]").forEach((slot) => {
      slot.textContent = "";
    });
    form.querySelectorAll(".invalid").forEach((input) => input.classList.remove("invalid"));
  }

  function showError(form, error) {
    const slot = error.field && form.querySelector('[data-error-for="' + CSS.escape(error.field) + '"]');
    if (slot) {
      slot.textContent = error.message;
      const input = form.querySelector('[name="' + CSS.escape(error.field) + '"]');
      if (input) input.classList.add("invalid");
    } else {
      flash(error.message);
    }
  }

  async function submitForm(event) {
    const form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-api")) return;
    event.preventDefault();
    if (!confirmed(form)) return;
    clearErrors(form);
    const url = form.getAttribute("data-api") || form.getAttribute("action");
    const response = await post(url, new URLSearchParams(new FormData(form)));
    if (!response.ok) {
      showError(form, await readError(response));
      return;
    }
    if (form.hasAttribute("data-stay")) {
      form.reset();
      return;
    }
    go(form.getAttribute("data-then"), await answerOf(response));
  }

  async function clickPost(event) {
    const button = event.target.closest("button[data-post]");
    if (!button) return;
    event.preventDefault();
    if (!confirmed(button)) return;
    const fields = JSON.parse(button.getAttribute("data-body") || "{}");
    button.disabled = true;
    const response = await post(button.getAttribute("data-post"), new URLSearchParams(fields));
    button.disabled = false;
    if (!response.ok) {
      flash((await readError(response)).message);
      return;
    }
    go(button.getAttribute("data-then"), await answerOf(response));
  }

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    return template.content;
  }

  function follow(element) {
    const source = new EventSource(element.getAttribute("data-sse"));
    const max = parseInt(element.getAttribute("data-sse-max") || "0", 10);
    const stick = () => element.scrollHeight - element.scrollTop - element.clientHeight < 40;
    const keyed = (key) => element.querySelector(`[data-key="${CSS.escape(key)}"]`);
    const add = (content, key) => {
      const atBottom = stick();
      const old = key ? keyed(key) : null;
      if (old) old.replaceWith(content);
      else element.appendChild(content);
      while (max > 0 && element.children.length > max) element.removeChild(element.firstElementChild);
      if (atBottom) element.scrollTop = element.scrollHeight;
    };
    source.onmessage = (event) => add(fragment(event.data), null);
    // A reply being written: each draft takes the place of the element of the same key, and so does the
    // message it becomes; a draft taken back (the model called tools) is removed.
    source.addEventListener("upsert", (event) => {
      const content = fragment(event.data);
      const first = content.firstElementChild;
      add(content, first ? first.getAttribute("data-key") : null);
    });
    source.addEventListener("remove", (event) => {
      const old = keyed(event.data);
      if (old) old.remove();
    });
    source.addEventListener("replace", (event) => {
      element.replaceChildren(fragment(event.data));
    });
    source.addEventListener("end", () => source.close());
    window.addEventListener("pagehide", () => source.close());
  }

  function autosubmit(event) {
    const select = event.target;
    if (select instanceof HTMLSelectElement && select.hasAttribute("data-autosubmit") && select.form) {
      select.form.requestSubmit();
    }
  }

  function confirmPlainForm(event) {
    const form = event.target;
    if (form instanceof HTMLFormElement && !form.hasAttribute("data-api") && !confirmed(form)) {
      event.preventDefault();
    }
  }

  document.addEventListener("submit", confirmPlainForm, true);
  document.addEventListener("submit", submitForm);
  document.addEventListener("click", clickPost);
  document.addEventListener("change", autosubmit);
  document.addEventListener("DOMContentLoaded", () => {
    document.querySelectorAll("[data-sse]").forEach(follow);
  });
})();
