// coscheduler's dashboard: renders what /api/events streams (read-only, no build step).
"use strict";

let overview = null;
let gang = null; // the open gang's page, if any

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "onclick") el.onclick = value;
    else if (value !== null && value !== undefined && value !== false) el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

const amounts = (list) => Object.entries(list || {}).map(([r, a]) => `${r}=${a}`).join(" ");
// {class: [free, devices]} as "gpu 3/4 free".
const devices = (byClass) => Object.entries(byClass || {}).map(([c, [free, all]]) => `${c} ${free}/${all}`).join(" ");
const percent = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(0)}%`);

function age(created) {
  if (created === null) return "–";
  const s = Math.max(0, Date.now() / 1000 - created);
  if (s < 120) return `${s.toFixed(0)}s`;
  if (s < 7200) return `${(s / 60).toFixed(0)}m`;
  return `${(s / 3600).toFixed(1)}h`;
}

function gangLink(namespace, name) {
  return h("a", { href: `#gang/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}` },
    `${namespace}/${name}`);
}

// -- queues: a tree (children under their parent), a sparkline of the last hour each --------

function sparkline(series) {
  const el = h("div", { class: "spark" });
  if (series[0].length < 2) {
    el.append(h("span", { class: "muted" }, "sampling"));
    return el;
  }
  new uPlot({
    width: 140, height: 32, legend: { show: false }, cursor: { show: false },
    scales: { x: { time: true }, y: { range: (u, low, high) => [0, Math.max(0.05, high * 1.25)] } },
    axes: [{ show: false }, { show: false }],
    series: [{}, { stroke: "#3a7bd5", fill: "rgba(58,123,213,.15)", width: 1 }],
  }, series, el);
  return el;
}

function renderQueues() {
  const body = document.querySelector("#queues tbody");
  const byParent = new Map();
  for (const q of overview.queues) {
    const parent = overview.queues.some((p) => p.name === q.parent) ? q.parent : "";
    if (!byParent.has(parent)) byParent.set(parent, []);
    byParent.get(parent).push(q);
  }
  const rows = [];
  const walk = (parent, depth) => {
    for (const q of byParent.get(parent) || []) {
      const over = q.fairShare !== null && q.cpuShare > q.fairShare + 0.05;
      rows.push(h("tr", { "data-queue": q.name, "data-implicit": q.object ? null : "" },
        h("td", { style: `padding-left:${0.6 + 1.4 * depth}em` }, q.name,
          q.state !== "Open" ? h("span", { class: "muted" }, ` (${q.state})`) : null,
          q.object ? null : h("span", { class: "muted", title: "named by groups, no Queue object" }, " (implicit)"),
          q.problem ? h("div", { class: "over" }, q.problem) : null),
        h("td", {}, q.weight), h("td", {}, amounts(q.nominal)), h("td", {}, amounts(q.allocated)),
        h("td", {}, amounts(q.borrowed)), h("td", {}, amounts(q.lent)), h("td", {}, amounts(q.recent)),
        h("td", { class: over ? "over" : null }, percent(q.cpuShare)),
        h("td", {}, percent(q.fairShare)), h("td", {}, q.pending),
        h("td", {}, sparkline(q.history))));
      walk(q.name, depth + 1);
    }
  };
  walk("", 0);
  body.replaceChildren(...rows);
}

// -- the line: cluster-wide or one queue's, in the order the next pass tries it -----------------

function why(row) {
  if (!row.reason) return h("span", { class: "muted" }, "not tried yet");
  const parts = [h("span", { class: "reason" }, row.reason)];
  if (row.refusals.length) {
    parts.push(h("ul", { class: "refusals" },
      row.refusals.map(([reason, count]) => h("li", {}, `${count} node${count === 1 ? "" : "s"}: ${reason}`))));
  } else if (row.message) {
    parts.push(h("div", { class: "muted" }, row.message));
  }
  return parts;
}

