// M3HF page: preview the parse of the text, let the person correct each spec, confirm to the store.
"use strict";
const phaseBox = document.getElementById("phase");
const m3hfStatus = document.getElementById("m3hf-status");
const parsed = {reasons: []};

function addSpec(spec, summary) {
  const card = document.getElementById("spec-template").content.firstElementChild.cloneNode(true);
  card.querySelector(".template").value = spec.template;
  card.querySelector(".agents").value = spec.agents === "all" ? "all" : spec.agents.join(",");
  card.querySelector(".params").value = JSON.stringify(spec.params || {});
  card.querySelector(".summary").textContent = summary || "";
  card.dataset.reason = spec.reason || "";
  document.getElementById("specs").appendChild(card);
}

function readSpecs() {
  return [...document.querySelectorAll("#specs .spec")]
    .filter((card) => card.querySelector(".keep").checked)
    .map((card) => {
      const agents = card.querySelector(".agents").value.trim();
      return {
        template: card.querySelector(".template").value,
        agents: agents === "all" ? "all" : agents.split(",").filter((a) => a.trim()).map(Number),
        params: JSON.parse(card.querySelector(".params").value || "{}"),
        reason: card.dataset.reason,
      };
    });
}

async function preview() {
  const text = document.getElementById("feedback-text").value;
  try {
    const result = await api("/api/m3hf/preview", {text: text});
    const perAgent = document.getElementById("per-agent");
    perAgent.replaceChildren();
    for (const [agent, summaries] of Object.entries(result.per_agent)) {
      const line = document.createElement("p");
      line.className = "agent-preview";
      line.textContent = `${agent}: ${summaries.length ? summaries.join("; ") : "nothing"}`;
      perAgent.appendChild(line);
    }
    document.getElementById("specs").replaceChildren();
    result.specs.forEach((s) => addSpec(s.spec, s.summary));
    document.getElementById("review").classList.remove("hidden");
    m3hfStatus.textContent = `the parser found ${result.specs.length} spec(s)`;
  } catch (error) {
    m3hfStatus.textContent = "error: " + error.message;
  }
}

async function confirmSpecs() {
  try {
    const result = await api("/api/m3hf/commit", {
      phase: Number(phaseBox.dataset.phase),
      text: document.getElementById("feedback-text").value,
      specs: readSpecs(),
    });
    m3hfStatus.textContent = `sent feedback ${result.id} with ${result.specs.length} spec(s)`;
  } catch (error) {
    m3hfStatus.textContent = "error: " + error.message;
  }
}

if (phaseBox) {
  const rollout = document.getElementById("rollout");
  showMedia(rollout, rollout.dataset.media);
  document.getElementById("preview").addEventListener("click", preview);
  document.getElementById("confirm").addEventListener("click", confirmSpecs);
  document.getElementById("add-spec").addEventListener("click", () =>
    addSpec({template: "time_penalty", agents: "all", params: {}}, "new spec"));
}
