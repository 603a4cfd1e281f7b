// One cleaning job: counts, per-step stats, drops by step and reason (click a bar for sample rows),
// and each dropped row's evidence.
import { get } from "./api.js";
import { bars } from "./charts.js";
import { badge, esc, fmt, kv, pager, when } from "./util.js";

function rowText(row) {
  const messages = row && Array.isArray(row.messages) ? row.messages : null;
  if (!messages) return `<pre>${esc(JSON.stringify(row, null, 2)).slice(0, 4000)}</pre>`;
  return messages.map((m) => `<div class="msg ${esc(m.role)}"><div class="head"><b>${esc(m.role)}</b></div>
    <pre>${esc(typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? m.tool_calls ?? ""))}</pre></div>`).join("");
}

export async function cleanJobPage({ view, params: [jobId], signal }) {
  const [job, summary] = await Promise.all([get(`/v1/clean/jobs/${jobId}`, {}, { signal }),
    get(`/v1/clean/jobs/${jobId}/dropped/summary`, {}, { signal })]);
  view.innerHTML = `<h1>Cleaning job <span class="mono">${esc(job.id)}</span></h1>
    ${kv([["status", badge(job.status)], ["rows", fmt(job.total)], ["done", fmt(job.done)], ["kept", fmt(job.kept)],
      ["dropped", fmt(job.dropped)], ["invalid", fmt(job.invalid)], ["batches", `${job.batches_done}/${job.batches}`],
      ["created", when(job.created_at)]])}
    ${job.error ? `<p class="error">${esc(job.error)}</p>` : ""}
    <div class="plots"><div class="plot"><h3>Drops by step and reason (click a bar)</h3><div id="drops-chart"></div></div>
      <div class="plot"><h3>Rows kept per step</h3><div id="steps-chart"></div></div></div>
    <h2>Drops</h2><table class="nav" id="drops"><thead><tr><th>step</th><th>reason</th><th class="num">rows</th><th></th></tr></thead>
      <tbody>${summary.items.map((d, i) => `<tr data-i="${i}"><td>${esc(d.step)}</td><td>${badge(d.reason, "dropped")}</td>
      <td class="num">${fmt(d.count)}</td><td><a href="#samples" data-i="${i}">sample rows</a></td></tr>`).join("")
      || '<tr><td colspan="4" class="muted">nothing dropped</td></tr>'}</tbody></table>
    <h2 id="samples">Sample rows <span class="muted" id="samples-title"></span></h2><div id="sample-rows"><p class="muted">Pick a reason.</p></div>
    <div class="pager" id="samples-pager"></div>
    <h2>Per-step stats</h2><table id="step-stats"><thead><tr><th>step</th><th class="num">in</th><th class="num">out</th>
      <th>dropped by reason</th><th class="num">seconds</th></tr></thead><tbody>${job.stats.map((s) => `<tr><td>${esc(s.step)}</td>
      <td class="num">${fmt(s.rows_in)}</td><td class="num">${fmt(s.rows_out)}</td>
      <td>${Object.entries(s.dropped).map(([r, n]) => `${esc(r)} ${n}`).join(", ")}</td><td class="num">${fmt(s.seconds, 3)}</td></tr>`).join("")}</tbody></table>`;
  const items = summary.items.map((d, i) => ({ label: `${d.step}: ${d.reason}`, value: d.count, key: String(i) }));
  let selected = null;
  let latest = 0; // only the newest pick draws (an older answer arriving late is dropped)
  const drawChart = () => {
    view.querySelector("#drops-chart").innerHTML = bars(items, { empty: "nothing dropped", selected });
    view.querySelectorAll("#drops-chart rect.bar").forEach((r) => { r.onclick = () => pick(Number(r.dataset.key)); });
  };
  view.querySelector("#steps-chart").innerHTML = bars(job.stats.map((s) => ({ label: s.step, value: s.rows_out })));
  const pick = async (i, offset = 0) => {
    const ticket = ++latest;
    selected = String(i);
    drawChart();
    const d = summary.items[i];
    const page = await get(`/v1/clean/jobs/${jobId}/rows`, { outcome: "dropped", step: d.step ?? undefined,
      reason: d.reason ?? undefined, offset, limit: 5 }, { signal });
    if (ticket !== latest) return;
    view.querySelector("#samples-title").textContent = `${d.step} · ${d.reason}`;
    view.querySelector("#sample-rows").innerHTML = page.items.map((r) => `<div class="card sample">
      <h3>row ${r.row_index} ${badge(r.outcome)} ${esc(r.step)} · ${esc(r.reason)}</h3>
      <div class="evidence">${Object.keys(r.evidence).length ? `<b>evidence</b><pre>${esc(JSON.stringify(r.evidence, null, 2))}</pre>`
        : '<span class="muted">the step recorded no evidence beyond its reason</span>'}</div>
      <details><summary>the row</summary>${rowText(r.row)}</details></div>`).join("") || '<p class="muted">no rows</p>';
    pager(view.querySelector("#samples-pager"), { offset, limit: 5, nextOffset: page.next_offset, count: page.items.length,
      load: (o) => pick(i, o) });
  };
  view.querySelectorAll('#drops a[data-i]').forEach((a) => {
    a.onclick = (ev) => { ev.preventDefault(); pick(Number(a.dataset.i)); };
  });
  view.querySelectorAll("#drops tbody tr[data-i]").forEach((tr) => {
    tr.ondblclick = () => pick(Number(tr.dataset.i));
  });
  drawChart();
  if (summary.items.length) await pick(0);
  if (job.status !== "succeeded" && job.status !== "failed") {
    // A running job: redraw the page when its counts move (polling stops when the page is left).
    const timer = setInterval(async () => {
      if (signal.aborted) { clearInterval(timer); return; }
      try {
        const now = await get(`/v1/clean/jobs/${jobId}`, {}, { signal });
        if (now.done !== job.done || now.status !== job.status) {
          clearInterval(timer);
          await cleanJobPage({ view, params: [jobId], signal });
        }
      } catch (_) { /* next tick */ }
    }, 2000);
    signal.addEventListener("abort", () => clearInterval(timer));
  }
}
