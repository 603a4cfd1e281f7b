// Jobs list, one rollout job live (SSE), and one group's members side by side.
import { events, get, post } from "./api.js";
import { bars, histogram, line, percentiles } from "./charts.js";
import { badge, clickableRows, esc, fmt, kv, link, pager, short, when } from "./util.js";

const PAGE = 25;

export async function jobsPage({ view, signal, navigate }) {
  view.innerHTML = `<h1>Jobs</h1>
    <h2>Rollout jobs</h2><div class="plots"><div class="plot"><h3>Mean reward per job (this page)</h3><div id="reward-per-job"></div></div>
      <div class="plot"><h3>Trajectories per stop reason (this page)</h3><div id="stops-all"></div></div></div>
    <table class="nav" id="rollouts"><thead><tr><th>job</th><th>status</th><th>progress</th><th class="num">groups</th>
      <th class="num">trajectories</th><th class="num">failed</th><th class="num">mean reward</th><th>mode</th><th>policy</th><th>created</th></tr></thead><tbody></tbody></table>
    <div class="pager" id="rollouts-pager"></div>
    <h2>Cleaning jobs</h2>
    <table class="nav" id="cleans"><thead><tr><th>job</th><th>dataset</th><th>status</th><th class="num">rows</th><th class="num">kept</th>
      <th class="num">dropped</th><th class="num">invalid</th><th>created</th></tr></thead><tbody></tbody></table>
    <div class="pager" id="cleans-pager"></div>`;
  clickableRows(view.querySelector("#rollouts"), navigate);
  clickableRows(view.querySelector("#cleans"), navigate);
  const loadRollouts = async (offset) => {
    const page = await get("/v1/rollouts", { offset, limit: PAGE }, { signal });
    view.querySelector("#rollouts tbody").innerHTML = page.items.map((j) => {
      const c = j.counts || {};
      return `<tr><td>${link(`/ui/rollouts/${j.id}`, short(j.id))}</td><td>${badge(j.status)}</td>
        <td><div class="progress"><div style="width:${(j.progress * 100).toFixed(1)}%"></div></div></td>
        <td class="num">${j.done_groups}/${j.total_groups}</td><td class="num">${fmt(c.trajectories || 0)}</td>
        <td class="num">${fmt(c.failed || 0)}</td><td class="num">${fmt(j.mean_reward)}</td><td>${esc(j.mode || "")}</td>
        <td>${esc(j.backend)}${j.model ? " · " + esc(j.model) : ""}</td><td>${when(j.created_at)}</td></tr>`;
    }).join("") || '<tr><td colspan="10" class="muted">no rollout jobs yet</td></tr>';
    view.querySelector("#reward-per-job").innerHTML = bars(page.items.filter((j) => j.mean_reward !== null)
      .map((j) => ({ label: j.id.slice(0, 6), value: j.mean_reward, key: j.id })), { empty: "no scored job" });
    const stops = {};
    for (const j of page.items) for (const [k, v] of Object.entries(j.counts || {})) {
      if (k.startsWith("stop_reason:")) stops[k.slice(12)] = (stops[k.slice(12)] || 0) + v;
    }
    view.querySelector("#stops-all").innerHTML = bars(Object.entries(stops).map(([k, v]) => ({ label: k, value: v })));
    pager(view.querySelector("#rollouts-pager"), { offset, limit: PAGE, nextOffset: page.next_offset,
      count: page.items.length, load: (o) => rollouts(o) });
  };
  const loadCleans = async (offset) => {
    const page = await get("/v1/clean/jobs", { offset, limit: PAGE }, { signal });
    view.querySelector("#cleans tbody").innerHTML = page.items.map((j) => `<tr>
      <td>${link(`/ui/clean/jobs/${j.id}`, short(j.id))}</td><td>${esc(page.dataset_names[j.dataset_id] || short(j.dataset_id))}</td>
      <td>${badge(j.status)}</td><td class="num">${fmt(j.total)}</td><td class="num">${fmt(j.kept)}</td>
      <td class="num">${fmt(j.dropped)}</td><td class="num">${fmt(j.invalid)}</td><td>${when(j.created_at)}</td></tr>`).join("")
      || '<tr><td colspan="8" class="muted">no cleaning jobs yet</td></tr>';
    pager(view.querySelector("#cleans-pager"), { offset, limit: PAGE, nextOffset: page.next_offset,
      count: page.items.length, load: (o) => cleans(o) });
  };
  let rolloutOffset = 0, cleanOffset = 0;
  const track = (load, set) => async (offset) => { set(offset); return load(offset); };
  const rollouts = track(loadRollouts, (o) => { rolloutOffset = o; });
  const cleans = track(loadCleans, (o) => { cleanOffset = o; });
  await Promise.all([rollouts(0), cleans(0)]);
  // While a job on screen is still running, the lists refresh every few seconds (stopped on leaving).
  const timer = setInterval(async () => {
    if (signal.aborted) { clearInterval(timer); return; }
    if (!view.querySelector(".badge.running, .badge.pending")) return;
    try { await Promise.all([loadRollouts(rolloutOffset), loadCleans(cleanOffset)]); } catch (_) { /* next tick */ }
  }, 3000);
  signal.addEventListener("abort", () => clearInterval(timer));
}

