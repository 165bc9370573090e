// The label queue: show a pair, take a level by click or key, skip, undo; one request at a time.
"use strict";
const queue = {current: null, busy: false, poll: null, renderPoll: null};
const statusLine = document.getElementById("status");

const player = {videos: []};
const playButton = document.getElementById("play");
const scrub = document.getElementById("scrub");
const clock = document.getElementById("clock");

function syncVideos(left, right) {
  // One clock for both segments: A leads, B follows it; one play/pause and one scrub bar move both.
  player.videos = [left, right].filter(Boolean);
  const [lead, follow] = player.videos;
  if (!lead) { showClock(); return; }
  if (follow) {
    const align = () => { if (Math.abs(follow.currentTime - lead.currentTime) > 0.1) follow.currentTime = lead.currentTime; };
    lead.addEventListener("timeupdate", align);
    lead.addEventListener("seeked", align);
    lead.addEventListener("play", () => { align(); follow.play().catch(() => {}); });
    lead.addEventListener("pause", () => { follow.pause(); align(); });
  }
  for (const event of ["timeupdate", "play", "pause", "loadedmetadata", "seeked"]) lead.addEventListener(event, showClock);
  showClock();
}

function showClock() {
  const lead = player.videos[0];
  const duration = lead && Number.isFinite(lead.duration) ? lead.duration : 0;
  const time = lead ? lead.currentTime : 0;
  if (document.activeElement !== scrub) scrub.value = duration ? String(Math.round(1000 * time / duration)) : "0";
  clock.textContent = `${time.toFixed(1)} / ${duration.toFixed(1)} s`;
  const paused = !lead || lead.paused;
  playButton.replaceChildren(Object.assign(document.createElement("kbd"), {textContent: "p"}),
                             paused ? " play" : " pause");
  playButton.setAttribute("aria-pressed", paused ? "false" : "true");
}

function togglePlay() {
  const lead = player.videos[0];
  if (!lead) return;
  if (lead.paused) lead.play().catch(() => {}); else lead.pause();
}

function seekBoth() {
  for (const video of player.videos) {
    if (Number.isFinite(video.duration)) video.currentTime = (Number(scrub.value) / 1000) * video.duration;
  }
}

async function showLegend(box, name) {
  // A plot's JSON names its lines, their colours and ranges: the legend and axes beside it.
  box.replaceChildren();
  if (!name || !name.endsWith(".plot.webm")) return;
  let legend;
  try {
    const response = await fetch("/media/" + encodeURI(name.replace(/\.webm$/, ".json")), {credentials: "same-origin"});
    if (!response.ok) return;
    legend = await response.json();
  } catch (error) { return; }
  const axis = document.createElement("div");
  axis.className = "axis";
  for (const tick of [0, Math.round((legend.steps - 1) / 2), legend.steps - 1]) {
    axis.appendChild(Object.assign(document.createElement("span"), {textContent: String(tick)}));
  }
  const axisName = Object.assign(document.createElement("p"), {className: "axis-name",
    textContent: "step of the segment → (each line spans its own range, bottom to top)"});
  const lines = document.createElement("ul");
  lines.className = "legend";
  legend.names.forEach((label, i) => {
    const item = document.createElement("li");
    const swatch = Object.assign(document.createElement("span"), {className: "swatch"});
    swatch.style.background = legend.colours[i];
    const range = `${legend.low[i].toPrecision(3)} … ${legend.high[i].toPrecision(3)}`;
    item.append(swatch, ` ${label} `, Object.assign(document.createElement("span"), {className: "range", textContent: range}));
    lines.appendChild(item);
  });
  box.append(axis, axisName, lines);
}

function render(data) {
  const p = data.progress;
  document.getElementById("progress").textContent = `${p.done} labelled · ${p.remaining} to go`;
  queue.current = data.query;
  const done = data.query === null;
  document.getElementById("queue").classList.toggle("waiting", done);
  document.getElementById("done").classList.toggle("hidden", !done);
  document.body.dataset.queryId = done ? "" : String(data.query.id);
  if (done) {
    if (!queue.poll) queue.poll = setInterval(next, 3000);
    return;
  }
  if (queue.poll) { clearInterval(queue.poll); queue.poll = null; }
  // The button that answered the last pair keeps no focus: nothing looks chosen on the new one.
  if (document.activeElement instanceof HTMLButtonElement) document.activeElement.blur();
  showPair(data.query);
}

function showPair(query) {
  // While a video renders, its segment's plot stands in for it (or a note, before the plot exists).
  const waiting = query.rendering ? "rendering…" : "(no video)";
  syncVideos(showMedia(document.getElementById("left"), query.left_media, waiting),
             showMedia(document.getElementById("right"), query.right_media, waiting));
  showLegend(document.getElementById("left-legend"), query.left_media);
  showLegend(document.getElementById("right-legend"), query.right_media);
  document.getElementById("rendering").classList.toggle("hidden", !query.rendering);
  clearTimeout(queue.renderPoll);
  if (query.rendering) queue.renderPoll = setTimeout(() => pickUpVideos(query.id), 1000);
}

async function pickUpVideos(id) {
  // Ask the server (it only looks for files) until the videos are written, then swap them in.
  const shown = queue.current;
  if (!shown || shown.id !== id) return;
  let media = shown;
  try { media = await api(`/api/queries/${id}/media`); } catch (error) { /* ask again below */ }
  if (queue.current !== shown) return;
  const changed = media.left_media !== shown.left_media || media.right_media !== shown.right_media
    || media.rendering !== shown.rendering;
  if (changed) {
    Object.assign(shown, media);
    showPair(shown);
  } else {
    queue.renderPoll = setTimeout(() => pickUpVideos(id), 1000);
  }
}

async function run(action, message) {
  if (queue.busy) return;
  queue.busy = true;
  try {
    const data = await action();
    statusLine.textContent = message(data);
  } catch (error) {
    statusLine.textContent = "error: " + error.message;
  } finally {
    queue.busy = false;
  }
}

async function next() { render(await api("/api/queue/next")); }

function submit(value) {
  if (!queue.current) return;
  const id = queue.current.id;
  return run(async () => {
    const result = await api("/api/labels", {query_id: id, value: value});
    await next();
    return result;
  }, () => (value === null ? `skipped pair ${id}` : `saved pair ${id}`));
}

function undo() {
  return run(async () => {
    const result = await api("/api/labels/undo", {});
    if (result.query) render({query: result.query, progress: result.progress});
    return result;
  }, (r) => (r.undone ? `undid pair ${r.undone.query_id}` : "nothing to undo"));
}

document.querySelectorAll("button.level").forEach((button) => {
  button.addEventListener("click", () => submit(Number(button.dataset.value)));
});
document.getElementById("skip").addEventListener("click", () => submit(null));
document.getElementById("undo").addEventListener("click", undo);
playButton.addEventListener("click", togglePlay);
scrub.addEventListener("input", seekBoth);
document.addEventListener("keydown", (event) => {
  if (event.target.tagName === "INPUT" || event.target.tagName === "TEXTAREA" || event.repeat) return;
  const button = document.querySelector(`button.level[data-key="${event.key}"]`);
  if (button) submit(Number(button.dataset.value));
  else if (event.key === "s") submit(null);
  else if (event.key === "u") undo();
  else if (event.key === "p") togglePlay();
});
next().catch((error) => { statusLine.textContent = "error: " + error.message; });
