// brokerlb live dashboard: polls /dashboard/api/state (the leader's view) and draws it. No libraries.
"use strict";

const POLL_MS = 2000;
const HASH_SPACE = 4294967296; // 2^32
const PALETTE = ["#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#00acc1", "#e53935", "#6d4c41", "#3949ab",
  "#c0ca33", "#d81b60", "#00897b", "#5e35b1"];
const colours = new Map();
let selected = null;
let lastState = null;
let openSystem = false;
let storyNamespace = null; // the ring row the story panel follows (re-attached after each redraw)
const storyPanel = document.getElementById("story-section"); // kept: a redraw may detach it

function $(id) { return document.getElementById(id); }

// With authentication on, the page is opened as /dashboard#token=<JWT>; the token stays in this tab.
(function keepToken() {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match) {
    sessionStorage.setItem("brokerlb-token", decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname);
  }
})();

function api(url, options) {
  const token = sessionStorage.getItem("brokerlb-token");
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  return fetch(url, { ...(options || {}), headers });
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "style") node.setAttribute("style", value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function colourOf(broker) {
  if (!broker) return "#ddd";
  if (!colours.has(broker)) colours.set(broker, PALETTE[colours.size % PALETTE.length]);
  return colours.get(broker);
}

function time(ms) { return ms ? new Date(ms).toLocaleTimeString() : "–"; }
function num(x, digits = 1) { return x === null || x === undefined ? "–" : Number(x).toFixed(digits); }

function bar(percent, label) {
  const p = Math.max(0, Math.min(100, Number(percent) || 0));
  const cls = p >= 85 ? "hot" : p >= 65 ? "warm" : "";
  return el("div", { class: "bar", title: label || `${num(p)} %` },
    el("span", { class: cls, style: `width:${p}%` }), el("em", {}, label || `${num(p)} %`));
}

// limits as Pulsar reports them: CPU in percent of one core, memory in MB, NICs in Kbit/s
function limitText(kind, limit) {
  if (kind === "cpu") return `${num(limit / 100, limit % 100 ? 1 : 0)} core${limit === 100 ? "" : "s"}`;
  if (kind === "memory" || kind === "directMemory") return limit >= 1024 ? `${num(limit / 1024)} GB` : `${num(limit, 0)} MB`;
  return limit >= 1e6 ? `${num(limit / 1e6, limit % 1e6 ? 1 : 0)} Gbit/s` : `${num(limit / 1e3, 0)} Mbit/s`;
}

function resourceBar(r, kind) {
  if (!r || r.limit <= 0) return el("span", { class: "muted small" }, "n/a");
  return bar(r.percent, `${num(r.percent)} % of ${limitText(kind, r.limit)}`);
}

function renderHeader(s) {
  $("cluster").textContent = s.cluster;
  $("leader").textContent = s.leader || "none";
  $("served-by").textContent = s.servedBy === location.host ? s.servedBy : `${s.servedBy}, via ${location.host}`;
  $("updated").textContent = time(s.atMs);
  const b = s.balancer || {};
  const state = $("state");
  state.textContent = (b.state || "unknown").replace("_", " ") + (b.graceUntil ? ` (grace until ${b.graceUntil})` : "");
  state.className = `badge ${b.state || ""}`;
  state.dataset.state = b.state || "";
  $("reason").textContent = b.reason || "";
  $("last-cycle").textContent = b.lastCycleAt ? `last cycle ${b.lastCycleAt}` : "no cycle yet";
  $("band").textContent = b.band ? `band ${num(b.band.lower)}–${num(b.band.upper)} %` : "";
  $("balancedness").textContent = num(b.balancedness);
  $("distance").textContent = num(b.busiestDistanceFromLowerBound);
}

// where a broker's load sits against the balancer's band: "above", "below" or ""
function bandPosition(load, band) {
  if (!band) return "";
  if (load > band.upper) return "above";
  if (load < band.lower) return "below";
  return "";
}

function renderBrokers(s) {
  const body = $("brokers").querySelector("tbody");
  const band = (s.balancer || {}).band;
  body.replaceChildren(...s.brokers.map(b => {
    const where = bandPosition(b.load, band);
    const mark = where ? el("span", { class: `band-mark ${where}`, title: `${where} the balancer's band (${num(band.lower)}–${num(band.upper)} %)` },
      where === "above" ? " ▲ above band" : " ▼ below band") : null;
    return el("tr", { class: where ? `band-${where}` : "", dataset: { brokerId: b.id, band: where } },
    el("td", {}, el("i", { class: "dot", style: `display:inline-block;width:.7rem;height:.7rem;border-radius:50%;margin-right:.4rem;background:${colourOf(b.id)}` }),
      b.id, b.leader ? el("b", { title: "leader" }, " ★") : null, mark),
    el("td", {}, bar(b.load)),
    el("td", {}, resourceBar(b.resources.cpu, "cpu")),
    el("td", {}, resourceBar(b.resources.memory, "memory")),
    el("td", {}, resourceBar(b.resources.bandwidthIn, "bandwidthIn")),
    el("td", {}, resourceBar(b.resources.bandwidthOut, "bandwidthOut")),
    el("td", {}, b.bundles), el("td", {}, b.topics),
    el("td", {}, num(b.msgRateIn)), el("td", {}, num(b.msgRateOut)));
  }));
}

function isSystem(ns) { return ns.startsWith("pulsar/") || ns.startsWith("sla-monitor/"); }

function renderRings(s) {
  if (storyPanel.parentNode === $("namespaces")) $("namespaces").after(storyPanel); // out of the way of the redraw
  const owners = new Set(s.brokers.map(b => b.id));
  $("legend").replaceChildren(...[...owners].sort().map(o => el("span", {}, el("i", { style: `background:${colourOf(o)}` }), o)));
  const user = s.namespaces.filter(ns => !isSystem(ns.namespace));
  const system = s.namespaces.filter(ns => isSystem(ns.namespace));
  const details = el("details", { id: "system-namespaces" }, el("summary", { class: "small muted" },
    `${system.length} system namespaces (heartbeat, SLA monitor)`), ...system.map(ringRow));
  if (openSystem) details.setAttribute("open", "");
  details.addEventListener("toggle", () => { openSystem = details.open; });
  $("namespaces").replaceChildren(...(user.length ? user.map(ringRow) : [el("div", { class: "muted" }, "No namespace yet.")]), details);
  if (storyNamespace) {
    const row = [...document.querySelectorAll(".ring-row")].find(r => r.dataset.namespace === storyNamespace);
    if (row) row.after(storyPanel);
  }
}

function ringRow(ns) {
  return el("div", { class: "ring-row", dataset: { namespace: ns.namespace } },
    el("div", { class: "ns", title: ns.namespace }, `${ns.namespace} (${ns.bundles.length})`),
    el("div", { class: "ring" }, ...ns.bundles.map(b => {
      const width = Math.max(0.15, 100 * (b.upper - b.lower) / HASH_SPACE);
      const cls = [b.owner ? "" : "unowned", b.unloading ? "unloading" : "", b.bundle === selected ? "selected" : ""].join(" ");
      return el("div", {
        class: cls, style: `width:${width}%;background-color:${colourOf(b.owner)}`,
        title: `${b.bundle}\nowner: ${b.owner || "none"}${b.unloading ? " (unloading)" : ""}`,
        dataset: { bundle: b.bundle }, onclick: (e) => showStory(b.bundle, e.currentTarget.closest(".ring-row")),
      });
    })));
}

function decisionChips(decisions) {
  const counts = new Map();
  for (const d of decisions) {
    const key = `${d.label}/${d.reason}`;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return [...counts].map(([key, n]) => el("span", { class: `chip ${key.split("/")[0]}` }, `${key}${n > 1 ? " ×" + n : ""}`));
}

function cycleEntry(c) {
  if (c.kind === "idle") {
    const span = c.count > 1 ? `${time(c.fromMs)}–${time(c.toMs)}` : time(c.toMs);
    const chips = Object.entries(c.decisions).map(([key, n]) => el("span", { class: `chip ${key.split("/")[0]}` }, `${key}${n > 1 ? " ×" + n : ""}`));
    return el("div", { class: "cycle idle", dataset: { count: String(c.count) } },
      el("b", {}, `${c.count} idle ${c.cycleKind} cycle${c.count > 1 ? "s" : ""}`), el("span", { class: "muted small" }, ` ${span} `),
      ...chips, c.detail ? el("div", { class: "detail" }, c.detail) : null);
  }
  return el("div", { class: "cycle" },
    el("b", {}, `${time(c.atMs)} ${c.kind}`), " ", ...decisionChips(c.decisions),
    ...c.moves.map(m => el("div", { class: "detail" },
      `${m.executed ? "moved" : "failed to move"} ${m.bundle} ${m.source || "?"} → ${m.destination || "(next lookup)"} `,
      el("span", { class: "cause" }, m.reason), m.detail ? ` · ${m.detail}` : "")),
    ...c.splits.map(d => el("div", { class: "detail" }, `${d.executed ? "split" : "failed to split"} ${d.bundle} `,
      el("span", { class: "cause" }, d.reason), d.detail ? ` · ${d.detail}` : "")),
    ...(c.merges || []).map(d => el("div", { class: "detail" }, `${d.executed ? "merged" : "failed to merge"} ${d.bundles.join(" + ")} `,
      el("span", { class: "cause" }, d.reason), d.detail ? ` · ${d.detail}` : "")),
    ...c.decisions.filter(d => d.detail && d.label !== "Success").slice(0, 4).map(d => el("div", { class: "detail" },
      `${d.label} ${d.reason}${d.broker ? " on " + d.broker : ""}${d.bundle ? " " + d.bundle : ""}: ${d.detail}`)));
}

// what moved and why first (cycles with moves, splits, merges, failures), then the idle runs, collapsed
function renderCycles(s) {
  $("cycles").replaceChildren(...(s.cycles.length ? s.cycles.map(cycleEntry)
    : [el("div", { class: "muted" }, "No cycle yet (the leader sheds every " + num((s.balancer || {}).sheddingIntervalSeconds, 0) + " s).")]));
}

function causeText(m) {
  if (!m.category) return m.cause || "";
  return m.category === "shedding" ? `shedding · ${m.cause}` : m.category;
}

function renderMoves(s) {
  const body = $("moves").querySelector("tbody");
  body.replaceChildren(...s.moves.slice(0, 30).map(m => el("tr", { class: `category-${m.category || ""}`, dataset: { bundle: m.bundle, cause: m.cause || "", category: m.category || "" } },
    el("td", {}, time(m.atMs)),
    el("td", { title: m.bundle }, el("a", { href: "#", onclick: (e) => { e.preventDefault(); showStory(m.bundle, $("moves").closest("div")); } }, m.bundle)),
    el("td", {}, m.kind),
    el("td", {}, m.kind === "moved" ? `${m.previous} → ${m.broker}` : `${m.broker || "?"} → (next lookup)`),
    el("td", { class: "cause" }, causeText(m)))));
}

function storyLine(e) {
  if (e.kind === "decision") {
    const where = `${e.source ? " from " + e.source : ""}${e.destination ? " to " + e.destination : ""}`;
    return `${time(e.atMs)} leader ${e.recordedBy} decided: ${e.decision}${where} · cause ${e.reason}` +
      `${e.executed === false ? " (not carried out)" : ""}${e.detail ? " — " + e.detail : ""}`;
  }
  const dst = e.destination ? ` (${e.destination})` : "";
  return `${time(e.atMs)} ${e.from} → ${e.to}${dst}${e.forced ? " FORCED" : ""} by ${e.by}: ${e.reason}` +
    ` [recorded by ${e.recordedBy}]`;
}

// the story opens where the bundle was clicked: right after its ring row (or the moves table)
async function showStory(bundle, anchor) {
  selected = bundle;
  const panel = storyPanel;
  storyNamespace = anchor && anchor.classList.contains("ring-row") ? anchor.dataset.namespace : null;
  if (anchor && anchor.parentNode) {
    anchor.after(panel);
    panel.classList.add("inline");
  }
  $("story-bundle").textContent = bundle;
  if (lastState) renderRings(lastState);
  const parts = bundle.split("/");
  const range = parts.pop();
  const url = `/admin/v2/namespaces/${parts.map(encodeURIComponent).join("/")}/${range}/story`;
  let items = null;
  try {
    const response = await api(url);
    if (response.ok) {
      const story = await response.json();
      items = (story.transitions || []).map(e => el("li", { class: e.kind }, storyLine(e)));
    }
  } catch (e) { /* a broker that cannot be asked: fall back to what the dashboard saw */ }
  if (items === null) {
    const entries = await api(`/dashboard/api/bundle?name=${encodeURIComponent(bundle)}`).then(r => r.ok ? r.json() : []);
    items = entries.map(e => el("li", {}, `${time(e.atMs)} ${e.kind}${e.broker ? " " + e.broker : ""}` +
      `${e.previous ? " (from " + e.previous + ")" : ""}${e.cause ? " · cause " + e.cause : ""}`));
  }
  $("story").replaceChildren(items.length ? el("ul", {}, ...items) : el("div", { class: "muted" }, "Nothing seen for this bundle yet."));
  panel.scrollIntoView({ block: "nearest" });
}

async function refresh() {
  try {
    const response = await api("/dashboard/api/state", { cache: "no-store" });
    if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
    const s = await response.json();
    lastState = s;
    $("error").hidden = true;
    renderHeader(s);
    renderBrokers(s);
    renderRings(s);
    renderCycles(s);
    renderMoves(s);
    document.body.dataset.updated = String(s.atMs);
  } catch (e) {
    $("error").hidden = false;
    $("error").textContent = `Cannot read the cluster's state: ${e.message}`;
  } finally {
    setTimeout(refresh, POLL_MS);
  }
}

refresh();
