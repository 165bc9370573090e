// Shared by every page: JSON calls that carry the CSRF token, and the annotator login form.
"use strict";
const CSRF = document.querySelector('meta[name="csrf"]').content;

async function api(path, body) {
  const options = {credentials: "same-origin", headers: {"X-CSRF-Token": CSRF}};
  if (body !== undefined) {
    options.method = "POST";
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json();
  if (!response.ok) {
    const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    throw new Error(detail || `HTTP ${response.status}`);
  }
  return data;
}

function showMedia(slot, name, missing = "(no video)") {
  slot.replaceChildren();
  if (!name) { slot.textContent = missing; return null; }
  const url = "/media/" + encodeURI(name);
  const video = /\.(webm|mp4)$/i.test(name);
  const element = document.createElement(video ? "video" : "img");
  element.src = url;
  if (video) { element.loop = true; element.muted = true; element.autoplay = true; element.playsInline = true; }
  slot.appendChild(element);
  return video ? element : null;
}

const login = document.getElementById("login");
if (login) {
  login.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const token = document.getElementById("annotator-token");
      const body = {annotator: document.getElementById("annotator").value};
      if (token) body.token = token.value;
      await api("/api/session", body);
      location.reload();
    } catch (error) {
      document.getElementById("login-error").textContent = error.message;
    }
  });
}
