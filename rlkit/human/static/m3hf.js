// M3HF page: preview the parse of the text, let the person correct each spec in a typed form
// (pickers from the scene, bounded numbers; the JSON as an advanced view), confirm to the store.
// The form offers only valid choices (GET /api/m3hf/form); every spec is also checked by the
// server (POST /api/m3hf/check) and Confirm stays disabled while any kept spec has a problem or
// waits for the check of the spec as it stands (an answer for an earlier edit is dropped); a check
// of a spec that is not kept, or an event that leaves a spec as it was, never disables it.
"use strict";
const phaseBox = document.getElementById("phase");
const m3hfStatus = document.getElementById("m3hf-status");
const form = {description: null, timer: null};
const COMPOSITE = "composite";

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function options(select, values) {
  select.replaceChildren(...values.map((value) => new Option(value, value)));
}

function boundsText(field) {
  if (field.kind === "choice") return "";
  const low = field.min === undefined ? "" : `${field.min} ${field.exclusive_min ? "<" : "≤"} `;
  const high = field.max === undefined ? "" : ` ${field.exclusive_max ? "<" : "≤"} ${field.max}`;
  return `${low}${field.kind === "integer" ? "whole number" : "x"}${high}`;
}

// -- the fields of one template ----------------------------------------------------------------
function fieldsOf(template) { return form.description.templates[template].fields; }

function input(container, name) { return container.querySelector(`:scope > .field > [data-field="${name}"]`); }

function buildFields(container, template, params) {
  container.replaceChildren();
  for (const field of fieldsOf(template)) {
    const label = element("label", "field", field.name + " ");
    let control;
    if (field.kind === "choice") {
      control = element("select", "param");
    } else {
      control = element("input", "param");
      control.type = "number";
      control.step = field.kind === "integer" ? "1" : "any";
      if (field.min !== undefined) control.min = field.min;
      if (field.max !== undefined) control.max = field.max;
      control.value = params[field.name] ?? field.default ?? "";
    }
    control.dataset.field = field.name;
    control.title = field.description;
    label.append(control, element("span", "bounds", boundsText(field)));
    container.appendChild(label);
  }
  narrowChoices(container, template, params);
}

function narrowChoices(container, template, wanted = {}) {
  // In field order: a field whose valid values depend on an earlier one lists only those.
  for (const field of fieldsOf(template)) {
    if (field.kind !== "choice") continue;
    const select = input(container, field.name);
    const current = wanted[field.name] ?? select.value;
    const values = field.options_by
      ? field.options_by.options[input(container, field.options_by.field).value] || [] : field.options;
    options(select, values);
    select.value = values.includes(current) ? current : values.includes(field.default) ? field.default : values[0];
  }
}

function numberProblem(field, text) {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) return `${field.name}: enter a number`;
  if (field.kind === "integer" && !Number.isInteger(value)) return `${field.name}: enter a whole number`;
  const below = field.min !== undefined && (field.exclusive_min ? value <= field.min : value < field.min);
  const above = field.max !== undefined && (field.exclusive_max ? value >= field.max : value > field.max);
  return below || above ? `${field.name}: ${text} is out of range (${boundsText(field)})` : null;
}

function readFields(container, template, problems) {
  const params = {};
  for (const field of fieldsOf(template)) {
    const control = input(container, field.name);
    if (field.kind === "choice") {
      params[field.name] = control.value;
      continue;
    }
    const problem = numberProblem(field, control.value);
    control.setCustomValidity(problem || "");
    if (problem) problems.push(problem);
    params[field.name] = Number(control.value);
  }
  return params;
}

// -- composite parts ---------------------------------------------------------------------------
function simpleTemplates() { return Object.keys(form.description.templates); }

function addPart(card, part) {
  const composite = form.description.composite;
  const box = element("div", "part");
  const head = element("div", "spec-head");
  const choose = element("select", "part-template");
  options(choose, simpleTemplates());
  choose.value = part.template;
  const weight = element("input", "part-weight");
  weight.type = "number";
  weight.step = "any";
  weight.min = composite.weight.min;
  weight.max = composite.weight.max;
  weight.value = part.weight ?? composite.weight.default;
  const remove = element("button", "remove-part", "remove part");
  const chooseLabel = element("label", "", "part ");
  chooseLabel.appendChild(choose);
  const weightLabel = element("label", "", "weight ");
  weightLabel.append(weight, element("span", "bounds", boundsText(composite.weight)));
  head.append(chooseLabel, weightLabel, remove);
  const fields = element("div", "part-fields");
  box.append(head, fields);
  buildFields(fields, part.template, part.params || {});
  choose.addEventListener("change", () => buildFields(fields, choose.value, {}));
  remove.addEventListener("click", () => { box.remove(); changed(card); });
  card.querySelector(".parts").appendChild(box);
}