function stopItems(counts) {
  return Object.entries(counts || {}).filter(([k]) => k.startsWith("stop_reason:"))
    .map(([k, v]) => ({ label: k.slice(12), value: v }));
}

export async function jobPage({ view, params: [jobId], signal, navigate }) {
  const job = await get(`/v1/rollouts/${jobId}`, {}, { signal });
  view.innerHTML = `<h1>Rollout job <span class="mono">${esc(job.id)}</span></h1>
    <div id="job-head"></div>
    <div class="plots">
      <div class="plot"><h3>Stop reasons</h3><div id="plot-stops"></div></div>
      <div class="plot"><h3>Reward histogram</h3><div id="plot-reward"></div></div>
      <div class="plot"><h3>Mean reward per group, in finishing order</h3><div id="plot-rounds"></div></div>
      <div class="plot"><h3>Completion tokens per trajectory</h3><div id="plot-lengths"></div></div>
      <div class="plot"><h3>Per-turn policy latency</h3><div id="plot-latency"></div></div>
      <div class="plot"><h3>Turns per trajectory</h3><div id="plot-turns"></div></div>
    </div>
    <h2>Failures</h2><div id="failures"></div>
    <h2>Groups</h2>
    <table class="nav" id="groups"><thead><tr><th>group</th><th>task</th><th>status</th><th class="num">members</th>
      <th class="num">mean reward</th><th>rewards</th></tr></thead><tbody></tbody></table><div class="pager" id="groups-pager"></div>
    <p class="muted" id="live-note"></p>`;
  clickableRows(view.querySelector("#groups"), navigate);
  let state = job;
  const head = () => {
    const c = state.counts || {};
    view.querySelector("#job-head").innerHTML = kv([
      ["status", badge(state.status) + (state.cancel_requested ? " " + badge("cancel requested", "pending") : "")],
      ["progress", `<div class="progress" id="job-progress"><div style="width:${(100 * state.done_groups / Math.max(state.total_groups, 1)).toFixed(1)}%"></div></div>
        <span id="job-progress-text">${state.done_groups} / ${state.total_groups} groups</span>`],
      ["trajectories", fmt(c.trajectories || 0)], ["failed", fmt(c.failed || 0)],
      ["tokens/s", `<span id="tps">${fmt(stats && stats.tokens_per_s, 1)}</span>`],
      ["mean reward", fmt(stats && stats.reward_mean)], ["created", when(state.created_at)],
      ["", state.status === "running" || state.status === "pending" ? '<button id="cancel">Cancel job</button>' : ""],
      ["", link(`/ui/search?job_id=${state.id}`, "search its trajectories")],
    ]) + (state.error ? `<p class="error">${esc(state.error)}</p>` : "");
    const cancel = view.querySelector("#cancel");
    if (cancel) cancel.onclick = async () => { state = await post(`/v1/rollouts/${jobId}/cancel`); head(); };
  };
  let stats = null;
  const drawStats = async () => {
    stats = await get(`/v1/rollouts/${jobId}/stats`, {}, { signal });
    view.querySelector("#plot-stops").innerHTML = bars(Object.entries(stats.stop_reasons).map(([k, v]) => ({ label: k, value: v })));
    view.querySelector("#plot-reward").innerHTML = histogram(stats.reward_histogram, { empty: "no scored trajectory" });
    view.querySelector("#plot-rounds").innerHTML = line(stats.group_rewards, { empty: "no finished group" });
    view.querySelector("#plot-lengths").innerHTML = histogram(stats.completion_tokens);
    view.querySelector("#plot-latency").innerHTML = percentiles(stats.turn_latency_s);
    view.querySelector("#plot-turns").innerHTML = bars(Object.entries(stats.turns).map(([k, v]) => ({ label: k + " turns", value: v })));
    view.querySelector("#failures").innerHTML = stats.failures.length ? `<table id="failure-table"><thead><tr><th>cause</th><th>message</th>
      <th class="num">count</th><th>examples</th></tr></thead><tbody>${stats.failures.map((f) => `<tr><td>${badge(f.code, "bad")}</td>
      <td class="mono">${esc(f.message)}</td><td class="num">${f.count}</td><td>${f.trajectory_ids.map((t) => link(`/ui/trajectories/${t}`, short(t))).join(" ")}
      ${f.group_ids.map((g) => link(`/ui/rollouts/${jobId}/groups/${g}`, "group " + short(g))).join(" ")}</td></tr>`).join("")}</tbody></table>`
      : '<p class="muted">no failures</p>';
    head();
  };
  let groupOffset = 0;
  const loadGroups = async (offset) => {
    groupOffset = offset;
    const page = await get(`/v1/rollouts/${jobId}/groups`, { offset, limit: 50 }, { signal });
    view.querySelector("#groups tbody").innerHTML = page.items.map((g) => `<tr>
      <td>${link(`/ui/rollouts/${jobId}/groups/${g.id}`, short(g.id))}</td><td>${esc(g.task_id)}</td><td>${badge(g.status)}</td>
      <td class="num">${g.members}</td><td class="num">${fmt(g.mean_reward)}</td>
      <td class="mono">${g.rewards.map((r) => fmt(r, 2)).join(" ")}</td></tr>`).join("")
      || '<tr><td colspan="6" class="muted">no group yet</td></tr>';
    pager(view.querySelector("#groups-pager"), { offset, limit: 50, nextOffset: page.next_offset, count: page.items.length, load: loadGroups });
  };
  head();
  await Promise.all([drawStats(), loadGroups(0)]);
  follow();

  // Live: progress events redraw the header and stop reasons at once; stats and groups refresh at most every 2 s.
  function follow() {
    if (["succeeded", "failed", "cancelled"].includes(state.status)) {
      view.querySelector("#live-note").textContent = "Job finished: " + state.status;
      return;
    }
    view.querySelector("#live-note").textContent = "Following the job live…";
    let timer = null;
    const refresh = () => {
      if (timer) return;
      timer = setTimeout(async () => { timer = null; try { await Promise.all([drawStats(), loadGroups(groupOffset)]); } catch (_) {} }, 2000);
    };
    events(`/v1/rollouts/${jobId}/events`, (name, data) => {
      if (name === "progress") {
        state = { ...state, done_groups: data.done_groups, total_groups: data.total_groups, counts: data.counts };
        head();
        view.querySelector("#plot-stops").innerHTML = bars(stopItems(data.counts));
        refresh();
      } else if (name === "group") refresh();
      else if (name === "end") state = { ...state, status: data.status };
    }, { signal }).then(async () => {
      state = await get(`/v1/rollouts/${jobId}`, {}, { signal });
      await Promise.all([drawStats(), loadGroups(groupOffset)]);
      view.querySelector("#live-note").textContent = "Job finished: " + state.status;
    }).catch((err) => {
      if (err.name !== "AbortError") view.querySelector("#live-note").textContent = "Live updates stopped: " + err.message;
    });
  }
}

