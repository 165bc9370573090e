// The label queue: show a pair, take a level by click or key, skip, undo; one request at a time.
"use strict";
const queue = {current: null, busy: false, poll: null, renderPoll: null};
const statusLine = document.getElementById("status");

function syncVideos(left, right) {
  // Play both from the start together and pull B back onto A's clock when they drift.
  if (!left || !right) return;
  const align = () => { if (Math.abs(right.currentTime - left.currentTime) > 0.1) right.currentTime = left.currentTime; };
  left.addEventListener("timeupdate", align);
  left.addEventListener("seeked", align);
  left.addEventListener("play", () => { align(); right.play().catch(() => {}); });
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
  showPair(data.query);
}

function showPair(query) {
  // While a video renders, its segment's plot stands in for it (or a note, before the plot exists).
  const waiting = query.rendering ? "rendering…" : "(no video)";
  syncVideos(showMedia(document.getElementById("left"), query.left_media, waiting),
             showMedia(document.getElementById("right"), query.right_media, waiting));
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
document.addEventListener("keydown", (event) => {
  if (event.target.tagName === "INPUT" || event.target.tagName === "TEXTAREA" || event.repeat) return;
  const button = document.querySelector(`button.level[data-key="${event.key}"]`);
  if (button) submit(Number(button.dataset.value));
  else if (event.key === "s") submit(null);
  else if (event.key === "u") undo();
});
next().catch((error) => { statusLine.textContent = "error: " + error.message; });