function readParts(card, problems) {
  const composite = form.description.composite;
  const parts = [...card.querySelectorAll(".part")].map((box) => {
    const template = box.querySelector(".part-template").value;
    const weight = box.querySelector(".part-weight");
    const problem = numberProblem(composite.weight, weight.value);
    weight.setCustomValidity(problem || "");
    if (problem) problems.push(problem);
    return {template, weight: Number(weight.value), params: readFields(box.querySelector(".part-fields"), template, problems)};
  });
  if (parts.length < composite.min_parts || parts.length > composite.max_parts) {
    problems.push(`parts: a composite has ${composite.min_parts} to ${composite.max_parts} parts`);
  }
  card.querySelector(".add-part").disabled = parts.length >= composite.max_parts;
  card.querySelectorAll(".remove-part").forEach((b) => { b.disabled = parts.length <= composite.min_parts; });
  return {parts};
}

// -- one spec card -----------------------------------------------------------------------------
function buildAgents(card, agents) {
  const box = card.querySelector(".agents");
  const all = element("input", "all-agents");
  all.type = "checkbox";
  all.checked = agents === "all";
  const allLabel = element("label", "", "");
  allLabel.append(all, " all");
  box.appendChild(allLabel);
  for (const agent of form.description.agents) {
    const tick = element("input", "agent");
    tick.type = "checkbox";
    tick.value = agent.index;
    tick.checked = agents !== "all" && agents.includes(agent.index);
    tick.disabled = all.checked;
    const label = element("label", "", "");
    label.append(tick, ` ${agent.index} (${agent.colour})`);
    box.appendChild(label);
  }
  all.addEventListener("change", () => {
    card.querySelectorAll(".agent").forEach((tick) => { tick.disabled = all.checked; });
  });
}

function readAgents(card, problems) {
  if (card.querySelector(".all-agents").checked) return "all";
  const agents = [...card.querySelectorAll(".agent:checked")].map((tick) => Number(tick.value));
  if (!agents.length) problems.push("agents: tick at least one agent, or all");
  return agents;
}

function showTemplate(card, template, params) {
  card.querySelector(".doc").textContent = template === COMPOSITE
    ? form.description.composite.doc : form.description.templates[template].doc;
  const fields = card.querySelector(".fields");
  const parts = card.querySelector(".parts");
  fields.replaceChildren();
  parts.replaceChildren();
  if (template !== COMPOSITE) {
    buildFields(fields, template, params);
    return;
  }
  const add = element("button", "add-part", "add a part");
  add.addEventListener("click", () => { addPart(card, {template: simpleTemplates()[0]}); changed(card); });
  parts.appendChild(add);
  const given = params.parts || [];
  const starting = given.length ? given : simpleTemplates().slice(0, form.description.composite.min_parts)
    .map((name) => ({template: name}));
  starting.forEach((part) => addPart(card, part));
}

function readCard(card) {
  const problems = [];
  const template = card.querySelector(".template").value;
  const agents = readAgents(card, problems);
  const params = template === COMPOSITE
    ? readParts(card, problems) : readFields(card.querySelector(".fields"), template, problems);
  return {spec: {template, agents, params, reason: card.dataset.reason || ""}, problems};
}

function fillCard(card, spec) {
  const choose = card.querySelector(".template");
  choose.value = spec.template;
  card.querySelector(".agents").replaceChildren(document.createTextNode("for "));
  buildAgents(card, spec.agents);
  showTemplate(card, spec.template, spec.params || {});
  card.dataset.reason = spec.reason || "";
}