function renderLine() {
  const select = document.getElementById("line-queue");
  const chosen = select.value;
  const names = Object.keys(overview.line.byQueue).sort();
  select.replaceChildren(h("option", { value: "" }, "whole cluster"),
    ...names.map((n) => h("option", { value: n, selected: n === chosen ? "" : null }, `queue ${n}`)));
  const rows = chosen ? overview.line.byQueue[chosen] || [] : overview.line.head;
  document.getElementById("line-total").textContent =
    `${overview.line.total} waiting${rows.length < overview.line.total ? `, first ${rows.length} shown` : ""}`;
  document.querySelector("#line tbody").replaceChildren(...rows.map((row) => h("tr", {
    "data-group": `${row.namespace}/${row.name}`,
  },
    h("td", {}, row.clusterPosition), h("td", {}, row.queuePosition), h("td", {}, row.queue),
    h("td", {}, row.kind === "Pod" ? `pod ${row.namespace}/${row.name}` : gangLink(row.namespace, row.name)),
    h("td", {}, age(row.created)), h("td", {}, row.size), h("td", {}, row.priority),
    h("td", {}, row.state), h("td", { class: "why" }, why(row)),
    h("td", {}, row.plan || h("span", { class: "muted" }, "–")))));
}

// -- the room: nodes by topology domain, coloured by use; a gang's nodes outlined ------------

// 5,000 cells: each is a bare div with a class for its use (one of eleven shades) and its
// index; its tooltip is made when the pointer reaches it, and one listener serves clicks.
function renderRoom() {
  const room = overview.room;
  const keySelect = document.getElementById("room-key");
  const key = keySelect.value || room.keys[0] || "";
  keySelect.replaceChildren(...(room.keys.length ? room.keys : [""]).map((k) =>
    h("option", { value: k, selected: k === key ? "" : null }, k ? `by ${k}` : "all nodes")));
  const index = room.keys.indexOf(key);
  const chosen = new Set((gang ? gang.members : []).map((m) => m.node).filter(Boolean));
  const totals = index < 0 ? [] : room.domains[index].values;
  const groups = new Map(); // place of the domain's value in totals (-1: all nodes) -> node indices
  room.nodes.forEach((node, i) => {
    const place = index < 0 ? -1 : node.domains[index];
    if (!groups.has(place)) groups.set(place, []);
    groups.get(place).push(i);
  });
  const boxes = [];
  for (const [place, members] of [...groups.entries()].sort((a, b) => a[0] - b[0])) {
    const total = totals[place];
    const value = total ? total.value : "";
    const cells = document.createElement("div");
    cells.className = "nodes";
    for (const i of members) {
      const node = room.nodes[i];
      const cell = document.createElement("div");
      cell.className = `node u${Math.round(10 * node.used)}${node.cordoned ? " cordoned" : ""}` +
        `${chosen.has(node.name) ? " chosen" : ""}`;
      cell.dataset.node = node.name;
      cell.dataset.i = i;
      cells.append(cell);
    }
    boxes.push(h("div", { class: "domain" },
      h("h3", {}, value ? `${key}=${value}` : index < 0 ? "all nodes" : "(no label)",
        h("span", { class: "muted" }, ` · ${members.length} node${members.length === 1 ? "" : "s"}`),
        total ? h("div", { class: "muted" }, `free ${amounts(total.free)}`) : null,
        total && Object.keys(total.devices).length
          ? h("div", { class: "muted devices" }, `devices free ${devices(total.devices)}`) : null),
      cells));
  }
  const shared = Object.keys(room.sharedDevices).length
    ? h("p", { class: "muted devices" }, `devices reached from many nodes, free: ${devices(room.sharedDevices)}`) : null;
  document.getElementById("room").replaceChildren(...(shared ? [shared] : []), ...boxes);
}

const roomNode = (target) => (target.dataset && target.dataset.i !== undefined ? overview.room.nodes[target.dataset.i] : null);
const roomEl = document.getElementById("room");
roomEl.addEventListener("mouseover", (event) => {
  const node = roomNode(event.target);
  if (!node || event.target.title) return;
  const gangs = (node.gangs || []).map((i) => overview.room.gangs[i]);
  const free = overview.room.resources.map((r, i) => (node.free[i] === null ? "" : `${r}=${node.free[i]}`));
  event.target.title = `${node.name}\nfree ${free.filter(Boolean).join(" ")}` +
    `${node.devices ? `\ndevices free ${devices(node.devices)}` : ""}\n${gangs.map((g) => `${g[0]}/${g[1]}`).join("\n")}`;
});
roomEl.addEventListener("click", (event) => {
  const node = roomNode(event.target);
  const first = node && (node.gangs || []).map((i) => overview.room.gangs[i]).find((g) => g[2] !== "Pod");
  if (first) location.hash = `#gang/${first[0]}/${first[1]}`;
});

// -- a gang's page: verdict with its refusal histogram, timeline, members ---------------------