const MEMBER_COLS = [
  ["sample_index", "member"], ["reward", "reward"], ["advantage", "advantage"], ["stop_reason", "stop reason"],
  ["turns", "turns"], ["prompt_tokens", "prompt tok"], ["response_tokens", "response tok"], ["sampled_tokens", "sampled tok"],
];

export async function groupPage({ view, params: [jobId, groupId], signal, navigate }) {
  const g = await get(`/v1/rollouts/${jobId}/groups/${groupId}`, {}, { signal });
  const components = [...new Set(g.member_list.flatMap((m) => Object.keys(m.components)))].sort();
  const prompt = (g.task.messages || []).filter((m) => m.role === "user").map((m) => m.content).join("\n");
  const reasons = [...new Set(g.member_list.map((m) => m.stop_reason))];
  view.innerHTML = `<h1>Group <span class="mono">${esc(g.id)}</span></h1>
    ${kv([["job", link(`/ui/rollouts/${jobId}`, short(jobId))], ["task", esc(g.task_id)], ["status", badge(g.status)],
      ["members", g.members], ["mean reward", fmt(g.mean_reward)]])}
    <details open><summary>Task prompt</summary><pre>${esc(prompt)}</pre></details>
    <h2>Members</h2>
    <form class="filters" id="member-filters"><label>stop reason<select id="f-stop"><option value="">any</option>
      ${reasons.map((r) => `<option>${esc(r)}</option>`).join("")}</select></label>
      <label>min reward<input id="f-min" type="number" step="any" size="6"></label>
      <label>tool called<input id="f-tool" size="12"></label></form>
    <table class="nav" id="members"><thead><tr>${MEMBER_COLS.map(([k, l]) => `<th class="sortable${["reward", "advantage", "turns"].includes(k) || k.endsWith("tokens") ? " num" : ""}" data-k="${k}">${esc(l)}</th>`).join("")}
      ${components.map((c) => `<th class="sortable num" data-k="c:${esc(c)}">${esc(c)}</th>`).join("")}<th>tools called</th><th>parse</th><th>last reply</th><th>trajectory</th></tr></thead><tbody></tbody></table>`;
  const maxAdv = Math.max(1e-9, ...g.member_list.map((m) => Math.abs(m.advantage || 0)));
  let sortKey = "sample_index", dir = 1;
  const value = (m, k) => (k.startsWith("c:") ? m.components[k.slice(2)] : m[k]);
  const draw = () => {
    const stop = view.querySelector("#f-stop").value, min = view.querySelector("#f-min").value, tool = view.querySelector("#f-tool").value.trim();
    const rows = g.member_list.filter((m) => (!stop || m.stop_reason === stop) && (min === "" || (m.reward ?? -Infinity) >= Number(min))
      && (!tool || m.tools_called.includes(tool)));
    rows.sort((a, b) => { const x = value(a, sortKey) ?? -Infinity, y = value(b, sortKey) ?? -Infinity; return (x > y ? 1 : x < y ? -1 : 0) * dir; });
    view.querySelector("#members tbody").innerHTML = rows.map((m) => `<tr>
      <td>#${m.sample_index}${m.attempt ? ` (attempt ${m.attempt})` : ""}</td><td class="num">${fmt(m.reward)}</td>
      <td class="num">${fmt(m.advantage)} <span class="rbar${(m.advantage || 0) < 0 ? " neg" : ""}" style="width:${(40 * Math.abs(m.advantage || 0) / maxAdv).toFixed(0)}px"></span></td>
      <td>${badge(m.stop_reason)}${m.truncated ? " " + badge("truncated", "length") : ""}</td><td class="num">${m.turns}</td>
      <td class="num">${fmt(m.prompt_tokens)}</td><td class="num">${fmt(m.response_tokens)}</td><td class="num">${fmt(m.sampled_tokens)}</td>
      ${components.map((c) => `<td class="num">${fmt(m.components[c])}</td>`).join("")}
      <td>${esc(m.tools_called.join(", "))}</td><td>${Object.entries(m.parse_statuses).map(([s, n]) => badge(`${s}×${n}`, s)).join(" ")}</td>
      <td class="mono">${esc(m.last_reply)}</td>
      <td>${link(`/ui/trajectories/${m.id}`, "open " + short(m.id))}${m.error ? `<div class="error">${esc(m.error)}</div>` : ""}</td></tr>`).join("")
      || '<tr><td class="muted" colspan="20">no member matches</td></tr>';
    view.querySelectorAll("#members th.sortable").forEach((th) => {
      th.classList.toggle("sorted-asc", th.dataset.k === sortKey && dir === 1);
      th.classList.toggle("sorted-desc", th.dataset.k === sortKey && dir === -1);
    });
  };
  view.querySelectorAll("#members th.sortable").forEach((th) => {
    th.onclick = () => { dir = th.dataset.k === sortKey ? -dir : 1; sortKey = th.dataset.k; draw(); };
  });
  view.querySelector("#member-filters").oninput = draw;
  view.querySelector("#member-filters").onsubmit = (ev) => ev.preventDefault();
  clickableRows(view.querySelector("#members"), navigate);
  draw();
}