function addSpec(spec) {
  const card = document.getElementById("spec-template").content.firstElementChild.cloneNode(true);
  const choose = card.querySelector(".template");
  const templates = simpleTemplates();
  options(choose, form.description.composite ? [...templates, COMPOSITE] : templates);
  fillCard(card, spec);
  card.addEventListener("change", (event) => {
    if (event.target.classList.contains("template")) {
      showTemplate(card, choose.value, {});
    } else if (event.target.matches("select.param")) {
      const fields = event.target.closest(".fields, .part-fields");
      const template = fields.classList.contains("fields") ? choose.value
        : fields.closest(".part").querySelector(".part-template").value;
      narrowChoices(fields, template);
    }
    if (!event.target.classList.contains("json")) changed(card);
  });
  card.addEventListener("input", (event) => {
    if (event.target.type === "number") changed(card);
  });
  card.querySelector(".apply-json").addEventListener("click", () => applyJson(card));
  document.getElementById("specs").appendChild(card);
  changed(card);
  return card;
}

async function applyJson(card) {
  // The JSON goes through the server's check first; the form takes it only when it is valid.
  let spec;
  try {
    spec = JSON.parse(card.querySelector(".json").value);
  } catch (error) {
    showProblem(card, "JSON: " + error.message);
    return;
  }
  try {
    const result = await api("/api/m3hf/check", {specs: [spec]});
    if (result.problems[0]) { showProblem(card, result.problems[0]); return; }
    fillCard(card, spec);
    changed(card);
  } catch (error) {
    showProblem(card, "error: " + error.message);
  }
}

function showProblem(card, problem) {
  card.querySelector(".problem").textContent = problem || "";
  card.querySelector(".summary").textContent = "";
  card.dataset.valid = problem ? "false" : "true";
  refreshConfirm();
}

// -- checking and confirming -------------------------------------------------------------------
function changed(card) {
  const {spec, problems} = readCard(card);
  const json = card.querySelector(".json");
  if (document.activeElement !== json) json.value = JSON.stringify(spec, null, 1);
  // An event that leaves a valid or pending spec as it was starts no check (a tick of keep, the
  // change event of a number after its input events); a refused one is checked again as it stands.
  const read = JSON.stringify([spec, problems]);
  if (read !== card.dataset.read || card.dataset.valid === "false") {
    card.dataset.read = read;
    card.dataset.valid = "pending";
    if (problems.length) showProblem(card, problems.join("; "));
    clearTimeout(form.timer);
    form.timer = setTimeout(checkAll, 250);
  }
  refreshConfirm();
}

async function checkAll() {
  const cards = [...document.querySelectorAll("#specs .spec")].filter((card) => card.dataset.valid === "pending");
  if (!cards.length) return;
  const sent = cards.map((card) => card.dataset.read);
  try {
    const result = await api("/api/m3hf/check", {specs: sent.map((read) => JSON.parse(read)[0])});
    cards.forEach((card, i) => {
      if (card.dataset.read !== sent[i]) return;  // changed again meanwhile: checked again
      showProblem(card, result.problems[i]);
      card.querySelector(".summary").textContent = result.summaries[i] || "";
    });
  } catch (error) {
    m3hfStatus.textContent = "error: " + error.message;
  }
}

function refreshConfirm() {
  const kept = [...document.querySelectorAll("#specs .spec")].filter((card) => card.querySelector(".keep").checked);
  document.getElementById("confirm").disabled = !kept.every((card) => card.dataset.valid === "true");
}

function readSpecs() {
  return [...document.querySelectorAll("#specs .spec")]
    .filter((card) => card.querySelector(".keep").checked)
    .map((card) => readCard(card).spec);
}

async function preview() {
  const text = document.getElementById("feedback-text").value;
  try {
    const result = await api("/api/m3hf/preview", {text: text});
    const perAgent = document.getElementById("per-agent");
    perAgent.replaceChildren();
    for (const [agent, summaries] of Object.entries(result.per_agent)) {
      perAgent.appendChild(element("p", "agent-preview",
        `${agent}: ${summaries.length ? summaries.join("; ") : "nothing"}`));
    }
    document.getElementById("specs").replaceChildren();
    result.specs.forEach((s) => addSpec(s.spec));
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
  api("/api/m3hf/form").then((description) => {
    form.description = description;
    document.getElementById("preview").addEventListener("click", preview);
    document.getElementById("confirm").addEventListener("click", confirmSpecs);
    document.getElementById("add-spec").addEventListener("click", () =>
      addSpec({template: "time_penalty", agents: "all", params: {}}));
    phaseBox.dataset.ready = "true";
  }).catch((error) => { m3hfStatus.textContent = "error: " + error.message; });
}