function histogram(refusals) {
  // One bar per reason: how many nodes refused the gang's first unplaced member for it.
  const el = h("div", { class: "histogram" });
  const labels = refusals.map(([reason]) => reason);
  const top = Math.max(...refusals.map(([, n]) => n));
  new uPlot({
    width: Math.min(900, 160 + 140 * labels.length), height: 220,
    legend: { show: false }, cursor: { show: false },
    scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: [0, top * 1.15] } },
    axes: [
      { splits: () => labels.map((_, i) => i), values: (u, ticks) => ticks.map((t) => labels[t] || ""), size: 50 },
      { label: "nodes refusing", splits: () => [...Array(Math.min(top, 5) + 1).keys()].map((i) => Math.round((i * top) / Math.min(top, 5))) },
    ],
    series: [{}, { fill: "#e67e22", stroke: "#e67e22", paths: uPlot.paths.bars({ size: [0.5] }) }],
  }, [labels.map((_, i) => i), refusals.map(([, n]) => n)], el);
  return el;
}

async function openGang() {
  const match = location.hash.match(/^#gang\/([^/]+)\/([^/]+)$/);
  const section = document.getElementById("gang");
  if (!match) { gang = null; section.hidden = true; return; }
  const answer = await fetch(`/api/gangs/${match[1]}/${match[2]}`);
  gang = answer.ok ? await answer.json() : null;
  section.hidden = false;
  document.getElementById("gang-title").textContent = decodeURIComponent(`${match[1]}/${match[2]}`);
  const body = document.getElementById("gang-body");
  if (!gang) { body.replaceChildren(h("p", {}, "no such group")); return; }
  const when = (t) => new Date(t * 1000).toLocaleString();
  const line = gang.line;
  body.replaceChildren(h("div", {},
    h("p", {}, `phase ${gang.phase || "–"}, minMember ${gang.minMember ?? "–"}, queue ${gang.queue || "–"}`,
      line ? `, place ${line.clusterPosition} in the cluster, ${line.queuePosition} in its queue` : ""),
    line && line.reason ? h("div", {}, h("h3", {}, "Why it waits"), why(line),
      line.refusals.length ? histogram(line.refusals) : null) : null,
    line && line.plan ? h("p", {}, `Preemption plan: ${line.plan}`) : null,
    h("h3", {}, "Timeline"),
    gang.role !== "leader" ? h("p", { class: "muted", id: "timeline-note" },
      `This process is a ${gang.role}: it writes no events and watches none, so the timeline has the group's ` +
      "creation and its conditions (the leader's words); the events are on the leader's page or in " +
      `kubectl get events -n ${gang.namespace}.`) : null,
    h("table", { class: "timeline" }, gang.timeline.map((t) => h("tr", {},
      h("td", {}, when(t.at)), h("td", {}, t.what),
      h("td", {}, t.reason || "", t.count > 1 ? h("span", { class: "muted" }, ` ×${t.count}`) : null),
      h("td", {}, t.message || "",
        t.objects && !t.onGroup ? h("span", { class: "muted" }, ` (on ${t.objects} pod${t.objects === 1 ? "" : "s"})`) : null)))),
    h("h3", {}, `Members (${gang.members.length})`),
    h("table", {}, gang.members.map((m) => h("tr", {}, h("td", {}, m.name), h("td", {}, m.role || ""),
      h("td", {}, m.phase), h("td", {}, m.node || "not placed"), h("td", {}, amounts(m.requests)))))));
  if (overview) renderRoom();
}

function render() {
  const role = document.getElementById("role");
  role.textContent = overview.role;
  document.getElementById("summary").textContent =
    `${overview.queues.length} queues · ${overview.line.total} waiting · ${overview.room.nodes.length} nodes`;
  renderQueues();
  renderLine();
  renderRoom();
  document.body.dataset.loaded = "true";
}

document.getElementById("line-queue").onchange = () => overview && renderLine();
// Any group's page, wherever it stands (the line shows its head only).
document.getElementById("find").onsubmit = (event) => {
  event.preventDefault();
  const [namespace, name] = event.target.group.value.trim().split("/");
  if (namespace && name) location.hash = `#gang/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;
};
document.getElementById("room-key").onchange = () => overview && renderRoom();
window.addEventListener("hashchange", openGang);
openGang();
// Each part of the overview comes as an event of its name, whenever it changed.
const parts = {};
const source = new EventSource("/api/events");
for (const name of ["role", "queues", "line", "room"]) {
  source.addEventListener(name, (event) => {
    parts[name] = JSON.parse(event.data);
    if (Object.keys(parts).length < 4) return; // the first of each comes at once
    overview = parts;
    render();
    if (gang) openGang();
  });
}
