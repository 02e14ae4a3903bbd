#include "status/status_page.h"

namespace hvd::launcher {

const std::string& StatusPageHtml() {
  static const std::string* const kPage = new std::string(R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hvd job</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
  h1 { font-size: 1.4em; margin: 0 0 .3em; }
  h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
  table { border-collapse: collapse; }
  th, td { padding: .2em .7em; text-align: left; border-bottom: 1px solid #ddd; }
  th { background: #f4f4f4; font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
  .state-running, .state-succeeded { color: #17692c; }
  .state-blacklisted, .state-failed { color: #a11; font-weight: 600; }
  .state-removed, .state-idle { color: #777; }
  .state-recovering, .state-starting { color: #a66800; }
  #summary span { margin-right: 1.2em; }
  #error { color: #a11; }
  pre.tail { background: #f7f7f7; margin: .3em 0 .8em; padding: .4em; max-height: 14em; overflow: auto; white-space: pre-wrap; }
  .bar { display: flex; height: 12px; width: 240px; background: #eee; }
  .bar div { height: 100%; }
  .phase-detect { background: #d9534f; } .phase-decide { background: #f0ad4e; }
  .phase-rendezvous { background: #5bc0de; } .phase-connect { background: #337ab7; }
  .phase-sync { background: #9b59b6; } .phase-first_step { background: #5cb85c; }
  .legend span { display: inline-block; margin-right: 1em; }
  .legend i { display: inline-block; width: 10px; height: 10px; margin-right: .3em; }
</style>
</head>
<body data-loaded="0">
<h1>hvd job <span id="job-state"></span></h1>
<div id="summary">
  <span>generation <b id="job-generation">-</b></span>
  <span>ranks <b id="job-size">-</b></span>
  <span>resets <b id="job-resets">-</b></span>
  <span>failures <b id="job-failures">-</b></span>
  <span>up <b id="job-uptime">-</b></span>
  <span>updated <b id="updated">-</b></span>
</div>
<div id="command"></div>
<div id="leader"></div>
<div id="error"></div>

<h2>Hosts</h2>
<table id="hosts"><thead><tr><th>host</th><th>slots</th><th>state</th><th>workers</th><th>note</th></tr></thead><tbody></tbody></table>

<h2>Ranks of the current generation</h2>
<table id="ranks"><thead><tr><th>rank</th><th>slot</th><th>local rank</th><th>pid</th><th>checked in</th><th>steps</th><th>commits</th><th>steps/s</th><th>allreduce ops</th><th>allreduce bytes</th><th>stalls</th><th>last report</th></tr></thead><tbody></tbody></table>

<h2>Generations and their recovery</h2>
<div class="legend" id="legend"></div>
<table id="recoveries"><thead><tr><th>gen</th><th>cause</th><th>ranks</th><th>detect</th><th>decide</th><th>rendezvous</th><th>connect</th><th>state sync</th><th>first step</th><th>total</th><th></th><th>reason</th></tr></thead><tbody></tbody></table>

<h2>Failures</h2>
<ul id="failures"></ul>

<h2>hvdrun says</h2>
<ul id="messages"></ul>

<script>
"use strict";
const PHASES = ["detect", "decide", "rendezvous", "connect", "sync", "first_step"];
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(child === null || child === undefined ? "-" : String(child)));
  }
  return node;
}

function duration(ms) {
  if (typeof ms !== "number") return "-";
  if (ms < 1000) return ms.toFixed(0) + " ms";
  if (ms < 120000) return (ms / 1000).toFixed(2) + " s";
  return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
}

function clock(ms) {
  return typeof ms === "number" ? new Date(ms).toLocaleTimeString() : "-";
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function render(s) {
  const job = s.job, now = job.now_ms;
  document.title = "hvd job: " + job.state + ", generation " + job.generation;
  const state = $("job-state");
  state.textContent = job.state + (job.exit_code !== null ? " (exit code " + job.exit_code + ")" : "");
  state.className = "state-" + job.state;
  $("job-generation").textContent = job.generation;
  $("job-size").textContent = job.world_size;
  $("job-resets").textContent = job.resets;
  $("job-failures").textContent = job.failures;
  $("job-uptime").textContent = duration(now - job.started_ms);
  $("updated").textContent = clock(now);
  $("command").textContent = (job.elastic ? "elastic, " + job.min_np + ".." + (job.max_np || "any") + " ranks: " : "") + job.command;
  const lead = s.leader;
  const took = lead && lead.takeover;
  const phase = (from, to, name) => to ? ", " + name + " +" + duration(to - from) : "";
  $("leader").textContent = (lead ? lead.this_hvdrun + (lead.leading ? " leads" : " is not sure it leads") + " job '" + lead.job_id + "' in etcd at " + lead.etcd + ", since " + duration(now - lead.since_ms) + " ago" : "") +
    (took ? "; took it over from " + took.from + ": detected at " + clock(took.detected_ms) + phase(took.detected_ms, took.elected_ms, "elected") + phase(took.elected_ms, took.rebuilt_ms, "rebuilt") + phase(took.rebuilt_ms, took.adopted_ms, "adopted") + (took.workers !== undefined ? " (" + took.adopted + " of " + took.workers + " workers)" : "") : "");

  fill($("hosts").tBodies[0], s.hosts.map((h) => {
    let note = "";
    if (h.state === "blacklisted") {
      note = typeof h.usable_again_ms === "number" ? "cooldown " + duration(Math.max(0, h.usable_again_ms - now)) + " left" : "for good";
    }
    return el("tr", {"data-host": h.host, "data-state": h.state},
      el("td", {}, h.host), el("td", {class: "num"}, h.slots),
      el("td", {class: "state state-" + h.state}, h.state),
      el("td", {class: "num"}, h.workers), el("td", {class: "note"}, note));
  }));

  fill($("ranks").tBodies[0], s.ranks.map((r) => {
    const rep = r.report || null;
    const ar = rep && rep.ops && rep.ops.allreduce ? rep.ops.allreduce : null;
    return el("tr", {"data-rank": r.rank, "data-slot": r.slot, "data-pid": r.pid},
      el("td", {class: "num"}, r.rank), el("td", {}, r.slot),
      el("td", {class: "num"}, r.local_rank), el("td", {class: "num pid"}, r.pid),
      el("td", {}, r.checked_in ? "yes" : "waiting"),
      el("td", {class: "num steps"}, rep ? rep.steps : null),
      el("td", {class: "num commits"}, rep ? rep.commits : null),
      el("td", {class: "num rate"}, rep && typeof rep.step_rate === "number" ? rep.step_rate.toFixed(2) : null),
      el("td", {class: "num"}, ar ? ar.count : null),
      el("td", {class: "num"}, ar ? ar.bytes : null),
      el("td", {class: "num"}, rep ? rep.stalls : null),
      el("td", {class: "age"}, rep ? duration(now - rep.received_ms) + " ago" : "-"));
  }));

  const gens = new Map(s.generations.map((g) => [g.generation, g]));
  $("legend").replaceChildren(...PHASES.map((p) => el("span", {}, el("i", {class: "phase-" + p}), p.replace("_", " "))));
  fill($("recoveries").tBodies[0], s.recoveries.slice().reverse().map((r) => {
    const g = gens.get(r.generation) || {};
    let total = 0;
    const cells = PHASES.map((p) => {
      const v = r.phases[p + "_ms"];
      if (typeof v === "number") total += v;
      return el("td", {class: "num", "data-phase": p}, duration(v));
    });
    const bar = el("div", {class: "bar"});
    for (const p of PHASES) {
      const v = r.phases[p + "_ms"];
      if (typeof v === "number" && total > 0) {
        bar.append(el("div", {class: "phase-" + p, style: "width:" + (100 * v / total).toFixed(1) + "%", title: p + " " + duration(v)}));
      }
    }
    return el("tr", {"data-generation": r.generation, "data-cause": r.cause, "data-complete": g.complete_ms ? 1 : 0},
      el("td", {class: "num"}, r.generation), el("td", {}, r.cause), el("td", {class: "num"}, g.size),
      ...cells, el("td", {class: "num total"}, duration(total)), el("td", {}, bar),
      el("td", {class: "reason"}, r.reason));
  }));

  $("failures").replaceChildren(...s.failures.slice().reverse().map((f) => {
    const how = "exit code " + f.exit_code + (f.signal ? ", " + f.signal : "");
    const item = el("li", {"data-slot": f.slot, "data-host": f.host, "data-exit-code": f.exit_code, "data-signal": f.signal},
      clock(f.at_ms) + ": slot " + f.slot + " (rank " + f.rank + ", pid " + (f.pid === null ? "-" : f.pid) + ", generation " + f.generation + ") " + f.what + "; " + how);
    if (f.output_tail.length) {
      item.append(el("pre", {class: "tail"}, f.output_tail.map((l) => (l.stream === "stderr" ? "! " : "  ") + l.text).join("\n")));
    }
    return item;
  }));

  $("messages").replaceChildren(...s.messages.slice(-20).reverse().map((m) => el("li", {}, clock(m.at_ms) + " " + m.text)));
  document.body.dataset.generation = job.generation;
  document.body.dataset.state = job.state;
  document.body.dataset.loaded = "1";
}

async function refresh() {
  try {
    const answer = await fetch("status.json" + location.search, {cache: "no-store"});
    if (!answer.ok) throw new Error("HTTP " + answer.status + ": " + (await answer.text()));
    render(await answer.json());
    $("error").textContent = "";
  } catch (e) {
    $("error").textContent = "cannot reach hvdrun (" + e.message + "); the job may have ended";
  }
  setTimeout(refresh, 1000);
}
refresh();
</script>
</body>
</html>
)HTML");
  return *kPage;
}

}  // namespace hvd::launcher
